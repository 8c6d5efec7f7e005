package sessions

import (
	"net/netip"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func req(method string) Message { return Message{Request: true, Method: method} }
func res(code int, method string) Message {
	return Message{Code: code, CSeqMethod: method, FromServer: true}
}

// further is an answer from beyond the server, which a proxy relays
// or hunts past.
func further(code int) Message { return Message{Code: code, CSeqMethod: "INVITE"} }

var caller, vendor = netip.MustParseAddr("192.0.2.4"), netip.MustParseAddr("192.0.2.2")

// serverBye is the server's BYE toward to; byeOK a 2xx to a BYE, the
// server's or one from from.
func serverBye(to netip.Addr) Message {
	return Message{Request: true, Method: "BYE", FromServer: true, Peer: to}
}
func byeOK(fromServer bool, from netip.Addr) Message {
	return Message{Code: 200, CSeqMethod: "BYE", FromServer: fromServer, Peer: from}
}

// TestDialogEnds: what ends a dialog, and what leaves it up.
func TestDialogEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs []Message
		ends int // index of the message that ends it, -1 none
	}{
		{"the caller hangs up: the server's 200 to its BYE", []Message{res(100, "INVITE"), res(200, "INVITE"), req("ACK"), req("BYE"), byeOK(true, caller)}, 4},
		{"a BYE in lower case, as the filter classifies it", []Message{res(200, "INVITE"), req("bye"), {Code: 200, CSeqMethod: "bye", FromServer: true}}, 2},
		{"a BYE the server does not know ends nothing", []Message{res(200, "INVITE"), req("BYE"), {Code: 481, CSeqMethod: "BYE", FromServer: true}}, -1},
		{"the server hangs up: the 200 from where its BYE went", []Message{res(200, "INVITE"), serverBye(caller), byeOK(false, caller)}, 2},
		{"a 200 to a BYE from elsewhere ends nothing", []Message{res(200, "INVITE"), serverBye(vendor), byeOK(false, caller)}, -1},
		{"nor one with no BYE of the server's before it", []Message{res(200, "INVITE"), byeOK(false, caller)}, -1},
		{"busy", []Message{res(100, "INVITE"), res(486, "INVITE")}, 1},
		{"cancelled while ringing", []Message{res(180, "INVITE"), res(487, "INVITE")}, 1},
		{"a challenge, then the INVITE again", []Message{res(407, "INVITE"), res(100, "INVITE"), res(200, "INVITE"), req("BYE"), byeOK(true, caller)}, 4},
		{"a re-INVITE refused leaves the call up", []Message{res(200, "INVITE"), req("INVITE"), res(491, "INVITE"), res(401, "INVITE"), req("UPDATE")}, -1},
		{"an answer of another request", []Message{res(183, "INVITE"), res(200, "PRACK"), res(481, "UPDATE")}, -1},
		{"a proxy hunts past a vendor's 503", []Message{further(100), further(503), further(200), res(200, "INVITE"), req("ACK")}, -1},
		{"a proxy gives up", []Message{further(503), res(503, "INVITE")}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := New(32*time.Second, time.Hour)
			tb.Learn(7, t0, t0, []uint32{1, 4097}, false)
			ended := -1
			for i, m := range tc.msgs {
				if d, ok := tb.Seen(7, m, t0.Add(time.Duration(i)*time.Second)); ok {
					if ended >= 0 {
						t.Fatalf("ended twice: at %d and %d", ended, i)
					}
					ended = i
					if len(d.Limits) != 2 || d.Limits[1] != 4097 {
						t.Errorf("ended dialog holds %v, want its limits", d.Limits)
					}
				}
			}
			if ended != tc.ends {
				t.Errorf("ended at message %d, want %d", ended, tc.ends)
			}
			if tb.Known(7) != (tc.ends < 0) {
				t.Errorf("still known: %v", tb.Known(7))
			}
		})
	}
}

// TestExpiry: Timer B with no answer, Timer C after a provisional one,
// the session expiry after the last message of an answered dialog; a
// message of the dialog puts its deadline off.
func TestExpiry(t *testing.T) {
	tb := New(32*time.Second, time.Hour)
	tb.Learn(1, t0, t0, nil, false) // never answered
	tb.Learn(2, t0, t0, nil, false) // ringing
	tb.Seen(2, res(180, "INVITE"), t0.Add(10*time.Second))
	tb.Learn(3, t0, t0, nil, false) // up, refreshed
	tb.Seen(3, res(200, "INVITE"), t0.Add(time.Second))
	tb.Seen(3, req("UPDATE"), t0.Add(30*time.Minute))
	tb.Learn(4, t0, t0, nil, false) // up, BYE lost
	tb.Seen(4, res(200, "INVITE"), t0.Add(time.Second))

	for _, step := range []struct {
		at   time.Duration
		want []uint64
	}{
		{31 * time.Second, nil},
		{32 * time.Second, []uint64{1}},
		{10*time.Second + TimerC - time.Millisecond, nil},
		{10*time.Second + TimerC, []uint64{2}},
		{time.Hour, nil},
		{time.Hour + time.Second, []uint64{4}},
		{90 * time.Minute, []uint64{3}},
	} {
		got := tb.Expired(t0.Add(step.at))
		if len(got) != len(step.want) {
			t.Fatalf("at %v: expired %v, want %v", step.at, got, step.want)
		}
		for _, id := range step.want {
			if _, ok := got[id]; !ok {
				t.Errorf("at %v: %d not expired", step.at, id)
			}
		}
	}
	if tb.Len() != 0 {
		t.Errorf("%d dialogs left", tb.Len())
	}
}

// TestUnknownDialog: a message of a dialog the table does not hold, and
// a second Learn of one it does, change nothing.
func TestUnknownDialog(t *testing.T) {
	tb := New(32*time.Second, time.Hour)
	if _, ok := tb.Seen(9, byeOK(true, caller), t0); ok {
		t.Error("a 200 to a BYE of an unknown dialog ended something")
	}
	tb.Learn(9, t0, t0, []uint32{1}, false)
	tb.Seen(9, res(200, "INVITE"), t0)
	tb.Learn(9, t0.Add(time.Hour), t0.Add(time.Hour), []uint32{2}, false)
	if d, ok := tb.Seen(9, byeOK(true, caller), t0); !ok || d.State != Confirmed || d.Limits[0] != 1 {
		t.Errorf("ended %v %+v: want the first Learn's confirmed dialog", ok, d)
	}
}

// TestAdopt: a dialog adopted from before its keeper started is held as
// answered from the adoption: the session expiry ends it, a BYE too.
func TestAdopt(t *testing.T) {
	tb := New(32*time.Second, time.Hour)
	tb.Adopt(1, t0, t0.Add(time.Minute), nil, false)
	tb.Adopt(2, t0, t0.Add(time.Minute), nil, false)
	if got := tb.Expired(t0.Add(time.Hour)); len(got) != 0 {
		t.Fatalf("expired %v within the hour from the adoption", got)
	}
	if _, ok := tb.Seen(2, byeOK(true, caller), t0.Add(time.Hour)); !ok {
		t.Error("the 200 to a BYE did not end an adopted dialog")
	}
	if got := tb.Expired(t0.Add(time.Hour + time.Minute)); len(got) != 1 {
		t.Errorf("expired %v an hour after the adoption, want dialog 1", got)
	}
}

// TestConnectionPart: the part of a dialog toward a session agent ends by
// the agent's answer, which comes from further on, not by the server's.
func TestConnectionPart(t *testing.T) {
	tb := New(32*time.Second, time.Hour)
	tb.Learn(5, t0, t0, []uint32{5120}, true)
	if _, ok := tb.Seen(5, res(503, "INVITE"), t0); ok {
		t.Error("the server's answer to its caller ended the connection's part")
	}
	if _, ok := tb.Seen(5, further(486), t0); !ok {
		t.Error("the agent's 486 did not end the connection's part")
	}
	tb.Learn(6, t0, t0, []uint32{5120}, true)
	tb.Seen(6, further(200), t0)
	tb.Seen(6, serverBye(vendor), t0)
	if d, ok := tb.Seen(6, byeOK(false, vendor), t0); !ok || d.State != Confirmed {
		t.Errorf("the agent's 200 to the server's BYE after its 200: ended %v in state %v", ok, d.State)
	}
}
