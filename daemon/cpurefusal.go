package daemon

import (
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// cpuRefusals finds the CPU sample the cpu-limit gate refused calls with,
// which show call admission statistics gives beside the current one: on a
// box whose CPU came down since, the current sample alone would not say
// why calls were refused (docs/call-admission.md, "What the daemon
// measures").
// The fast path compares the sample in force with the limit, and the
// control loop writes each sample; so the calls refused as cpu-limit
// between two writes were refused by the sample the first of them put in
// force. A refusal counted between the reading and the write that follows
// it, microseconds apart, is put down to the new sample.
type cpuRefusals struct {
	stateDir string
	have     bool // a sample was written after a reading
	refused  uint64
	cpuMilli uint32
	since    time.Time
}

// refusedTotal sums the cpu-limit refusals of every class and attachment.
func refusedTotal(stateDir string) (uint64, error) {
	var n uint64
	err := loader.EachPinned(stateDir, func(p *loader.Pinned) error {
		s, err := maps.ReadStats(p.Stats)
		for _, c := range s.Classes {
			n += c.Rejected[cac.ReasonCPULimit]
		}
		return err
	})
	return n, err
}

// before reads the refusals before a sample is written: ok false when they
// could not be read, and nothing is put down to any sample.
func (c *cpuRefusals) before() (refused uint64, ok bool) {
	n, err := refusedTotal(c.stateDir)
	return n, err == nil
}

// wrote notes a sample of cpuMilli put in force at at, after refusals
// were read (ok): it returns the refusal of the sample it replaces, nil
// when that sample refused nothing.
func (c *cpuRefusals) wrote(at time.Time, cpuMilli uint32, refused uint64, ok bool) *api.CPURefusal {
	var r *api.CPURefusal
	if ok && c.have && refused > c.refused {
		r = &api.CPURefusal{CPUPercent: float64(c.cpuMilli) / 1000, From: c.since, Until: at, Refused: refused - c.refused}
	}
	// A count lower than before is an attachment made anew: from it on.
	c.have, c.refused, c.cpuMilli, c.since = ok, refused, cpuMilli, at
	return r
}
