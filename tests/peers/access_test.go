package peers

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// scan runs a sipvicious tool from src against Kamailio: svwar goes on
// without answers (the filter refuses most of them) and stops a second
// after the last. It returns how long the tool ran.
func (b *kamBed) scan(t *testing.T, src netip.Addr, tool string, args ...string) time.Duration {
	t.Helper()
	defer b.sendFrom(t, src)()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args = append([]string{"-b", src.String(), "-x", src.String()}, args...)
	if tool == "svwar" {
		args = append(args, "--force", "--maximumtime", "1")
	}
	start := time.Now()
	out, err := testenv.CommandContext(ctx, b.Peer, tool, append(args, kamBoxV4)...).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s ran for a minute: %v\n%s", tool, err, out)
	}
	return time.Since(start)
}

// sendFrom makes src the source of what the peer sends to Kamailio's
// IPv4 address, until the returned function is called. svwar takes -b
// and binds to every address all the same (its main never hands the
// option on), so its requests left from the peer's first address, which
// may be a session agent's.
func (b *kamBed) sendFrom(t *testing.T, src netip.Addr) (restore func()) {
	t.Helper()
	route := kamBoxV4 + "/32"
	testenv.Run(t, b.Peer, "ip", "route", "replace", route, "dev", b.PeerIfc, "src", src.String())
	return func() { testenv.Run(t, b.Peer, "ip", "route", "del", route) }
}

// handledFrom is how many requests Kamailio handled from src, once the
// count has not changed for 300 ms (3 s at most): those in flight are in.
func (b *kamBed) handledFrom(src netip.Addr) int {
	count := func() int {
		n := 0
		for _, r := range b.k.Requests() {
			if r.Source == src.String() {
				n++
			}
		}
		return n
	}
	n, since := count(), time.Now()
	testenv.Poll(3*time.Second, 50*time.Millisecond, func() bool {
		if m := count(); m != n {
			n, since = m, time.Now()
			return false
		}
		return time.Since(since) >= 300*time.Millisecond
	})
	return n
}

// TestStaticDenyPrefix: access.deny holds the scanners' /28, and
// access.allow one host inside it. Frames from the denied prefix (hand
// made, and svwar's and svmap's scans) never reach Kamailio and are
// counted as denied, each hand-made one exactly once; the allowed host's
// scan is answered.
func TestStaticDenyPrefix(t *testing.T) {
	testenv.RequireTool(t, "svwar", "sipvicious")
	testenv.RequireTool(t, "svmap", "sipvicious")
	tb := harness.NewTestbed(t)
	b := kamBox(t, tb)
	cfg := harness.WriteConfig(t, harness.E2eConfig+scannerClasses+
		"access: {deny: [198.51.100.48/28], allow: [198.51.100.60/32]}\n")
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg); err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })
	denied, allowed := b.source(t, 40, false), b.source(t, 50, false) // .50 and .60

	const frames = 20
	before := tb.Stats(t).DeniedStatic
	var burst [][]byte
	for i := range frames {
		burst = append(burst, b.udpFrame(denied, nil, kamRequest("OPTIONS", denied, "static-deny-"+harness.Itoa(i))))
	}
	testenv.Send(t, b.Peer, b.PeerIfc, burst)
	var counted uint64
	testenv.Poll(5*time.Second, 20*time.Millisecond, func() bool {
		counted = tb.Stats(t).DeniedStatic - before
		return counted >= frames
	})
	if counted != frames {
		t.Errorf("%d frames from the denied prefix counted as denied, want %d", counted, frames)
	}

	for _, s := range [][]string{
		{"svwar", "-m", "REGISTER", "-e", "100-199"},
		{"svwar", "-m", "INVITE", "-e", "100-199"},
		{"svmap", "-p", "5060,5080"},
	} {
		b.scan(t, denied, s[0], s[1:]...)
	}
	b.scan(t, allowed, "svmap", "-p", "5060,5080")
	st := tb.Stats(t)
	fromDenied, fromAllowed := b.handledFrom(denied), b.handledFrom(allowed)
	t.Logf("denied_static %d; Kamailio handled %d from the denied prefix, %d from the allowed host", st.DeniedStatic-before, fromDenied, fromAllowed)
	if fromDenied != 0 {
		t.Errorf("Kamailio handled %d requests from the denied prefix", fromDenied)
	}
	if st.DeniedStatic-before <= frames {
		t.Errorf("the scans from the denied prefix added %d to denied_static", st.DeniedStatic-before-frames)
	}
	if fromAllowed == 0 {
		t.Errorf("Kamailio handled nothing from the allowed host inside the denied prefix")
	}
}
