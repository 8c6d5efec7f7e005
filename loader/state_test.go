package loader

import "testing"

func TestDirNames(t *testing.T) {
	for _, a := range []Attachment{{Iface: "eth1"}, {Iface: "veth0", Netns: "blue"}, {Iface: "e", Netns: "a:b"}} {
		if got := parseDirName(a.dirName()); got != a {
			t.Errorf("%+v -> %q -> %+v", a, a.dirName(), got)
		}
	}
	if _, err := xdpFlags("turbo"); err == nil {
		t.Error("mode turbo accepted")
	}
}
