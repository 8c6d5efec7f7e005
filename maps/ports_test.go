package maps

import (
	"slices"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// TestPortsRoundTrip: ReadPorts reads back, in order, the ports
// WritePorts put in force, as cacctl status compares listeners with them.
func TestPortsRoundTrip(t *testing.T) {
	testenv.RequireBPF(t)
	// An array of one port table, as udp_ports is: no program needed.
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4,
		ValueSize: uint32(unsafe.Sizeof(bpf.XdpCacPorts{})), MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := WritePorts(m, []uint16{1701}, []uint16{5080, 5060, 65535}); err != nil {
		t.Fatal(err)
	}
	l2tp, sip, err := ReadPorts(m)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l2tp, []uint16{1701}) || !slices.Equal(sip, []uint16{5060, 5080, 65535}) {
		t.Errorf("read l2tp %v, sip %v", l2tp, sip)
	}
}
