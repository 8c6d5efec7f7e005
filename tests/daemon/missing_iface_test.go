package daemon

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// TestMissingInterfaceNamed: a file that names an interface that does not
// exist beside one that does. The daemon attaches the one, and status is
// degraded (exit 3) and names the other as missing, as
// xdpcac_interface_attached does with a 0. Once the attached interface is
// deleted too, status says it is gone, not that it lacks an egress
// program, and its series turns 0. status gives the program's ID, as
// xdp-loader does.
func TestMissingInterfaceNamed(t *testing.T) {
	tb := harness.NewTestbed(t)
	missing := testenv.Unique("xcm")
	cfg := harness.WriteConfig(t, harness.E2eConfig+"interfaces: [{name: "+tb.BoxIface+"}, {name: "+missing+"}]\n"+
		"cpu: {sample-interval: 200ms}\nmetrics: {listen: \"127.0.0.1:0\"}\n")
	tb.StartDaemon(t, cfg)
	box, gone := tb.Box+":"+tb.BoxIface, tb.Box+":"+missing

	v, degraded := statusReport(t, tb)
	if !degraded || !has(v.Degraded, "interface "+gone+" missing") {
		t.Errorf("status with %s missing: exit 3 %v, degraded %q; want exit 3 and the interface named", missing, degraded, v.Degraded)
	}
	if id := harness.XdpProgID(t, tb.Box, tb.BoxIface); len(v.Interfaces) != 1 || v.Interfaces[0].ProgramID != id {
		t.Errorf("status names programs %+v, want the one attachment running program %d", v.Interfaces, id)
	}
	m := tb.Metrics(t)
	for _, want := range []string{`xdpcac_interface_attached{iface="` + box + `"} 1`, `xdpcac_interface_attached{iface="` + gone + `"} 0`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s:\n%s", want, harness.GrepLines(m, "interface_attached"))
		}
	}

	if out, err := exec.Command("ip", "-n", tb.Box, "link", "del", tb.BoxIface).CombinedOutput(); err != nil {
		t.Fatalf("delete %s: %v: %s", tb.BoxIface, err, out)
	}
	testenv.WaitFor(t, func() bool {
		v, _ := statusReport(t, tb)
		return has(v.Degraded, "interface "+box+" gone")
	})
	v, _ = statusReport(t, tb)
	if has(v.Degraded, "no egress program on "+box) {
		t.Errorf("a deleted interface is said to lack its egress program: %q", v.Degraded)
	}
	if m := tb.Metrics(t); !strings.Contains(m, `xdpcac_interface_attached{iface="`+box+`"} 0`) {
		t.Errorf("metrics of the deleted interface:\n%s", harness.GrepLines(m, "interface_attached"))
	}
}

// statusReport runs status -o json and returns its report, and whether it
// exited 3, degraded.
func statusReport(t *testing.T, tb *harness.Testbed) (api.StatusReport, bool) {
	t.Helper()
	out, stderr, err := tb.Cacctl(t, "status", "-o", "json")
	var v api.StatusReport
	if jerr := json.Unmarshal([]byte(out), &v); jerr != nil {
		t.Fatalf("status -o json: %v, %v: %s%s", jerr, err, out, stderr)
	}
	if harness.StatusErr(err) != nil {
		t.Fatalf("status -o json: %v: %s", err, stderr)
	}
	return v, harness.Degraded(err)
}

// has says whether one of lines starts with prefix.
func has(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}
