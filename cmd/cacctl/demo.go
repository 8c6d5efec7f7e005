package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/daemon"
	"github.com/xdpcac/xdpcac/internal/storm"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// demoConfig is the embedded default of the demo: per-MAC and per-class
// limits for PPPoE, a class limit for ICRQs, per-source limits for SIP,
// an account that keeps a trusted peer's calls flowing, and the Cisco
// new model over it all. IFACE is the testbed's BRAS interface.
const demoConfig = `interfaces: [{name: IFACE}]
ports: {l2tp: [1701], sip: [5060]}
classes:
  pppoe-padi: {cps: 200, burst: 200, per-source: {key: mac, cps: 0.2, burst: 1}}
  pppoe-padr: {cps: 200}
  l2tp-icrq: {cps: 100, burst: 100}
  sip-invite: {cps: 200, burst: 400, per-source: {cps: 0.1, burst: 1}}
  sip-options: {cps: 200, per-source: {cps: 0.1, burst: 2}}
  sip-register: {cps: 200, per-source: {cps: 0.1, burst: 2}}
environment: {cps: 2000}
customers:
  - name: trusted-peer
    cps: 50
    accounts: [{name: pbx, source: 192.0.2.2/32, cps: 50}]
call-admission: |
  call admission new-model
  call admission limit 150
  call admission cpu-limit 95
  call admission pppoe 1 1
  call admission vpdn 1 1
`

func newDemoCmd(g *globals) *cobra.Command {
	var duration time.Duration
	cmd := &cobra.Command{
		Use:   "demo [--duration D]",
		Short: "A testbed in network namespaces, the filter on it, and a minute of storms with live counts",
		Long: `demo builds a BRAS and a peer in two new network namespaces joined by a veth
pair, attaches the filter to the BRAS side with an embedded configuration,
and runs three storms from the peer side (a PADI storm after an outage, an
ICRQ burst after a tunnel flap, a SIP scanner beside a trusted peer) while
it prints what was admitted and rejected each second. It ends with the
call admission statistics and a summary, and removes everything it made,
also when interrupted.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if duration < 3*time.Second {
				return fmt.Errorf("--duration: want at least 3s, got %v", duration)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runDemo(ctx, cmd.OutOrStdout(), duration)
		},
	}
	cmd.Flags().DurationVar(&duration, "duration", 45*time.Second, "how long the storms last in all")
	return cmd
}

// testbed is what the demo makes, and removes.
type testbed struct {
	bras, peer         string // network namespaces
	brasIface, peerIfc string
	stateDir, cfgFile  string
}

func newTestbed() (*testbed, error) {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	id := hex.EncodeToString(b)
	tb := &testbed{
		bras: "xcdemo-bras-" + id, peer: "xcdemo-peer-" + id,
		brasIface: "xcd" + id + "b", peerIfc: "xcd" + id + "p",
		stateDir: filepath.Join("/sys/fs/bpf", "xdpcac-demo-"+id),
	}
	steps := [][]string{
		{"netns", "add", tb.bras},
		{"netns", "add", tb.peer},
		{"link", "add", tb.brasIface, "netns", tb.bras, "type", "veth", "peer", "name", tb.peerIfc, "netns", tb.peer},
		{"-n", tb.bras, "link", "set", tb.brasIface, "up"},
		{"-n", tb.peer, "link", "set", tb.peerIfc, "up"},
		{"-n", tb.bras, "addr", "add", "192.0.2.1/24", "dev", tb.brasIface},
		{"-n", tb.peer, "addr", "add", "192.0.2.2/24", "dev", tb.peerIfc},
	}
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			tb.remove()
			return nil, fmt.Errorf("ip %s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	f, err := os.CreateTemp("", "xdpcac-demo-*.yaml")
	if err != nil {
		tb.remove()
		return nil, err
	}
	tb.cfgFile = f.Name()
	_, err = io.WriteString(f, strings.Replace(demoConfig, "IFACE", tb.brasIface, 1))
	f.Close()
	if err != nil {
		tb.remove()
		return nil, err
	}
	return tb, nil
}

// remove takes down what newTestbed made: deleting the namespaces takes
// the veth pair with them.
func (tb *testbed) remove() {
	loader.Detach(loader.Attachment{Iface: tb.brasIface, Netns: tb.bras}, tb.stateDir)
	os.RemoveAll(tb.stateDir)
	exec.Command("ip", "netns", "del", tb.bras).Run()
	exec.Command("ip", "netns", "del", tb.peer).Run()
	if tb.cfgFile != "" {
		os.Remove(tb.cfgFile)
	}
}

func runDemo(ctx context.Context, w io.Writer, total time.Duration) error {
	tb, err := newTestbed()
	if err != nil {
		return err
	}
	defer tb.remove()
	_, opts, err := daemon.LoadOptions(tb.cfgFile)
	if err != nil {
		return err
	}
	opts.StateDir = tb.stateDir
	mode, err := loader.Attach(loader.Attachment{Iface: tb.brasIface, Netns: tb.bras}, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "testbed: BRAS %s (namespace %s, 192.0.2.1) <- peer %s (namespace %s); filter attached in %s mode\n\n",
		tb.brasIface, tb.bras, tb.peerIfc, tb.peer, mode)

	for _, s := range demoScenarios(total) {
		fmt.Fprintf(w, "== %s: %s (%d frames/s for %v)\n", s.Name, s.story, s.Rate, s.Duration.Round(time.Second))
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		var report storm.Report
		go func() {
			var err error
			report, err = s.Run(sctx, tb.peer, tb.peerIfc)
			done <- err
		}()
		err := tb.progress(sctx, w, done)
		cancel()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "   sent %s\n", report)
		if ctx.Err() != nil {
			fmt.Fprintln(w, "interrupted: removing the testbed")
			return nil
		}
	}
	return tb.summary(w)
}

// progress prints each second what the filter admitted and rejected
// since the second before, until the scenario is done.
func (tb *testbed) progress(ctx context.Context, w io.Writer, done <-chan error) error {
	last, err := tb.stats()
	if err != nil {
		return err
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			return <-done
		case <-tick.C:
		}
		now, err := tb.stats()
		if err != nil {
			return err
		}
		d := now.Sub(last)
		last = now
		var parts []string
		for _, c := range cac.Classes() {
			cs := d.Classes[c]
			if cs.Seen() == 0 {
				continue
			}
			parts = append(parts, fmt.Sprintf("%s %d/s admitted, %d/s rejected%s", c, cs.Admitted, cs.RejectedTotal(), topReasons(cs, 2)))
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "   %s\n", strings.Join(parts, "; "))
		}
	}
}

func (tb *testbed) stats() (maps.Stats, error) {
	per, err := loader.ReadAllStats(tb.stateDir)
	var s maps.Stats
	for _, a := range per {
		s.Add(a.Stats)
	}
	return s, err
}

// topReasons names the n reasons that rejected most, as " (r1 N, r2 M)".
func topReasons(cs maps.ClassStats, n int) string {
	rs := cac.Reasons()
	sort.SliceStable(rs, func(i, j int) bool { return cs.Rejected[rs[i]] > cs.Rejected[rs[j]] })
	var parts []string
	for _, r := range rs[:n] {
		if cs.Rejected[r] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", r, cs.Rejected[r]))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// summary prints the call admission statistics and what happened to each
// class, and why.
func (tb *testbed) summary(w io.Writer) error {
	st, err := loader.ReadCallAdmission(tb.stateDir)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "\n== show call admission statistics")
	var ifaces []string
	for _, a := range st.Attachments {
		ifaces = append(ifaces, a.Key())
	}
	writeCallAdmission(w, maps.CallAdmissionViewOf(st.CallAdmission, st.Inputs, st.Rings, st.Stats, control.MonotonicCoarse(), ifaces))
	fmt.Fprintln(w, "\n== summary")
	per, err := loader.ReadAllStats(tb.stateDir)
	if err != nil {
		return err
	}
	if err := writeStatsText(w, st.Stats, per); err != nil {
		return err
	}
	if st.Stats.Classes[cac.PPPoEPADI].Admitted == 0 || st.Stats.Classes[cac.PPPoEPADI].RejectedTotal() == 0 {
		return errors.New("the PADI storm was neither admitted nor held back: the filter did not see it")
	}
	return nil
}
