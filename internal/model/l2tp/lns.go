package l2tp

import (
	"github.com/xdpcac/xdpcac/internal/model/classify"
)

// avpsMax is L2TP_AVPS_MAX: the AVPs looked through for an SCCRP's
// assigned ID.
const avpsMax = 24

// FromLNS is l2tp_from_lns of bpf/l2tp_lns.h for the control message at
// at in a frame the LNS sends: an SCCRP makes its tunnel's two entries; a
// later message of a tunnel with ICRQs answered has its Nr put up by them
// (the frame is changed), and a StopCCN starts the tunnel's close.
func (tb Table) FromLNS(frame []byte, at classify.L2TPAt, now uint64) {
	m := msg{frame: frame, at: at}
	typ := m.msgType()
	k := m.lnsKey()
	if typ == msgSCCRP {
		if lnsID := m.assignedID(); lnsID != 0 {
			tb[k] = &Tunnel{SeenNS: now, PeerID: lnsID}
			lacID := k.ID
			k.Dir, k.ID = ToLNS, lnsID
			tb[k] = &Tunnel{SeenNS: now, PeerID: lacID, NextNs: m.nr()}
		}
		return
	}
	lac := tb[k]
	if lac == nil {
		return
	}
	lacID := k.ID
	k.Dir, k.ID = ToLNS, lac.PeerID
	t := tb[k]
	if t == nil || t.gone(now) {
		tb.forget(k, lacID)
		return
	}
	t.SeenNS = now
	if typ == msgStopCCN && t.ClosedNS == 0 {
		t.ClosedNS = now
	}
	if s := uint16(t.Skipped); s != 0 {
		m.put16(at.Msg+10, m.nr()+s)
	}
}

// assignedID is sccrp_assigned_id: the Assigned Tunnel ID (v2) or Assigned
// Control Connection ID (v3) among the AVPs after the Message Type, or 0
// when there is none to read (hidden, or past what the frame holds).
func (m msg) assignedID() uint32 {
	f := m.frame
	off, end := m.at.Msg+20, m.at.Msg+m.length()
	ver := m.version()
	for i := 0; i < avpsMax && off+6 <= end; i++ {
		if off+6 > len(f) {
			return 0
		}
		flags := be16(f[off:])
		n := int(flags & 0x03ff)
		if n < 6 {
			return 0
		}
		typ := be16(f[off+4:])
		if be16(f[off+2:]) == 0 && (ver == 2 && typ == 9 && n == 8 || ver == 3 && typ == 61 && n == 10) {
			if flags&0x4000 != 0 {
				return 0
			}
			if ver == 3 {
				if off+10 > len(f) {
					return 0
				}
				return uint32(be16(f[off+6:]))<<16 | uint32(be16(f[off+8:]))
			}
			if off+8 > len(f) {
				return 0
			}
			return uint32(be16(f[off+6:]))
		}
		off += n
	}
	return 0
}
