package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// journalKeep is how many finished records the daemon keeps in memory for
// `show rejects`; the file keeps them all.
const journalKeep = 4096

// journal takes the records of finished seconds out of each attachment's
// rejects table, once a second, writes them as JSON lines to a file, and
// keeps the newest for `show rejects` (docs/design.md, "Reject records").
type journal struct {
	stateDir string
	log      *slog.Logger
	file     *rejectsFile
	clock    func() uint64 // the fast path's clock

	// mu is held across a sweep, so that `show rejects` sees each record
	// once: in a table or among the finished, never in both. Writing the
	// file is not under it: a slow disk never holds up `show rejects`.
	mu     sync.Mutex
	recent *recordRing
	tables map[string]*journalTable

	stop func()         // ends the sweeps
	wg   sync.WaitGroup // the sweeping goroutine
}

// journalTable is one attachment's pinned maps, open for sweeping.
type journalTable struct {
	a   loader.Attachment
	p   *loader.Pinned
	gen uint64 // the pins' Generation when opened
	// lost is the attachment's count of rejects the table took in no
	// record, unanswered its count of refused ICRQs it could only drop,
	// as last seen: a rise is logged.
	lost, unanswered uint64
}

// sweepSlack is how long after a second of the fast path's clock begins
// the sweep runs: the coarse clock steps a tick (1 to 10 ms) after the
// precise one, and the sweep must see the new second.
const sweepSlack = 20 * time.Millisecond

// startJournal opens the file, writes what previous daemons left in the
// tables and follows the attachments of the state directory, as they
// come and go, sweeping their tables just after each second begins, until
// ctx ends.
func (d *Daemon) startJournal(ctx context.Context, path string) (*journal, error) {
	j := newJournal(d.cfg.StateDir, newRejectsFile(path, d.cfg.Rotation, d.log), d.log)
	if err := j.reopen(); err != nil {
		return nil, err
	}
	j.follow()
	ctx, j.stop = context.WithCancel(ctx)
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		for {
			// A second's records are finished when the second after it is
			// over: sweeping just after each boundary writes them about a
			// second after their second's end.
			now := api.MonotonicNow()
			wait := time.Duration(1_000_000_000-now%1_000_000_000) + sweepSlack
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			j.follow()
		}
	}()
	return j, nil
}

func newJournal(stateDir string, file *rejectsFile, log *slog.Logger) *journal {
	return &journal{stateDir: stateDir, log: log, file: file, clock: control.MonotonicCoarse,
		recent: newRecordRing(journalKeep), tables: map[string]*journalTable{}}
}

// reopen opens the file again, after a log rotation (SIGHUP).
func (j *journal) reopen() error { return j.file.reopen() }

// follow opens the table of each new attachment, sweeps every table of
// its finished seconds, and empties and closes those of attachments that
// are gone.
func (j *journal) follow() {
	atts, err := loader.List(j.stateDir)
	if err != nil {
		return
	}
	live := map[string]bool{}
	var batch logBatch
	defer func() { j.file.write(batch.buf, batch.n) }() // after mu: the disk never holds up show rejects
	for _, a := range atts {
		gen, err := a.Generation(j.stateDir)
		if err != nil {
			continue // being detached
		}
		live[a.Key()] = true
		j.mu.Lock()
		old, known := j.tables[a.Key()]
		if known && old.gen != gen {
			// Detached and attached again since: the old table is no
			// program's any more, and emptied whole; the new one is
			// another table.
			j.sweep(old, j.clock(), true, &batch)
			old.p.Close()
			delete(j.tables, a.Key())
			known = false
		}
		j.mu.Unlock()
		if known {
			continue
		}
		p, err := loader.Open(j.stateDir, a)
		if err != nil {
			continue // being detached
		}
		t := &journalTable{a: a, p: p, gen: gen}
		if st, err := maps.ReadStats(p.Stats); err == nil {
			// What happened before this daemon is not news.
			t.lost, t.unanswered = st.RejectRecordsLost, st.L2TPUnanswered
		}
		j.mu.Lock()
		j.tables[a.Key()] = t
		j.mu.Unlock()
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	now := j.clock()
	for key, t := range j.tables {
		gone := !live[key]
		// A detached attachment's program runs no more: its table can be
		// emptied, the current second too.
		j.sweep(t, now, gone, &batch)
		j.checkLost(t)
		if gone {
			t.p.Close()
			delete(j.tables, key)
		}
	}
}

// sweep keeps the finished records of one table, or all of them, and
// adds them to batch, for the file; j.mu is held.
func (j *journal) sweep(t *journalTable, now uint64, all bool, batch *logBatch) {
	recs, err := maps.SweepRejects(maps.RejectTablesOf(&t.p.XdpMaps), now, all)
	if err != nil {
		j.log.Warn("sweep reject records", "interface", t.a.String(), "err", err)
	}
	if err := maps.NameRules(maps.PolicyMapsOf(&t.p.XdpMaps), recs); err != nil {
		j.log.Warn("name the rules of reject records", "interface", t.a.String(), "err", err)
	}
	wall, mono := time.Now(), api.MonotonicNow()
	for _, r := range recs {
		r.Interface = t.a.Key()
		j.keepLocked(RejectLineOf(r, wall, mono), batch)
	}
}

// logBatch are records encoded for the file, n of them, a newline each.
type logBatch struct {
	buf []byte
	n   int
}

// keepLocked encodes a finished record once, for the ring and for the
// file's batch; j.mu is held.
func (j *journal) keepLocked(l api.RejectLine, batch *logBatch) {
	b, _ := json.Marshal(l)
	j.keepEncodedLocked(b, batch)
}

func (j *journal) keepEncodedLocked(b []byte, batch *logBatch) {
	j.recent.push(b)
	batch.buf = append(append(batch.buf, b...), '\n')
	batch.n++
}

// checkLost warns when the fast path found an attachment's rejects table
// without room since the last look: rejects the log will never have; and
// when it refused ICRQs it could not answer, whose LACs will retransmit
// them until they close their tunnels (docs/design.md "Refusing an ICRQ").
func (j *journal) checkLost(t *journalTable) {
	st, err := maps.ReadStats(t.p.Stats)
	if err != nil {
		return
	}
	// The fast path's own counters: clear counters leaves them alone
	// (docs/design.md, "Clearing counters"). A counter lower than before
	// is a map that counted again from zero; the warnings count from it.
	t.lost, t.unanswered = min(t.lost, st.RejectRecordsLost), min(t.unanswered, st.L2TPUnanswered)
	if st.RejectRecordsLost > t.lost {
		j.log.Warn("the rejects table was full: rejects are missing from the rejects log",
			"interface", t.a.String(), "lost", st.RejectRecordsLost-t.lost)
		t.lost = st.RejectRecordsLost
	}
	if st.L2TPUnanswered > t.unanswered {
		j.log.Warn("refused ICRQs could only be dropped: the filter did not see their tunnels set up "+
			"(set up before the filter was attached, an SCCRP with a hidden Assigned Tunnel ID, or an LNS that "+
			"answers through another interface); their LACs may close those tunnels",
			"interface", t.a.String(), "dropped", st.L2TPUnanswered-t.unanswered)
		t.unanswered = st.L2TPUnanswered
	}
}

// add keeps a finished record that comes from elsewhere than a table (the
// INVITEs refused at egress) and writes it to the file.
func (j *journal) add(l api.RejectLine) {
	j.addAll([]api.RejectLine{l})
}

// addAll keeps finished records and writes them to the file, one batch.
func (j *journal) addAll(lines []api.RejectLine) {
	enc := make([][]byte, len(lines))
	for i, l := range lines {
		enc[i], _ = json.Marshal(l) // before the lock: no table is read here
	}
	var batch logBatch
	j.mu.Lock()
	for _, b := range enc {
		j.keepEncodedLocked(b, &batch)
	}
	j.mu.Unlock()
	j.file.write(batch.buf, batch.n)
}

// answer writes the finished records kept in memory, then the records
// the tables hold now, which are not finished or not swept yet, then
// more (the egress records of this second), as the JSON array of GET
// /v1/rejects. The finished records are copied as they were encoded; the
// tables are read in batches under mu, so that a sweep never has a
// record in both places, and the encoding of what they hold is done
// after it.
func (j *journal) answer(more []api.RejectLine) []byte {
	var recs []maps.Reject
	j.mu.Lock()
	kept := j.recent.snapshot(make([][]byte, 0, journalKeep))
	wall, mono := time.Now(), api.MonotonicNow()
	for _, t := range j.tables {
		tr, err := maps.ReadRejects(maps.RejectTablesOf(&t.p.XdpMaps))
		if err != nil {
			j.log.Warn("read reject records", "interface", t.a.String(), "err", err)
		}
		if err := maps.NameRules(maps.PolicyMapsOf(&t.p.XdpMaps), tr); err != nil {
			j.log.Warn("name the rules of reject records", "interface", t.a.String(), "err", err)
		}
		for i := range tr {
			tr[i].Interface = t.a.Key()
		}
		recs = append(recs, tr...)
	}
	j.mu.Unlock()
	out := newRejectsJSON()
	for _, b := range kept {
		out.raw(b)
	}
	for _, r := range recs {
		out.line(RejectLineOf(r, wall, mono))
	}
	for _, l := range more {
		out.line(l)
	}
	return out.bytes()
}

// close writes what the tables hold of finished seconds; the records of
// the last two stay in the tables of the attachments still attached, for
// the next daemon, and those of attachments detached (--detach-on-exit)
// are written whole.
func (j *journal) close() {
	if j.stop != nil {
		j.stop()
		j.wg.Wait() // no sweep after this one
	}
	j.follow()
	j.mu.Lock()
	defer j.mu.Unlock()
	for key, t := range j.tables {
		t.p.Close()
		delete(j.tables, key)
	}
	j.file.close()
}
