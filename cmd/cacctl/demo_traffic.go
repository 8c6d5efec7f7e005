package main

import (
	"net/netip"
	"time"

	"github.com/xdpcac/xdpcac/tests/gen"
	"github.com/xdpcac/xdpcac/tests/pkt"
)

// A demo scenario: a generator, and what it stands for as the demo tells.
type scenario struct {
	gen.Generator
	story string
}

// demoScenarios are the storms of the demo, each a BRAS or SBC's bad day,
// in a duration scaled to total.
func demoScenarios(total time.Duration) []scenario {
	part := total / 3
	bras := netip.MustParseAddr("192.0.2.1")
	scanner := netip.MustParseAddr("203.0.113.1")
	invites := gen.SIPFlood("INVITE", scanner, 250, bras)
	options := gen.SIPFlood("OPTIONS", scanner, 250, bras)
	registers := gen.SIPFlood("REGISTER", scanner, 250, bras)
	trusted := gen.SIPFlood("INVITE", netip.MustParseAddr("192.0.2.2"), 1, bras)
	return []scenario{
		{
			story:     "PADI storm after an outage: 5,000 modems reconnect at once, each retrying",
			Generator: gen.Generator{Name: "padi-storm", Rate: 1500, Duration: part, Frame: gen.PADIStorm(5000, 100, 101, 102, 103)},
		},
		{
			story: "ICRQ burst after an L2TP tunnel flap: every session of the tunnel comes back",
			Generator: gen.Generator{Name: "icrq-burst", Rate: 800, Duration: part,
				Frame: gen.L2TPFlood(pkt.ICRQ, netip.MustParseAddr("198.51.100.1"), bras)},
		},
		{
			story: "a SIP scanner floods OPTIONS, REGISTERs and INVITEs from 250 addresses while a trusted peer keeps calling",
			Generator: gen.Generator{Name: "sip-scanner", Rate: 2000, Duration: total - 2*part,
				Frame: gen.Mix(func(i int) []byte {
					switch i % 3 {
					case 0:
						return invites(i / 3)
					case 1:
						return registers(i / 3)
					}
					return options(i / 3)
				}, trusted, 20)},
		},
	}
}
