package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/xdpcac/xdpcac/api"
	"golang.org/x/sys/unix"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"
)

// rootOnly refuses a peer that is not root: the socket's mode already
// keeps others out, and this holds even if the mode is changed.
func rootOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if uid, ok := r.Context().Value(peerUIDKey{}).(uint32); !ok || uid != 0 {
			writeJSON(w, http.StatusForbidden, api.Error{Error: "the xdpcac API is for root only"})
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

// serveAPI serves the API socket until the returned function is called.
func (d *Daemon) serveAPI() (func(), error) {
	socket := api.PathsOf(d.cfg.StateDir).Socket
	l, err := listenAPI(socket)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathStatus, func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		st := d.status
		d.mu.Unlock()
		writeJSON(w, http.StatusOK, st)
	})
	mux.HandleFunc("GET "+api.PathAgents, func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		a := d.agents
		d.mu.Unlock()
		var v api.Agents
		if a != nil {
			v.Targets = a.rows()
			v.Answered, v.Unanswered = d.answers.answered.Load(), d.answers.suppressed.Load()
			v.Responses = a.events.Load()
		}
		writeJSON(w, http.StatusOK, v)
	})
	mux.HandleFunc("GET "+api.PathRejects, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, d.journal.lines())
	})
	mux.HandleFunc("POST "+api.PathApply, func(w http.ResponseWriter, r *http.Request) {
		var req api.ApplyRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil || req.Config == "" {
			writeJSON(w, http.StatusBadRequest, api.Error{Error: `want {"config": "/path/to/cac.yaml"}`})
			return
		}
		call := applyCall{file: req.Config, adopt: req.Adopt, reply: make(chan error, 1)}
		select {
		case d.applies <- call:
		case <-r.Context().Done():
			return
		}
		if err := <-call.reply; err != nil {
			writeJSON(w, http.StatusBadRequest, api.Error{Error: err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, api.Applied{Applied: req.Config})
	})
	srv := &http.Server{Handler: rootOnly(mux), ConnContext: peerUID, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 30 * time.Second}
	go srv.Serve(l)
	return func() {
		srv.Close()
		os.Remove(socket)
	}, nil
}
