#!/usr/bin/env python3
"""Where the DUT's CPU goes per forwarded frame, from a perf call-graph
profile of the DUT's CPU.

    perf record -C CPU -F HZ -g -o perf.data -- sleep S
    perf script -i perf.data -F comm,tid,ip,sym | \\
        perf-breakdown.py --hz HZ --frames N --dut tord

Each sample is 1/HZ s of the CPU; a sample's category comes from its
comm and call chain (leaf first). The table gives nanoseconds of that
CPU per frame forwarded (N frames reached the sink while perf ran), so
it needs no quiet machine to be meaningful: time other programs took
on the CPU is listed apart and not charged to the frames. veth's ingress
NAPI thread ("napi/<dev>-<id>", threaded NAPI pinned to the DUT's CPU by
bench-forward.sh) is the receive half; the DUT's own threads carry the
transmit half (copy-mode sendto, and the sink's NAPI that veth runs in
the sender's softirq), the user-space pipeline and the idle loop.
"""

import argparse
import collections
import sys

# Receive, in the ingress NAPI thread. First match wins.
NAPI = [
    ("rx: skb to a page-pool page for XDP (skb_pp_cow_data)", ("skb_pp_cow_data",)),
    ("rx: freeing the generator's skb (its tx completion: xsk_destruct_skb, sock_wfree)",
     ("xsk_destruct_skb", "sock_wfree", "consume_skb", "kfree_skb", "skb_release", "page_frag_free", "kmem_cache_free",
      "kfree")),
    ("rx: copy into the UMEM (xsk_rcv, xp_alloc)", ("__xsk_rcv", "xsk_rcv", "xp_alloc", "__xsk_rcv_zc", "xsk_generic_rcv",
                                                     "xsk_flush", "__xsk_map_flush")),
    ("rx: XDP program and redirect", ("bpf_prog_", "xdp_do_redirect", "xsk_map_redirect", "bpf_xdp_redirect_map")),
    ("rx: rest of veth_poll and NAPI", ()),
]

# Kernel, in the DUT's threads.
KERNEL = [
    ("tx: the sink's NAPI and XDP, run in the sendto's softirq", ("net_rx_action", "__napi_poll", "veth_poll"), "sendto"),
    ("tx: veth_xmit (hand the skb to the sink)", ("veth_xmit",), "sendto"),
    ("tx: __xsk_generic_xmit (skb alloc, copy from the UMEM, rest of sendto)", (), "sendto"),
    ("rx: busy-poll recvfrom (veth_poll in the DUT's thread)", ("net_rx_action", "__napi_poll", "veth_poll"), "recvfrom"),
    ("rx: recvfrom, rest", (), "recvfrom"),
    ("idle: sched_yield", (), "sched_yield"),
    ("idle: poll/ppoll", (), "poll"),
    ("stats: getsockopt", (), "getsockopt"),
]

SYSCALLS = [
    ("sendto", ("__sys_sendto", "__x64_sys_sendto", "xsk_sendmsg", "Socket).Wakeup")),
    ("recvfrom", ("__sys_recvfrom", "__x64_sys_recvfrom", "xsk_recvmsg", "Socket).recv")),
    ("sched_yield", ("do_sched_yield", "__x64_sys_sched_yield", "Worker).yield", "afxdp.Yield")),
    ("poll", ("do_sys_poll", "__x64_sys_ppoll", "__x64_sys_poll", "Socket).Poll", "Ppoll")),
    ("getsockopt", ("do_sock_getsockopt", "__sys_getsockopt", "Socket).Stats")),
]

USER = [
    ("user: pipeline (classify, stages, queues)", ("Worker).receive", "Worker).process", "Worker).dispatch", "Egress)",
                                                   "rocev2.", "tor/fwd", "Worker).dropPacket", "(*queue)")),
    ("user: AF_XDP rings and frames", ("afxdp.", "XDPPort)", "(*Mem)")),
    ("user: loop (Run, Step, clock) and the Go runtime", ()),
]


def has(chain, keys):
    return any(k in f for f in chain for k in keys)


def classify(comm, chain, dut):
    """Returns (group, category) for one sample; chain is leaf first."""
    if comm.startswith("napi/"):
        for name, keys in NAPI:
            if not keys or has(chain, keys):
                return "rx", name
    if comm not in dut:
        return "other", "other programs on the CPU (not charged)"
    kernel = bool(chain) and chain[0].startswith("[k]")
    call = next((c for c, keys in SYSCALLS if has(chain, keys)), None)
    if call:
        for name, keys, c in KERNEL:
            if c == call and (not keys or has(chain, keys)):
                # A user-space sample in the syscall's Go caller is
                # the entry or return of the call: charge it there.
                return name.split(":")[0], name
    if kernel:
        return "kernel", "kernel: other (interrupts, scheduler, page faults)"
    for name, keys in USER:
        if not keys or has(chain, keys):
            return "user", name
    return "user", USER[-1][0]


def samples(f):
    """Yields (comm, chain) from perf script -F comm,tid,ip,sym output."""
    comm, chain = None, []
    for line in f:
        if not line.strip():
            if comm is not None:
                yield comm, chain
            comm, chain = None, []
            continue
        if not line[0].isspace():
            if comm is not None:
                yield comm, chain
            parts = line.split()
            comm, chain = " ".join(parts[:-1]) if len(parts) > 1 else parts[0], []
            continue
        parts = line.split(None, 1)
        ip = parts[0]
        sym = parts[1].strip() if len(parts) > 1 else "?"
        chain.append(("[k] " if ip.startswith("ffffffff") else "[.] ") + sym)
    if comm is not None:
        yield comm, chain


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hz", type=float, required=True, help="perf record -F")
    ap.add_argument("--frames", type=float, required=True, help="frames forwarded while perf recorded")
    ap.add_argument("--dut", default="tord", help="comma-separated comms of the DUT's threads (default tord)")
    a = ap.parse_args()
    dut = set(a.dut.split(","))
    cat = collections.Counter()
    total = 0
    for comm, chain in samples(sys.stdin):
        cat[classify(comm, chain, dut)] += 1
        total += 1
    if total == 0 or a.frames <= 0:
        sys.exit("perf-breakdown: no samples or no frames")
    ns = 1e9 / a.hz / a.frames
    charged = sum(n for (g, _), n in cat.items() if g != "other")
    print("| where | ns per forwarded frame | share of the DUT's time |")
    print("| --- | ---: | ---: |")
    for (g, name), n in sorted(cat.items(), key=lambda kv: (kv[0][0] == "other", -kv[1])):
        share = f"{100 * n / charged:.0f} %" if g != "other" else ""
        print(f"| {name} | {n * ns:,.0f} | {share} |")
    print(f"| **all of the DUT (rx + tx + user + idle)** | **{charged * ns:,.0f}** | 100 % |")
    print(f"\n{total} samples at {a.hz:g} Hz, {a.frames:,.0f} frames forwarded.")


if __name__ == "__main__":
    main()
