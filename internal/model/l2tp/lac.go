package l2tp

import (
	"encoding/binary"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/internal/model/classify"
)

// Check is what FromLAC finds of an ICRQ before admission (L2TP_CHECK).
type Check int

const (
	Unknown Check = iota // no tunnel the filter translates: judged, dropped if refused
	New                  // the LAC's next message: judged
	Ahead                // past the next: judged, passed translated or dropped, never answered
	Copy                 // a copy of a message passed: passed again, uncharged
	Again                // a copy of an ICRQ answered: answered again
)

// LAC is the XDP program's side of a tunnel for one message from a LAC in
// a frame it may change: lac_msg and l2tp_from_lac of bpf/l2tp_lac.h.
type LAC struct {
	tb  Table
	m   msg
	k   Key
	t   *Tunnel
	now uint64
}

// FromLAC looks up the tunnel of the control message at at in frame, as
// l2tp_from_lac does first; a tunnel gone is forgotten. Each method below
// is one op of l2tp_from_lac on what it found.
func (tb Table) FromLAC(frame []byte, at classify.L2TPAt, now uint64) *LAC {
	l := &LAC{tb: tb, m: msg{frame: frame, at: at}, now: now}
	l.k = l.m.lacKey()
	t := tb[l.k]
	if t == nil {
		return l
	}
	if t.gone(now) {
		tb.forget(l.k, t.PeerID)
		return l
	}
	t.SeenNS = now
	l.t = t
	return l
}

// ahead is how far the message's Ns is past the LAC's next.
func (l *LAC) ahead() uint16 { return l.m.ns() - l.t.NextNs }

// translate writes the Ns as the LNS counts it (lac_translate).
func (l *LAC) translate() {
	if s := uint16(l.t.Skipped); s != 0 {
		l.m.put16(l.m.at.Msg+8, l.m.ns()-s)
	}
}

// Ahead reports a message with an Ns past the LAC's next: judged, never
// answered, it moves nothing.
func (l *LAC) Ahead() bool { return l.t != nil && l.ahead() != 0 && l.ahead() < 0x8000 }

// Check is L2TP_CHECK for an ICRQ: Again with the reason it was refused
// for, Copy (translated, to pass), New or Unknown.
func (l *LAC) Check() (Check, cac.Reason) {
	if l.t == nil {
		return Unknown, 0
	}
	ahead := l.ahead()
	if ahead == 0 {
		return New, 0
	}
	if ahead < 0x8000 {
		return Ahead, 0
	}
	back := l.t.NextNs - 1 - l.m.ns()
	if back < 64 && l.t.Refused>>back&1 != 0 {
		return Again, l.t.Reason
	}
	l.translate()
	return Copy, 0
}

// Pass is L2TP_PASS: the message goes on to the LNS, translated; the
// LAC's next Ns moves past it, and a StopCCN starts the tunnel's close.
func (l *LAC) Pass() {
	if l.t == nil {
		return
	}
	if l.ahead() == 0 && l.m.length() > 12 {
		l.t.NextNs = l.m.ns() + 1
		l.t.Refused <<= 1
	}
	if l.m.length() >= 20 && l.m.present() >= 20 && be16(l.m.hdr()[18:]) == msgStopCCN && l.t.ClosedNS == 0 {
		l.t.ClosedNS = l.now
	}
	l.translate()
}

// Refuse is L2TP_REFUSE: the ICRQ is answered with a ZLB, and the LAC's
// numbering is one further ahead of the LNS's. It reports whether the
// frame was answered (XDP_TX); one that cannot be is dropped, unchanged.
func (l *LAC) Refuse(reason cac.Reason) bool {
	if l.t == nil {
		return false
	}
	ns := l.m.ns()
	if !l.answer() {
		return false
	}
	l.t.NextNs, l.t.Refused, l.t.Reason = ns+1, l.t.Refused<<1|1, reason
	l.t.Skipped++
	return true
}

// Answer is L2TP_AGAIN: the copy of a refused ICRQ is answered again.
func (l *LAC) Answer() bool { return l.t != nil && l.answer() }

// Message types the table acts on.
const (
	msgSCCRP   = 2
	msgStopCCN = 4
)

// answer is lac_answer: the ICRQ becomes the ZLB the LNS would have sent.
func (l *LAC) answer() bool {
	m, f := l.m, l.m.frame
	at := m.at
	if at.Family == 4 && (f[at.L3] != 0x45 || at.L3+20+8 != at.Msg) ||
		at.Family == 6 && at.L3+40+8 != at.Msg {
		return false
	}
	var mac [6]byte
	copy(mac[:], f[0:6])
	copy(f[0:6], f[6:12])
	copy(f[6:12], mac[:])

	const udpLen = 8 + 12
	sum := uint32(17) + udpLen
	ip := f[at.L3:]
	if at.Family == 4 {
		swap(ip[12:16], ip[16:20])
		binary.BigEndian.PutUint16(ip[2:], 20+udpLen)
		binary.BigEndian.PutUint16(ip[6:], 0)
		ip[8] = 64
		binary.BigEndian.PutUint16(ip[10:], 0)
		binary.BigEndian.PutUint16(ip[10:], fold(words(ip[:20])))
		sum += words(ip[12:20])
	} else {
		swap(ip[8:24], ip[24:40])
		binary.BigEndian.PutUint16(ip[4:], udpLen)
		ip[7] = 64
		sum += words(ip[8:40])
	}
	u := f[at.L4:]
	swap(u[0:2], u[2:4])
	binary.BigEndian.PutUint16(u[4:], udpLen)
	binary.BigEndian.PutUint16(u[6:], 0)

	h := f[at.Msg:]
	ns := be16(h[8:])
	ver := uint16(m.version())
	copy(h[8:10], h[10:12])
	binary.BigEndian.PutUint16(h[10:], ns+1)
	binary.BigEndian.PutUint16(h[0:], 0x8000|0x4000|0x0800|ver)
	binary.BigEndian.PutUint16(h[2:], 12)
	if ver == 3 {
		binary.BigEndian.PutUint32(h[4:], l.t.PeerID)
	} else {
		binary.BigEndian.PutUint16(h[4:], uint16(l.t.PeerID))
		binary.BigEndian.PutUint16(h[6:], 0)
	}
	sum += words(u[:8]) + words(h[:12])
	c := fold(sum)
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(u[6:], c)
	return true
}

// swap exchanges two byte ranges of one length.
func swap(a, b []byte) {
	for i := range a {
		a[i], b[i] = b[i], a[i]
	}
}

// words adds the 16-bit big-endian words of b (of even length).
func words(b []byte) uint32 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(be16(b[i:]))
	}
	return s
}
