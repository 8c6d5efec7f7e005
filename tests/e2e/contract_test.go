package e2e

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/internal/version"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// strict decodes one JSON document into v and fails on a key v does not
// have; then it fails on a key of v the document does not have: every
// -o json keeps its keys whatever the state (docs/json.md).
func strict(t *testing.T, what, doc string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s is not its documented type: %v\n%s", what, err, doc)
	}
	var got, want any
	json.Unmarshal([]byte(doc), &got)
	back, _ := json.Marshal(v)
	json.Unmarshal(back, &want)
	if missing := missingKeys(want, got, what); len(missing) > 0 {
		t.Errorf("%s lacks keys its type has: %v\n%s", what, missing, doc)
	}
}

// missingKeys are the object keys of want that got lacks, at any depth
// where both are objects (maps keyed by names, such as classes, compare
// their first level only).
func missingKeys(want, got any, path string) []string {
	w, ok1 := want.(map[string]any)
	g, ok2 := got.(map[string]any)
	if !ok1 || !ok2 {
		return nil
	}
	var out []string
	for k, wv := range w {
		gv, ok := g[k]
		if !ok {
			out = append(out, path+"."+k)
			continue
		}
		out = append(out, missingKeys(wv, gv, path+"."+k)...)
	}
	slices.Sort(out)
	return out
}

// TestOutputContracts: every -o json of an attached filter decodes into
// the type docs/json.md names, with no key more and none less, and the
// exit codes say what scripts need: 0 while protected, 3 once nothing is.
func TestOutputContracts(t *testing.T) {
	tb := harness.NewTestbed(t)
	// Every level and the charge budget, so that every part of each
	// output has something to say; written here, as the kernel VM runs
	// this test without the source tree.
	cfg := harness.WriteConfig(t, harness.E2eConfig+"interfaces: [{name: "+tb.BoxIface+"}]\n"+`
classes:
  pppoe-padi:  {cps: 100, burst: 200, per-source: {key: mac, cps: 1, burst: 3}}
  l2tp-icrq:   {cps: 50}
  sip-invite:  {cps: 30, burst-seconds: 60, per-source: {cps: 5, ipv6-prefix: 64}}
environment: {cps: 500}
customers:
  - {name: acme, cps: 20, accounts: [{name: pbx1, source: 192.0.2.10/32, cps: 10}]}
call-admission: |
  call admission new-model
  call admission limit 200
  call admission cpu-limit 60
  call admission pppoe 10 1
session-agents:
  - {name: peer1, hostname: 192.0.2.2, realm-id: core, cps: 50}
realms: [{name: core, address: 192.0.2.1}]
`)
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg); err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })
	// PADIs of one modem over its per-source limit: reject records.
	var frames [][]byte
	for range 6 {
		frames = append(frames, pkt.Frame(pkt.Ether{Src: [6]byte{2, 0, 0, 0, 0, 9}, Broadcast: true}, pkt.PPPoE{Code: pkt.PADI}))
	}
	testenv.Send(t, tb.Peer, tb.PeerIfc, frames)

	run := func(args ...string) string {
		t.Helper()
		out, stderr, err := tb.Cacctl(t, args...)
		if err != nil {
			t.Fatalf("cacctl %s: %v: %s", strings.Join(args, " "), err, stderr)
		}
		return out
	}
	strict(t, "show stats -o json", run("show", "stats", "-o", "json"), &maps.StatsView{})
	strict(t, "show call admission statistics -o json", run("show", "call", "admission", "statistics", "-o", "json"), &maps.CallAdmissionView{})
	strict(t, "show limits -o json", run("show", "limits", "-o", "json"), &maps.LimitsView{})
	strict(t, "version -o json", run("version", "-o", "json"), &version.Info{})
	var st api.StatusReport
	strict(t, "status -o json", run("status", "-o", "json"), &st)
	if len(st.Degraded) != 0 || len(st.Interfaces) != 1 {
		t.Errorf("status of one attachment: %+v", st)
	}
	lines := strings.Split(strings.TrimSpace(run("show", "rejects", "-o", "json")), "\n")
	if len(lines) == 0 || lines[0] == "" {
		t.Fatal("no reject records of the PADIs over their limit")
	}
	for _, l := range lines {
		strict(t, "show rejects -o json", l, &api.RejectLine{})
	}

	if _, stderr, err := tb.Cacctl(t, "detach", tb.BoxIface); err != nil {
		t.Fatalf("detach: %v: %s", err, stderr)
	}
	out, _, err := tb.Cacctl(t, "status", "-o", "json")
	if !harness.Degraded(err) {
		t.Errorf("status with nothing attached: %v, want exit 3", err)
	}
	var gone api.StatusReport
	strict(t, "status -o json, nothing attached", out, &gone)
	if !reflect.DeepEqual(gone.Degraded, []string{"attached to no interface"}) || gone.Interfaces == nil || gone.Orphans == nil {
		t.Errorf("status with nothing attached: %+v", gone)
	}
	if !bytes.Contains([]byte(out), []byte(`"interfaces": []`)) {
		t.Errorf("no attachment is an empty list, not null:\n%s", out)
	}
}
