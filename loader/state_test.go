package loader

import (
	"strings"
	"testing"
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
