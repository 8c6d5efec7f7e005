package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/xdpcac/xdpcac/loader"
	"golang.org/x/sys/unix"
)

// runDir holds the daemon's lock and API socket; a unit's
// RuntimeDirectory=xdpcac creates it.
const runDir = "/run/xdpcac"

// daemonPaths are the lock file and API socket of the daemon of a state
// directory: api.sock for the default one, a name derived from the path
// for others, so that daemons of different state directories coexist.
func daemonPaths(stateDir string) (lockFile, socket string) {
	name := "api"
	if filepath.Clean(stateDir) != loader.DefaultStateDir {
		name = "api" + strings.ReplaceAll(filepath.Clean(stateDir), "/", "_")
	}
	return filepath.Join(runDir, name+".lock"), filepath.Join(runDir, name+".sock")
}

// daemonLock is held by `cacctl run` for as long as it runs.
type daemonLock struct {
	f    *os.File
	path string
}

// lockDaemon takes the daemon lock of stateDir, or says which process
// holds it.
func lockDaemon(stateDir string) (*daemonLock, error) {
	path, _ := daemonPaths(stateDir)
	for {
		f, err := openOwn(path, os.O_RDWR|os.O_CREATE)
		if err != nil {
			return nil, fmt.Errorf("open daemon lock: %w", err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			pid, _ := io.ReadAll(f)
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("cacctl run is already running for %s (pid %s, lock %s): stop it first; nothing was changed",
					stateDir, strings.TrimSpace(string(pid)), path)
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !stillAt(f, path) {
			f.Close() // removed by the daemon before, which held it: again
			continue
		}
		if err := f.Truncate(0); err == nil {
			f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		return &daemonLock{f: f, path: path}, nil
	}
}

// stillAt reports whether the file f locked is still the one at path: its
// holder removes it before it lets go, so one locked after that is gone.
func stillAt(f *os.File, path string) bool {
	held, err := f.Stat()
	if err != nil {
		return false
	}
	now, err := os.Lstat(path)
	return err == nil && os.SameFile(held, now)
}

// unlock removes the lock file, and then drops the lock: while a daemon
// runs there is a lock file, and none is left when it stops.
func (l *daemonLock) unlock() {
	os.Remove(l.path)
	l.f.Close()
}

// removeStaleDaemonFiles removes the lock file of the daemon of stateDir
// that is not running, and the statuses it kept of the session agents,
// once nothing is attached: what `cacctl detach` of the last interface
// leaves behind is nothing.
func removeStaleDaemonFiles(stateDir string) {
	lock, _ := daemonPaths(stateDir)
	_, lerr := os.Lstat(lock)
	_, aerr := os.Lstat(agentsFile(stateDir))
	if errors.Is(lerr, os.ErrNotExist) && errors.Is(aerr, os.ErrNotExist) {
		return // and no lock is made to find that out
	}
	lk, err := lockDaemon(stateDir)
	if err != nil {
		return // a daemon runs, or there is nothing to lock
	}
	os.Remove(agentsFile(stateDir))
	lk.unlock()
}

// apiStatus is GET /v1/status: what only the running daemon knows.
type apiStatus struct {
	PID       int       `json:"pid"`
	Config    string    `json:"config"`
	Since     time.Time `json:"since"`
	LoadedAt  time.Time `json:"loaded_at"`
	StateDir  string    `json:"state_dir"`
	Netns     string    `json:"netns,omitempty"`
	Metrics   string    `json:"metrics,omitempty"`
	LastError string    `json:"last_error,omitempty"`
}

// applyRequest is POST /v1/apply: put this file in force.
type applyRequest struct {
	Config string `json:"config"`
}

type apiError struct {
	Error string `json:"error"`
}

// rootOnly refuses a peer that is not root: the socket's mode already
// keeps others out, and this holds even if the mode is changed.
func rootOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if uid, ok := r.Context().Value(peerUIDKey{}).(uint32); !ok || uid != 0 {
			writeJSON(w, http.StatusForbidden, apiError{"the xdpcac API is for root only"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

type peerUIDKey struct{}

// peerUID reads the uid of the process at the other end of a unix socket.
func peerUID(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return ctx
	}
	var cred *unix.Ucred
	raw.Control(func(fd uintptr) {
		cred, _ = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if cred == nil {
		return ctx
	}
	return context.WithValue(ctx, peerUIDKey{}, cred.Uid)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// listenAPI opens the API socket, replacing one a dead daemon left.
func listenAPI(socket string) (net.Listener, error) {
	os.Remove(socket) // the daemon lock says no live daemon owns it
	old := syscall.Umask(0o077)
	l, err := net.Listen("unix", socket)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", socket, err)
	}
	return l, nil
}

// apiClient talks to the daemon of a state directory; nil when none runs.
func apiClient(stateDir string) *http.Client {
	_, socket := daemonPaths(stateDir)
	c, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return nil
	}
	c.Close()
	return &http.Client{
		Timeout: 30 * time.Second,
		// One request a command: no connection is left open behind it.
		Transport: &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}},
	}
}

// callAPI sends a request to the daemon and decodes its answer into out;
// an error answer comes back as an error with the daemon's message.
func callAPI(c *http.Client, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://xdpcac"+path, body)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("ask the running cacctl: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e apiError
		if json.NewDecoder(resp.Body).Decode(&e) == nil && e.Error != "" {
			return errors.New(e.Error)
		}
		return fmt.Errorf("the running cacctl answered %s", resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// serveAPI serves the API socket until the returned function is called.
func (d *daemon) serveAPI() (func(), error) {
	_, socket := daemonPaths(d.g.stateDir)
	l, err := listenAPI(socket)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		st := d.status
		d.mu.Unlock()
		writeJSON(w, http.StatusOK, st)
	})
	mux.HandleFunc("GET /v1/agents", func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		a := d.agents
		d.mu.Unlock()
		var v agentsView
		if a != nil {
			v.Targets = a.rows()
			v.Answered, v.Unanswered = d.answers.answered.Load(), d.answers.suppressed.Load()
			v.Responses = a.events.Load()
		}
		writeJSON(w, http.StatusOK, v)
	})
	mux.HandleFunc("GET /v1/rejects", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, d.journal.lines())
	})
	mux.HandleFunc("POST /v1/apply", func(w http.ResponseWriter, r *http.Request) {
		var req applyRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil || req.Config == "" {
			writeJSON(w, http.StatusBadRequest, apiError{`want {"config": "/path/to/cac.yaml"}`})
			return
		}
		call := applyCall{file: req.Config, reply: make(chan error, 1)}
		select {
		case d.applies <- call:
		case <-r.Context().Done():
			return
		}
		if err := <-call.reply; err != nil {
			writeJSON(w, http.StatusBadRequest, apiError{err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"applied": req.Config})
	})
	srv := &http.Server{Handler: rootOnly(mux), ConnContext: peerUID, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 30 * time.Second}
	go srv.Serve(l)
	return func() {
		srv.Close()
		os.Remove(socket)
	}, nil
}
