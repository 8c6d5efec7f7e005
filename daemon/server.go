package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/agents"
)

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// apiListener is the API socket, bound before anything is attached at a
// path of its own beside the socket's: a client finds no socket, and so
// no daemon, until serveAPI moves it into place.
type apiListener struct {
	net.Listener
	path   string // where it is bound now
	socket string // where it is served
}

// listenAPI binds the API socket for serveAPI.
func listenAPI(socket string) (*apiListener, error) {
	path := fmt.Sprintf("%s.%d", socket, os.Getpid())
	os.Remove(path) // a dead daemon's of the same pid
	old := syscall.Umask(0o077)
	l, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", socket, err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false) // close removes what it named
	return &apiListener{Listener: l, path: path, socket: socket}, nil
}

// close closes the socket and removes it where it is.
func (a *apiListener) close() {
	a.Close()
	os.Remove(a.path)
}

// serveAPI moves the API socket l into place, replacing one a dead daemon
// left (the daemon lock says no live daemon owns it), and serves it until
// the returned function is called.
func (d *Daemon) serveAPI(l *apiListener) (func(), error) {
	if err := os.Rename(l.path, l.socket); err != nil {
		return nil, fmt.Errorf("put the API socket in place: %w", err)
	}
	l.path = l.socket
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
		// Every key whatever the state: no agents is an empty list.
		v := api.Agents{Targets: []agents.Row{}, Answered: d.answers.answered.Load(), Unanswered: d.answers.suppressed.Load(),
			Forged: d.forged.Load(), Egress: []agents.Egress{},
			EgressAnswered: d.egressAnswers.answered.Load(), EgressUnanswered: d.egressAnswers.suppressed.Load()}
		if a != nil {
			v.Targets = a.rows()
			v.Responses = a.events.Load()
			v.Egress = a.egressRows()
		}
		writeJSON(w, http.StatusOK, v)
	})
	mux.HandleFunc("GET "+api.PathFleet, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, d.fleet.view())
	})
	mux.HandleFunc("GET "+api.PathViolations, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, d.violations.view())
	})
	mux.HandleFunc("GET "+api.PathRejects, func(w http.ResponseWriter, r *http.Request) {
		lines := d.journal.lines()
		d.mu.Lock()
		a := d.agents
		d.mu.Unlock()
		if a != nil && a.egress != nil {
			lines = append(lines, a.egress.pendingLines()...) // this second's, not finished yet
		}
		if lines == nil {
			lines = []api.RejectLine{} // none is an empty list, not null
		}
		writeJSON(w, http.StatusOK, lines)
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
	mux.HandleFunc("POST "+api.PathRead, func(w http.ResponseWriter, r *http.Request) {
		var req api.ReadRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil {
			writeJSON(w, http.StatusBadRequest, api.Error{Error: `want {"args": ["show", "stats"]}`})
			return
		}
		if d.cfg.Reader == nil {
			writeJSON(w, http.StatusNotFound, api.Error{Error: "this daemon runs no commands for readers"})
			return
		}
		// Readers may not load the daemon, whose CPU the gate may measure:
		// two commands at a time, the rest told to come back.
		select {
		case d.reading <- struct{}{}:
			defer func() { <-d.reading }()
		default:
			writeJSON(w, http.StatusServiceUnavailable, api.Error{Error: "the daemon runs two read commands already: try again"})
			return
		}
		var out bytes.Buffer
		code, err := d.cfg.Reader(req.Args, &out)
		ans := api.ReadAnswer{Output: out.String(), ExitCode: code}
		if err != nil {
			ans.Error = err.Error()
		}
		writeJSON(w, http.StatusOK, ans)
	})
	srv := &http.Server{Handler: d.authorize(mux), ConnContext: peerCred, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 30 * time.Second}
	go srv.Serve(l)
	return func() {
		srv.Close()
		os.Remove(l.socket)
	}, nil
}
