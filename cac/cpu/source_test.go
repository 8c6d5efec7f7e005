package cpu

import (
	"strings"
	"testing"
)

func TestParseSource(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Source
		back string
	}{
		{"system", Source{Kind: KindSystem}, "system"},
		{"process:kamailio", Source{Kind: KindProcess, Name: "kamailio"}, "process:kamailio"},
		{"process:a) (b c", Source{Kind: KindProcess, Name: "a) (b c"}, "process:a) (b c"},
		{"cgroup:system.slice/kamailio.service", Source{Kind: KindCgroup, Name: "system.slice/kamailio.service"}, "cgroup:system.slice/kamailio.service"},
		{"cgroup:/system.slice//x/", Source{Kind: KindCgroup, Name: "system.slice/x"}, "cgroup:system.slice/x"},
	} {
		got, err := ParseSource(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseSource(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			continue
		}
		if got.String() != c.back {
			t.Errorf("%+v.String() = %q, want %q", got, got.String(), c.back)
		}
		if again, err := ParseSource(got.String()); err != nil || again != got {
			t.Errorf("round trip of %q: %+v, %v", c.in, again, err)
		}
	}
}

func TestParseSourceRefuses(t *testing.T) {
	for _, in := range []string{
		"", "process:", "cgroup:", "cgroup:../x", "cgroup:a/../../x", "cgroup:a/..",
		"cgroup:/", "bogus", "bogus:x", "system:x", "System",
		"process:averyveryverylongname", "process:a\nb",
	} {
		_, err := ParseSource(in)
		if err == nil {
			t.Errorf("ParseSource(%q) accepted", in)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || msg == "" {
			t.Errorf("ParseSource(%q): want a one-line error, got %q", in, msg)
		}
	}
}
