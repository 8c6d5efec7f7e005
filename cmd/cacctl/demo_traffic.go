package main

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/tests/pkt"
	"golang.org/x/sys/unix"
)

// A demo scenario: frames sent at a rate for a while from the peer side.
type scenario struct {
	name   string
	story  string // what it stands for, as the demo tells it
	rate   int    // frames a second
	length time.Duration
	frame  func(i int) []byte // the i-th frame sent
}

// demoScenarios are the storms of the demo, each a BRAS or SBC's bad day,
// in a duration scaled to total.
func demoScenarios(total time.Duration) []scenario {
	part := total / 3
	mac := func(i int) [6]byte { return [6]byte{0x02, 0x00, 0x5e, byte(i >> 16), byte(i >> 8), byte(i)} }
	return []scenario{
		{
			name: "padi-storm", rate: 1500, length: part,
			story: "PADI storm after an outage: 5,000 modems reconnect at once, each retrying",
			frame: func(i int) []byte {
				return pkt.Frame(pkt.Ether{Src: mac(i % 5000), Broadcast: true}, pkt.VLAN{ID: uint16(100 + i%4)}, pkt.PPPoE{Code: pkt.PADI})
			},
		},
		{
			name: "icrq-burst", rate: 800, length: part,
			story: "ICRQ burst after an L2TP tunnel flap: every session of the tunnel comes back",
			frame: func(i int) []byte {
				return pkt.Frame(pkt.Ether{}, pkt.IPv4{Src: netip.MustParseAddr("198.51.100.1"), Dst: netip.MustParseAddr("192.0.2.1")},
					pkt.UDP{Src: 1701, Dst: 1701}, pkt.L2TP{MsgType: pkt.ICRQ})
			},
		},
		{
			name: "sip-scanner", rate: 2000, length: total - 2*part,
			story: "a SIP scanner floods OPTIONS and INVITEs from 250 addresses while a trusted peer keeps calling",
			frame: func(i int) []byte {
				// One frame in twenty is the trusted peer's INVITE, held by
				// its account; the rest the scanner's.
				if i%20 == 0 {
					return pkt.Frame(pkt.Ether{}, pkt.IPv4{Src: netip.MustParseAddr("192.0.2.2"), Dst: netip.MustParseAddr("192.0.2.1")},
						pkt.UDP{Src: 5060, Dst: 5060}, pkt.SIPRequest("INVITE", "<sip:bob@example.com>"))
				}
				src := netip.AddrFrom4([4]byte{203, 0, 113, byte(1 + i%250)})
				method := "OPTIONS"
				if i%2 == 0 {
					method = "INVITE"
				}
				return pkt.Frame(pkt.Ether{}, pkt.IPv4{Src: src, Dst: netip.MustParseAddr("192.0.2.1")},
					pkt.UDP{Src: 5060, Dst: 5060}, pkt.SIPRequest(method, "<sip:100@example.com>"))
			},
		},
	}
}

// send runs a scenario from iface in namespace ns until it is done or ctx
// ends, and returns how many frames it sent.
func (s scenario) send(ctx context.Context, ns, iface string) (int, error) {
	sent := 0
	err := loader.InNetns(ns, func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
		if err != nil {
			return fmt.Errorf("packet socket: %w", err)
		}
		defer unix.Close(fd)
		ifr, err := unix.NewIfreq(iface)
		if err != nil {
			return err
		}
		if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
			return fmt.Errorf("index of %s: %w", iface, err)
		}
		addr := &unix.SockaddrLinklayer{Ifindex: int(ifr.Uint32()), Halen: 6}
		// Frames go in batches every 10 ms, at the scenario's rate.
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		start := time.Now()
		for time.Since(start) < s.length {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
			due := int(time.Since(start).Seconds() * float64(s.rate))
			for ; sent < due; sent++ {
				if err := unix.Sendto(fd, s.frame(sent), 0, addr); err != nil {
					return fmt.Errorf("send: %w", err)
				}
			}
		}
		return nil
	})
	return sent, err
}
