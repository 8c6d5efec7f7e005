package agents

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/cac/config"
)

func TestRulesOf(t *testing.T) {
	a := config.SessionAgent{
		Name: "sbc", PingInterval: 45 * time.Second, PingSendMode: "continuous",
		PingInServiceResponseCodes: []int{200}, OutServiceResponseCodes: []int{503},
		PingFailureCount: 3,
	}
	want := Rules{InService: []int{200}, OutService: []int{503}, FailureCount: 3, Interval: 45 * time.Second, Continuous: true}
	got := RulesOf(a)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("RulesOf = %+v, want %+v", got, want)
	}
	a.PingInServiceResponseCodes[0] = 404
	if got.InService[0] != 200 {
		t.Error("Rules share the configuration's code list")
	}
	if a.PingSendMode = "keep-alive"; RulesOf(a).Continuous {
		t.Error("keep-alive read as continuous")
	}
}

// TestRestoreJSON saves a target in the middle of a Retry-After and checks
// that the restored one carries on exactly like the original.
func TestRestoreJSON(t *testing.T) {
	r := Rules{OutService: []int{503}, FailureCount: 2, Interval: 10 * time.Second}
	orig := NewTarget(r, at(0))
	orig.RequestSeen(at(1))
	orig.PingSent(at(12))
	orig.PingResponse(at(13), 503, 30*time.Second)
	orig.PingTimeout(at(50))

	b, err := json.Marshal(orig.Status())
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"in_service":false`, `"since"`, `"reason"`, `"failures":1`, `"last_code":0`, `"retry_until"`, `"last_ping"`, `"last_request"`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON %s lacks %s", b, key)
		}
	}
	var s Status
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	back := RestoreTarget(r, s)
	if !reflect.DeepEqual(back.Status(), orig.Status()) {
		t.Fatalf("restored %+v\nwant     %+v", back.Status(), orig.Status())
	}
	if got, want := back.NextPing(at(50)), orig.NextPing(at(50)); !got.Equal(want) || !want.Equal(at(43)) {
		t.Errorf("NextPing restored %v, original %v, want t=43", got, want)
	}
	if !back.RequestSeen(at(60)) || !back.Status().InService || !back.Status().RetryUntil.IsZero() {
		t.Errorf("restored target did not come back on a request: %+v", back.Status())
	}

	// A fresh target leaves the optional times out of the JSON.
	b, _ = json.Marshal(NewTarget(r, at(0)).Status())
	if strings.Contains(string(b), "retry_until") || strings.Contains(string(b), "last_ping") {
		t.Errorf("zero times written: %s", b)
	}
}

func TestContactHost(t *testing.T) {
	v4, v6 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")
	const fh, tf, mt = "sbc.example.com", "teams.example.com", "tenant.example.com"
	cases := []struct {
		name string
		r    config.Realm
		want string
	}{
		{"teams: fqdn-hostname beats the others", config.Realm{Address: v4, TeamsFQDNInURI: true, FQDNHostname: fh, TeamsFQDN: tf, MultiTenancyFQDN: mt}, fh},
		{"teams: fqdn-hostname beats multi-tenancy", config.Realm{Address: v4, TeamsFQDNInURI: true, FQDNHostname: fh, MultiTenancyFQDN: mt}, fh},
		{"teams: teams-fqdn without fqdn-hostname", config.Realm{Address: v4, TeamsFQDNInURI: true, TeamsFQDN: tf, MultiTenancyFQDN: mt}, tf},
		{"teams: only multi-tenancy", config.Realm{Address: v4, TeamsFQDNInURI: true, MultiTenancyFQDN: mt}, mt},
		{"teams: nothing set", config.Realm{Address: v4, TeamsFQDNInURI: true}, "192.0.2.1"},
		{"no teams: multi-tenancy beats fqdn-hostname", config.Realm{Address: v4, FQDNHostname: fh, TeamsFQDN: tf, MultiTenancyFQDN: mt}, mt},
		{"no teams: fqdn-hostname and teams-fqdn unused", config.Realm{Address: v4, FQDNHostname: fh, TeamsFQDN: tf}, "192.0.2.1"},
		{"no teams: IPv6 address", config.Realm{Address: v6}, "[2001:db8::1]"},
		{"no address", config.Realm{}, ""},
	}
	for _, c := range cases {
		if got := ContactHost(c.r); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestAgentInService(t *testing.T) {
	up, down := Status{InService: true}, Status{}
	for _, c := range []struct {
		ts   []Status
		want bool
	}{{nil, false}, {[]Status{down}, false}, {[]Status{down, up}, true}, {[]Status{up, up}, true}} {
		if got := AgentInService(c.ts); got != c.want {
			t.Errorf("AgentInService(%v) = %v", c.ts, got)
		}
	}
}

func TestWriteAgents(t *testing.T) {
	ap := netip.MustParseAddrPort
	up, down := Status{InService: true}, Status{}
	rows := []Row{
		{"teams", ap("52.114.14.70:5061"), "tenant-b", down},
		{"teams", ap("52.114.14.70:5061"), "tenant-a", up},
		{"teams", ap("52.114.7.1:5060"), "tenant-b", down},
		{"teams", ap("52.114.7.1:5060"), "tenant-a", down},
		{"carrier", ap("198.51.100.7:5060"), "core", down},
		{"carrier", ap("[2001:db8::7]:5080"), "core", down},
	}
	orig := append([]Row(nil), rows...)
	var b bytes.Buffer
	if err := WriteAgents(&b, rows, ""); err != nil {
		t.Fatal(err)
	}
	want := `Session Agent carrier [Out of Service]
Destination: 198.51.100.7  Source : core  Out of Service
Destination: [2001:db8::7]:5080  Source : core  Out of Service
Session Agent teams [In Service]
Destination: 52.114.7.1  Source : tenant-a  Out of Service
Destination: 52.114.7.1  Source : tenant-b  Out of Service
Destination: 52.114.14.70:5061  Source : tenant-a  In Service
Destination: 52.114.14.70:5061  Source : tenant-b  Out of Service
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	if !reflect.DeepEqual(rows, orig) {
		t.Error("WriteAgents reordered its input")
	}

	b.Reset()
	if err := WriteAgents(&b, rows, "carrier"); err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(strings.SplitAfter(want, "\n")[:3], ""); b.String() != want {
		t.Errorf("filtered: got\n%s\nwant\n%s", b.String(), want)
	}

	err := WriteAgents(&b, rows, "nobody")
	if err == nil || err.Error() != `no session agent "nobody"; known agents: carrier, teams` {
		t.Errorf("unknown name: %v", err)
	}
	if err := WriteAgents(&b, nil, "nobody"); err == nil || !strings.HasSuffix(err.Error(), "known agents: none") {
		t.Errorf("unknown name, no agents: %v", err)
	}
	b.Reset()
	if err := WriteAgents(&b, nil, ""); err != nil || b.Len() != 0 {
		t.Errorf("no agents: %q, %v", b.String(), err)
	}
}

// TestWriteEgress: the text layout keeps every line within 80 columns
// with counts of eight digits, the wide one puts an agent on one line,
// and both say the same figures.
func TestWriteEgress(t *testing.T) {
	const big = 33_333_333
	rows := []Egress{
		{Agent: "vendor-b", OnOutOfService: "fail-fast", Invites: 7},
		{Agent: "vendor-a", ConnectionCPS: 5, ConnectionBurst: 5, OnOutOfService: "fail-fast", OutOfService: true,
			MaxSessions: 200, Sessions: 17, Invites: big, Retransmits: big, Connection: big, AgentDown: big,
			Capacity: big, Unanswered: big, ACKs: big},
	}
	var text, wide bytes.Buffer
	if err := WriteEgress(&text, rows, "", false); err != nil {
		t.Fatal(err)
	}
	if err := WriteEgress(&wide, rows, "", true); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSuffix(text.String(), "\n"), "\n") {
		if len(l) > 80 {
			t.Errorf("a line of %d columns:\n%s", len(l), l)
		}
	}
	wl := strings.Split(strings.TrimSuffix(wide.String(), "\n"), "\n")
	if len(wl) != 2 || !strings.HasPrefix(wl[0], "Egress vendor-a: ") || !strings.HasPrefix(wl[1], "Egress vendor-b: ") {
		t.Fatalf("wide: want one line an agent, in name order:\n%s", wide.String())
	}
	if !strings.Contains(wl[0], "refused 99999999: connection 33333333, agent-down 33333333, capacity 33333333") ||
		!strings.Contains(wl[0], "Egress vendor-a: fail-fast, held out of service; connection 5 cps (burst 5), sessions 17 of 200; sent") {
		t.Errorf("wide line of vendor-a: %s", wl[0])
	}
	// The same words, split differently.
	if got := strings.ReplaceAll(text.String(), "\n  ", "; "); got != wide.String() {
		t.Errorf("text and wide differ beyond their line breaks:\n%s\n%s", text.String(), wide.String())
	}
	var one bytes.Buffer
	WriteEgress(&one, rows, "vendor-b", false)
	if strings.Contains(one.String(), "vendor-a") || !strings.Contains(one.String(), "sent 7,") {
		t.Errorf("only vendor-b:\n%s", one.String())
	}
}
