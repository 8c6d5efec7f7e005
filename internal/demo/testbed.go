package demo

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/xdpcac/xdpcac/daemon"
	"github.com/xdpcac/xdpcac/loader"
)

// testbed is what the demo makes, and removes.
type testbed struct {
	bras, peer         string // network namespaces
	brasIface, peerIfc string
	// stateDir is the daemon's bpffs directory; its lock and socket are
	// in a directory in /run/xdpcac named after it (api.PathsOf).
	stateDir string
	// tmpDir holds the configuration and the rejects log.
	tmpDir, cfgFile, rejectsLog string
	// cpuSource is what the CPU gate measures; comm is this process's
	// name before the testbed renamed it, "" when it did not.
	cpuSource, comm string
}

// newTestbed makes the namespaces, the veth and the configuration; with
// cpuSource "" the CPU gate measures this process alone.
func newTestbed(cpuSource string) (*testbed, error) {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("testbed id: %w", err)
	}
	id := hex.EncodeToString(b)
	tb := &testbed{
		bras: "xcdemo-bras-" + id, peer: "xcdemo-peer-" + id,
		brasIface: "xcd" + id + "b", peerIfc: "xcd" + id + "p",
		stateDir: filepath.Join("/sys/fs/bpf", "xdpcac-demo-"+id),
	}
	steps := [][]string{
		{"netns", "add", tb.bras},
		{"netns", "add", tb.peer},
		{"link", "add", tb.brasIface, "netns", tb.bras, "type", "veth", "peer", "name", tb.peerIfc, "netns", tb.peer},
		{"-n", tb.bras, "link", "set", "lo", "up"},
		{"-n", tb.peer, "link", "set", "lo", "up"},
		{"-n", tb.bras, "link", "set", tb.brasIface, "up"},
		{"-n", tb.peer, "link", "set", tb.peerIfc, "up"},
		{"-n", tb.bras, "addr", "add", "192.0.2.1/24", "dev", tb.brasIface},
		{"-n", tb.peer, "addr", "add", "192.0.2.2/24", "dev", tb.peerIfc},
	}
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			tb.remove()
			return nil, fmt.Errorf("ip %s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	dir, err := os.MkdirTemp("", "xdpcac-demo-")
	if err != nil {
		tb.remove()
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	tb.tmpDir = dir
	tb.cfgFile = filepath.Join(dir, "cac.yaml")
	tb.rejectsLog = filepath.Join(dir, "rejects.jsonl")
	tb.cpuSource = cpuSource
	if cpuSource == "" {
		tb.cpuSource = tb.nameProcess(id)
	}
	cfg := strings.NewReplacer("IFACE", tb.brasIface, "CPUSOURCE", strconv.Quote(tb.cpuSource)).Replace(demoConfig)
	if err := os.WriteFile(tb.cfgFile, []byte(cfg), 0o600); err != nil {
		tb.remove()
		return nil, fmt.Errorf("demo configuration: %w", err)
	}
	return tb, nil
}

// nameProcess names this process after the testbed and returns it as a
// CPU source. The testbed's control plane (the daemon, the SIP server)
// runs in this process, as a BRAS's in accel-pppd; the whole box's CPU is
// other work's too, and other cacctl processes share the name cacctl.
// Writing /proc/self/comm names the main thread, whose comm is the
// process's; the old name comes back in remove.
func (tb *testbed) nameProcess(id string) string {
	old, err := os.ReadFile("/proc/self/comm")
	name := "xcdemo-" + id
	if err != nil || os.WriteFile("/proc/self/comm", []byte(name), 0) != nil {
		return "system"
	}
	tb.comm = strings.TrimSuffix(string(old), "\n")
	return "process:" + name
}

// remove takes down what newTestbed made and what the daemon left: it
// detaches on exit, but one that failed half way may not have. Deleting
// the namespaces takes the veth pair with them.
func (tb *testbed) remove() {
	loader.Detach(loader.Attachment{Iface: tb.brasIface, Netns: tb.bras}, tb.stateDir)
	os.RemoveAll(tb.stateDir)
	daemon.RemoveStaleFiles(tb.stateDir)
	exec.Command("ip", "netns", "del", tb.bras).Run()
	exec.Command("ip", "netns", "del", tb.peer).Run()
	if tb.tmpDir != "" {
		os.RemoveAll(tb.tmpDir)
	}
	if tb.comm != "" {
		os.WriteFile("/proc/self/comm", []byte(tb.comm), 0)
	}
}
