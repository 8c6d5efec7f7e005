package demo

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/internal/show"
)

// writeResult reads the filter's state while the daemon still serves it,
// stops the daemon so that its journal writes every record, and prints
// what the demo showed. Its error names each expectation that failed.
func writeResult(w io.Writer, tb *testbed, d *demoDaemon, results []stormResult, peer *uac, server *uas, eg egressResult, cp capacityResult) error {
	final, err := readDemoState(tb.stateDir)
	if err != nil {
		return err
	}
	samples, merr := scrapeMetrics(d.metrics)
	fmt.Fprintln(w, "\n== show call admission statistics")
	show.CallAdmission(w, final.ca)
	if err := d.stop(); err != nil {
		return fmt.Errorf("the daemon: %w%s", err, d.journal("\n  "))
	}
	records, logged, lerr := readRejectsLog(tb.rejectsLog)

	var failed []string
	fmt.Fprintln(w, "\n== result")
	for _, r := range results {
		failed = append(failed, writeStorm(w, r, server)...)
	}
	failed = append(failed, writeCalls(w, peer)...)
	failed = append(failed, writeEgress(w, eg)...)
	failed = append(failed, writeCapacity(w, cp)...)

	var cpuRefused, chargeRefused uint64
	for _, c := range cac.Classes() {
		cpuRefused += final.stats.Classes[c].Rejected[cac.ReasonCPULimit]
		chargeRefused += final.stats.Classes[c].Rejected[cac.ReasonSessionCharges] + final.stats.Classes[c].Rejected[cac.ReasonTotalCharge]
	}
	var cpuMax, chargesMax float64
	for _, r := range results {
		cpuMax, chargesMax = max(cpuMax, r.cpuMax), max(chargesMax, r.chargesMax)
	}
	gate := "so it refused no call"
	if cpuRefused > 0 {
		gate = fmt.Sprintf("and it refused %d calls as cpu-limit", cpuRefused)
	}
	fmt.Fprintf(w, "CPU gate: the daemon measured the CPU every second; it peaked at %s%% against the gate's %s%%, %s\n",
		show.Num(cpuMax), show.Num(final.ca.CPULimitPercent), gate)
	fmt.Fprintf(w, "charges: the calls in force peaked at %s of the limit %s; %d calls were refused for want of room under it\n",
		show.Num(chargesMax), show.Num(final.ca.Limit), chargeRefused)
	if cpuRefused > 0 && len(failed) > 0 {
		// Then the gate is the likely cause: say what it measured.
		failed = append(failed, fmt.Sprintf("the CPU gate refused %d calls: %s was over %s%% (the default --cpu-source measures the demo's process alone)",
			cpuRefused, tb.cpuSource, show.Num(final.ca.CPULimitPercent)))
	}
	switch {
	case final.ca.HeartbeatAgeMS == nil:
		failed = append(failed, "the daemon's control loop never wrote its measurements")
	case final.ca.Stale:
		failed = append(failed, fmt.Sprintf("the daemon's heartbeat was stale at the end (%s old)", show.MsAge(*final.ca.HeartbeatAgeMS)))
	}
	if merr != nil {
		failed = append(failed, fmt.Sprintf("the metrics at http://%s/metrics did not answer: %v", d.metrics, merr))
	} else {
		fmt.Fprintf(w, "metrics: http://%s/metrics answered with %d samples at the end\n", d.metrics, samples)
	}
	if lerr != nil {
		failed = append(failed, fmt.Sprintf("the rejects log: %v", lerr))
	} else {
		fmt.Fprintf(w, "rejects log: the daemon wrote %d records (source, class, reason, second) of %d rejects\n", records, logged)
	}
	// The counters count every reject; only the per-source records of the
	// log can miss some, and only then is it worth a word.
	if n := final.stats.RejectRecordsLost; n > 0 {
		fmt.Fprintf(w, "note: the rejects log has no record of %d rejects: the records table had no room in their second. The counters above have them.\n", n)
	}
	if n := final.stats.SIPEventsLost; n > 0 {
		fmt.Fprintf(w, "note: %d refused SIP requests were not handed to the daemon (its ring buffer was full), so it sent them no 503.\n", n)
	}
	if warns := d.warnings(); len(warns) > 0 {
		fmt.Fprintln(w, "the daemon's log warned:")
		for _, l := range warns[:min(len(warns), 6)] {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("the demo did not show what it should:\n  %s", strings.Join(failed, "\n  "))
	}
	fmt.Fprintln(w, "\nresult: every storm was held back to its limits while the trusted peer's calls went through")
	return nil
}

// writeStorm prints what a storm sent and what the filter made of it,
// and returns what the filter should have done and did not.
func writeStorm(w io.Writer, r stormResult, server *uas) []string {
	fmt.Fprintf(w, "%s: sent %d %s in %v", r.Name, r.sent.Sent, r.what, r.sent.Elapsed.Round(100*time.Millisecond))
	if r.sent.Refused > 0 {
		fmt.Fprintf(w, " (%d more refused by the veth before the filter saw them)", r.sent.Refused)
	}
	fmt.Fprintln(w)
	for _, c := range r.classes {
		cs := r.stats.Classes[c]
		own := ""
		if c == cac.SIPInvite && r.calls {
			own = fmt.Sprintf(" (%d of them the trusted peer's)", min(server.invites.Load(), cs.Admitted))
		}
		fmt.Fprintf(w, "  %-12s %6d seen, %6d admitted%s, %6d rejected", c, cs.Seen(), cs.Admitted, own, cs.RejectedTotal())
		var why []string
		for _, rs := range cac.Reasons() {
			if n := cs.Rejected[rs]; n > 0 {
				why = append(why, fmt.Sprintf("%d %s: %s", n, rs, reasonWhy(rs)))
			}
		}
		if len(why) > 0 {
			fmt.Fprintf(w, ":\n  %12s %s", "", strings.Join(why, fmt.Sprintf("\n  %12s ", "")))
		}
		fmt.Fprintln(w)
	}
	if r.calls && r.stats.SIPInDialogVerified > 0 {
		fmt.Fprintf(w, "  %12s %d of the in-dialog requests were of dialogs the filter saw the server open, and passed uncharged\n", "", r.stats.SIPInDialogVerified)
	}
	if n := r.stats.L2TPUnanswered; n > 0 {
		// The daemon warns of these: on a real LNS it would matter.
		fmt.Fprintf(w, "  %12s the %d refused ICRQs were dropped, not answered with a ZLB: the demo sets up no tunnel (no SCCRQ and SCCRP) the filter could answer in\n", "", n)
	}
	c, cs := r.classes[0], r.stats.Classes[r.classes[0]]
	switch {
	case cs.Seen() == 0:
		return []string{fmt.Sprintf("%s: the filter saw no %s: the storm did not reach it", r.Name, c)}
	case cs.Admitted == 0:
		return []string{fmt.Sprintf("%s: the filter admitted no %s at all", r.Name, c)}
	case cs.RejectedTotal() == 0:
		return []string{fmt.Sprintf("%s: the filter held back no %s", r.Name, c)}
	}
	return nil
}

// writeCalls prints the trusted peer's calls, and says when some failed.
func writeCalls(w io.Writer, peer *uac) []string {
	placed, done := peer.placed.Load(), peer.done.Load()
	fmt.Fprintf(w, "trusted peer %s (account pbx): %d of %d calls completed (INVITE, 100, 200 OK, ACK, BYE, 200 OK)\n", demoPeer, done, placed)
	why := peer.why()
	for _, l := range why {
		fmt.Fprintf(w, "  failed: %s\n", l)
	}
	switch {
	case placed == 0:
		return []string{"the trusted peer placed no call"}
	case done < placed:
		return []string{fmt.Sprintf("the trusted peer's calls did not all complete: %d of %d failed (%s)", placed-done, placed, strings.Join(why, ", "))}
	}
	return nil
}

// reasonWhy says what a reason means in the demo's configuration.
func reasonWhy(r cac.Reason) string {
	switch r {
	case cac.ReasonStale:
		return "the daemon's heartbeat was too old"
	case cac.ReasonCPULimit:
		return "the CPU was over the new model's gate"
	case cac.ReasonBuffers:
		return "a watched receive buffer was full"
	case cac.ReasonSource:
		return "a source over its own rate"
	case cac.ReasonAccount, cac.ReasonCustomer:
		return "over the trusted peer's own rate"
	case cac.ReasonClass:
		return "the class over its rate"
	case cac.ReasonEnvironment:
		return "every class together over the box's rate"
	case cac.ReasonSessionCharges:
		return "the calls in force held the charges at their limit"
	case cac.ReasonTotalCharge:
		return "session and load charges together at the limit"
	}
	return r.String()
}

// scrapeMetrics reads the metrics once, as Prometheus would, and counts
// the samples.
func scrapeMetrics(addr string) (int, error) {
	if addr == "" {
		return 0, errors.New("the daemon serves no metrics")
	}
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("answered %s", resp.Status)
	}
	n := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			n++
		}
	}
	return n, sc.Err()
}

// readRejectsLog counts the records of the rejects log and the rejects
// they hold.
func readRejectsLog(path string) (records int, rejects uint64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l api.RejectLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return records, rejects, fmt.Errorf("%s: line %d: %w", path, records+1, err)
		}
		records++
		rejects += l.Count
	}
	return records, rejects, sc.Err()
}
