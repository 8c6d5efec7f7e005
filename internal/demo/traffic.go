package demo

import (
	"net/netip"
	"time"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/internal/storm"
)

// A demo scenario: a generator, what it stands for as the demo tells, and
// what the filter must have done for the demo to have shown it.
type scenario struct {
	storm.Generator
	story string
	// what the storm's frames are, for the summary
	what string
	// classes are the classes the storm sends; the filter must have
	// seen, admitted and held back the first.
	classes []cac.Class
	// calls: the trusted peer places its calls during this storm.
	calls bool
}

// demoScenarios are the storms of the demo, each a BRAS or SBC's bad day,
// in a duration scaled to total.
func demoScenarios(total time.Duration) []scenario {
	part := total / 3
	bras := netip.MustParseAddr(demoBRAS)
	scanner := netip.MustParseAddr("203.0.113.1")
	invites := storm.SIPFlood("INVITE", scanner, 250, bras)
	options := storm.SIPFlood("OPTIONS", scanner, 250, bras)
	registers := storm.SIPFlood("REGISTER", scanner, 250, bras)
	return []scenario{
		{
			story:     "PADI storm after an outage: 5,000 modems reconnect at once, each retrying",
			what:      "PADIs from 5,000 modems",
			classes:   []cac.Class{cac.PPPoEPADI},
			Generator: storm.Generator{Name: "padi-storm", Rate: 1500, Duration: part, Frame: storm.PADIStorm(5000, 100, 101, 102, 103)},
		},
		{
			story:   "ICRQ burst after an L2TP tunnel flap: every session of the tunnel comes back",
			what:    "ICRQs of one tunnel",
			classes: []cac.Class{cac.L2TPICRQ},
			Generator: storm.Generator{Name: "icrq-burst", Rate: 800, Duration: part,
				Frame: storm.L2TPFlood(pkt.ICRQ, netip.MustParseAddr("198.51.100.1"), bras)},
		},
		{
			story: "a SIP scanner floods OPTIONS, REGISTERs and INVITEs from 250 addresses while a trusted peer keeps calling",
			what:  "requests from 250 scanner addresses",
			// The trusted peer's calls are real ones, placed by its SIP
			// user agent beside the flood (demo_uac.go).
			// sip-indialog: the trusted peer's ACKs and BYEs.
			classes: []cac.Class{cac.SIPInvite, cac.SIPOptions, cac.SIPRegister, cac.SIPInDialog},
			calls:   true,
			Generator: storm.Generator{Name: "sip-scanner", Rate: 2000, Duration: total - 2*part,
				Frame: func(i int) []byte {
					switch i % 3 {
					case 0:
						return invites(i / 3)
					case 1:
						return registers(i / 3)
					}
					return options(i / 3)
				}},
		},
	}
}
