#!/usr/bin/python3
"""Known-answer ICRC vectors for rocetor/rocev2, from two implementations
that share no code with it.

  * scapy.contrib.roce (BTH.compute_icrc) computes the RoCEv2 ICRC of IPv4
    packets; it does not support IPv6.
  * spec_icrc below is written straight from IBA annex A17.3.3: the IEEE
    CRC-32 (zlib.crc32) of eight 0xff bytes standing for the masked LRH, the
    IP header with the fields a router may change set to ones (IPv4: TOS, TTL,
    header checksum; IPv6: traffic class, flow label, hop limit), the UDP
    header with its checksum set to ones, the BTH with byte 4 (FECN, BECN,
    resv6) set to ones, and the rest of the packet up to the ICRC, which is
    stored little-endian.

Every IPv4 vector is computed by both and must agree (the script stops
otherwise); IPv6 vectors come from spec_icrc alone.

Usage:
  /usr/bin/python3 scripts/icrc-vectors.py > rocev2/testdata/icrc-vectors.txt
      writes the vectors (deterministic: the output is the committed file).
  /usr/bin/python3 scripts/icrc-vectors.py --recompute < frames
      reads one hex frame per line and prints "SPEC SCAPY" per line, the
      ICRC each implementation computes as 8 hex digits, SCAPY being "-"
      for a packet scapy cannot do (IPv6). rocev2's TestICRCScapy uses it.
"""

import random
import struct
import sys
import zlib

import scapy.config

scapy.config.conf.verb = 0
scapy.config.conf.logLevel = 40  # keep "No route found" warnings out of the output

from scapy.compat import raw  # noqa: E402
from scapy.contrib.roce import BTH  # noqa: E402
from scapy.layers.inet import IP, UDP, IPOption_EOL, IPOption_NOP  # noqa: E402
from scapy.layers.inet6 import IPv6  # noqa: E402
from scapy.layers.l2 import Dot1Q, Ether  # noqa: E402
from scapy.packet import Raw  # noqa: E402

ROCE_PORT = 4791


def spec_icrc(frame):
    """The ICRC of the RoCEv2 packet in an Ethernet frame, from the spec."""
    off = 14
    etype = struct.unpack("!H", frame[12:14])[0]
    if etype == 0x8100:
        etype = struct.unpack("!H", frame[16:18])[0]
        off = 18
    if etype == 0x88B5:  # rocetor's link shim: 8 bytes, inner type last
        etype = struct.unpack("!H", frame[off + 6:off + 8])[0]
        off += 8
    pkt = bytearray(frame[off:])
    if etype == 0x0800:
        ihl = (pkt[0] & 0x0F) * 4
        del pkt[struct.unpack("!H", pkt[2:4])[0]:]
        pkt[1] = 0xFF  # TOS
        pkt[8] = 0xFF  # TTL
        pkt[10:12] = b"\xff\xff"  # header checksum
        udp = ihl
    elif etype == 0x86DD:
        del pkt[40 + struct.unpack("!H", pkt[4:6])[0]:]
        pkt[0] |= 0x0F  # traffic class, high nibble
        pkt[1:4] = b"\xff\xff\xff"  # traffic class low nibble, flow label
        pkt[7] = 0xFF  # hop limit
        udp = 40
    else:
        raise ValueError("not IPv4 or IPv6: ethertype 0x%04x" % etype)
    ulen = struct.unpack("!H", pkt[udp + 4:udp + 6])[0]
    del pkt[udp + ulen - 4:]  # drop the ICRC itself
    pkt[udp + 6:udp + 8] = b"\xff\xff"  # UDP checksum
    pkt[udp + 8 + 4] = 0xFF  # BTH byte 4: FECN, BECN, resv6
    return zlib.crc32(b"\xff" * 8 + bytes(pkt)) & 0xFFFFFFFF


def scapy_icrc(frame):
    """scapy's ICRC of the packet, or None when scapy cannot compute it."""
    # compute_icrc copies the IP layer with whatever follows it, Ethernet
    # padding included, so hand scapy the frame without the padding.
    p = Ether(frame[:datagram_end(frame)])
    if IP not in p or BTH not in p:
        return None
    return struct.unpack("<I", p[BTH].compute_icrc(None))[0]


def datagram_end(frame):
    """Where the IP datagram in an Ethernet frame ends: padding follows."""
    off = 14
    if frame[12:14] == b"\x81\x00":
        off = 18
    if frame[off - 2:off] == b"\x88\xb5":
        off += 8
    if frame[off] >> 4 == 4:
        return off + struct.unpack("!H", frame[off + 2:off + 4])[0]
    return off + 40 + struct.unpack("!H", frame[off + 4:off + 6])[0]


def stored_icrc(frame):
    """The ICRC stored in the frame (little-endian before Ethernet padding)."""
    end = datagram_end(frame)
    return struct.unpack("<I", frame[end - 4:end])[0]


def roce(rng, v6, opcode, ext_len, payload_len, vlan=False, options=0,
         tos=None, ttl=None, fecn=False, becn=False, udp_csum=0, flow=None):
    """A RoCEv2 frame built with scapy's layers; its ICRC is filled in."""
    pad = -payload_len & 3
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    if vlan:
        eth = eth / Dot1Q(prio=3, vlan=rng.randrange(1, 4095))
    tos = rng.randrange(256) if tos is None else tos
    ttl = rng.randrange(1, 256) if ttl is None else ttl
    if v6:
        ip = IPv6(src="fd00::%x" % rng.randrange(1, 0xFFFF),
                  dst="fd00:1::%x" % rng.randrange(1, 0xFFFF), tc=tos,
                  fl=rng.randrange(1 << 20) if flow is None else flow, hlim=ttl)
    else:
        opts = [IPOption_NOP()] * (options - 1) + [IPOption_EOL()] if options else []
        ip = IP(src="10.0.%d.%d" % (rng.randrange(256), rng.randrange(1, 255)),
                dst="10.1.%d.%d" % (rng.randrange(256), rng.randrange(1, 255)),
                tos=tos, ttl=ttl, id=rng.randrange(1 << 16), flags="DF", options=opts)
    udp = UDP(sport=rng.randrange(0xC000, 0x10000), dport=ROCE_PORT, chksum=udp_csum)
    bth = BTH(opcode=opcode, solicited=rng.randrange(2), migreq=rng.randrange(2),
              padcount=pad, pkey=rng.choice([0xFFFF, 0x8001, 0x7FFF]), fecn=int(fecn),
              becn=int(becn), dqpn=rng.randrange(1 << 24), ackreq=rng.randrange(2),
              psn=rng.randrange(1 << 24), icrc=0)
    body = bytearray(rng.randrange(256) for _ in range(ext_len + payload_len)) + b"\0" * pad
    if opcode == 0xC0:
        body[0] = 1  # NetRT retransmission request: type 1, ePSN, bitmap
    frame = bytearray(raw(eth / ip / udp / bth / Raw(bytes(body))))
    # scapy fills in the ICRC only for IPv4; write the spec's for both and
    # check scapy's in add.
    end = len(frame)
    frame[end - 4:end] = struct.pack("<I", spec_icrc(bytes(frame)))
    # Ethernet pads frames to 60 bytes (without the FCS); the shortest
    # RoCEv2 packet, a SEND ONLY without payload over IPv4, is 58.
    frame += b"\0" * (60 - len(frame))
    return bytes(frame)


def vectors():
    rng = random.Random(4791)
    out = []

    def add(name, frame):
        want = spec_icrc(frame)
        sc = scapy_icrc(frame)
        if sc is not None and sc != want:
            sys.exit("%s: scapy ICRC %08x != spec ICRC %08x" % (name, sc, want))
        if stored_icrc(frame) != want:
            sys.exit("%s: stored ICRC is not the computed one" % name)
        out.append((name, frame, want, "scapy+spec" if sc is not None else "spec"))

    for v6 in (False, True):
        fam = "ipv6" if v6 else "ipv4"
        # Pad counts 0-3 on a SEND ONLY.
        for n in (0, 1, 2, 3, 4, 5, 6, 7):
            add("%s-rc-send-only-len%d" % (fam, n), roce(rng, v6, 0x04, 0, n))
        add("%s-rc-write-first-reth" % fam, roce(rng, v6, 0x06, 16, 64))
        add("%s-rc-write-middle-1k" % fam, roce(rng, v6, 0x07, 0, 1024))
        add("%s-rc-write-only-imm" % fam, roce(rng, v6, 0x0B, 20, 33))
        add("%s-rc-read-request" % fam, roce(rng, v6, 0x0C, 16, 0))
        add("%s-rc-read-response-first" % fam, roce(rng, v6, 0x0D, 4, 256))
        add("%s-rc-ack" % fam, roce(rng, v6, 0x11, 4, 0))
        add("%s-rc-atomic-ack" % fam, roce(rng, v6, 0x12, 12, 0))
        add("%s-rc-compare-swap" % fam, roce(rng, v6, 0x13, 28, 0))
        add("%s-rc-flush" % fam, roce(rng, v6, 0x1C, 20, 0))
        add("%s-rc-atomic-write" % fam, roce(rng, v6, 0x1D, 16, 8))
        add("%s-uc-send-first" % fam, roce(rng, v6, 0x20, 0, 100))
        add("%s-ud-send-only-deth" % fam, roce(rng, v6, 0x64, 8, 61))
        add("%s-cnp" % fam, roce(rng, v6, 0x81, 0, 16, becn=True))
        add("%s-netrt-request" % fam, roce(rng, v6, 0xC0, 20, 0))
        add("%s-vlan-rc-send-middle" % fam, roce(rng, v6, 0x01, 0, 200, vlan=True))
        # Masked fields at their extremes: the ICRC must not depend on them.
        add("%s-masked-all-ones" % fam, roce(rng, v6, 0x0A, 16, 40, tos=0xFF, ttl=0xFF,
                                             fecn=True, becn=True, udp_csum=0xFFFF,
                                             flow=0xFFFFF))
        add("%s-masked-all-zero" % fam, roce(rng, v6, 0x0A, 16, 40, tos=0, ttl=1, flow=0))
        add("%s-rc-send-only-4k" % fam, roce(rng, v6, 0x04, 0, 4096))
    # IPv4 options shift the UDP and BTH masks.
    for n in (4, 8, 40):
        add("ipv4-options%d-rc-write-first" % n, roce(rng, False, 0x06, 16, 24, options=n))
        add("ipv4-options%d-vlan-rc-ack" % n, roce(rng, False, 0x11, 4, 0, options=n, vlan=True))
    return out


def main():
    if sys.argv[1:] == ["--recompute"]:
        for line in sys.stdin:
            line = line.strip()
            if not line:
                continue
            frame = bytes.fromhex(line)
            sc = scapy_icrc(frame)
            print("%08x %s" % (spec_icrc(frame), "-" if sc is None else "%08x" % sc))
        return
    if sys.argv[1:]:
        sys.exit(__doc__)
    print("# RoCEv2 ICRC known-answer vectors for rocetor/rocev2 (TestICRCVectors).")
    print("#")
    print("# Generated by: /usr/bin/python3 scripts/icrc-vectors.py > rocev2/testdata/icrc-vectors.txt")
    print("# (python3-scapy 2.5; the output is deterministic). Frames are built with")
    print("# scapy's layers. 'scapy+spec' lines: scapy.contrib.roce's BTH.compute_icrc")
    print("# and the script's own implementation of IBA annex A17.3.3 agree; 'spec'")
    print("# lines (IPv6, which scapy does not support) come from the latter alone.")
    print("# The ICRC is the value zlib.crc32 returns; the frame stores it")
    print("# little-endian in its last four bytes before any Ethernet padding.")
    print("#")
    print("# name source icrc frame-hex")
    for name, frame, icrc, src in vectors():
        print("%s %s %08x %s" % (name, src, icrc, frame.hex()))


if __name__ == "__main__":
    main()
