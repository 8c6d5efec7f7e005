package main

import (
	"net/netip"
	"time"

	"github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/internal/storm"
)

// A demo scenario: a generator, and what it stands for as the demo tells.
type scenario struct {
	storm.Generator
	story string
}

// demoScenarios are the storms of the demo, each a BRAS or SBC's bad day,
// in a duration scaled to total.
func demoScenarios(total time.Duration) []scenario {
	part := total / 3
	bras := netip.MustParseAddr("192.0.2.1")
	scanner := netip.MustParseAddr("203.0.113.1")
	invites := storm.SIPFlood("INVITE", scanner, 250, bras)
	options := storm.SIPFlood("OPTIONS", scanner, 250, bras)
	registers := storm.SIPFlood("REGISTER", scanner, 250, bras)
	trusted := storm.SIPFlood("INVITE", netip.MustParseAddr("192.0.2.2"), 1, bras)
	return []scenario{
		{
			story:     "PADI storm after an outage: 5,000 modems reconnect at once, each retrying",
			Generator: storm.Generator{Name: "padi-storm", Rate: 1500, Duration: part, Frame: storm.PADIStorm(5000, 100, 101, 102, 103)},
		},
		{
			story: "ICRQ burst after an L2TP tunnel flap: every session of the tunnel comes back",
			Generator: storm.Generator{Name: "icrq-burst", Rate: 800, Duration: part,
				Frame: storm.L2TPFlood(pkt.ICRQ, netip.MustParseAddr("198.51.100.1"), bras)},
		},
		{
			story: "a SIP scanner floods OPTIONS, REGISTERs and INVITEs from 250 addresses while a trusted peer keeps calling",
			Generator: storm.Generator{Name: "sip-scanner", Rate: 2000, Duration: total - 2*part,
				Frame: storm.Mix(func(i int) []byte {
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
