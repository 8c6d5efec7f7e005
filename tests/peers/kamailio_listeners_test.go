package peers

import (
	"net"
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// TestKamailioUnwatchedPort: Kamailio listens on UDP 5060 and 5080, and the
// configuration watches 5060 alone. attach warns of the listener on 5080,
// naming Kamailio, and still attaches; status lists it; the one on 5060 is
// named by neither. Of two TCP listeners, on 5061 (in ports.sip-tcp) and
// 5062 (not), only the second is named.
func TestKamailioUnwatchedPort(t *testing.T) {
	tb := harness.NewTestbed(t)
	testenv.Addr(t, tb.Box, tb.BoxIface, kamBoxV4+"/24")
	testenv.StartKamailioOn(t, tb.Box, []uint16{5060, 5080}, kamBoxV4)
	for _, port := range []string{"5061", "5062"} {
		err := testenv.Do(tb.Box, func() error {
			l, err := net.Listen("tcp", net.JoinHostPort(kamBoxV4, port))
			if err == nil {
				t.Cleanup(func() { l.Close() })
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	cfg := harness.WriteConfig(t, "ports: {l2tp: [1701], sip: [5060], sip-tcp: [5061]}\n")
	_, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg)
	if err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })
	t.Logf("attach said:\n%s", stderr)
	if !strings.Contains(stderr, kamBoxV4+":5080") || !strings.Contains(stderr, "kamailio") || !strings.Contains(stderr, "not watched") {
		t.Errorf("attach did not name Kamailio's listener on 5080 as not watched:\n%s", stderr)
	}
	if strings.Contains(stderr, ":5060 ") || strings.Contains(stderr, ":5061 ") {
		t.Errorf("attach named a watched listener, on 5060 or 5061:\n%s", stderr)
	}
	if !strings.Contains(stderr, "tcp "+kamBoxV4+":5062") || !strings.Contains(stderr, "not in ports.sip-tcp [5061]") {
		t.Errorf("attach did not name the TCP listener on 5062 as not in ports.sip-tcp:\n%s", stderr)
	}
	stdout, stderr, err := tb.Cacctl(t, "status")
	if err != nil {
		t.Fatalf("status: %v: %s", err, stderr)
	}
	if !strings.Contains(stdout, "SIP listeners not watched") || !strings.Contains(stdout, kamBoxV4+":5080") || !strings.Contains(stdout, kamBoxV4+":5062") {
		t.Errorf("status did not list the listeners on 5080 and 5062:\n%s", stdout)
	}
	if strings.Contains(stdout, kamBoxV4+":5061") {
		t.Errorf("status listed the watched TCP listener on 5061:\n%s", stdout)
	}
}
