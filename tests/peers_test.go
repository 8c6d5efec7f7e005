package tests

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestRealPPPoE: pppoe-server is the BRAS behind the filter and
// pppoe-discovery a client. Its first PADI is admitted and answered with
// a PADO; with one discovery a MAC allowed, its next run's PADIs are
// rejected by source and it finds no access concentrator.
func TestRealPPPoE(t *testing.T) {
	tb := newTestbed(t)
	for _, bin := range []string{"pppoe-server", "pppoe-discovery"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s not installed (tests/provision.sh installs package pppoe): %v", bin, err)
		}
	}
	cfg := writeConfig(t, e2eConfig+"classes:\n  pppoe-padi: {per-source: {key: mac, cps: 0.001, burst: 1}}\n")
	if _, stderr, err := tb.cacctl(t, "attach", tb.boxIface, "--config", cfg); err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.cacctl(t, "detach", tb.boxIface) })
	server := exec.Command("ip", "netns", "exec", tb.box, "pppoe-server", "-F", "-I", tb.boxIface, "-C", "xdpcac-test",
		"-L", "192.0.2.1", "-R", "192.0.2.10")
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Process.Kill(); server.Wait() })

	discover := func() (string, error) {
		out, err := exec.Command("ip", "netns", "exec", tb.peer, "pppoe-discovery", "-I", tb.peerIfc, "-t", "1", "-a", "2").CombinedOutput()
		return string(out), err
	}
	// A PADI sent before the server listens would spend the MAC's one
	// discovery: wait for its discovery socket (ethertype 8863).
	waitFor(t, func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/packet", server.Process.Pid))
		return err == nil && strings.Contains(string(b), " 8863 ")
	})
	out, err := discover()
	if err != nil || !strings.Contains(out, "Access-Concentrator: xdpcac-test") {
		t.Fatalf("first discovery: %v\n%s", err, out)
	}
	before := tb.stats(t).Classes["pppoe-padi"]
	out, err = discover()
	if err == nil || strings.Contains(out, "Access-Concentrator") {
		t.Errorf("second discovery from the same MAC found an access concentrator: %v\n%s", err, out)
	}
	after := tb.stats(t).Classes["pppoe-padi"]
	if after.Admitted != before.Admitted || after.Reasons["source"] < before.Reasons["source"]+2 {
		t.Errorf("PADIs of the second discovery: before %+v, after %+v; want 2 more rejected by source, none admitted", before, after)
	}
	t.Logf("pppoe-padi: %+v", after)
}
