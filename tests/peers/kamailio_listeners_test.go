package peers

import (
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// TestKamailioUnwatchedPort: Kamailio listens on UDP 5060 and 5080, and the
// configuration watches 5060 alone. attach warns of the listener on 5080,
// naming Kamailio, and still attaches; status lists it; the one on 5060 is
// named by neither.
func TestKamailioUnwatchedPort(t *testing.T) {
	tb := harness.NewTestbed(t)
	testenv.Addr(t, tb.Box, tb.BoxIface, kamBoxV4+"/24")
	testenv.StartKamailioOn(t, tb.Box, []uint16{5060, 5080}, kamBoxV4)
	cfg := harness.WriteConfig(t, "ports: {l2tp: [1701], sip: [5060]}\n")
	_, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg)
	if err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })
	t.Logf("attach said:\n%s", stderr)
	if !strings.Contains(stderr, kamBoxV4+":5080") || !strings.Contains(stderr, "kamailio") || !strings.Contains(stderr, "not watched") {
		t.Errorf("attach did not name Kamailio's listener on 5080 as not watched:\n%s", stderr)
	}
	if strings.Contains(stderr, ":5060 ") {
		t.Errorf("attach named the watched listener on 5060:\n%s", stderr)
	}
	stdout, stderr, err := tb.Cacctl(t, "status")
	if err != nil {
		t.Fatalf("status: %v: %s", err, stderr)
	}
	if !strings.Contains(stdout, "SIP listeners not watched") || !strings.Contains(stdout, kamBoxV4+":5080") {
		t.Errorf("status did not list Kamailio's listener on 5080:\n%s", stdout)
	}
}
