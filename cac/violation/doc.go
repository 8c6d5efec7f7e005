// Package violation keeps what `cacctl show violations` shows: for each
// class and each level of the admission pipeline that refuses it, whether
// it is in violation now (refusing), since when, and the arrival and
// refusal rates of the last one and five minutes with their peaks, as
// Juniper's `show ddos-protection protocols violations` gives them for a
// policer. The daemon feeds a Tracker the fast path's counters once a
// second; the Tracker keeps five minutes of per-second deltas and the
// episodes of each class and level (docs/design.md, "Violations").
package violation
