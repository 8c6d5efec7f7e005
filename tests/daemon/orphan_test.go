package daemon

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// killedAttachEnv makes the test binary, run again as a helper, attach
// and kill itself at a step: STEP NETNS IFACE STATEDIR CLSACT.
const killedAttachEnv = "XDPCAC_TEST_KILLED_ATTACH"

// TestKilledAttachHelper is not a test: it is the process attachKilled
// starts, which attaches the filter and SIGKILLs itself at a step of the
// attach, as an operator's kill -9 or the OOM killer would.
func TestKilledAttachHelper(t *testing.T) {
	args := strings.Fields(os.Getenv(killedAttachEnv))
	if len(args) != 5 {
		t.Skip("run by attachKilled only")
	}
	step, a, state := args[0], loader.Attachment{Netns: args[1], Iface: args[2]}, args[3]
	opts := loader.Options{StateDir: state, EgressClsact: args[4] == "clsact", AtStep: func(s string) {
		if s == step {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}}
	if _, err := loader.Attach(a, opts); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("attach went past step %s", step)
}

// attachKilled runs an attach of the testbed's interface that is killed at
// step.
func attachKilled(t *testing.T, tb *harness.Testbed, step string, clsact bool) {
	t.Helper()
	mode := "tcx"
	if clsact {
		mode = "clsact"
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledAttachHelper$", "-test.count=1")
	// XDPCAC_CACCTL: the helper's TestMain builds no cacctl of its own.
	cmd.Env = append(os.Environ(), "XDPCAC_CACCTL="+harness.CacctlBin,
		killedAttachEnv+"="+strings.Join([]string{step, tb.Box, tb.BoxIface, tb.State, mode}, " "))
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the attach to be killed at %s: %v\n%s", step, err, out)
	}
}

// orphansOf are the orphans cacctl status -o json reports.
func orphansOf(t *testing.T, tb *harness.Testbed) []orphanView {
	t.Helper()
	out, stderr, err := tb.Cacctl(t, "status", "-o", "json")
	if harness.StatusErr(err) != nil {
		t.Fatalf("status: %v: %s", err, stderr)
	}
	var v struct{ Orphans []orphanView }
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, out)
	}
	return v.Orphans
}

type orphanView struct {
	Interface string
	Dir       string
	Filter    bool `json:"filter_on"`
}

// requireNothingLeft fails t unless the interface has neither program and
// neither the state directory nor the daemon's directory in /run/xdpcac
// (its lock file, its statuses) is there.
func requireNothingLeft(t *testing.T, tb *harness.Testbed, after string) {
	t.Helper()
	if id := harness.XdpProgID(t, tb.Box, tb.BoxIface); id != 0 {
		t.Errorf("after %s the XDP program %d is on %s", after, id, tb.BoxIface)
	}
	if kind := harness.OurEgress(t, tb); kind != "" {
		t.Errorf("after %s the egress program is on %s (%s)", after, tb.BoxIface, kind)
	}
	for _, path := range []string{tb.State, api.PathsOf(tb.State).Dir} {
		if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after %s %s is left: %v", after, path, err)
		}
	}
}

// TestAttachKilledAtEachStep (docs/design.md, "Leftovers"): an attach
// killed at any step leaves either nothing on the interface, or a
// temporary directory holding the link that status reports; a detach
// removes it all, and so does an attach, which then attaches; a detach of
// the last interface leaves no state directory and no lock file. With the
// egress program as tcx and as a clsact filter, whose filter outlives the
// process before anything is pinned.
func TestAttachKilledAtEachStep(t *testing.T) {
	harness.EgressModes(t, func(t *testing.T, clsact bool) string {
		kind := "" // how cacctl attach attached the egress program
		for _, step := range loader.Steps {
			t.Run(step, func(t *testing.T) {
				tb := harness.NewTestbed(t)
				filterOn := step == loader.StepLink || step == loader.StepEgress
				for _, cleanBy := range []string{"detach", "attach"} {
					attachKilled(t, tb, step, clsact)
					if on := harness.XdpProgID(t, tb.Box, tb.BoxIface) != 0; on != filterOn {
						t.Fatalf("killed at %s: filter on %s is %v, want %v", step, tb.BoxIface, on, filterOn)
					}
					orphans := orphansOf(t, tb)
					if step != loader.StepAttached && (len(orphans) != 1 ||
						orphans[0].Interface != tb.Box+":"+tb.BoxIface || orphans[0].Filter != filterOn) {
						t.Errorf("killed at %s: status reports %+v, want one orphan of %s:%s, filter on %v",
							step, orphans, tb.Box, tb.BoxIface, filterOn)
					}
					if out, _, _ := tb.Cacctl(t, "status"); filterOn && !strings.Contains(out, "cacctl detach "+tb.BoxIface) {
						t.Errorf("killed at %s: status text does not say what to do:\n%s", step, out)
					}
					if cleanBy == "detach" {
						if _, stderr, err := tb.Cacctl(t, "detach", tb.BoxIface); err != nil && step != loader.StepAttached {
							t.Fatalf("detach after a kill at %s: %v: %s", step, err, stderr)
						}
						requireNothingLeft(t, tb, "a kill at "+step+" and a detach")
						continue
					}
					cfg := harness.WriteConfig(t, harness.E2eConfig)
					args := []string{"attach", tb.BoxIface, "--config", cfg}
					if _, stderr, err := tb.Cacctl(t, args...); err != nil {
						t.Fatalf("attach after a kill at %s: %v: %s", step, err, stderr)
					}
					if orphans := orphansOf(t, tb); len(orphans) != 0 {
						t.Errorf("attach after a kill at %s left %+v", step, orphans)
					}
					// tcx where the kernel has it, else clsact: what harness.EgressModes
					// is told, to run the clsact fallback besides or not.
					if kind = harness.OurEgress(t, tb); kind == "" {
						t.Errorf("attach after a kill at %s: no egress program", step)
					}
					if got := tb.PadiOutcome(t); got != "admitted" {
						t.Errorf("attach after a kill at %s: a PADI is %s", step, got)
					}
					if _, stderr, err := tb.Cacctl(t, "detach", tb.BoxIface); err != nil {
						t.Fatalf("detach: %v: %s", err, stderr)
					}
					requireNothingLeft(t, tb, "a kill at "+step+", an attach and a detach")
				}
			})
		}
		return kind
	})
}
