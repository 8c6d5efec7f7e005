package top

import (
	"cmp"
	"slices"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/maps"
)

// rejectWindowSecs is how many seconds of reject records top adds up to
// rank the sources. The daemon takes a record out of the pinned table
// about two seconds after its second, so top keeps what it saw.
const rejectWindowSecs = 10

// sourceKey is what a row of the sources view stands for: one source
// rejected on one interface for one class and reason.
type sourceKey struct {
	iface, source string
	class         cac.Class
	reason        cac.Reason
}

// recordKey names one reject record: a source's key and its second.
type recordKey struct {
	sourceKey
	second uint64
}

// rejectWindow holds the counts of the reject records of the last
// rejectWindowSecs seconds, each as read last: a record only grows while
// its second lasts, so the largest reading is the truest.
type rejectWindow map[recordKey]uint64

// observe takes in the records of a sample read at second now, and
// forgets the seconds that left the window.
func (w rejectWindow) observe(rs []maps.Reject, now uint64) {
	for _, r := range rs {
		k := recordKey{sourceKey{r.Interface, r.Source, r.Class, r.Reason}, r.Second}
		w[k] = max(w[k], r.Count)
	}
	for k := range w {
		if k.second+rejectWindowSecs <= now {
			delete(w, k)
		}
	}
}

// sourceRow is one source in the sources view: its rejects in the last
// full second (the rate) and over the whole window (the count).
type sourceRow struct {
	sourceKey
	rate, count uint64
}

// sources adds up the window at second now, sorted biggest first by rate
// or by count, the other one breaking ties, then by name so that rows do
// not swap places between frames.
func (w rejectWindow) sources(now uint64, byRate bool) []sourceRow {
	sum := map[sourceKey]*sourceRow{}
	for k, n := range w {
		if k.second > now || k.second+rejectWindowSecs <= now {
			continue
		}
		r := sum[k.sourceKey]
		if r == nil {
			r = &sourceRow{sourceKey: k.sourceKey}
			sum[k.sourceKey] = r
		}
		r.count += n
		if k.second+1 == now {
			r.rate += n
		}
	}
	out := make([]sourceRow, 0, len(sum))
	for _, r := range sum {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b sourceRow) int {
		first, second := cmp.Compare(b.count, a.count), cmp.Compare(b.rate, a.rate)
		if byRate {
			first, second = second, first
		}
		return cmp.Or(first, second,
			cmp.Compare(a.source, b.source), cmp.Compare(a.iface, b.iface),
			cmp.Compare(a.class, b.class), cmp.Compare(a.reason, b.reason))
	})
	return out
}
