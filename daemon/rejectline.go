package daemon

import (
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/maps"
)

// RejectLineOf is a record of the fast path as the API and the rejects
// log give it, its monotonic times turned into wall-clock times by the
// clocks' difference now: mono is api.MonotonicNow read at wall.
func RejectLineOf(r maps.Reject, wall time.Time, mono uint64) api.RejectLine {
	at := func(ns uint64) time.Time { return wall.Add(-time.Duration(mono - ns)) }
	return api.RejectLine{
		Time: at(r.LastNS), First: at(r.FirstNS), Interface: r.Interface,
		Class: r.Class.String(), Source: r.Source, Reason: r.Reason.String(), Rule: r.Rule, Count: r.Count,
	}
}
