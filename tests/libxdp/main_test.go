package libxdp

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/tests/testenv"
)

// cacctlBin is the cacctl binary built for this run.
var cacctlBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "xdpcac-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cacctlBin = filepath.Join(dir, "cacctl")
	if bin := os.Getenv("XDPCAC_CACCTL"); bin != "" {
		cacctlBin = bin
	} else if out, err := exec.Command("go", "build", "-o", cacctlBin, "../../cmd/cacctl").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build cacctl: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// box is the namespace and interface the programs share, with the
// environment that puts libxdp's pins in a directory of the test's own,
// and a peer namespace that sends to it.
type box struct {
	ns, iface       string
	peer, peerIface string
	cfg             string // the configuration file
	stateDir        string
	libxdp          string // where libxdp pins, as LIBXDP_BPFFS in env
	env             []string
}

// newBox makes the box: the namespaces and their veth pair, the box's
// address, a configuration with config and the box's interface given
// options (YAML flow mapping entries), and the state directory and
// libxdp's directory on bpffs, removed when t ends after everything is
// taken off the interface. It skips t without root or xdp-tools.
func newBox(t *testing.T, options string) *box {
	t.Helper()
	testenv.RequireBPF(t)
	needTools(t)
	ns, peer := testenv.Netns(t), testenv.Netns(t)
	iface, peerIface := testenv.Veth(t, ns, peer)
	testenv.Addr(t, ns, iface, "192.0.2.2/24")
	b := &box{ns: ns, iface: iface, peer: peer, peerIface: peerIface, stateDir: filepath.Join("/sys/fs/bpf", testenv.Unique("xdpcac-t-"))}
	b.cfg = filepath.Join(t.TempDir(), "cac.yaml")
	if err := os.WriteFile(b.cfg, []byte(config+"interfaces: [{name: "+iface+options+"}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// libxdp reads LIBXDP_BPFFS for where it pins dispatchers, and so
	// does cacctl: a directory on bpffs of this test's, removed whole.
	b.libxdp = filepath.Join("/sys/fs/bpf", testenv.Unique("xdpcac-t-"))
	if err := os.Mkdir(b.libxdp, 0o700); err != nil {
		t.Fatal(err)
	}
	b.env = append(os.Environ(), "LIBXDP_BPFFS="+b.libxdp)
	t.Cleanup(func() {
		b.cacctlRun("detach", iface)
		b.tool("xdp-filter", "unload", iface)
		// xdp-filter pins its program by interface name beside maps that
		// all its interfaces share; the maps go with its last unload.
		os.RemoveAll(filepath.Join("/sys/fs/bpf/xdp-filter/programs", iface))
		os.RemoveAll(b.stateDir)
		os.RemoveAll(b.libxdp)
	})
	return b
}

// tool runs an xdp-tools command in the box's namespace. nsenter enters
// the network namespace alone: ip netns exec would mount a sysfs of the
// namespace over /sys, and with it hide the bpffs where libxdp pins.
func (b *box) tool(args ...string) (string, error) {
	cmd := exec.Command("nsenter", append([]string{"--net=/run/netns/" + b.ns}, args...)...)
	cmd.Env = b.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (b *box) mustTool(t *testing.T, args ...string) string {
	t.Helper()
	out, err := b.tool(args...)
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// send sends frames from the peer to the box.
func (b *box) send(t *testing.T, frames [][]byte) { testenv.Send(t, b.peer, b.peerIface, frames) }

func (b *box) cacctlRun(args ...string) (string, string, error) {
	var o, e bytes.Buffer
	cmd := exec.Command(cacctlBin, append([]string{"--state-dir", b.stateDir, "--netns", b.ns}, args...)...)
	cmd.Env = b.env
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	return o.String(), e.String(), err
}

func (b *box) cacctl(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, err := b.cacctlRun(args...)
	if err != nil {
		t.Fatalf("cacctl %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

// needTools skips t without xdp-tools, or fails it where the tests must
// run (XDPCAC_REQUIRE_BPF=1: tests/provision.sh installs them).
func needTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"xdp-filter", "xdp-loader", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("XDPCAC_REQUIRE_BPF") == "1" {
				t.Fatalf("XDPCAC_REQUIRE_BPF=1 but %s is not installed (xdp-tools, util-linux)", tool)
			}
			t.Skipf("needs %s (xdp-tools)", tool)
		}
	}
}
