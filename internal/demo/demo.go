package demo

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/xdpcac/xdpcac/internal/show"
	"github.com/xdpcac/xdpcac/loader"
)

// demoConfig is the embedded default of the demo: per-MAC and per-class
// limits for PPPoE, a class limit for ICRQs, per-source limits for SIP,
// an account that keeps a trusted peer's calls flowing, the trusted peer
// as a session agent and a connection of egressCPS calls a second toward
// it (egress.go), a conference bridge's number as an account of
// max-sessions 3 (capacity.go), and the Cisco new model over it all, its CPU gate fed by the daemon's measure of
// CPUSOURCE. Metrics go on loopback, on a port the kernel picks: the demo
// must not take one a real daemon may have. IFACE is the testbed's BRAS
// interface.
const demoConfig = `interfaces: [{name: IFACE}]
cpu: {source: CPUSOURCE, sample-interval: 1s}
metrics: {listen: "127.0.0.1:0"}
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
  - name: conferencing
    accounts: [{name: bridge, called: "800", max-sessions: 3}]
realms: [{name: core, address: 192.0.2.1}]
session-agents: [{name: carrier, hostname: 192.0.2.2, realm-id: core, connection-cps: 2}]
call-admission: |
  call admission new-model
  call admission limit 150
  call admission cpu-limit 95
  call admission pppoe 1 1
  call admission vpdn 1 1
`

// The testbed's addresses: documentation addresses, inside its namespaces
// only. The trusted peer is the account pbx of demoConfig.
const (
	demoBRAS = "192.0.2.1"
	demoPeer = "192.0.2.2"
	sipPort  = ":5060"
	// callRate is the trusted peer's calls a second, a busy PBX's.
	callRate = 5
)

// settle waits, 5 s at most, for the daemon's CPU sample to fall under
// the gate: the first covers loading the program, whose verifier's time
// is this process's, and would have the gate refuse the first second of
// the first storm.
func settle(ctx context.Context, stateDir string) (demoState, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := readDemoState(stateDir)
		if err != nil || st.ca.HeartbeatAgeMS != nil && st.ca.CPUPercent < st.ca.CPULimitPercent || time.Now().After(deadline) {
			return st, err
		}
		select {
		case <-ctx.Done():
			return st, nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Run builds the testbed, runs the daemon and the storms of total length
// on it, writes what happened to w and removes everything it made, also
// when ctx ends (Ctrl-C). cpuSource is what the CPU gate measures, ""
// this process alone. An error says what of the demo's own expectations
// failed.
func Run(ctx context.Context, w io.Writer, total time.Duration, cpuSource string) error {
	tb, err := newTestbed(cpuSource)
	if err != nil {
		return err
	}
	defer tb.remove()
	cpuSource = tb.cpuSource
	d, err := startDaemon(ctx, tb)
	if err != nil {
		return err
	}
	defer d.stop()
	server, err := startUAS(tb.bras, demoBRAS+sipPort)
	if err != nil {
		return err
	}
	defer server.close()
	peer, err := startUAC(tb.peer, demoPeer+sipPort, demoBRAS+sipPort)
	if err != nil {
		return err
	}
	defer peer.stop()
	mode := "an unknown"
	if st, err := loader.Status(tb.stateDir); err == nil && len(st) > 0 && st[0].Mode != "" {
		mode = st[0].Mode
	}
	fmt.Fprintf(w, "testbed: BRAS %s (namespace %s, %s) <- peer %s (namespace %s, %s)\n",
		tb.brasIface, tb.bras, demoBRAS, tb.peerIfc, tb.peer, demoPeer)
	fmt.Fprintf(w, "daemon: cacctl run in this process, filter attached in %s mode, state in %s\n", mode, tb.stateDir)
	if st, err := settle(ctx, tb.stateDir); err == nil {
		fmt.Fprintf(w, "CPU gate: the daemon measures %s every second; the new model refuses calls over %s%%\n", tb.cpuSource, show.Num(st.ca.CPULimitPercent))
	}
	fmt.Fprintf(w, "metrics: http://%s/metrics\n", d.metrics)
	fmt.Fprintf(w, "watch it from another terminal: sudo cacctl top --state-dir %s\n", tb.stateDir)
	fmt.Fprintf(w, "SIP: a server on %s%s (BRAS side); the trusted peer %s places %d calls a second during the SIP storm\n\n",
		demoBRAS, sipPort, demoPeer, callRate)

	var results []stormResult
	for _, s := range demoScenarios(total) {
		r, err := runScenario(ctx, w, tb, d, s, peer)
		if err != nil {
			return err
		}
		results = append(results, r)
		if ctx.Err() != nil {
			fmt.Fprintln(w, "interrupted: removing the testbed")
			return nil
		}
	}
	fmt.Fprintf(w, "== egress: the server sends %d INVITEs at once toward the carrier, a connection of %d calls a second\n", egressInvites, egressCPS)
	eg := sendEgress(ctx, server, demoPeer+sipPort)
	fmt.Fprintf(w, "== capacity: the peer places %d calls at once to number %s, an account of max-sessions %d\n", capacityCalls, bridgeNumber, capacitySessions)
	cp := callCapacity(ctx, peer)
	return writeResult(w, tb, d, results, peer, server, eg, cp)
}
