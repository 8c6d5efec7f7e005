package admission

import (
	"net/netip"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/internal/model/access"
	"github.com/xdpcac/xdpcac/internal/model/classify"
)

// sourceAt is access control's source of frame: the IP source at l3 of
// family 4 or 6, or the Ethernet source (access.h's keys).
func sourceAt(frame []byte, family uint8, l3 int) access.Source {
	s := access.Source{Family: family}
	switch family {
	case 4:
		s.Addr = netip.AddrFrom4([4]byte(frame[l3+12 : l3+16]))
	case 6:
		s.Addr = netip.AddrFrom16([16]byte(frame[l3+8 : l3+24]))
	default:
		s.MAC = [6]byte(frame[6:12])
	}
	return s
}

// denied is what the fast path does with a frame of a denied source:
// dropped before its parse, counted as denied in all and, where the frame
// showed its class first, in the class's rejected[denied] (CAC_KIND_DENIED
// of bpf/verdict.h).
func (m *Model) denied(frame []byte, now uint64) (Decision, bool) {
	if !m.Access.Judged() {
		return Decision{}, false
	}
	j := classify.Judge(frame, m.Ports)
	if !j.Watched {
		return Decision{}, false
	}
	v := m.Access.Check(sourceAt(frame, j.Family, j.L3), now)
	if v == access.None {
		return Decision{}, false
	}
	d := Decision{Verdict: cac.Drop, Denied: v}
	if j.Known > 0 {
		d.Result = classify.Result{Kind: cac.Session, Class: cac.Class(j.Known - 1)}
		d.Rejected, d.Reason = true, cac.ReasonDenied
	}
	return d, true
}

// countRefusal counts a refusal of the source's own doing (its per-source
// bucket, its account, its malformed frames) toward its auto-deny
// (counts_for_deny and deny_count of bpf/access.h).
func (m *Model) countRefusal(frame []byte, d Decision, now uint64) {
	if !d.Rejected || !m.Access.AutoDeny {
		return
	}
	if d.Reason != cac.ReasonSource && d.Reason != cac.ReasonAccount && d.Reason != cac.ReasonMalformed {
		return
	}
	j := classify.Judge(frame, m.Ports)
	s := sourceAt(frame, j.Family, j.L3)
	// Session agents are never counted.
	if _, agent := m.agentAddrs[s.Mapped()]; agent && s.Family != 0 {
		return
	}
	m.Access.Count(s, now)
}
