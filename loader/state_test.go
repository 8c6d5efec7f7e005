package loader

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
)

func TestDirNames(t *testing.T) {
	for _, a := range []Attachment{{Iface: "eth1"}, {Iface: "veth0", Netns: "blue"}, {Iface: "e", Netns: "a:b"},
		{Iface: "eth0.100"}, {Iface: "bond0.7", Netns: "ns.a%b"}, {Iface: "x%2E"}} {
		name := a.dirName()
		if got := parseDirName(name); got != a {
			t.Errorf("%+v -> %q -> %+v", a, name, got)
		}
		if strings.Contains(name, ".") || strings.HasPrefix(name, tmpPrefix) {
			t.Errorf("%+v -> %q: bpffs refuses dots, and a colon first marks a temporary directory", a, name)
		}
	}
	if _, err := xdpFlags("turbo"); err == nil {
		t.Error("mode turbo accepted")
	}
}

// TestCheckKernel: the kernel the tests run on has every feature the
// filter rests on; each probe runs.
func TestCheckKernel(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("XDPCAC_REQUIRE_BPF") == "1" {
			t.Fatal("XDPCAC_REQUIRE_BPF=1 but probing BPF features needs root")
		}
		t.Skip("probing BPF features needs root")
	}
	for _, f := range kernelFeatures() {
		if err := f.probe(); err != nil {
			t.Errorf("%s (Linux %s): %v", f.what, f.kernel, err)
		}
	}
	if err := CheckKernel(); err != nil {
		t.Error(err)
	}
}

// TestCheckKernelNamesWhatIsMissing: a kernel without a feature is told
// which, and the kernel that brought it; a probe that cannot tell passes.
func TestCheckKernelNamesWhatIsMissing(t *testing.T) {
	err := checkFeatures([]kernelFeature{
		{"a probe that cannot tell", "4.0", func() error { return errors.New("EPERM") }},
		{"BPF ring buffers", "5.8", func() error { return fmt.Errorf("map type: %w", ebpf.ErrNotSupported) }},
	})
	want := "this kernel lacks BPF ring buffers (Linux 5.8 or later): xdpcac needs Linux 5.15 or later"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

// TestKernelMapNamesUnique: Repin finds each map of a running program by
// the name the kernel keeps, its first 15 bytes, so no two maps may share
// those.
func TestKernelMapNamesUnique(t *testing.T) {
	seen := map[string]string{}
	eachMap(&bpf.XdpMaps{}, func(name string, _ **ebpf.Map) error {
		short := name[:min(len(name), kernelNameLen)]
		if other, dup := seen[short]; dup {
			t.Errorf("maps %s and %s are both %q to the kernel", other, name, short)
		}
		seen[short] = name
		return nil
	})
	if len(seen) < 20 {
		t.Errorf("only %d maps seen", len(seen))
	}
}

// TestOrphanNames: a temporary directory's name says whose it is, for
// names with dots, colons and dashes too; an older version's says nothing.
func TestOrphanNames(t *testing.T) {
	for _, a := range []Attachment{{Iface: "eth1"}, {Iface: "veth-0", Netns: "blue-1"}, {Iface: "bond0.7", Netns: "a:b"}} {
		name := tmpPrefix + "0a1b2c3d-" + a.dirName()
		if got, ok := orphanOf(name); !ok || got != a {
			t.Errorf("%q -> %+v, %v; want %+v", name, got, ok, a)
		}
	}
	for _, name := range []string{tmpPrefix + "0a1b2c3d", "eth1", tmpPrefix + "short-x"} {
		if got, ok := orphanOf(name); ok {
			t.Errorf("%q -> %+v: names no attachment", name, got)
		}
	}
}
