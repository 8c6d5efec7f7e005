package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is a program a test runs beside it, a daemon or a real peer: in
// a process group of its own, so that stopping it reaches what it forks,
// and killed should the test binary die before its cleanups run. Its
// standard output and error go to Log. It is stopped when the test ends.
type Process struct {
	Cmd   *exec.Cmd
	Log   *SyncBuffer
	grace time.Duration
	done  chan struct{}
	err   error // Cmd.Wait's, once done is closed
	stop  sync.Once
}

// Start starts cmd and stops it when t ends, as Stop does; a process
// that will not start fails t. grace is how long Stop leaves between
// SIGTERM and SIGKILL; with none, Stop kills at once.
func Start(t testing.TB, cmd *exec.Cmd, grace time.Duration) *Process {
	t.Helper()
	p := &Process{Cmd: cmd, Log: &SyncBuffer{}, grace: grace, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.Log, p.Log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// The death signal comes when the thread that started the process
	// ends, not the test binary: that goroutine keeps its thread until
	// the process exits.
	started := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		t.Fatalf("start %s: %v", cmd, err)
	}
	t.Cleanup(p.Stop)
	return p
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.Cmd.Process.Pid }

// Signal sends sig to the process (not to its group).
func (p *Process) Signal(sig os.Signal) error { return p.Cmd.Process.Signal(sig) }

// Kill sends SIGKILL to the process; Wait waits for it to go.
func (p *Process) Kill() error { return p.Cmd.Process.Kill() }

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the process to exit and returns its exit error; it may
// be called again, and from more than one goroutine.
func (p *Process) Wait() error {
	<-p.done
	return p.err
}

// WaitFor is Wait bounded by timeout: past it the process is stopped and
// WaitFor says so.
func (p *Process) WaitFor(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		p.Stop()
		return fmt.Errorf("still running after %v (stopped)", timeout)
	}
}

// Stop ends the process: SIGTERM to it, then after the grace (at once
// without one) SIGKILL to its group, which also ends anything it forked
// and left. It waits for the exit and may be called again.
func (p *Process) Stop() {
	p.stop.Do(func() {
		if p.grace > 0 {
			p.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(p.grace):
			}
		}
		syscall.Kill(-p.Pid(), syscall.SIGKILL)
		<-p.done
	})
}
