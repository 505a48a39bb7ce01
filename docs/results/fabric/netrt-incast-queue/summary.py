# Summarises the cells run.sh wrote: median (range) over seeds 1-3.
import json, statistics as st
def sp(v, f):
    return f"{f(st.median(v))} ({f(min(v))} … {f(max(v))})"
ms = lambda v: f"{v/1e6:.3f}"
n = lambda v: f"{v:,.0f}"
pc = lambda v: f"{v:+.0f} %"
print("| queue | GBN avg FCT ms | GBN p99 | GBN + NetRT avg | GBN + NetRT p99 | change avg | change p99 | host retransmits GBN / NetRT | NetRT gaps, beyond, requests |")
print("| --: | --: | --: | --: | --: | --: | --: | --: | --: |")
for q in ["128KiB", "256KiB", "512KiB", "1MiB"]:
    g = [json.load(open(f"gbn-{q}-s{s}/result.json")) for s in (1, 2, 3)]
    r = [json.load(open(f"netrt-{q}-s{s}/result.json")) for s in (1, 2, 3)]
    m = lambda x, k: x["fct_all"][k]
    ch = lambda k: [100 * (m(b, k) / m(a, k) - 1) for a, b in zip(g, r)]
    c = lambda x, st_, k: x["stages"][st_].get(k, 0)
    print(f"| {q} | {sp([m(x,'mean_fct_ns') for x in g], ms)} | {sp([m(x,'p99_fct_ns') for x in g], ms)} | "
          f"{sp([m(x,'mean_fct_ns') for x in r], ms)} | {sp([m(x,'p99_fct_ns') for x in r], ms)} | "
          f"{sp(ch('mean_fct_ns'), pc)} | {sp(ch('p99_fct_ns'), pc)} | "
          f"{sp([x['host_counters']['Retransmits'] for x in g], n)} / {sp([x['host_counters']['Retransmits'] for x in r], n)} | "
          f"{sp([c(x,'netrt_dst','Ports.Gaps') for x in r], n)}, {sp([c(x,'netrt_dst','Ports.Beyond') for x in r], n)}, {sp([c(x,'netrt_src','Ports.Requests') for x in r], n)} |")
print()
print("Per seed (avg / p99 FCT ms, GBN then GBN + NetRT):")
print()
for q in ["128KiB", "256KiB", "512KiB", "1MiB"]:
    row = []
    for s in (1, 2, 3):
        a = json.load(open(f"gbn-{q}-s{s}/result.json"))["fct_all"]
        b = json.load(open(f"netrt-{q}-s{s}/result.json"))["fct_all"]
        row.append(f"seed {s}: {ms(a['mean_fct_ns'])} / {ms(a['p99_fct_ns'])}, {ms(b['mean_fct_ns'])} / {ms(b['p99_fct_ns'])}")
    print(f"- {q}: " + "; ".join(row))
