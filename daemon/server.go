package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/agents"
)

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// apiListener is the API socket, bound before anything is attached in a
// directory of its own beside the socket's: a client finds no socket, and
// so no daemon, until serveAPI moves it into place.
type apiListener struct {
	net.Listener
	path   string // where it is bound now
	socket string // where it is served
	bind   string // the directory it was bound in; "" once moved out
}

// bindDir is where the API socket is bound before it is moved to socket.
func bindDir(socket string) string {
	return filepath.Join(filepath.Dir(socket), ".bind")
}

// listenAPI binds the API socket for serveAPI. bind(2) makes it with the
// mode the umask leaves, which is the whole process's to change; so it is
// bound in a directory only root may enter (0700, which no umask widens)
// and made 0600 there, before it is moved to where others may reach it.
func listenAPI(socket string) (*apiListener, error) {
	dir := bindDir(socket)
	os.RemoveAll(dir) // a killed daemon's: the daemon lock is this daemon's
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("listen on %s: %w", socket, err)
	}
	path := filepath.Join(dir, filepath.Base(socket))
	l, err := net.Listen("unix", path)
	if err == nil {
		l.(*net.UnixListener).SetUnlinkOnClose(false) // close removes what it named
		if err = os.Chmod(path, 0o600); err != nil {
			l.Close()
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("listen on %s: %w", socket, err)
	}
	return &apiListener{Listener: l, path: path, socket: socket, bind: dir}, nil
}

// close closes the socket and removes it where it is.
func (a *apiListener) close() {
	a.Close()
	os.Remove(a.path)
	if a.bind != "" {
		os.Remove(a.bind)
	}
}

// serveAPI moves the API socket l into place, replacing one a dead daemon
// left (the daemon lock says no live daemon owns it), and serves it until
// the returned function is called.
func (d *Daemon) serveAPI(l *apiListener) (func(), error) {
	if err := os.Rename(l.path, l.socket); err != nil {
		return nil, fmt.Errorf("put the API socket in place: %w", err)
	}
	l.path = l.socket
	os.Remove(l.bind)
	l.bind = ""
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathStatus, func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		st := d.status
		st.LastReloadRefused = d.reloadRefused
		d.mu.Unlock()
		st.Jobs = d.jobs()
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
		d.mu.Lock()
		a := d.agents
		d.mu.Unlock()
		var pending []api.RejectLine
		if a != nil && a.egress != nil {
			pending = a.egress.pendingLines() // this second's, not finished yet
		}
		w.Header().Set("Content-Type", "application/json")
		t0 := time.Now()
		b := d.journal.answer(pending) // none is an empty list, not null
		// How long the answer took the daemon, apart from the transport
		// and the client's decoding (make bench-journal reads it).
		w.Header().Set("Server-Timing", fmt.Sprintf("answer;dur=%.3f", float64(time.Since(t0).Microseconds())/1000))
		w.Write(b)
	})
	d.deniedRoutes(mux)
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
