package sessions

import (
	"net/netip"
	"sort"
	"strings"
	"time"
)

// State is where a dialog is in its life.
type State uint8

const (
	// Trying: its INVITE was admitted and nothing answered it yet.
	Trying State = iota
	// Early: a provisional answer came, no final one.
	Early
	// Confirmed: a 2xx answered its INVITE.
	Confirmed
)

func (s State) String() string {
	switch s {
	case Trying:
		return "trying"
	case Early:
		return "early"
	}
	return "confirmed"
}

// TimerC is how long a proxy waits for a final answer after a
// provisional one (RFC 3261 §16.6 step 11: more than three minutes).
const TimerC = 3 * time.Minute

// Message is what the table reads of a message of a dialog: a request's
// method, or a response's code and the method its CSeq names.
type Message struct {
	Request    bool
	Method     string // a request's, in upper case
	Code       int    // a response's
	CSeqMethod string // a response's, in upper case
	// FromServer: the SIP server behind the filter sent it. Only the
	// server's answer to the INVITE tells what became of the call: a
	// proxy hunts past an answer from further on, with the same Call-ID.
	FromServer bool
	// Peer is the other end of the message: where one the server sent
	// goes, where any other comes from.
	Peer netip.Addr
}

// Dialog is a dialog that holds sessions: the limits it took one of (the
// fast path's indexes), when, and what was seen of it since.
type Dialog struct {
	Limits []uint32
	Taken  time.Time
	State  State
	Last   time.Time // its last message, or Taken
	// Outbound: the part of the dialog the SIP server opened toward a
	// session agent (a connection's), which the agent's answer decides;
	// else an account's, which the server's answer decides.
	Outbound bool
	// ByeTo is where the server sent a BYE of the dialog: the 2xx to it
	// from there ends the dialog. Zero while it sent none.
	ByeTo netip.Addr
	// Entered is when the table entered it.
	Entered time.Time
}

// Table is the dialogs that hold sessions, by the hash of their Call-ID.
// It is not safe for concurrent use.
type Table struct {
	timerB, expiry time.Duration
	dialogs        map[uint64]*Dialog
}

// New returns an empty table: timerB is 64 × T1, expiry the configured
// session expiry.
func New(timerB, expiry time.Duration) *Table {
	return &Table{timerB: timerB, expiry: expiry, dialogs: map[uint64]*Dialog{}}
}

// SetTimes changes Timer B and the expiry, as a reload may.
func (t *Table) SetTimes(timerB, expiry time.Duration) { t.timerB, t.expiry = timerB, expiry }

// Len is how many dialogs the table holds.
func (t *Table) Len() int { return len(t.dialogs) }

// Known reports whether the table holds callid.
func (t *Table) Known(callid uint64) bool { return t.dialogs[callid] != nil }

// Learn enters, at now, a dialog the fast path took sessions for at
// taken, unless the table holds it already.
func (t *Table) Learn(callid uint64, taken, now time.Time, limits []uint32, outbound bool) {
	if t.dialogs[callid] != nil {
		return
	}
	t.dialogs[callid] = &Dialog{Limits: limits, Taken: taken, Last: taken, Outbound: outbound, Entered: now}
}

// Entered is when the table entered callid; zero for one it does not
// hold.
func (t *Table) Entered(callid uint64) time.Time {
	if d := t.dialogs[callid]; d != nil {
		return d.Entered
	}
	return time.Time{}
}

// Adopt enters a dialog whose sessions were taken before the table's
// owner could see its messages (a daemon started again): what became of
// it is not known, so it is held as answered, from now. A BYE still ends
// it; one that ended unseen holds its sessions until the expiry.
func (t *Table) Adopt(callid uint64, taken, now time.Time, limits []uint32, outbound bool) {
	if t.dialogs[callid] != nil {
		return
	}
	t.dialogs[callid] = &Dialog{Limits: limits, Taken: taken, State: Confirmed, Last: now, Outbound: outbound, Entered: now}
}

// Seen applies a message of dialog callid seen at now, and returns the
// dialog when the message ends it: the caller gives its sessions back.
// A message of a dialog the table does not hold changes nothing.
func (t *Table) Seen(callid uint64, m Message, now time.Time) (Dialog, bool) {
	d := t.dialogs[callid]
	if d == nil {
		return Dialog{}, false
	}
	if now.After(d.Last) {
		d.Last = now
	}
	bye := strings.EqualFold(m.Method, "BYE") || strings.EqualFold(m.CSeqMethod, "BYE")
	switch {
	case m.Request && bye:
		// A BYE ends nothing by itself: anyone can send one, with tags
		// the server does not know. The server's own is remembered, so
		// that the 2xx from where it went ends the dialog.
		if m.FromServer {
			d.ByeTo = m.Peer
		}
	case bye:
		// A 2xx to a BYE ends the dialog: one the server sent (it took a
		// BYE for this dialog), or one from where the server sent its
		// own BYE.
		if m.Code >= 200 && m.Code < 300 && (m.FromServer || (d.ByeTo.IsValid() && m.Peer == d.ByeTo)) {
			return t.end(callid, d)
		}
	case m.Request:
		// A re-INVITE, UPDATE, INFO, a session refresh: the dialog is
		// alive. A request of a dialog not yet answered is one of its
		// early dialog's (PRACK, UPDATE).
	case !strings.EqualFold(m.CSeqMethod, "INVITE") || m.FromServer == d.Outbound:
		// Any other answer says it is alive. So does one to the INVITE
		// from the other side: of an account's part, from further on,
		// which the server may hunt past; of a connection's, the
		// server's own to its caller, which the agent's answer came
		// before.
	case (m.Code == 401 || m.Code == 407) && d.State != Confirmed:
		// A challenge: the caller sends the INVITE again, with the
		// Call-ID and sessions of the first, and Timer B starts again.
		d.State = Trying
	case m.Code < 200:
		if d.State == Trying {
			d.State = Early
		}
	case m.Code < 300:
		d.State = Confirmed
	case d.State != Confirmed:
		return t.end(callid, d) // its INVITE failed: no dialog
	}
	return Dialog{}, false
}

func (t *Table) end(callid uint64, d *Dialog) (Dialog, bool) {
	delete(t.dialogs, callid)
	return *d, true
}

// Deadline is when a dialog ends if nothing more of it is seen.
func (t *Table) Deadline(d Dialog) time.Time {
	switch d.State {
	case Trying:
		return d.Last.Add(t.timerB)
	case Early:
		return d.Last.Add(TimerC)
	}
	return d.Last.Add(t.expiry)
}

// Expired ends every dialog whose deadline is at or before now, and
// returns them by Call-ID hash, in the order of their hashes.
func (t *Table) Expired(now time.Time) map[uint64]Dialog {
	out := map[uint64]Dialog{}
	for id, d := range t.dialogs {
		if !t.Deadline(*d).After(now) {
			out[id], _ = t.end(id, d)
		}
	}
	return out
}

// Forget removes callid without ending it: the fast path no longer holds
// it (another table's owner gave it back).
func (t *Table) Forget(callid uint64) { delete(t.dialogs, callid) }

// IDs returns the Call-ID hashes the table holds, in order.
func (t *Table) IDs() []uint64 {
	ids := make([]uint64, 0, len(t.dialogs))
	for id := range t.dialogs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}
