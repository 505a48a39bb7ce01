# Summarises the cells run.sh wrote: median (range) over seeds 1-3.
import json, statistics as st
cells = ["base", "rto-low-200us", "rto-320us", "ack-every-4", "ack-every-1", "no-cc", "no-cc-ack-every-1"]
def sp(v, f):
    return f"{f(st.median(v))} ({f(min(v))} … {f(max(v))})"
print("| cell | avg FCT ms | p99 FCT ms | retransmits | timeouts: RTO_low / RTO_high | duplicates received |")
print("| --- | --: | --: | --: | --: | --: |")
for c in cells:
    rs = [json.load(open(f"{c}-s{s}/result.json")) for s in (1, 2, 3)]
    h = [r["host_counters"] for r in rs]
    ms = lambda v: f"{v/1e6:.3f}"
    n = lambda v: f"{v:.0f}"
    print(f"| {c} | {sp([r['fct_all']['mean_fct_ns'] for r in rs], ms)} | {sp([r['fct_all']['p99_fct_ns'] for r in rs], ms)} | "
          f"{sp([x['Retransmits'] for x in h], n)} | {sp([x['TimeoutsLow'] for x in h], n)} / {sp([x['TimeoutsHigh'] for x in h], n)} | "
          f"{sp([x['Duplicates'] for x in h], n)} |")
