package daemon

import "github.com/cilium/ebpf"

// evictions counts the sources the deny table's LRU took out before their
// until (docs/design.md, "Auto-deny"). The kernel counts no LRU eviction,
// so each sweep balances the table: every source the fast path added since
// the last sweep (deny_added of each attachment) is in the table now, was
// taken out by the daemon (released past its until, cleared, auto-deny
// off), overwrote an entry already there (denied again over its expired
// entry), or was evicted. The balance is summed from sweep to sweep, so a
// source added between a sweep's two reads is counted at the next; the
// count is the highest sum reached, so it never goes back.
type evictions struct {
	table    ebpf.MapID        // the deny table balanced, 0 before the first: another is balanced afresh
	added    map[string]uint64 // deny_added of each attachment at the last balance
	left     int64             // the table's entries read at the last balance
	removed  int64             // entries the daemon took out since
	redenied int64             // entries found overwritten since
	sum      int64             // the balance summed over the sweeps
	total    uint64            // the highest sum: the count reported
}

// took notes n entries the daemon took out of the table.
func (e *evictions) took(n int) { e.removed += int64(n) }

// overwrote notes an entry the fast path wrote again: a source denied
// again over its entry, which added nothing to the table.
func (e *evictions) overwrote() { e.redenied++ }

// balance is one read of the deny table table: added the deny_added of
// each attachment read just before it, entries the entries read. The
// first sets the baseline, as does the first of a table made anew (every
// interface detached and attached again); an attachment new since the
// last counts every source it added, and one whose count went back (its
// program replaced with new statistics) counts from 0.
func (e *evictions) balance(table ebpf.MapID, added map[string]uint64, entries int) {
	if table != e.table {
		e.table, e.added, e.left, e.removed, e.redenied = table, added, int64(entries), 0, 0
		return
	}
	var grown int64
	for a, n := range added {
		if n >= e.added[a] {
			grown += int64(n - e.added[a])
		} else {
			grown += int64(n)
		}
	}
	e.sum += e.left - e.removed + grown - e.redenied - int64(entries)
	if e.sum > 0 && uint64(e.sum) > e.total {
		e.total = uint64(e.sum)
	}
	e.added, e.left, e.removed, e.redenied = added, int64(entries), 0, 0
}
