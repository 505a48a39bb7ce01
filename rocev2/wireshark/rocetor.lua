-- rocetor.lua: Wireshark/tshark dissector for the wire formats rocetor adds
-- to RoCEv2 (docs/wire-formats.md has them byte by byte; rocev2/*.go is the
-- reference implementation).
--
--   tshark -X lua_script:rocev2/wireshark/rocetor.lua -r capture.pcap -V
--   tshark -X lua_script:rocev2/wireshark/rocetor.lua -o rocetor.dcp:TRUE ...
--
-- or copy the file into Wireshark's personal Lua plugins folder
-- (Help > About > Folders). Written against Wireshark 4.0 (Lua 5.2, bit32).
--
-- What it dissects:
--
--   * The link-retransmission shim (rocev2/shim.go; seed 003, §3.5 and
--     appendix A) under EtherType 0x88b5. The frame behind an original or
--     retransmitted (or watched) shim goes to the "ethertype" table with the shim's inner
--     EtherType, so the IP/RoCEv2 inside decodes as usual.
--   * NetRT messages (rocev2/netrt.go; seed 000, §III-C/D): RoCEv2 packets
--     with BTH opcode 0xc0.
--   * DCP packets (rocev2/dcp.go; seed 002, §4.2-4.5), only when the
--     preference "rocetor.dcp" is on and the two low DSCP bits of the
--     enclosing IP header are non-zero: BTH, the DCP extension header, the
--     standard extension headers of the opcode with a RETH in every WRITE
--     packet, payload and ICRC. Header-only packets (tag 11) carry only BTH
--     and DCP header.
--   * Congestion notification packets (CNP, BTH opcode 0x81; DCQCN's
--     notification point, nic/cc): BTH with FECN and BECN, the 16 reserved
--     bytes as payload, ICRC checked. Wireshark 4.0 does not know the
--     opcode.
--   * SACK ACKs (rocev2/sack.go; IRN, seed 004 §3.1; FaSR, seed 001
--     §III-B), only when the preference "rocetor.sack" is on: an RC
--     ACKNOWLEDGE with exactly the 8 bytes of a SACKETH after its AETH (and
--     no pad). Other RC ACKs, standard ones, still go to Wireshark's
--     dissector. Turn both preferences on for a DCP capture that has SACK
--     ACKs too: a DCP ACK is as long as a SACK ACK.
--
-- It replaces Wireshark's RoCEv2 dissector on UDP port 4791 and hands every
-- other packet to that dissector unchanged, so standard RoCEv2 still shows
-- the infiniband.* fields. For the packets it dissects itself it also
-- verifies the ICRC (IBA annex A17.3.3, as rocev2/icrc.go computes it).
--
-- Fields (display filter names):
--
--   rocetor.shim.seq          link sequence number (16 bits)
--   rocetor.shim.era          era bit of seq
--   rocetor.shim.ack_valid    ack carries a cumulative ACK
--   rocetor.shim.ack_era      era bit of ack
--   rocetor.shim.reserved     two reserved bits, 0
--   rocetor.shim.type         0 original, 1 retransmit, 2 dummy, 3 ack, 4 loss,
--                             5 watch, 6 protect, 7 sync
--   rocetor.shim.count        loss notice: number of missing sequences from seq;
--                             protect: the loss code (tenths of a decade);
--                             sync: 1 when the sender needs an answer
--   rocetor.shim.ack          piggybacked cumulative ACK (next expected seq)
--   rocetor.shim.inner_type   EtherType of the carried frame (0: none)
--   rocetor.shim.link_seq     generated: era<<16 | seq, the 17-bit psn.Link
--   rocetor.shim.link_ack     generated: ack_era<<16 | ack (when ack_valid)
--   rocetor.shim.epoch        sync: the sender's epoch (bytes 6-7)
--   rocetor.shim.echo         sync: the receiver's epoch echoed, 0 none (bytes 4-5)
--
--   rocetor.bth.opcode .se .m .padcnt .tver .pkey .fecn .becn .destqp
--   rocetor.bth.ackreq .psn   the BTH of a packet this script dissects
--   rocetor.netrt.type        1 request, 2 unfulfilled
--   rocetor.netrt.epsn        request: expected PSN at the destination ToR
--   rocetor.netrt.psn         unfulfilled notice: the PSN the pool lacks
--   rocetor.netrt.bitmap      request: 128-bit bitmap, bit i = ePSN+1+i arrived
--   rocetor.netrt.arrived     generated: number of bits set in the bitmap
--   rocetor.dcp.tag           generated from the DSCP: 0 none, 1 ack, 2 data,
--                             3 header-only
--   rocetor.dcp.msn           MSN (data, header-only) or eMSN (ACK)
--   rocetor.dcp.retry         sRetryNo (data) or rRetryNo (ACK)
--   rocetor.dcp.ssn           send sequence number
--   rocetor.dcp.reserved      reserved byte, 0
--   rocetor.dcp.header_only   generated: true for a trimmed packet
--   rocetor.sack.psn          SACKETH: the SACK (triggering, FNACK) PSN
--   rocetor.sack.flags        SACKETH flag byte
--   rocetor.sack.fnack        flag bit 0: FaSR FNACK
--   rocetor.sack.lost_overflow flag bit 1: FaSR lost-cnt overflow
--   rocetor.sack.lost_cnt     FaSR lost-cnt
--   rocetor.sack.reserved     bytes 5-7, 0
--   rocetor.deth.qkey .srcqp, rocetor.feth, rocetor.reth.va .rkey .dmalen,
--   rocetor.atomiceth.va .rkey .swapadd .compare, rocetor.aeth.syndrome
--   .type .value .msn, rocetor.atomicack.origdata, rocetor.immdt,
--   rocetor.ieth.rkey         the standard extension headers
--   rocetor.payload, rocetor.pad
--   rocetor.icrc              the ICRC as stored (little-endian, as Linux
--                             rxe and ConnectX write it)
--   rocetor.icrc.computed     generated: the ICRC this script computes
--   rocetor.icrc.status       generated: 0 unverified, 1 good, 2 bad

local bit = bit32

local rocetor = Proto("rocetor", "rocetor RoCEv2 (NetRT, DCP, SACK)")
local shim = Proto("rocetor.shim", "rocetor link-retransmission shim")

rocetor.prefs.dcp = Pref.bool("DCP fabric", false,
	"Dissect RoCEv2 packets whose two low DSCP bits are non-zero as DCP " ..
	"packets (DCP extension header after the BTH). Turn on only for " ..
	"captures from a DCP fabric, where those bits are reserved for DCP.")
rocetor.prefs.sack = Pref.bool("SACK fabric", false,
	"Dissect RC ACKs with exactly 8 bytes after the AETH as carrying a " ..
	"SACK extension header (IRN, FaSR). Turn on only for captures of " ..
	"transports that acknowledge selectively.")

---------------------------------------------------------------------------
-- Link shim

local shim_types = { [0] = "original", [1] = "retransmit", [2] = "dummy", [3] = "ack", [4] = "loss", [5] = "watch", [6] = "protect", [7] = "sync" }
local ethertypes = { [0x0000] = "none", [0x0800] = "IPv4", [0x86dd] = "IPv6", [0x8808] = "MAC Control", [0x8100] = "802.1Q" }

local sf = {
	seq        = ProtoField.uint16("rocetor.shim.seq", "Sequence", base.DEC),
	era        = ProtoField.bool("rocetor.shim.era", "Era", 8, nil, 0x80),
	ack_valid  = ProtoField.bool("rocetor.shim.ack_valid", "ACK valid", 8, nil, 0x40),
	ack_era    = ProtoField.bool("rocetor.shim.ack_era", "ACK era", 8, nil, 0x20),
	reserved   = ProtoField.uint8("rocetor.shim.reserved", "Reserved", base.HEX, nil, 0x18),
	type       = ProtoField.uint8("rocetor.shim.type", "Type", base.DEC, shim_types, 0x07),
	count      = ProtoField.uint8("rocetor.shim.count", "Count", base.DEC),
	ack        = ProtoField.uint16("rocetor.shim.ack", "ACK", base.DEC),
	inner_type = ProtoField.uint16("rocetor.shim.inner_type", "Inner EtherType", base.HEX, ethertypes),
	link_seq   = ProtoField.uint32("rocetor.shim.link_seq", "Link sequence (era<<16 | seq)", base.DEC),
	link_ack   = ProtoField.uint32("rocetor.shim.link_ack", "Link ACK (era<<16 | ack)", base.DEC),
	epoch      = ProtoField.uint16("rocetor.shim.epoch", "Sync: sender epoch", base.DEC),
	echo       = ProtoField.uint16("rocetor.shim.echo", "Sync: receiver epoch echoed", base.DEC),
}
shim.fields = { sf.seq, sf.era, sf.ack_valid, sf.ack_era, sf.reserved, sf.type, sf.count,
	sf.ack, sf.inner_type, sf.link_seq, sf.link_ack, sf.epoch, sf.echo }

local ex_shim_short = ProtoExpert.new("rocetor.shim.short", "Link shim truncated", expert.group.MALFORMED, expert.severity.ERROR)
local ex_shim_type = ProtoExpert.new("rocetor.shim.bad_type", "Link shim reserved bits set (a later version)", expert.group.MALFORMED, expert.severity.ERROR)
shim.experts = { ex_shim_short, ex_shim_type }

local ethertype_table = DissectorTable.get("ethertype")
local data_dissector = Dissector.get("data")

function shim.dissector(tvb, pinfo, tree)
	local item = tree:add(shim, tvb(0, math.min(8, tvb:len())))
	if tvb:len() < 8 then
		item:add_proto_expert_info(ex_shim_short)
		return tvb:len()
	end
	item:add(sf.seq, tvb(0, 2))
	item:add(sf.era, tvb(2, 1))
	item:add(sf.ack_valid, tvb(2, 1))
	item:add(sf.ack_era, tvb(2, 1))
	item:add(sf.reserved, tvb(2, 1))
	local ti = item:add(sf.type, tvb(2, 1))
	item:add(sf.count, tvb(3, 1))
	item:add(sf.ack, tvb(4, 2))
	item:add(sf.inner_type, tvb(6, 2))

	local seq, flags, count = tvb(0, 2):uint(), tvb(2, 1):uint(), tvb(3, 1):uint()
	local ack, inner = tvb(4, 2):uint(), tvb(6, 2):uint()
	local typ = bit.band(flags, 7)
	local era = bit.band(flags, 0x80) ~= 0
	local ack_valid = bit.band(flags, 0x40) ~= 0
	local ack_era = bit.band(flags, 0x20) ~= 0
	local lseq = seq + (era and 0x10000 or 0)
	item:add(sf.link_seq, lseq):set_generated()
	if ack_valid then
		item:add(sf.link_ack, ack + (ack_era and 0x10000 or 0)):set_generated()
	end

	local name = shim_types[typ]
	if bit.band(flags, 0x18) ~= 0 then
		ti:add_proto_expert_info(ex_shim_type)
	end
	local summary = string.format("shim %s seq=%d%s", name, seq, era and " (era 1)" or "")
	if typ == 4 then
		summary = summary .. string.format(" count=%d", count)
	end
	if typ == 7 then
		item:add(sf.epoch, tvb(6, 2))
		item:add(sf.echo, tvb(4, 2))
		summary = summary .. string.format(" epoch=%d echo=%d%s", inner, ack, count == 1 and " need" or "")
	end
	if ack_valid then
		summary = summary .. string.format(" ack=%d%s", ack, ack_era and " (era 1)" or "")
	end
	item:append_text(", " .. summary)

	local consumed = 8
	if (typ == 0 or typ == 1 or typ == 5) and inner ~= 0 and tvb:len() > 8 then
		local sub = tvb(8):tvb()
		local n = ethertype_table:try(inner, sub, pinfo, tree)
		if n == nil or n <= 0 then
			data_dissector:call(sub, pinfo, tree)
			n = sub:len()
		end
		consumed = consumed + n
		pinfo.cols.info:prepend("[" .. summary .. "] ")
	else
		pinfo.cols.protocol = "Shim"
		pinfo.cols.info = "Link " .. summary
	end
	return consumed
end

ethertype_table:add(0x88b5, shim)

---------------------------------------------------------------------------
-- RoCEv2: NetRT and DCP

-- Extension headers, in the order they follow the BTH (rocev2/opcode.go).
local DCP, DETH, FETH, RETH, ATOMICETH, AETH, ATOMICACK, IMMDT, IETH, SACK, NETRT =
	1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024
local ext_order = { DCP, DETH, FETH, RETH, ATOMICETH, AETH, ATOMICACK, IMMDT, IETH, SACK, NETRT }
local ext_len = { [DCP] = 8, [DETH] = 8, [FETH] = 4, [RETH] = 16, [ATOMICETH] = 28,
	[AETH] = 4, [ATOMICACK] = 8, [IMMDT] = 4, [IETH] = 4, [SACK] = 8, [NETRT] = 0 }

-- The opcode table of rocev2/opcode.go: name, extension headers, WRITE.
local ops = {
	[0x00] = { "RC_SEND_FIRST", 0 },
	[0x01] = { "RC_SEND_MIDDLE", 0 },
	[0x02] = { "RC_SEND_LAST", 0 },
	[0x03] = { "RC_SEND_LAST_WITH_IMMEDIATE", IMMDT },
	[0x04] = { "RC_SEND_ONLY", 0 },
	[0x05] = { "RC_SEND_ONLY_WITH_IMMEDIATE", IMMDT },
	[0x06] = { "RC_RDMA_WRITE_FIRST", RETH, true },
	[0x07] = { "RC_RDMA_WRITE_MIDDLE", 0, true },
	[0x08] = { "RC_RDMA_WRITE_LAST", 0, true },
	[0x09] = { "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", IMMDT, true },
	[0x0a] = { "RC_RDMA_WRITE_ONLY", RETH, true },
	[0x0b] = { "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", RETH + IMMDT, true },
	[0x0c] = { "RC_RDMA_READ_REQUEST", RETH },
	[0x0d] = { "RC_RDMA_READ_RESPONSE_FIRST", AETH },
	[0x0e] = { "RC_RDMA_READ_RESPONSE_MIDDLE", 0 },
	[0x0f] = { "RC_RDMA_READ_RESPONSE_LAST", AETH },
	[0x10] = { "RC_RDMA_READ_RESPONSE_ONLY", AETH },
	[0x11] = { "RC_ACKNOWLEDGE", AETH },
	[0x12] = { "RC_ATOMIC_ACKNOWLEDGE", AETH + ATOMICACK },
	[0x13] = { "RC_COMPARE_SWAP", ATOMICETH },
	[0x14] = { "RC_FETCH_ADD", ATOMICETH },
	[0x16] = { "RC_SEND_LAST_WITH_INVALIDATE", IETH },
	[0x17] = { "RC_SEND_ONLY_WITH_INVALIDATE", IETH },
	[0x1c] = { "RC_FLUSH", FETH + RETH },
	[0x1d] = { "RC_ATOMIC_WRITE", RETH },
	[0x20] = { "UC_SEND_FIRST", 0 },
	[0x21] = { "UC_SEND_MIDDLE", 0 },
	[0x22] = { "UC_SEND_LAST", 0 },
	[0x23] = { "UC_SEND_LAST_WITH_IMMEDIATE", IMMDT },
	[0x24] = { "UC_SEND_ONLY", 0 },
	[0x25] = { "UC_SEND_ONLY_WITH_IMMEDIATE", IMMDT },
	[0x26] = { "UC_RDMA_WRITE_FIRST", RETH, true },
	[0x27] = { "UC_RDMA_WRITE_MIDDLE", 0, true },
	[0x28] = { "UC_RDMA_WRITE_LAST", 0, true },
	[0x29] = { "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE", IMMDT, true },
	[0x2a] = { "UC_RDMA_WRITE_ONLY", RETH, true },
	[0x2b] = { "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", RETH + IMMDT, true },
	[0x64] = { "UD_SEND_ONLY", DETH },
	[0x65] = { "UD_SEND_ONLY_WITH_IMMEDIATE", DETH + IMMDT },
	[0x81] = { "CNP", 0 },
	[0xc0] = { "NETRT", NETRT },
}
local op_names = {}
for k, v in pairs(ops) do op_names[k] = v[1] end

local dcp_tags = { [0] = "none", [1] = "ack", [2] = "data", [3] = "header-only" }
local netrt_types = { [1] = "request", [2] = "unfulfilled" }
local aeth_types = { [0] = "ACK", [1] = "RNR NAK", [2] = "reserved", [3] = "NAK" }
local icrc_status = { [0] = "unverified", [1] = "good", [2] = "bad" }

local f = {
	bth        = ProtoField.none("rocetor.bth", "Base Transport Header"),
	opcode     = ProtoField.uint8("rocetor.bth.opcode", "Opcode", base.HEX, op_names),
	se         = ProtoField.bool("rocetor.bth.se", "Solicited event", 8, nil, 0x80),
	m          = ProtoField.bool("rocetor.bth.m", "MigReq", 8, nil, 0x40),
	padcnt     = ProtoField.uint8("rocetor.bth.padcnt", "Pad count", base.DEC, nil, 0x30),
	tver       = ProtoField.uint8("rocetor.bth.tver", "Transport version", base.DEC, nil, 0x0f),
	pkey       = ProtoField.uint16("rocetor.bth.pkey", "P_Key", base.HEX),
	fecn       = ProtoField.bool("rocetor.bth.fecn", "FECN", 8, nil, 0x80),
	becn       = ProtoField.bool("rocetor.bth.becn", "BECN", 8, nil, 0x40),
	destqp     = ProtoField.uint24("rocetor.bth.destqp", "Destination QP", base.HEX),
	ackreq     = ProtoField.bool("rocetor.bth.ackreq", "AckReq", 8, nil, 0x80),
	psn        = ProtoField.uint24("rocetor.bth.psn", "PSN", base.DEC),

	netrt_type = ProtoField.uint8("rocetor.netrt.type", "Type", base.DEC, netrt_types),
	netrt_epsn = ProtoField.uint24("rocetor.netrt.epsn", "ePSN", base.DEC),
	netrt_psn  = ProtoField.uint24("rocetor.netrt.psn", "Unfulfilled PSN", base.DEC),
	bitmap     = ProtoField.bytes("rocetor.netrt.bitmap", "Bitmap (bit i: PSN ePSN+1+i arrived)"),
	arrived    = ProtoField.uint8("rocetor.netrt.arrived", "PSNs arrived after ePSN", base.DEC),

	tag        = ProtoField.uint8("rocetor.dcp.tag", "DCP tag", base.DEC, dcp_tags),
	msn        = ProtoField.uint24("rocetor.dcp.msn", "MSN (eMSN in an ACK)", base.DEC),
	retry      = ProtoField.uint8("rocetor.dcp.retry", "Retry number", base.DEC),
	ssn        = ProtoField.uint24("rocetor.dcp.ssn", "SSN", base.DEC),
	dcp_rsv    = ProtoField.uint8("rocetor.dcp.reserved", "Reserved", base.HEX),
	ho         = ProtoField.bool("rocetor.dcp.header_only", "Header-only (payload trimmed)"),

	sack_psn   = ProtoField.uint24("rocetor.sack.psn", "SACK PSN", base.DEC),
	sack_flags = ProtoField.uint8("rocetor.sack.flags", "Flags", base.HEX),
	sack_fnack = ProtoField.bool("rocetor.sack.fnack", "FNACK", 8, nil, 0x01),
	sack_ovf   = ProtoField.bool("rocetor.sack.lost_overflow", "Lost-cnt overflow", 8, nil, 0x02),
	lost_cnt   = ProtoField.uint8("rocetor.sack.lost_cnt", "Lost-cnt", base.DEC),
	sack_rsv   = ProtoField.uint24("rocetor.sack.reserved", "Reserved", base.HEX),

	qkey       = ProtoField.uint32("rocetor.deth.qkey", "Q_Key", base.HEX),
	srcqp      = ProtoField.uint24("rocetor.deth.srcqp", "Source QP", base.HEX),
	feth       = ProtoField.uint32("rocetor.feth", "FETH", base.HEX),
	va         = ProtoField.uint64("rocetor.reth.va", "Virtual address", base.HEX),
	rkey       = ProtoField.uint32("rocetor.reth.rkey", "R_Key", base.HEX),
	dmalen     = ProtoField.uint32("rocetor.reth.dmalen", "DMA length", base.DEC),
	a_va       = ProtoField.uint64("rocetor.atomiceth.va", "Virtual address", base.HEX),
	a_rkey     = ProtoField.uint32("rocetor.atomiceth.rkey", "R_Key", base.HEX),
	swapadd    = ProtoField.uint64("rocetor.atomiceth.swapadd", "Swap or add data", base.DEC),
	compare    = ProtoField.uint64("rocetor.atomiceth.compare", "Compare data", base.DEC),
	syndrome   = ProtoField.uint8("rocetor.aeth.syndrome", "Syndrome", base.HEX),
	syn_type   = ProtoField.uint8("rocetor.aeth.type", "Type", base.DEC, aeth_types, 0x60),
	syn_value  = ProtoField.uint8("rocetor.aeth.value", "Credits, RNR timer or NAK code", base.DEC, nil, 0x1f),
	aeth_msn   = ProtoField.uint24("rocetor.aeth.msn", "MSN", base.DEC),
	origdata   = ProtoField.uint64("rocetor.atomicack.origdata", "Original remote data", base.DEC),
	immdt      = ProtoField.uint32("rocetor.immdt", "Immediate data", base.HEX),
	ieth       = ProtoField.uint32("rocetor.ieth.rkey", "R_Key to invalidate", base.HEX),
	payload    = ProtoField.bytes("rocetor.payload", "Payload"),
	pad        = ProtoField.bytes("rocetor.pad", "Pad"),
	icrc       = ProtoField.uint32("rocetor.icrc", "ICRC", base.HEX),
	icrc_calc  = ProtoField.uint32("rocetor.icrc.computed", "Computed ICRC", base.HEX),
	icrc_stat  = ProtoField.uint8("rocetor.icrc.status", "ICRC status", base.DEC, icrc_status),
}
local fl = {}
for _, v in pairs(f) do fl[#fl + 1] = v end
rocetor.fields = fl

local ex_short = ProtoExpert.new("rocetor.short", "Packet shorter than its headers", expert.group.MALFORMED, expert.severity.ERROR)
local ex_netrt = ProtoExpert.new("rocetor.netrt.bad_type", "Unknown NetRT message type", expert.group.MALFORMED, expert.severity.ERROR)
local ex_icrc = ProtoExpert.new("rocetor.icrc.bad", "ICRC mismatch", expert.group.CHECKSUM, expert.severity.ERROR)
local ex_tver = ProtoExpert.new("rocetor.bth.bad_tver", "BTH transport version is not 0", expert.group.MALFORMED, expert.severity.WARN)
local ex_opcode = ProtoExpert.new("rocetor.bth.unknown_opcode", "Opcode unknown to rocetor", expert.group.UNDECODED, expert.severity.WARN)
rocetor.experts = { ex_short, ex_netrt, ex_icrc, ex_tver, ex_opcode }

-- CRC-32 (IEEE, reflected, as hash/crc32 and zlib compute it).
local crc_table = {}
for i = 0, 255 do
	local c = i
	for _ = 1, 8 do
		if bit.band(c, 1) ~= 0 then
			c = bit.bxor(0xedb88320, bit.rshift(c, 1))
		else
			c = bit.rshift(c, 1)
		end
	end
	crc_table[i] = c
end

local function crc_update(crc, ba, from, to)
	for i = from, to - 1 do
		crc = bit.bxor(crc_table[bit.band(bit.bxor(crc, ba:get_index(i)), 0xff)], bit.rshift(crc, 8))
	end
	return crc
end

local f_ip = Field.new("ip")
local f_ipv6 = Field.new("ipv6")
local f_udp = Field.new("udp")

-- enclosing_ip finds the IP header in front of the UDP header of this
-- RoCEv2 packet: the last IPv4 or IPv6 header that ends where the UDP
-- header starts, which in turn ends where tvb starts. It returns the IP
-- version, the header bytes (ByteArray) and the DSCP, or nil.
local function enclosing_ip(tvb)
	local udp_off = tvb:offset() - 8
	local has_udp = false
	for _, fi in ipairs({ f_udp() }) do
		if fi.offset == udp_off then has_udp = true end
	end
	if not has_udp then return nil end
	local best, ver
	for _, fi in ipairs({ f_ip() }) do
		if fi.offset + fi.len == udp_off then best, ver = fi, 4 end
	end
	for _, fi in ipairs({ f_ipv6() }) do
		if fi.offset + fi.len == udp_off and (best == nil or fi.offset > best.offset) then best, ver = fi, 6 end
	end
	if best == nil then return nil end
	local hdr = best.range:bytes()
	local tos
	if ver == 4 then
		tos = hdr:get_index(1)
	else
		tos = bit.bor(bit.lshift(bit.band(hdr:get_index(0), 0x0f), 4), bit.rshift(hdr:get_index(1), 4))
	end
	local udp
	for _, fi in ipairs({ f_udp() }) do
		if fi.offset == udp_off then udp = fi.range:bytes() end
	end
	return { ver = ver, hdr = hdr, udp = udp, dscp = bit.rshift(tos, 2) }
end

-- icrc computes the invariant CRC of the packet: eight 0xff bytes for the
-- masked LRH, then IP header, UDP header and BTH with the variant fields
-- set to ones, then the rest up to the ICRC (rocev2/icrc.go).
local function icrc(ip, tvb, icrc_off)
	local crc = 0xffffffff
	local ff = ByteArray.new("ff ff ff ff ff ff ff ff")
	crc = crc_update(crc, ff, 0, 8)
	local h = ByteArray.new()
	h:append(ip.hdr)
	if ip.ver == 4 then
		h:set_index(1, 0xff)
		h:set_index(8, 0xff)
		h:set_index(10, 0xff)
		h:set_index(11, 0xff)
	else
		h:set_index(0, bit.bor(h:get_index(0), 0x0f))
		h:set_index(1, 0xff)
		h:set_index(2, 0xff)
		h:set_index(3, 0xff)
		h:set_index(7, 0xff)
	end
	local u = ByteArray.new()
	u:append(ip.udp)
	u:set_index(6, 0xff)
	u:set_index(7, 0xff)
	local b = tvb(0, icrc_off):bytes()
	b:set_index(4, 0xff)
	crc = crc_update(crc, h, 0, h:len())
	crc = crc_update(crc, u, 0, 8)
	crc = crc_update(crc, b, 0, b:len())
	return bit.bxor(crc, 0xffffffff)
end

-- Wireshark's RoCEv2 dissector, saved before this script takes the port
-- over. Wireshark 4.0 registers it without a name (Dissector.get("rroce")
-- returns nil), so the table is the only way to reach it.
local original = DissectorTable.get("udp.port"):get_dissector(4791) or data_dissector

-- own dissects a NetRT, DCP or SACK packet. tag is the DCP tag (0 when
-- the packet is not treated as DCP); sack is true for an RC ACK read as
-- carrying a SACKETH.
local function own(tvb, pinfo, tree, ip, tag, sack)
	local len = tvb:len()
	local top = tree:add(rocetor, tvb())
	if len < 12 + 4 then
		top:add_proto_expert_info(ex_short)
		return len
	end
	local op = tvb(0, 1):uint()
	local info = ops[op]
	local bth = top:add(f.bth, tvb(0, 12))
	bth:add(f.opcode, tvb(0, 1))
	bth:add(f.se, tvb(1, 1))
	bth:add(f.m, tvb(1, 1))
	bth:add(f.padcnt, tvb(1, 1))
	local tv = bth:add(f.tver, tvb(1, 1))
	bth:add(f.pkey, tvb(2, 2))
	bth:add(f.fecn, tvb(4, 1))
	bth:add(f.becn, tvb(4, 1))
	bth:add(f.destqp, tvb(5, 3))
	bth:add(f.ackreq, tvb(8, 1))
	bth:add(f.psn, tvb(9, 3))
	local qp, psn = tvb(5, 3):uint(), tvb(9, 3):uint()
	local pad = bit.band(bit.rshift(tvb(1, 1):uint(), 4), 3)
	if bit.band(tvb(1, 1):uint(), 0x0f) ~= 0 then tv:add_proto_expert_info(ex_tver) end
	local opname = info and info[1] or string.format("OPCODE_0x%02x", op)
	bth:append_text(string.format(": %s, QP 0x%06x, PSN %d", opname, qp, psn))
	local summary = string.format("%s QP=0x%06x PSN=%d", opname, qp, psn)
	pinfo.cols.protocol = "rocetor"
	pinfo.cols.info = summary
	if info == nil then
		bth:add_proto_expert_info(ex_opcode)
		return len
	end

	-- The headers the classifier expects (Opcode.Ext / Opcode.DCPExt).
	local ext = info[2]
	if tag == 3 then
		ext = DCP
	elseif tag ~= 0 then
		ext = bit.bor(ext, DCP)
		if info[3] then ext = bit.bor(ext, RETH) end
	end
	if sack and bit.band(ext, AETH) ~= 0 then ext = bit.bor(ext, SACK) end

	local icrc_off = len - 4
	local off = 12
	if tag ~= 0 then
		local t = top:add(f.tag, tag)
		t:set_generated()
		t:append_text(string.format(" (DSCP %d)", ip.dscp))
		summary = string.format("DCP %s %s QP=0x%06x PSN=%d", dcp_tags[tag], opname, qp, psn)
	end
	for _, x in ipairs(ext_order) do
		if bit.band(ext, x) ~= 0 then
			local n = ext_len[x]
			if x == NETRT then
				if off >= icrc_off then
					top:add_proto_expert_info(ex_short)
					return len
				end
				local typ = tvb(off, 1):uint()
				n = (typ == 1 and 20) or (typ == 2 and 4) or 0
				local sub = top:add(rocetor, tvb(off, math.max(1, math.min(n, icrc_off - off))), "NetRT message")
				local ti = sub:add(f.netrt_type, tvb(off, 1))
				if n == 0 then
					ti:add_proto_expert_info(ex_netrt)
					return len
				end
				if off + n > icrc_off then
					sub:add_proto_expert_info(ex_short)
					return len
				end
				if typ == 1 then
					local epsn = tvb(off + 1, 3):uint()
					sub:add(f.netrt_epsn, tvb(off + 1, 3))
					sub:add(f.bitmap, tvb(off + 4, 16))
					local cnt = 0
					local bm = tvb(off + 4, 16):bytes()
					for i = 0, 15 do
						local v = bm:get_index(i)
						while v ~= 0 do
							cnt = cnt + bit.band(v, 1)
							v = bit.rshift(v, 1)
						end
					end
					sub:add(f.arrived, cnt):set_generated()
					sub:set_text(string.format("NetRT retransmission request: ePSN %d, %d later PSNs arrived", epsn, cnt))
					summary = string.format("NetRT request QP=0x%06x ePSN=%d arrived=%d", qp, epsn, cnt)
				else
					local p = tvb(off + 1, 3):uint()
					sub:add(f.netrt_psn, tvb(off + 1, 3))
					sub:set_text(string.format("NetRT unfulfilled notice: PSN %d", p))
					summary = string.format("NetRT unfulfilled QP=0x%06x PSN=%d", qp, p)
				end
			else
				if off + n > icrc_off then
					top:add_proto_expert_info(ex_short)
					return len
				end
				local r = tvb(off, n)
				if x == DCP then
					local sub = top:add(rocetor, r, "DCP extension header")
					sub:add(f.msn, tvb(off, 3))
					sub:add(f.retry, tvb(off + 3, 1))
					sub:add(f.ssn, tvb(off + 4, 3))
					sub:add(f.dcp_rsv, tvb(off + 7, 1))
					local msn = tvb(off, 3):uint()
					sub:append_text(string.format(": %s %d, retry %d, SSN %d", tag == 1 and "eMSN" or "MSN",
						msn, tvb(off + 3, 1):uint(), tvb(off + 4, 3):uint()))
					summary = summary .. string.format(" %s=%d", tag == 1 and "eMSN" or "MSN", msn)
					if tag == 3 then
						sub:add(f.ho, true):set_generated()
						top:add(rocetor, r, "Header-only packet: payload trimmed by the switch")
					end
				elseif x == DETH then
					local sub = top:add(rocetor, r, "DETH")
					sub:add(f.qkey, tvb(off, 4))
					sub:add(f.srcqp, tvb(off + 5, 3))
				elseif x == FETH then
					top:add(f.feth, r)
				elseif x == RETH then
					local sub = top:add(rocetor, r, "RETH")
					sub:add(f.va, tvb(off, 8))
					sub:add(f.rkey, tvb(off + 8, 4))
					sub:add(f.dmalen, tvb(off + 12, 4))
				elseif x == ATOMICETH then
					local sub = top:add(rocetor, r, "AtomicETH")
					sub:add(f.a_va, tvb(off, 8))
					sub:add(f.a_rkey, tvb(off + 8, 4))
					sub:add(f.swapadd, tvb(off + 12, 8))
					sub:add(f.compare, tvb(off + 20, 8))
				elseif x == AETH then
					local sub = top:add(rocetor, r, "AETH")
					sub:add(f.syndrome, tvb(off, 1))
					sub:add(f.syn_type, tvb(off, 1))
					sub:add(f.syn_value, tvb(off, 1))
					sub:add(f.aeth_msn, tvb(off + 1, 3))
				elseif x == SACK then
					local sub = top:add(rocetor, r, "SACK extension header")
					sub:add(f.sack_psn, tvb(off, 3))
					sub:add(f.sack_flags, tvb(off + 3, 1))
					sub:add(f.sack_fnack, tvb(off + 3, 1))
					sub:add(f.sack_ovf, tvb(off + 3, 1))
					sub:add(f.lost_cnt, tvb(off + 4, 1))
					sub:add(f.sack_rsv, tvb(off + 5, 3))
					local sp = tvb(off, 3):uint()
					sub:append_text(string.format(": SACK PSN %d, lost-cnt %d", sp, tvb(off + 4, 1):uint()))
					summary = summary .. string.format(" SACK=%d", sp)
				elseif x == ATOMICACK then
					top:add(f.origdata, r)
				elseif x == IMMDT then
					top:add(f.immdt, r)
				elseif x == IETH then
					top:add(f.ieth, r)
				end
			end
			off = off + n
		end
	end
	if off + pad > icrc_off then
		top:add_proto_expert_info(ex_short)
		return len
	end
	if icrc_off - pad > off then
		top:add(f.payload, tvb(off, icrc_off - pad - off))
	end
	if pad > 0 then
		top:add(f.pad, tvb(icrc_off - pad, pad))
	end
	local stored = tvb(icrc_off, 4):le_uint()
	local ci = top:add_le(f.icrc, tvb(icrc_off, 4))
	if ip ~= nil and ip.udp ~= nil then
		local c = icrc(ip, tvb, icrc_off)
		top:add(f.icrc_calc, c):set_generated()
		local good = c == stored
		top:add(f.icrc_stat, good and 1 or 2):set_generated()
		if good then
			ci:append_text(" [correct]")
		else
			ci:append_text(string.format(" [incorrect, should be 0x%08x]", c))
			ci:add_proto_expert_info(ex_icrc)
		end
	else
		top:add(f.icrc_stat, 0):set_generated()
	end
	top:append_text(", " .. summary)
	pinfo.cols.info = summary
	return len
end

function rocetor.dissector(tvb, pinfo, tree)
	if tvb:len() < 12 then
		return original:call(tvb, pinfo, tree)
	end
	local op = tvb(0, 1):uint()
	local ip = enclosing_ip(tvb)
	local tag = 0
	if rocetor.prefs.dcp and ip ~= nil then
		tag = bit.band(ip.dscp, 3)
	end
	-- A SACK ACK: BTH, the DCP header of a DCP ACK, AETH, SACKETH, ICRC,
	-- no pad.
	local sack = false
	if rocetor.prefs.sack and op == 0x11 and tag ~= 3 then
		local n = 12 + 4 + 8 + 4
		if tag ~= 0 then n = n + 8 end
		sack = tvb:len() == n and bit.band(tvb(1, 1):uint(), 0x30) == 0
	end
	-- CNPs too: Wireshark 4.0's dissector does not know opcode 0x81 and
	-- shows the BECN bit as part of a reserved byte.
	if op ~= 0xc0 and op ~= 0x81 and tag == 0 and not sack then
		return original:call(tvb, pinfo, tree)
	end
	return own(tvb, pinfo, tree, ip, tag, sack)
end

DissectorTable.get("udp.port"):add(4791, rocetor)
