package maps

import (
	"fmt"
	"reflect"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
)

// ClassStats counts the first packets of one class.
type ClassStats struct {
	Admitted uint64
	Rejected [cac.NumReasons]uint64 // by reason
}

// Seen is every first packet of the class, admitted or rejected.
func (c ClassStats) Seen() uint64 { return c.Admitted + c.RejectedTotal() }

// RejectedTotal is the sum over reasons.
func (c ClassStats) RejectedTotal() uint64 {
	var n uint64
	for _, r := range c.Rejected {
		n += r
	}
	return n
}

// Stats are the fast path's counters, summed over CPUs. In-dialog requests
// and malformed frames are counted in their classes, sip-indialog and
// malformed.
type Stats struct {
	Classes  [cac.NumClasses]ClassStats
	Fragment uint64
	// PassedOther counts frames on a watched carrier that open no session.
	PassedOther uint64
	// SIPOddForms counts SIP requests in a form stricter parsers miss (a
	// method not in upper case, leading CRLFs, several To headers).
	SIPOddForms uint64
	// PPPoEOddForms counts PADIs and PADRs with a session ID: RFC 2516
	// forbids one, pppoe-server answers it, so it is classified.
	PPPoEOddForms uint64
	// SIPInDialogVerified counts in-dialog requests of a dialog the
	// filter admitted, passed uncharged (sip-indialog's admitted holds
	// them too).
	SIPInDialogVerified uint64
	// SIPRetransmits and SIPRetransmitsRefused count INVITE
	// retransmissions within Timer B: of an admitted transaction, passed
	// uncharged (sip-invite's admitted holds them too); of a refused one,
	// refused again for nothing (in sip-invite's rejected, by the reason
	// the transaction was refused for).
	SIPRetransmits        uint64
	SIPRetransmitsRefused uint64
	// L2TP: refused ICRQs answered with a ZLB in the LNS's name (in
	// l2tp-icrq's rejected too), copies of ICRQs of a translated tunnel
	// passed or answered again without a charge (in its admitted or
	// rejected), and refused ICRQs that could only be dropped, their
	// tunnel not translated.
	L2TPAnswered, L2TPRetransmits, L2TPUnanswered uint64
	// Records a full ring buffer refused because the daemon fell behind:
	// finished seconds of reject records, and SIP messages (agents'
	// out-service responses, refused requests to answer with 503).
	RejectRecordsLost uint64
	SIPEventsLost     uint64
	// Access control (docs/design.md, "Access control"): frames of
	// denied sources dropped, by a static deny list or the deny table,
	// and the sources the fast path put in the deny table.
	DeniedStatic, DeniedAuto, DenyAdded uint64
}

// Add adds o to s, as when summing interfaces.
func (s *Stats) Add(o Stats) {
	for i := range s.Classes {
		s.Classes[i].Admitted += o.Classes[i].Admitted
		for r := range s.Classes[i].Rejected {
			s.Classes[i].Rejected[r] += o.Classes[i].Rejected[r]
		}
	}
	s.Fragment += o.Fragment
	s.PassedOther += o.PassedOther
	s.SIPOddForms += o.SIPOddForms
	s.PPPoEOddForms += o.PPPoEOddForms
	s.SIPInDialogVerified += o.SIPInDialogVerified
	s.SIPRetransmits += o.SIPRetransmits
	s.SIPRetransmitsRefused += o.SIPRetransmitsRefused
	s.L2TPAnswered += o.L2TPAnswered
	s.L2TPRetransmits += o.L2TPRetransmits
	s.L2TPUnanswered += o.L2TPUnanswered
	s.RejectRecordsLost += o.RejectRecordsLost
	s.SIPEventsLost += o.SIPEventsLost
	s.DeniedStatic += o.DeniedStatic
	s.DeniedAuto += o.DeniedAuto
	s.DenyAdded += o.DenyAdded
}

// Sub returns s - o, counter by counter: what happened between two reads.
func (s Stats) Sub(o Stats) Stats {
	d := s
	for i := range d.Classes {
		d.Classes[i].Admitted -= o.Classes[i].Admitted
		for r := range d.Classes[i].Rejected {
			d.Classes[i].Rejected[r] -= o.Classes[i].Rejected[r]
		}
	}
	d.Fragment -= o.Fragment
	d.PassedOther -= o.PassedOther
	d.SIPOddForms -= o.SIPOddForms
	d.PPPoEOddForms -= o.PPPoEOddForms
	d.SIPInDialogVerified -= o.SIPInDialogVerified
	d.SIPRetransmits -= o.SIPRetransmits
	d.SIPRetransmitsRefused -= o.SIPRetransmitsRefused
	d.L2TPAnswered -= o.L2TPAnswered
	d.L2TPRetransmits -= o.L2TPRetransmits
	d.L2TPUnanswered -= o.L2TPUnanswered
	d.RejectRecordsLost -= o.RejectRecordsLost
	d.SIPEventsLost -= o.SIPEventsLost
	d.DeniedStatic -= o.DeniedStatic
	d.DeniedAuto -= o.DeniedAuto
	d.DenyAdded -= o.DenyAdded
	return d
}

// SIPInDialog is every in-dialog request seen, admitted or rejected.
func (s Stats) SIPInDialog() uint64 { return s.Classes[cac.SIPInDialog].Seen() }

// Malformed is every malformed frame seen, within its limits or not.
func (s Stats) Malformed() uint64 { return s.Classes[cac.ClassMalformed].Seen() }

// ReadStats sums the per-CPU counters of the stats map.
func ReadStats(m *ebpf.Map) (Stats, error) {
	var perCPU []bpf.XdpCacStats
	if err := m.Lookup(uint32(0), &perCPU); err != nil {
		return Stats{}, fmt.Errorf("read stats map: %w", err)
	}
	var s Stats
	for _, c := range perCPU {
		s.Add(fromKernel(c))
	}
	return s, nil
}

// fromKernel converts one CPU's counters from the layout of struct cac_stats.
func fromKernel(c bpf.XdpCacStats) Stats {
	s := Stats{
		Fragment: c.Fragment, PassedOther: c.PassedOther, SIPOddForms: c.SipOddForms,
		PPPoEOddForms:       c.PppoeOddForms,
		SIPInDialogVerified: c.SipIndialogVerified,
		SIPRetransmits:      c.SipRetransmits, SIPRetransmitsRefused: c.SipRetransmitsRefused,
		L2TPAnswered: c.L2tpAnswered, L2TPRetransmits: c.L2tpRetransmits, L2TPUnanswered: c.L2tpUnanswered,
		RejectRecordsLost: c.RejectRecordsLost, SIPEventsLost: c.SipEventsLost,
		DeniedStatic: c.DeniedStatic, DeniedAuto: c.DeniedAuto, DenyAdded: c.DenyAdded,
	}
	for i := range s.Classes {
		s.Classes[i] = ClassStats{Admitted: c.Classes[i].Admitted, Rejected: c.Classes[i].Rejected}
	}
	return s
}

// Since returns s counted from base, counter by counter: what an operator
// reads after clear counters, which keeps the counters of the moment as a
// base and leaves the map alone (docs/design.md, "Clearing counters").
// A counter below its base means the map counted again from zero since
// (a fresh attachment's): base is stale, and s is returned whole, with
// ok false, rather than wrapped around to a huge number.
func (s Stats) Since(base Stats) (shown Stats, ok bool) {
	if s.Below(base) {
		return s, false
	}
	return s.Sub(base), true
}

// Below reports whether any counter of s is lower than o's: the counters
// started again between two readings.
func (s Stats) Below(o Stats) bool {
	a, b := s.counters(), o.counters()
	for i := range a {
		if *a[i] < *b[i] {
			return true
		}
	}
	return false
}

// counters lists every counter of s, in field order. It walks the struct
// rather than naming the fields, so that a counter added to Stats is never
// missed by Below.
func (s *Stats) counters() []*uint64 {
	var out []*uint64
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Uint64:
			out = append(out, v.Addr().Interface().(*uint64))
		case reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i))
			}
		}
	}
	walk(reflect.ValueOf(s).Elem())
	return out
}
