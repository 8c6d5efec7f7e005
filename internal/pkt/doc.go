// Package pkt builds Ethernet frames for the tests and the demo, written
// outermost layer first so that a frame reads like its header stack:
//
//	pkt.Frame(pkt.Ether{}, pkt.VLAN{ID: 7}, pkt.IPv4{}, pkt.UDP{Dst: 5060}, pkt.Raw(invite))
//
// Lengths, EtherTypes and protocol numbers are filled in from the layers
// inside unless a field sets them, so that inconsistent frames are as easy
// to write as correct ones.
package pkt
