#!/usr/bin/env python3
"""netrt-incast: how each lost data packet came to light at the destination ToR.

For each record named (default: the sets run.sh writes), one line a cell: drops at the switches'
queues (queue_full: on this fabric the core's port toward the receiver's ToR, every one a data packet
or a NetRT notice), the PSNs a later packet of the same pass showed missing by what the destination
ToR did with it (netrt_dst Ports.Miss*: requested, beyond the 128-PSN bitmap, waited, passed in
Waiting, budget full, below ePSN = copies of delivered packets), those a host's NAK named below the
ePSN (MissNAKed: a flow's first packets, lost before its entry began; an upper bound), the rest never
shown (drops less both: no later packet of their pass reached the ToR before the sender went back),
and the senders'
go-backs seen at the ToR after a host's NAK or after a timeout (Ports.GoBacks, GoBacksNAK), beside
the hosts' timeouts and NAKs. Then the median over seeds per point.
"""
import json
import statistics
import sys

D = 'docs/results/fabric/'
SETS = ['miss', 'tailprobe', 'base', 's20', 's20-noca', 's20-buf1', 's20-passive', 's20-maxreq1', 's20-pool4m']
MISS = ['MissRequested', 'MissBeyond', 'MissWaited', 'MissPassed', 'MissFull', 'MissDelivered']


def row(run):
    f = run['fabric']
    st = f['stages'].get('netrt_dst', {})
    h = f['host_counters']
    drops = f['switch_drops'].get('queue_full', 0)
    miss = {k: st.get('Ports.' + k, 0) for k in MISS}
    shown = sum(miss.values())
    naked = st.get('Ports.MissNAKed', 0)
    fct = f['fct_all']
    return {
        'avg': fct['mean_fct_ns'] / 1e6, 'p99': fct['p99_fct_ns'] / 1e6, 'drops': drops,
        **miss, 'MissNAKed': naked, 'shown': shown, 'unshown': drops - shown - naked,
        'gobacks': st.get('Ports.GoBacks', 0), 'gobacks_nak': st.get('Ports.GoBacksNAK', 0),
        'timeouts': h['Timeouts'], 'naks': h['SeqNAKsSent'], 'retx': h['Retransmits'],
        'requests': st.get('Ports.Requests', 0),
    }


COLS = ['avg', 'p99', 'drops', 'MissRequested', 'MissBeyond', 'MissWaited', 'MissPassed', 'MissFull',
        'MissDelivered', 'MissNAKed', 'unshown', 'gobacks', 'gobacks_nak', 'timeouts', 'naks', 'retx', 'requests']


def fmt(v):
    return f'{v:.3f}' if isinstance(v, float) else f'{v:,}'


def main(sets):
    hdr = ['set', 'scheme', 'senders', 'seed'] + COLS
    print('| ' + ' | '.join(hdr) + ' |')
    print('|' + ' --- |' * len(hdr))
    med = {}
    for s in sets:
        rec = json.load(open(D + 'netrt-incast-' + s + '.json'))
        for run in rec['runs']:
            p = run['point']
            r = row(run)
            print('| ' + ' | '.join([s, p['scheme'], p['senders'], str(run['repeat'])] + [fmt(r[c]) for c in COLS]) + ' |')
            med.setdefault((s, p['scheme'], p['senders']), []).append(r)
    print()
    print('Medians over seeds:')
    print()
    hdr = ['set', 'scheme', 'senders', 'seeds'] + COLS
    print('| ' + ' | '.join(hdr) + ' |')
    print('|' + ' --- |' * len(hdr))
    for (s, sc, n), rs in med.items():
        m = {c: statistics.median([r[c] for r in rs]) for c in COLS}
        print('| ' + ' | '.join([s, sc, n, str(len(rs))] + [fmt(m[c]) for c in COLS]) + ' |')


if __name__ == '__main__':
    main(sys.argv[1:] or SETS)
