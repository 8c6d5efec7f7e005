package collector

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/maps"
)

// fakeSnapshot has two interfaces with known counts, buckets, call
// admission and two agents.
func fakeSnapshot() Snapshot {
	var eth1, eth2 maps.Stats
	eth1.Classes[cac.PPPoEPADI].Admitted = 5
	eth1.Classes[cac.PPPoEPADI].Rejected[cac.ReasonClass] = 2
	eth1.Classes[cac.PPPoEPADI].Rejected[cac.ReasonSource] = 1
	eth1.Classes[cac.SIPInDialog].Admitted, eth1.Fragment, eth1.PassedOther = 7, 3, 9
	eth1.Classes[cac.ClassMalformed].Admitted = 4
	eth2.Classes[cac.SIPInvite].Admitted = 11
	eth2.Classes[cac.SIPInvite].Rejected[cac.ReasonSessionCharges] = 6
	age := int64(1500)
	return Snapshot{
		Interfaces:    map[string]maps.Stats{"eth1": eth1, "blue:eth2": eth2},
		MalformedDrop: true,
		Buckets: []Bucket{
			{Level: LevelClass, Class: "pppoe-padi", Tokens: 12.5, Burst: 50},
			{Level: LevelEnvironment, Tokens: 100, Burst: 200},
		},
		CallAdmission: &maps.CallAdmissionView{
			Limit: 1000, SessionCharges: 300, LoadCharge: 50, TotalCharges: 350,
			CPUPercent: 42.5, LoadPercent: 37, BuffersFull: true,
			Accepted: 16, Rejected: 6, HeartbeatAgeMS: &age,
		},
		Accounts: []AccountBucket{
			{Customer: "acme", Account: "acme-hq", Limited: true, Tokens: 3, Burst: 10, Sessions: maps.SessionsInForce{Max: 30, Held: 7}},
			{Customer: "acme", Account: "acme-lab", Limited: true, Tokens: 10, Burst: 10},
			{Customer: "acme", Account: "acme-pbx", Sessions: maps.SessionsInForce{Max: 3}},
		},
		Customers: []CustomerBucket{{Customer: "acme", Limited: true, Tokens: 20, Burst: 40, Sessions: maps.SessionsInForce{Max: 100, Held: 7}}},
		Agents: []Agent{
			{Name: "sbc1", Destination: "10.0.0.1:5060", Realm: "core", Up: true},
			{Name: "sbc1", Destination: "10.0.0.2:5060", Realm: "core"},
		},
		Daemon: &DaemonState{
			Configured: map[string]bool{"eth1": true, "blue:eth2": true, "bond0": false},
			ReloadOK:   false, LoadedAt: time.Unix(1_700_000_000, 500_000_000),
		},
	}
}

func fakeReader() Reader {
	return ReaderFunc(func() (Snapshot, error) { return fakeSnapshot(), nil })
}

// scrape gathers g and keys each sample as the text exposition writes it.
func scrape(t *testing.T, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		counter := strings.HasSuffix(mf.GetName(), "_total")
		if got := mf.GetType().String(); (got == "COUNTER") != counter || (got != "COUNTER" && got != "GAUGE") {
			t.Errorf("%s: type %s", mf.GetName(), got)
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+strconv.Quote(l.GetValue()))
			}
			key := mf.GetName()
			if len(ls) > 0 {
				key += "{" + strings.Join(ls, ",") + "}"
			}
			if _, dup := out[key]; dup {
				t.Errorf("duplicate series %s", key)
			}
			out[key] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return out
}

func count(samples map[string]float64, name string) int {
	n := 0
	for k := range samples {
		if k == name || strings.HasPrefix(k, name+"{") {
			n++
		}
	}
	return n
}

func TestCollect(t *testing.T) {
	c := New(fakeReader(), "v1.2.3")
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	s := scrape(t, reg)
	for k, want := range map[string]float64{
		`xdpcac_packets_total{class="pppoe-padi",iface="eth1",verdict="pass"}`:                5,
		`xdpcac_packets_total{class="pppoe-padi",iface="eth1",verdict="drop"}`:                3,
		`xdpcac_packets_total{class="sip-invite",iface="blue:eth2",verdict="pass"}`:           11,
		`xdpcac_packets_total{class="sip-invite",iface="blue:eth2",verdict="drop"}`:           6,
		`xdpcac_packets_total{class="pppoe-padi",iface="blue:eth2",verdict="pass"}`:           0,
		`xdpcac_packets_total{class="sip-indialog",iface="eth1",verdict="pass"}`:              7,
		`xdpcac_packets_total{class="fragment",iface="eth1",verdict="pass"}`:                  3,
		`xdpcac_packets_total{class="passed-other",iface="eth1",verdict="pass"}`:              9,
		`xdpcac_packets_total{class="malformed",iface="eth1",verdict="drop"}`:                 4,
		`xdpcac_rejects_total{class="pppoe-padi",iface="eth1",reason="class"}`:                2,
		`xdpcac_rejects_total{class="pppoe-padi",iface="eth1",reason="source"}`:               1,
		`xdpcac_rejects_total{class="pppoe-padi",iface="eth1",reason="cpu-limit"}`:            0,
		`xdpcac_rejects_total{class="sip-invite",iface="blue:eth2",reason="session-charges"}`: 6,
		`xdpcac_bucket_burst{class="",level="environment"}`:                                   200,
		`xdpcac_cpu_ratio`:           0.425,
		`xdpcac_cpu_average_ratio`:   0.37,
		`xdpcac_buffers_full`:        1,
		`xdpcac_control_plane_stale`: 0,
	} {
		if got, ok := s[k]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, want)
		}
	}
	if n := s[`xdpcac_packets_total{class="malformed",iface="eth1",verdict="pass"}`]; n != 0 {
		t.Errorf("%v malformed exported as passed although MalformedDrop", n)
	}
	perIface := cac.NumClasses*2 + 2 // and fragment, passed-other
	if n := count(s, "xdpcac_packets_total"); n != 2*perIface {
		t.Errorf("%d packets series, want %d", n, 2*perIface)
	}
	if n := count(s, "xdpcac_rejects_total"); n != 2*cac.NumClasses*cac.NumReasons {
		t.Errorf("%d rejects series, want %d", n, 2*cac.NumClasses*cac.NumReasons)
	}

	expected := fmt.Sprintf(`
# HELP xdpcac_bucket_tokens Tokens left in a class or environment bucket.
# TYPE xdpcac_bucket_tokens gauge
xdpcac_bucket_tokens{class="",level="environment"} 100
xdpcac_bucket_tokens{class="pppoe-padi",level="class"} 12.5
# HELP xdpcac_build_info Always 1; labels give the version of xdpcac, the commit it was built from (empty when unknown) and the version of Go.
# TYPE xdpcac_build_info gauge
xdpcac_build_info{goversion=%q,revision="",version="v1.2.3"} 1
# HELP xdpcac_calls_total Calls (PADI, ICRQ, INVITE) over all interfaces: accepted, every one admitted; rejected, those call admission refused, not the buckets (xdpcac_packets_total has every drop).
# TYPE xdpcac_calls_total counter
xdpcac_calls_total{result="accepted"} 16
xdpcac_calls_total{result="rejected"} 6
# HELP xdpcac_call_admission_charges Call admission charges in force: session, load and their total.
# TYPE xdpcac_call_admission_charges gauge
xdpcac_call_admission_charges{kind="load"} 50
xdpcac_call_admission_charges{kind="session"} 300
xdpcac_call_admission_charges{kind="total"} 350
# HELP xdpcac_call_admission_limit Call admission limit that the total charge is held to.
# TYPE xdpcac_call_admission_limit gauge
xdpcac_call_admission_limit 1000
# HELP xdpcac_account_bucket_tokens Tokens left in an account's bucket, of the accounts of the configuration with a rate.
# TYPE xdpcac_account_bucket_tokens gauge
xdpcac_account_bucket_tokens{account="acme-hq",customer="acme"} 3
xdpcac_account_bucket_tokens{account="acme-lab",customer="acme"} 10
# HELP xdpcac_customer_bucket_burst Burst (capacity in tokens) of a customer's bucket.
# TYPE xdpcac_customer_bucket_burst gauge
xdpcac_customer_bucket_burst{customer="acme"} 40
# HELP xdpcac_account_sessions Dialogs holding a session of an account's max-sessions (docs/design.md, "Capacity").
# TYPE xdpcac_account_sessions gauge
xdpcac_account_sessions{account="acme-hq",customer="acme"} 7
xdpcac_account_sessions{account="acme-pbx",customer="acme"} 0
# HELP xdpcac_customer_max_sessions A customer's max-sessions, of the customers of the configuration with one.
# TYPE xdpcac_customer_max_sessions gauge
xdpcac_customer_max_sessions{customer="acme"} 100
# HELP xdpcac_collect_errors_total Scrapes that could not read or export all of the fast path's state.
# TYPE xdpcac_collect_errors_total counter
xdpcac_collect_errors_total 0
# HELP xdpcac_heartbeat_age_seconds Age of the control plane's last write to the fast path.
# TYPE xdpcac_heartbeat_age_seconds gauge
xdpcac_heartbeat_age_seconds 1.5
# HELP xdpcac_session_agent_up 1 while a session agent is up towards a destination in a realm.
# TYPE xdpcac_session_agent_up gauge
xdpcac_session_agent_up{agent="sbc1",destination="10.0.0.1:5060",realm="core"} 1
xdpcac_session_agent_up{agent="sbc1",destination="10.0.0.2:5060",realm="core"} 0
# HELP xdpcac_interface_attached 1 while the filter is on an interface the configuration in force names, 0 while the interface is missing or gone.
# TYPE xdpcac_interface_attached gauge
xdpcac_interface_attached{iface="blue:eth2"} 1
xdpcac_interface_attached{iface="bond0"} 0
xdpcac_interface_attached{iface="eth1"} 1
# HELP xdpcac_config_last_reload_successful 1 when the last start or reload of cacctl run put its file in force, 0 after a refused reload (the file before it stays in force).
# TYPE xdpcac_config_last_reload_successful gauge
xdpcac_config_last_reload_successful 0
# HELP xdpcac_config_last_reload_success_timestamp_seconds When the file in force was put in force, in seconds since the epoch.
# TYPE xdpcac_config_last_reload_success_timestamp_seconds gauge
xdpcac_config_last_reload_success_timestamp_seconds 1.7000000005e+09
`, runtime.Version())
	if err := testutil.CollectAndCompare(c, strings.NewReader(expected),
		"xdpcac_bucket_tokens", "xdpcac_build_info", "xdpcac_calls_total", "xdpcac_call_admission_charges",
		"xdpcac_call_admission_limit", "xdpcac_account_bucket_tokens", "xdpcac_customer_bucket_burst",
		"xdpcac_account_sessions", "xdpcac_customer_max_sessions",
		"xdpcac_collect_errors_total", "xdpcac_heartbeat_age_seconds", "xdpcac_session_agent_up",
		"xdpcac_interface_attached", "xdpcac_config_last_reload_successful",
		"xdpcac_config_last_reload_success_timestamp_seconds"); err != nil {
		t.Error(err)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	if err := c.Err(); err != nil {
		t.Errorf("Err() = %v after a clean scrape", err)
	}
}

func TestReadError(t *testing.T) {
	c := New(ReaderFunc(func() (Snapshot, error) { return Snapshot{}, errors.New("map gone") }), "dev")
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	for want := 1.0; want <= 2; want++ {
		s := scrape(t, reg)
		if got := s["xdpcac_collect_errors_total"]; got != want {
			t.Errorf("collect errors = %v, want %v", got, want)
		}
		if got := s[fmt.Sprintf(`xdpcac_build_info{goversion=%q,revision="",version="dev"}`, runtime.Version())]; got != 1 {
			t.Errorf("build_info = %v, want 1: %v", got, s)
		}
		if n := count(s, "xdpcac_packets_total"); n != 0 {
			t.Errorf("%d packets series after a failed read", n)
		}
	}
	if err := c.Err(); err == nil || !strings.Contains(err.Error(), "read fast path state: map gone") {
		t.Errorf("Err() = %v", err)
	}
}

func TestPartialAndInvalid(t *testing.T) {
	snap := fakeSnapshot()
	snap.Interfaces["bad\xff"] = maps.Stats{}
	snap.Buckets = append(snap.Buckets, snap.Buckets[0])
	snap.Agents = append(snap.Agents, snap.Agents[0], Agent{Name: "x\xfe", Destination: "d", Realm: "r"})
	c := New(ReaderFunc(func() (Snapshot, error) { return snap, errors.New("one map unreadable") }), "v\xff")
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	s := scrape(t, reg)
	if got := s["xdpcac_collect_errors_total"]; got != 1 {
		t.Errorf("collect errors = %v, want 1 per scrape", got)
	}
	if got := s[`xdpcac_packets_total{class="pppoe-padi",iface="eth1",verdict="pass"}`]; got != 5 {
		t.Errorf("partial snapshot not exported: %v", got)
	}
	if n := count(s, "xdpcac_packets_total"); n != 2*(cac.NumClasses*2+2) {
		t.Errorf("%d packets series, want the two valid interfaces only", n)
	}
	if n := count(s, "xdpcac_session_agent_up"); n != 2 {
		t.Errorf("%d agent series, want 2", n)
	}
	if got := s[fmt.Sprintf(`xdpcac_build_info{goversion=%q,revision="",version=%q}`, runtime.Version(), "v\uFFFD")]; got != 1 {
		t.Errorf("build_info with invalid version not sanitized")
	}
	err := c.Err()
	for _, want := range []string{"one map unreadable", "not valid UTF-8", "duplicate"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Err() = %v, want it to mention %q", err, want)
		}
	}
}

func TestReaderPanicsOrIsNil(t *testing.T) {
	for name, r := range map[string]Reader{
		"panic": ReaderFunc(func() (Snapshot, error) { panic("boom") }),
		"nil":   nil,
	} {
		c := New(r, "dev")
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(c)
		if got := scrape(t, reg)["xdpcac_collect_errors_total"]; got != 1 {
			t.Errorf("%s: collect errors = %v, want 1", name, got)
		}
	}
}

func TestNoCallAdmissionNoAgents(t *testing.T) {
	snap := fakeSnapshot()
	snap.CallAdmission, snap.Agents = nil, nil
	c := New(ReaderFunc(func() (Snapshot, error) { return snap, nil }), "dev")
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	s := scrape(t, reg)
	for _, name := range []string{
		"xdpcac_call_admission_charges", "xdpcac_call_admission_limit", "xdpcac_cpu_ratio", "xdpcac_cpu_average_ratio", "xdpcac_buffers_full",
		"xdpcac_heartbeat_age_seconds", "xdpcac_control_plane_stale", "xdpcac_calls_total", "xdpcac_session_agent_up",
	} {
		if n := count(s, name); n != 0 {
			t.Errorf("%s: %d series, want none", name, n)
		}
	}
	if count(s, "xdpcac_packets_total") == 0 || s["xdpcac_collect_errors_total"] != 0 {
		t.Error("interfaces missing or errors counted")
	}
}

func TestHeartbeatAbsent(t *testing.T) {
	snap := fakeSnapshot()
	snap.CallAdmission.HeartbeatAgeMS = nil
	c := New(ReaderFunc(func() (Snapshot, error) { return snap, nil }), "dev")
	if n := testutil.CollectAndCount(c, "xdpcac_heartbeat_age_seconds"); n != 0 {
		t.Errorf("heartbeat age exported without a heartbeat")
	}
	if n := testutil.CollectAndCount(c, "xdpcac_control_plane_stale"); n != 1 {
		t.Errorf("stale: %d series, want 1", n)
	}
}
