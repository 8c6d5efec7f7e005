package daemon

import (
	"fmt"
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// DeniedOf reads the deny table of the shared maps p (docs/design.md,
// "Auto-deny"): each source as show denied lists it, with the fast path's
// monotonic times turned into wall-clock times as the reject records'
// are (RejectLineOf); and the keys, in the same order, to delete them by.
func DeniedOf(p *loader.Pinned, wall time.Time, mono uint64) ([]api.DeniedSource, []bpf.XdpCacDenyKey, error) {
	if p.Denied == nil || p.AccessSettings == nil {
		return nil, nil, fmt.Errorf("the filter attached is of a version without a deny table")
	}
	as, err := maps.ReadAccessSettings(p.AccessSettings)
	if err != nil {
		return nil, nil, err
	}
	ds, err := maps.ReadDenied(p.Denied, p.DenyPending, as.Ipv6Prefix)
	if err != nil {
		return nil, nil, err
	}
	at := func(ns uint64) time.Time { return wall.Add(-time.Duration(mono - ns)) }
	out := make([]api.DeniedSource, len(ds))
	keys := make([]bpf.XdpCacDenyKey, len(ds))
	for i, d := range ds {
		out[i] = api.DeniedSource{Source: d.Source, How: api.DeniedAuto, Since: at(d.SinceNS), Until: at(d.UntilNS),
			Refusals: d.Refusals, Frames: d.Frames}
		keys[i] = d.Key
	}
	return out, keys, nil
}

// ClearDenied takes out of the deny table of p the sources t matches, and
// returns them.
func ClearDenied(p *loader.Pinned, t api.DenyTarget, wall time.Time, mono uint64) ([]api.DeniedSource, error) {
	all, keys, err := DeniedOf(p, wall, mono)
	if err != nil {
		return nil, err
	}
	var out []api.DeniedSource
	var gone []bpf.XdpCacDenyKey
	for i, d := range all {
		if t.Matches(d.Source) {
			out, gone = append(out, d), append(gone, keys[i])
		}
	}
	return out, maps.DeleteDenied(p.Denied, gone)
}
