package peers

import (
	"net/netip"
	"testing"

	"github.com/emiago/sipgo/sip"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// respond serves a plain UDP socket on at, in namespace ns, until the test
// ends: each SIP request that parses (ACKs aside) is answered with what
// answer builds from it, nothing when it returns nil.
func respond(t *testing.T, ns string, at netip.AddrPort, answer func(req *sip.Request) []byte) {
	c := harness.ListenUDP(t, ns, at.String())
	go func() {
		buf := make([]byte, 65535)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			msg, err := sip.ParseMessage(append([]byte(nil), buf[:n]...))
			req, ok := msg.(*sip.Request)
			if err != nil || !ok || req.IsAck() {
				continue
			}
			if resp := answer(req); resp != nil {
				c.WriteToUDPAddrPort(resp, from)
			}
		}
	}()
}
