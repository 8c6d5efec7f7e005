package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/emiago/sipgo/sip"
)

// The egress step (docs/design.md, "Egress admission"): the trusted peer
// is also a session agent of demoConfig, a connection of egressCPS calls
// a second. The BRAS side's SIP server sends it egressInvites INVITEs at
// once, as a proxy routing calls to a vendor would; the filter's egress
// program lets the connection's share through, to the peer's own answer
// (405: the PBX takes no calls), and answers the rest 503 on the peer's
// behalf, at once, which a proxy would hunt on.
const (
	egressCPS     = 2
	egressInvites = 12
)

// egressResult is what the server's INVITEs got.
type egressResult struct {
	codes   map[int]int
	byUs    int             // 503s whose Warning names xdpcac
	answers []time.Duration // INVITE to the filter's 503
	err     error
}

// sendEgress sends the INVITEs from the server toward the peer, all at
// once, and waits for every final answer.
func sendEgress(ctx context.Context, server *uas, peerAddr string) egressResult {
	r := egressResult{codes: map[int]int{}}
	host, port, err := sip.ParseAddr(peerAddr)
	if err != nil {
		r.err = err
		return r
	}
	type answer struct {
		code int
		byUs bool
		took time.Duration
		err  error
	}
	out := make(chan answer, egressInvites)
	for i := 0; i < egressInvites; i++ {
		go func() {
			req := sip.NewRequest(sip.INVITE, sip.Uri{User: "vendor", Host: host, Port: port})
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			start := time.Now()
			res, err := server.client.Do(cctx, req)
			if err != nil {
				out <- answer{err: err}
				return
			}
			w := res.GetHeader("Warning")
			out <- answer{code: res.StatusCode, byUs: w != nil && strings.Contains(w.Value(), "xdpcac"), took: time.Since(start)}
		}()
	}
	for i := 0; i < egressInvites; i++ {
		a := <-out
		if a.err != nil {
			r.err = errors.Join(r.err, a.err)
			continue
		}
		r.codes[a.code]++
		if a.byUs {
			r.byUs++
			r.answers = append(r.answers, a.took)
		}
	}
	return r
}

// writeEgress prints what the INVITEs got, and returns what egress
// admission should have done and did not.
func writeEgress(w io.Writer, r egressResult) []string {
	if r.err != nil {
		return []string{fmt.Sprintf("egress: the server's INVITEs toward the carrier: %v", r.err)}
	}
	slices.Sort(r.answers)
	median := time.Duration(0)
	if len(r.answers) > 0 {
		median = r.answers[len(r.answers)/2]
	}
	fmt.Fprintf(w, "egress: the server sent %d INVITEs at once toward the carrier (connection-cps %d): %d got the carrier's own answer, %d were answered 503 on its behalf by the filter in a median %v, which a proxy hunts on at once\n",
		egressInvites, egressCPS, egressInvites-r.byUs, r.byUs, median.Round(time.Microsecond))
	var failed []string
	// The connection's bucket holds egressCPS calls (its burst, one
	// second's): that many pass, the rest are answered.
	if r.byUs != egressInvites-egressCPS || r.codes[503] != r.byUs {
		failed = append(failed, fmt.Sprintf("egress: %d of %d INVITEs answered 503 by the filter (answers %v), want %d", r.byUs, egressInvites, r.codes, egressInvites-egressCPS))
	}
	return failed
}
