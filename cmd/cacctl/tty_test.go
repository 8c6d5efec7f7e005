package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair of 80x24. The master is left in
// the runtime's poller, so that closing it ends a read under way.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	var n uint32
	var ierr error
	rc, err := master.SyscallConn()
	if err == nil {
		err = rc.Control(func(fd uintptr) {
			if ierr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ierr == nil {
				n, ierr = unix.IoctlGetUint32(int(fd), unix.TIOCGPTN)
			}
		})
	}
	if err = errors.Join(err, ierr); err != nil {
		master.Close()
		t.Fatalf("unlock the pseudo-terminal: %v", err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		t.Fatalf("open the pseudo-terminal's slave: %v", err)
	}
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80}); err != nil {
		t.Fatalf("size the pseudo-terminal: %v", err)
	}
	return master, slave
}

// ptyRun is the binary run with a pseudo-terminal as its controlling
// terminal and its stdin, stdout and stderr. Nothing is ever written to
// the master: the terminal answers no question, as a serial console or
// `script` does not.
type ptyRun struct {
	cmd    *exec.Cmd
	master *os.File
	start  time.Time
	exited chan struct{}
	took   time.Duration
	read   chan struct{}
	mu     sync.Mutex
	out    bytes.Buffer
}

func startOnPTY(t *testing.T, bin string, args ...string) *ptyRun {
	t.Helper()
	master, slave := openPTY(t)
	r := &ptyRun{cmd: exec.Command(bin, args...), master: master, exited: make(chan struct{}), read: make(chan struct{})}
	r.cmd.Stdin, r.cmd.Stdout, r.cmd.Stderr = slave, slave, slave
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	// A terminal type that answers colour and cursor queries, so that a
	// library that asks would ask.
	r.cmd.Env = append(os.Environ(), "TERM=xterm-256color", "COLORTERM=")
	r.start = time.Now()
	err := r.cmd.Start()
	slave.Close()
	if err != nil {
		master.Close()
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			r.mu.Lock()
			r.out.Write(buf[:n])
			r.mu.Unlock()
			if err != nil { // EIO once the child closed its side
				close(r.read)
				return
			}
		}
	}()
	go func() {
		r.cmd.Wait()
		r.took = time.Since(r.start)
		close(r.exited)
	}()
	t.Cleanup(r.stop)
	return r
}

func (r *ptyRun) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// waitLimit bounds a wait for a process to exit or draw, so that one
// stalled for good fails the test rather than hangs it. It times nothing:
// a stall on a terminal query shows as the query in the output.
const waitLimit = time.Minute

// wait waits for the process to exit and its output to be read; false if
// it is still running after waitLimit.
func (r *ptyRun) wait() bool {
	deadline := time.After(waitLimit)
	select {
	case <-r.exited:
	case <-deadline:
		return false
	}
	select {
	case <-r.read:
	case <-deadline: // something else holds the slave open
	}
	return true
}

// stop kills the process if it still runs and closes the master.
func (r *ptyRun) stop() {
	select {
	case <-r.exited:
	default:
		r.cmd.Process.Kill()
		<-r.exited
	}
	r.master.Close()
	<-r.read
}

// buildCacctl builds this command as the binary operators run.
func buildCacctl(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cacctl")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestNoTerminalQueries: every command, as the built binary on a terminal
// that never answers, finishes and writes no escape code: no library asks
// the terminal its colours or the cursor's place, which would stall five
// seconds on a serial console and leave the question in its output. A
// question is what stalls, so the test looks for questions, not at the
// clock: how long each run took is logged. Leaves run with --help; those
// that need neither root nor an attachment also run on an empty state
// directory (as root) or stop at the privilege check (as anyone else).
// Last, top itself must draw with no question it waits on.
func TestNoTerminalQueries(t *testing.T) {
	bin := buildCacctl(t)
	state := t.TempDir()
	var runs [][]string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		runs = append(runs, append(strings.Fields(c.CommandPath())[1:], "--help"))
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	sd := []string{"--state-dir", state}
	runs = append(runs,
		[]string{},
		[]string{"help"},
		[]string{"completion", "bash"},
		[]string{"no-such-command"},
		[]string{"attach"},
		[]string{"validate", "--config", "../../cac/config/testdata/full.yaml"},
		append([]string{"status"}, sd...),
		append([]string{"status", "-o", "json"}, sd...),
		append([]string{"show", "stats"}, sd...),
		append([]string{"show", "stats", "-o", "json"}, sd...),
		append([]string{"show", "rejects"}, sd...),
		append([]string{"show", "call", "admission", "statistics"}, sd...),
		append([]string{"show", "sipd", "agents"}, sd...),
		append([]string{"top", "--once"}, sd...),
	)
	for _, args := range runs {
		name := "cacctl " + strings.Join(args, " ")
		r := startOnPTY(t, bin, args...)
		if !r.wait() {
			t.Errorf("%s: still running after %v:\n%q", name, waitLimit, r.output())
			continue
		}
		out := r.output()
		if i := strings.IndexByte(out, 0x1b); i >= 0 {
			t.Errorf("%s: escape code at %d: %q", name, i, out)
		}
		if strings.TrimSpace(out) == "" {
			t.Errorf("%s: printed nothing", name)
		}
		if len(args) > 0 && args[len(args)-1] == "--help" && !strings.Contains(out, "Usage:") {
			t.Errorf("%s: no usage:\n%s", name, out)
		}
		t.Logf("%-50s %v", name, r.took.Round(time.Millisecond))
	}
	topOnTerminal(t, bin)
}

// topOnTerminal: on a terminal that never answers, top draws its first
// frame having asked nothing it waits for by then. Bubble Tea asks the terminal
// which modes it has (DECRQM) and its keyboard flags (CSI ? u) and reads
// the answers, if any come, in its event loop as they come: those stall
// nothing. Any other question before the frame fails, such as the colour
// (OSC 11 ?), cursor (DSR) or attribute (DA) queries a library waits on.
func topOnTerminal(t *testing.T, bin string) {
	r := startOnPTY(t, bin, "top", "--state-dir", t.TempDir())
	want := "NOT PROTECTED"
	if os.Geteuid() != 0 {
		want = "needs root" // refused before it draws
	}
	deadline := time.Now().Add(waitLimit)
	for {
		out := r.output() // up to the first frame and perhaps a little after
		if strings.Contains(ansi.Strip(out), want) {
			for _, q := range terminalQueries(out) {
				if !asyncQuery.MatchString(q) {
					t.Errorf("cacctl top: asks the terminal %q by its first frame:\n%q", q, out)
				}
			}
			break
		}
		select {
		case <-r.exited:
			if strings.Contains(ansi.Strip(r.output()), want) {
				continue
			}
			t.Fatalf("cacctl top: exited without %q:\n%q", want, r.output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("cacctl top: no %q after %v:\n%q", want, waitLimit, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("cacctl top: first frame after %v", time.Since(r.start).Round(time.Millisecond))
}

// query matches the escape sequences that ask the terminal something:
// device status and attributes (CSI n, CSI c), mode (CSI $ p), keyboard
// flags (CSI ? u), version (CSI > q), window reports (CSI 11-21 t), a
// colour or the clipboard (OSC with a ? field), and termcap or settings
// (DCS + q, DCS $ q).
var query = regexp.MustCompile(`\x1b\[[<=>?]?[0-9;]*[nc]` +
	`|\x1b\[\??[0-9;]*\$p` +
	`|\x1b\[\?u` +
	`|\x1b\[>[0-9]*q` +
	`|\x1b\[(1[13-9]|2[01])t` +
	`|\x1b\][0-9]+;([^\x07\x1b]*;)?\?(\x07|\x1b\\)` +
	`|\x1bP[+$]q`)

// asyncQuery matches the questions whose answers Bubble Tea reads when they
// come, waiting for none.
var asyncQuery = regexp.MustCompile(`^(\x1b\[\?[0-9]+\$p|\x1b\[\?u)$`)

func terminalQueries(out string) []string { return query.FindAllString(out, -1) }

func TestTerminalQueries(t *testing.T) {
	for _, c := range []struct {
		out   string
		want  []string
		async bool
	}{
		{"\x1b[?2026$p\x1b[?2027$p\x1b[>4m\x1b[?1049h\x1b[?25l\x1b[>1u\x1b[?u\x1b[H\x1b[2J", []string{"\x1b[?2026$p", "\x1b[?2027$p", "\x1b[?u"}, true},
		{"\x1b]11;?\x07\x1b[c", []string{"\x1b]11;?\x07", "\x1b[c"}, false},
		{"\x1b]4;1;?\x1b\\x", []string{"\x1b]4;1;?\x1b\\"}, false},
		{"ab\x1b[6n", []string{"\x1b[6n"}, false},
		{"\x1b[>c\x1b[>0q\x1b[18t\x1bP+q544e\x1b\\", []string{"\x1b[>c", "\x1b[>0q", "\x1b[18t", "\x1bP+q"}, false},
		{"\x1b[1;7mNOT\x1b[m\x1b[9B\x1b[22t\x1b]0;title\x07", nil, true},
	} {
		got := terminalQueries(c.out)
		if !slices.Equal(got, c.want) {
			t.Errorf("queries in %q: %q, want %q", c.out, got, c.want)
		}
		async := !slices.ContainsFunc(got, func(q string) bool { return !asyncQuery.MatchString(q) })
		if async != c.async {
			t.Errorf("queries in %q: all asynchronous %v, want %v", c.out, async, c.async)
		}
	}
}
