package demo

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/internal/show"
	"github.com/xdpcac/xdpcac/internal/storm"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// stormResult is what one storm sent and what the filter made of it.
type stormResult struct {
	scenario
	sent  storm.Report
	stats maps.Stats // the filter's counters over the storm
	// The call admission the daemon measured each second of it: the
	// highest CPU the gate compared and the most charges in force.
	cpuMax, chargesMax float64
	cpuLimit, limit    float64
}

// demoState is one reading of the pins: the counters and the call
// admission view made of them, and when they were read.
type demoState struct {
	stats maps.Stats
	ca    maps.CallAdmissionView
	at    time.Time
}

func readDemoState(stateDir string) (demoState, error) {
	st, err := loader.ReadCallAdmission(stateDir)
	if err != nil {
		return demoState{}, fmt.Errorf("read the filter's state: %w", err)
	}
	var ifaces []string
	for _, a := range st.Attachments {
		ifaces = append(ifaces, a.Key())
	}
	return demoState{stats: st.Stats, ca: maps.CallAdmissionViewOf(st.CallAdmission, st.Inputs, st.Rings, st.Stats, control.MonotonicCoarse(), ifaces),
		at: time.Now()}, nil
}

// runScenario runs one storm, and the trusted peer's calls beside it when
// the scenario has them, printing each second what the filter did.
func runScenario(ctx context.Context, w io.Writer, tb *testbed, d *demoDaemon, s scenario, peer *uac) (stormResult, error) {
	r := stormResult{scenario: s}
	fmt.Fprintf(w, "== %s: %s (%d frames/s for %v)\n", s.Name, s.story, s.Rate, s.Duration.Round(time.Second))
	first, err := readDemoState(tb.stateDir)
	if err != nil {
		return r, err
	}
	callsBefore := peer.counts()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		var err error
		r.sent, err = s.Run(sctx, tb.peer, tb.peerIfc)
		done <- err
	}()
	if s.calls {
		go peer.place(sctx, callRate)
	}
	last, lastCalls := first, callsBefore
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for finished := false; !finished; {
		select {
		case err := <-done:
			if err != nil {
				return r, err
			}
			finished = true
		case <-ctx.Done():
			<-done
			return r, nil
		case <-tick.C:
		}
		if err := d.running(); err != nil {
			return r, fmt.Errorf("the daemon stopped during %s: %w%s", s.Name, err, d.journal("\n  "))
		}
		now, err := readDemoState(tb.stateDir)
		if err != nil {
			return r, err
		}
		r.cpuMax, r.chargesMax = max(r.cpuMax, now.ca.CPUPercent), max(r.chargesMax, now.ca.TotalCharges)
		r.cpuLimit, r.limit = now.ca.CPULimitPercent, now.ca.Limit
		if finished {
			if s.calls {
				// The last calls placed are still under way (a call
				// lasts a second): their ACKs and BYEs count too.
				cancel() // and no more are placed
				peer.finish(callTimeout)
				if now, err = readDemoState(tb.stateDir); err != nil {
					return r, err
				}
			}
			// The storm's last frames are counted; the part second since
			// the last line is in the summary.
			r.stats = now.stats.Sub(first.stats)
			break
		}
		// A tick comes late on a busy box: the counts are over the time
		// between the readings, and a rate is theirs over it.
		per := perSecond(now.at.Sub(last.at))
		writeSecond(w, now.stats.Sub(last.stats), per, now.ca)
		if s.calls {
			c := peer.counts()
			fmt.Fprintf(w, "   trusted peer %s: %d INVITE/s sent, %d 200 OK/s received, %d calls completed so far\n",
				demoPeer, per(c.invites-lastCalls.invites), per(c.answered-lastCalls.answered), c.done-callsBefore.done)
			lastCalls = c
		}
		last = now
	}
	fmt.Fprintf(w, "   sent %s\n", r.sent)
	return r, nil
}

// perSecond returns what turns a count over elapsed into a rate a second,
// rounded; the rate of nothing elapsed is the count itself.
func perSecond(elapsed time.Duration) func(uint64) uint64 {
	return func(n uint64) uint64 {
		if elapsed <= 0 {
			return n
		}
		return uint64(float64(n)/elapsed.Seconds() + 0.5)
	}
}

// writeSecond prints the rates of counts d, made rates by per: what each
// class admitted and rejected, and why, and the call admission the daemon
// measured.
func writeSecond(w io.Writer, d maps.Stats, per func(uint64) uint64, ca maps.CallAdmissionView) {
	var parts []string
	for _, c := range cac.Classes() {
		cs := d.Classes[c]
		if cs.Seen() == 0 || c == cac.SIPInDialog {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %d/s admitted, %d/s rejected%s", c, per(cs.Admitted), per(cs.RejectedTotal()), topReasons(cs, 2, per)))
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "   %s\n", strings.Join(parts, "; "))
	}
	fmt.Fprintf(w, "   call admission: %s\n", callAdmissionLine(ca))
}

// callAdmissionLine is the gate and the charges as the fast path holds
// them: the CPU it compares with the limit, the charges in force, and how
// old the daemon's last write is.
func callAdmissionLine(ca maps.CallAdmissionView) string {
	hb := "no heartbeat"
	if ca.HeartbeatAgeMS != nil {
		hb = "heartbeat " + show.MsAge(*ca.HeartbeatAgeMS) + " ago"
		if ca.Stale {
			hb += ", STALE: on-stale " + ca.OnStale + " applies"
		}
	}
	return fmt.Sprintf("CPU %s%% (gate at %s%%), charges %s of %s in force, %s",
		show.Num(ca.CPUPercent), show.Num(ca.CPULimitPercent), show.Num(ca.TotalCharges), show.Num(ca.Limit), hb)
}

// topReasons names the n reasons that rejected most, as " (r1 N, r2 M)",
// each count made a rate by per.
func topReasons(cs maps.ClassStats, n int, per func(uint64) uint64) string {
	rs := cac.Reasons()
	sort.SliceStable(rs, func(i, j int) bool { return cs.Rejected[rs[i]] > cs.Rejected[rs[j]] })
	var parts []string
	for _, r := range rs[:n] {
		if cs.Rejected[r] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", r, per(cs.Rejected[r])))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
