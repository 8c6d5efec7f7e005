package maps

import (
	"time"

	"github.com/xdpcac/xdpcac/cac"
)

// ClassView is one class in `cacctl show stats -o json`.
type ClassView struct {
	Seen     uint64            `json:"seen"`
	Admitted uint64            `json:"admitted"`
	Rejected uint64            `json:"rejected"`
	Reasons  map[string]uint64 `json:"reasons"`
}

// StatsView is the JSON shape docs/json.md gives for show stats -o json:
// class and reason names as in the design, every class and every reason present, zeros included, so
// that scripts never meet a missing key.
type StatsView struct {
	Classes map[string]ClassView `json:"classes"`
	// SIPInDialog and Malformed repeat the seen counts of classes
	// sip-indialog and malformed, keys older scripts read.
	SIPInDialog uint64 `json:"sip_indialog"`
	Fragment    uint64 `json:"fragment"`
	Malformed   uint64 `json:"malformed"`
	PassedOther uint64 `json:"passed_other"`
	SIPOddForms uint64 `json:"sip_odd_forms"`
	// PADIs and PADRs with a session ID, classified all the same.
	PPPoEOddForms uint64 `json:"pppoe_odd_forms"`
	// Of sip-indialog's admitted, those of a dialog the filter admitted.
	SIPInDialogVerified uint64 `json:"sip_indialog_verified"`
	// Of sip-invite's admitted and rejected, INVITE retransmissions that
	// took nothing.
	SIPRetransmits        uint64 `json:"sip_retransmits"`
	SIPRetransmitsRefused uint64 `json:"sip_retransmits_refused"`
	// Of l2tp-icrq's rejected, those answered with a ZLB so the LAC's
	// tunnel stays up, and those only dropped (a tunnel not translated);
	// of its admitted and rejected, copies that took nothing.
	L2TPAnswered    uint64 `json:"l2tp_answered"`
	L2TPUnanswered  uint64 `json:"l2tp_unanswered"`
	L2TPRetransmits uint64 `json:"l2tp_retransmits"`
	// Ring buffer records lost while the daemon fell behind.
	RejectRecordsLost uint64 `json:"reject_records_lost"`
	SIPEventsLost     uint64 `json:"sip_events_lost"`
	// Frames of denied sources dropped (a static deny, the deny table),
	// and sources the fast path put in the deny table.
	DeniedStatic uint64 `json:"denied_static"`
	DeniedAuto   uint64 `json:"denied_auto"`
	DenyAdded    uint64 `json:"deny_added"`
	// ClearedAt is when clear counters last made the counters count from
	// zero (docs/design.md, "Clearing counters"); null when they count from
	// the attach. On the sums it is the latest clear of any interface, each
	// of which counts from its own.
	ClearedAt *time.Time `json:"cleared_at"`
	// Interfaces breaks the sums down by attached interface, keyed by
	// IFACE or NETNS:IFACE; it is absent inside a breakdown.
	Interfaces map[string]StatsView `json:"interfaces,omitempty"`
}

// View returns the JSON shape of s.
func (s Stats) View() StatsView {
	v := StatsView{
		Classes:     make(map[string]ClassView, cac.NumClasses),
		SIPInDialog: s.SIPInDialog(),
		Fragment:    s.Fragment,
		Malformed:   s.Malformed(),
		PassedOther: s.PassedOther,
		SIPOddForms: s.SIPOddForms,

		PPPoEOddForms: s.PPPoEOddForms,

		SIPInDialogVerified:   s.SIPInDialogVerified,
		SIPRetransmits:        s.SIPRetransmits,
		SIPRetransmitsRefused: s.SIPRetransmitsRefused,
		L2TPAnswered:          s.L2TPAnswered,
		L2TPUnanswered:        s.L2TPUnanswered,
		L2TPRetransmits:       s.L2TPRetransmits,

		RejectRecordsLost: s.RejectRecordsLost,
		SIPEventsLost:     s.SIPEventsLost,

		DeniedStatic: s.DeniedStatic, DeniedAuto: s.DeniedAuto, DenyAdded: s.DenyAdded,
	}
	for _, c := range cac.Classes() {
		cs := s.Classes[c]
		reasons := make(map[string]uint64, cac.NumReasons)
		for _, r := range cac.Reasons() {
			reasons[r.String()] = cs.Rejected[r]
		}
		v.Classes[c.String()] = ClassView{
			Seen:     cs.Seen(),
			Admitted: cs.Admitted,
			Rejected: cs.RejectedTotal(),
			Reasons:  reasons,
		}
	}
	return v
}
