package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/cilium/ebpf/ringbuf"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// journalKeep is how many finished records the daemon keeps in memory for
// `show rejects`; the file keeps them all.
const journalKeep = 4096

// journal writes the finished seconds of reject records, which the fast
// path sends on each attachment's ring buffer, as JSON lines to a file,
// and keeps the newest for `show rejects`.
type journal struct {
	d    *daemon
	path string // "" writes no file

	mu      sync.Mutex
	f       *os.File
	recent  []rejectLine // oldest first
	readers map[string]*journalReader
}

// journalReader reads one attachment's ring buffer.
type journalReader struct {
	p  *loader.Pinned
	rd *ringbuf.Reader
	// lost is the attachment's count of reject records a full ring
	// refused, as last seen: a rise is logged.
	lost uint64
}

// startJournal opens the file and follows the attachments of the state
// directory, as they come and go, until ctx ends.
func (d *daemon) startJournal(ctx context.Context, path string) (*journal, error) {
	j := &journal{d: d, path: path, readers: map[string]*journalReader{}}
	if err := j.reopen(); err != nil {
		return nil, err
	}
	go func() {
		for {
			j.follow()
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return j, nil
}

// reopen opens the file again, after a log rotation (SIGHUP).
func (j *journal) reopen() error {
	if j.path == "" {
		return nil
	}
	f, err := openOwn(j.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE)
	if err != nil {
		return fmt.Errorf("rejects log: %w", err)
	}
	j.mu.Lock()
	old := j.f
	j.f = f
	j.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

// follow starts a reader for each new attachment and stops those of
// attachments that are gone.
func (j *journal) follow() {
	atts, err := loader.List(j.d.g.stateDir)
	if err != nil {
		return
	}
	live := map[string]bool{}
	for _, a := range atts {
		live[a.Key()] = true
		j.mu.Lock()
		r, known := j.readers[a.Key()]
		j.mu.Unlock()
		if known {
			j.checkLost(a, r)
			continue
		}
		p, err := loader.Open(j.d.g.stateDir, a)
		if err != nil {
			continue // being detached
		}
		rd, err := ringbuf.NewReader(p.RejectEvents)
		if err != nil {
			p.Close()
			j.d.log.Warn("read reject records", "interface", a.String(), "err", err)
			continue
		}
		r = &journalReader{p: p, rd: rd}
		if st, err := maps.ReadStats(p.Stats); err == nil {
			r.lost = st.RejectRecordsLost // what was lost before this daemon is not news
		}
		j.mu.Lock()
		j.readers[a.Key()] = r
		j.mu.Unlock()
		go j.read(a.Key(), r)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for key, r := range j.readers {
		if !live[key] {
			r.rd.Close() // ends its read
			delete(j.readers, key)
		}
	}
}

// checkLost warns when the fast path found an attachment's reject ring
// buffer full since the last look: records the log will never have.
func (j *journal) checkLost(a loader.Attachment, r *journalReader) {
	st, err := maps.ReadStats(r.p.Stats)
	if err != nil || st.RejectRecordsLost <= r.lost {
		return
	}
	j.d.log.Warn("the reject ring buffer was full: records are missing from the rejects log",
		"interface", a.String(), "lost", st.RejectRecordsLost-r.lost)
	r.lost = st.RejectRecordsLost
}

// read turns an attachment's events into lines until its reader closes.
func (j *journal) read(key string, r *journalReader) {
	defer r.p.Close()
	for {
		ev, err := r.rd.Read()
		if errors.Is(err, ringbuf.ErrClosed) {
			return
		}
		if err != nil {
			j.d.log.Warn("read reject records", "interface", key, "err", err)
			continue
		}
		rec, _, err := maps.DecodeRejectEvent(ev.RawSample)
		if err != nil {
			j.d.log.Warn("read reject records", "interface", key, "err", err)
			continue
		}
		rec.Interface = key
		j.add(lineOf(rec, time.Now(), monotonicNow()))
	}
}

func (j *journal) add(l rejectLine) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.recent) == journalKeep {
		j.recent = append(j.recent[:0], j.recent[1:]...)
	}
	j.recent = append(j.recent, l)
	if j.f != nil {
		b, _ := json.Marshal(l)
		if _, err := j.f.Write(append(b, '\n')); err != nil {
			j.d.log.Warn("write rejects log", "path", j.path, "err", err)
		}
	}
}

// lines returns the finished records kept in memory.
func (j *journal) lines() []rejectLine {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]rejectLine(nil), j.recent...)
}

func (j *journal) close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	for key, r := range j.readers {
		r.rd.Close()
		delete(j.readers, key)
	}
	if j.f != nil {
		j.f.Close()
		j.f = nil
	}
}
