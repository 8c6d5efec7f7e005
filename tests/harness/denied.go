package harness

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// DenyEntry reads the fast path's deny table (docs/design.md,
// "Auto-deny") for an IPv4 source: its entry, with the frames the CPUs
// hold of it not yet in the entry, and whether it has one. Its times are
// the fast path's clock, control.MonotonicCoarse.
func (tb *Testbed) DenyEntry(t *testing.T, src netip.Addr) (bpf.XdpCacDenied, bool) {
	t.Helper()
	if !src.Is4() {
		t.Fatalf("DenyEntry reads IPv4 sources, not %s", src)
	}
	p, err := loader.OpenShared(tb.State)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	k := bpf.XdpCacDenyKey{Family: 4}
	a := src.As4()
	copy(k.Addr[:], a[:])
	var d bpf.XdpCacDenied
	switch err := p.XdpMaps.Denied.Lookup(&k, &d); {
	case errors.Is(err, ebpf.ErrKeyNotExist):
		return d, false
	case err != nil:
		t.Fatalf("deny table: %v", err)
	}
	n, err := maps.PendingFrames(p.DenyPending, k, d.SinceNs)
	if err != nil {
		t.Fatal(err)
	}
	d.Frames += n
	return d, true
}
