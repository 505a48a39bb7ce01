// Package layers decodes RoCEv2 and the project's own wire formats with
// gopacket, for tools and tests; the switch's packet path never comes here
// (it uses rocev2.Classify, which neither allocates nor returns errors).
//
// Importing the package registers its decoders with gopacket: BTH on UDP
// port 4791, the link-retransmission shim on EtherType 0x88b5 (the frame it
// carries is decoded after it, by its InnerType), and 802.3x PAUSE / 802.1Qbb
// PFC on EtherType 0x8808, which gopacket itself does not decode. Layer
// types are registered as numbers 1791–1803.
//
// The headers that follow a BTH depend on its opcode, and in a DCP fabric
// on the DSCP of the IP header too, which a DecodingLayer cannot see. So BTH
// decodes the whole transport header chain — BTH, extension headers as the
// rocev2 opcode table lists them, pad and ICRC — into its own fields, and its
// payload is the data between the last header and the pad. Users of a
// DecodingLayerParser get everything from that one layer:
//
//	var (
//		eth layers.Ethernet
//		ip4 layers.IPv4
//		ip6 layers.IPv6
//		udp layers.UDP
//		bth rlayers.BTH
//	)
//	bth.SetNetworkLayers(&ip4, &ip6) // for the DSCP and the ICRC check
//	p := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &ip4, &ip6, &udp, &bth)
//
// Decoding a gopacket.Packet adds, after the BTH layer, each extension
// header as a layer of its own (packet.Layer(rlayers.LayerTypeRETH) works)
// and then the payload; the BTH layer there finds the IP layer by itself.
//
// DCP (seed 002, §4.2) reserves the two low DSCP bits as a tag; only in a
// DCP fabric does a non-zero tag mean a DCP extension header follows the BTH.
// Set the package variable DCP before decoding to read packets that way.
//
// A malformed layer is a *DecodeError naming the layer and the rocev2.Reason
// the classifier would count, never a panic.
package layers
