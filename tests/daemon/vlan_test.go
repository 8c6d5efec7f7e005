package daemon

import (
	"strings"
	"testing"

	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// TestVLANKeyOffload: a NIC with rx VLAN offload on takes the tags out of
// the frames before XDP runs, and a key: vlan limit would hold every VLAN
// in one bucket. attach refuses such a limit on an interface whose
// offload is on (a veth's is, by default), saying what to turn off; with
// it off, subscribers on VLAN 100 and VLAN 200 are kept apart.
func TestVLANKeyOffload(t *testing.T) {
	tb := harness.NewTestbed(t)
	cfg := harness.WriteConfig(t, harness.E2eConfig+"classes:\n  pppoe-padi: {per-source: {key: vlan, cps: 0.001, burst: 1}}\n")
	_, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg)
	if err == nil {
		tb.Cacctl(t, "detach", tb.BoxIface)
		t.Fatal("attach took a VLAN key on an interface with rx VLAN offload on")
	}
	if !strings.Contains(stderr, "rx-vlan-hw-parse") || !strings.Contains(stderr, "ethtool -K "+tb.BoxIface+" rxvlan off") {
		t.Errorf("attach refused without saying what to turn off: %s", stderr)
	}

	testenv.Run(t, tb.Box, "ethtool", "-K", tb.BoxIface, "rxvlan", "off", "rx-vlan-stag-hw-parse", "off")
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg); err != nil {
		t.Fatalf("attach with the offload off: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })

	// The peer sends as a switch port would: tagged on the wire.
	padi := func(vlan uint16) []byte { return Frame(Ether{Broadcast: true}, VLAN{ID: vlan}, PPPoE{Code: PADI}) }
	testenv.Send(t, tb.Peer, tb.PeerIfc, [][]byte{padi(100), padi(100), padi(200)})
	var st struct{ admitted, bySource uint64 }
	testenv.WaitFor(t, func() bool {
		c := tb.Stats(t).Classes["pppoe-padi"]
		st.admitted, st.bySource = c.Admitted, c.Reasons["source"]
		return c.Seen >= 3
	})
	if st.admitted != 2 || st.bySource != 1 {
		t.Errorf("PADIs of VLAN 100, 100, 200: %d admitted, %d rejected by source; want 2 and 1 (the VLANs apart)", st.admitted, st.bySource)
	}
}
