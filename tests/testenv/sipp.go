package testenv

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Addr puts an address (CIDR, e.g. "192.0.2.1/24") on an interface in a
// namespace and brings lo up there; removed with the namespace.
func Addr(t testing.TB, ns, iface, cidr string) {
	t.Helper()
	args := []string{"-n", ns, "addr", "add", cidr, "dev", iface}
	if strings.Contains(cidr, ":") {
		args = append(args, "nodad") // usable at once, no duplicate detection
	}
	ip(t, args...)
	ip(t, "-n", ns, "link", "set", "lo", "up")
}

// Sipp is a sipp process running in a network namespace; killed and waited
// for when the test ends, with its log (final screens, stderr, error trace)
// shown if the test failed.
type Sipp struct {
	ns      string
	args    []string
	p       *Process // its log: stdout and stderr
	errFile string   // -error_file
}

// sippStartTimeout bounds how long StartSipp waits for sipp's socket.
const sippStartTimeout = 5 * time.Second

// StartSipp runs `sipp` with args inside namespace ns (ip netns exec NS sipp
// ...), with -nostdin, -trace_err writing into t.TempDir(), and returns once
// the process is running and, when args hold -p PORT, once it has bound that
// port. It fails the test (not skips) if sipp is missing and
// XDPCAC_REQUIRE_BPF=1, else skips.
func StartSipp(t testing.TB, ns string, args ...string) *Sipp {
	t.Helper()
	bin := RequireTool(t, "sipp", "sip-tester")
	dir := t.TempDir()
	s := &Sipp{
		ns:      ns,
		args:    args,
		errFile: filepath.Join(dir, "errors.log"),
	}
	cmd := Command(ns, bin, append([]string{"-nostdin", "-trace_err", "-error_file", s.errFile}, args...)...)
	cmd.Dir = dir
	s.p = Start(t, cmd, 2*time.Second)
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("sipp %s in %s:\n%s", strings.Join(args, " "), ns, s.Log())
		}
	})
	if err := s.ready(portArg(args)); err != nil {
		t.Fatalf("sipp %s in %s: %v", strings.Join(args, " "), ns, err) // the cleanup shows its log
	}
	return s
}

// portArg returns the value of -p in sipp's args, or 0.
func portArg(args []string) int {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-p" {
			if n, err := strconv.Atoi(args[i+1]); err == nil {
				return n
			}
		}
	}
	return 0
}

// ready waits until the process has a socket bound to port (any socket
// when port is 0), or fails when it exits first.
func (s *Sipp) ready(port int) error {
	exited := false
	bound := Poll(sippStartTimeout, 20*time.Millisecond, func() bool {
		select {
		case <-s.p.Done():
			exited = true
			return true
		default:
		}
		return boundPort(s.p.Pid(), port)
	})
	switch {
	case exited:
		return fmt.Errorf("sipp exited at start: %v", s.p.Wait())
	case bound:
		return nil
	case port == 0:
		return fmt.Errorf("no socket after %v", sippStartTimeout)
	}
	return fmt.Errorf("port %d not bound after %v", port, sippStartTimeout)
}

// boundPort reports whether process pid owns a UDP socket, or a listening
// TCP one, on port (any port when 0). /proc/PID/net shows the namespace of
// the process: `ip netns exec` execs sipp in place, so pid is sipp's.
func boundPort(pid, port int) bool {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return false
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	for _, table := range []string{"udp", "udp6", "tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || !inodes[fields[9]] {
				continue
			}
			if strings.HasPrefix(table, "tcp") && fields[3] != "0A" { // LISTEN
				continue
			}
			_, hex, _ := strings.Cut(fields[1], ":")
			p, err := strconv.ParseUint(hex, 16, 16)
			if err == nil && p != 0 && (port == 0 || int(p) == port) {
				f.Close()
				return true
			}
		}
		f.Close()
	}
	return false
}

// Stop ends sipp: SIGTERM, then SIGKILL after 2 s; it waits for the exit.
// Idempotent, and a no-op once sipp has exited by itself.
func (s *Sipp) Stop() { s.p.Stop() }

// Wait waits for a scenario that ends by itself (-m N) and returns sipp's
// exit error: nil when it exited 0, that is when all its calls succeeded.
// After timeout it stops sipp and returns an error saying so.
func (s *Sipp) Wait(timeout time.Duration) error {
	if err := s.p.WaitFor(timeout); err != nil {
		return fmt.Errorf("sipp %s in %s: %w", strings.Join(s.args, " "), s.ns, err)
	}
	return nil
}

// Log returns what sipp wrote: stdout (its final screens, as it exits) and
// stderr, then its error trace if it wrote one.
func (s *Sipp) Log() string {
	log := s.p.Log.String()
	if data, err := os.ReadFile(s.errFile); err == nil && len(bytes.TrimSpace(data)) > 0 {
		log += fmt.Sprintf("--- error trace %s ---\n%s\n", s.errFile, bytes.TrimSpace(data))
	}
	return log
}

// ScenarioPath returns the absolute path of tests/sipp/NAME.xml ("NAME" or
// "NAME.xml"), from the caller's package dir: tests/ or one below it.
func ScenarioPath(t testing.TB, name string) string {
	t.Helper()
	name = strings.TrimSuffix(name, ".xml") + ".xml"
	wd, err := os.Getwd()
	if err != nil {
		t.Fatalf("scenario %s: working directory: %v", name, err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		p := filepath.Join(dir, "sipp", name)
		if filepath.Base(dir) == "tests" {
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("scenario %s: %v", name, err)
			}
			return p
		}
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil || filepath.Dir(dir) == dir {
			t.Fatalf("scenario %s: no tests/ directory above %s", name, wd)
		}
	}
}

// SyncBuffer is a bytes.Buffer that a process's output copier and the
// test reading it may use at once.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
