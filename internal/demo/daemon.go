package demo

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/daemon"
)

// demoDaemon is `cacctl run` inside the demo: the same daemon, on the
// testbed's BRAS namespace, its log kept for the summary rather than
// printed among the counts.
type demoDaemon struct {
	log     *lockedBuffer
	metrics string // host:port the metrics are served on
	cancel  context.CancelFunc
	done    chan error // Run's error, once
	err     error
	stopped bool
}

// startDaemon runs the daemon on the testbed's configuration until stop,
// and returns once it is ready: attached, its API and metrics served.
// Its context is not ctx's: Ctrl-C stops the storms first, and stop then
// takes the daemon down before the namespaces go.
func startDaemon(ctx context.Context, tb *testbed) (*demoDaemon, error) {
	buf := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Value.Kind() == slog.KindDuration {
			a.Value = slog.StringValue(a.Value.Duration().String())
		}
		return a
	}}))
	ready := make(chan struct{})
	var once sync.Once
	d := daemon.New(daemon.Config{
		File: tb.cfgFile, StateDir: tb.stateDir, Netns: tb.bras, Log: log,
		RejectsLog: tb.rejectsLog, DetachOnExit: true,
		// The daemon says READY=1 to a service manager once it serves; the
		// demo listens for that instead of polling.
		Notify: func(state string) {
			if strings.HasPrefix(state, "READY=1") {
				once.Do(func() { close(ready) })
			}
		},
	})
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	dd := &demoDaemon{log: buf, cancel: cancel, done: make(chan error, 1)}
	go func() { dd.done <- d.Run(rctx) }()
	select {
	case <-ready:
	case err := <-dd.done:
		dd.stopped, dd.err = true, err
		cancel()
		return nil, fmt.Errorf("the daemon did not start: %w%s", err, dd.journal("\n  "))
	case <-time.After(30 * time.Second):
		dd.stop()
		return nil, fmt.Errorf("the daemon was not ready in 30 s%s", dd.journal("\n  "))
	case <-ctx.Done():
		dd.stop()
		return nil, ctx.Err()
	}
	c := api.Dial(tb.stateDir)
	if c == nil {
		dd.stop()
		return nil, errors.New("the daemon is ready but its API socket does not answer")
	}
	st, err := c.Status()
	if err != nil {
		dd.stop()
		return nil, fmt.Errorf("daemon status: %w", err)
	}
	dd.metrics = st.Metrics
	return dd, nil
}

// stop ends the daemon, which detaches the filter, and waits for it; a
// second stop returns the first's error.
func (d *demoDaemon) stop() error {
	if d.stopped {
		return d.err
	}
	d.stopped = true
	d.cancel()
	select {
	case d.err = <-d.done:
	case <-time.After(15 * time.Second):
		d.err = errors.New("the daemon did not stop within 15 s")
	}
	return d.err
}

// running says whether the daemon still runs: it stops by itself only
// when its control loop fails.
func (d *demoDaemon) running() error {
	if d.stopped {
		return d.err
	}
	select {
	case err := <-d.done:
		d.stopped, d.err = true, err
		if err == nil {
			err = errors.New("the daemon stopped")
		}
		d.err = err
		return err
	default:
		return nil
	}
}

// warnings are the messages of the daemon's warnings and errors, each
// once with how often it came, oldest first: a warning of every second
// differs only in its counts.
func (d *demoDaemon) warnings() []string {
	var order []string
	count := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(d.log.bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if !strings.Contains(l, " level=WARN ") && !strings.Contains(l, " level=ERROR ") {
			continue
		}
		if i := strings.Index(l, " msg="); i >= 0 {
			l = l[i+len(" msg="):]
			if q, err := strconv.QuotedPrefix(l); err == nil {
				l, _ = strconv.Unquote(q)
			} else if j := strings.IndexByte(l, ' '); j >= 0 {
				l = l[:j]
			}
		}
		if count[l] == 0 {
			order = append(order, l)
		}
		count[l]++
	}
	for i, l := range order {
		if n := count[l]; n > 1 {
			order[i] = fmt.Sprintf("%s (%d times)", l, n)
		}
	}
	return order
}

// journal is the daemon's warnings, each after sep, for an error message.
func (d *demoDaemon) journal(sep string) string {
	w := d.warnings()
	if len(w) == 0 {
		return ""
	}
	return sep + "the daemon's log: " + strings.Join(w, sep)
}

// lockedBuffer is the daemon's log: its goroutines write while the demo
// reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.b.Bytes()...)
}
