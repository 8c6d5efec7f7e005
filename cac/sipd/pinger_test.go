package sipd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/emiago/sipgo/sip"
)

// uas is a UDP SIP server on loopback answered by hand with sipgo's parser
// and response builder. What it answers depends on the Request-URI host.
type uas struct {
	conn net.PacketConn
	addr netip.AddrPort

	mu      sync.Mutex
	first   map[string]*sip.Request // by Call-ID, first transmission
	count   map[string]int          // transmissions by Call-ID
	arrived chan struct{}           // closed and replaced on each request

	// proceed lets the 200 to trying.test go after its 100: sipgo hands
	// each response to its transaction on a goroutine of its own, so a
	// final sent at once may overtake the 1xx.
	proceed chan struct{}
	stop    chan struct{} // closed at cleanup
}

// waitLimit bounds a wait for an event that should come in milliseconds,
// so that a broken test fails rather than hangs; nothing is timed by it.
const waitLimit = time.Minute

func newUAS(t *testing.T) *uas {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &uas{
		conn:    conn,
		addr:    netip.MustParseAddrPort(conn.LocalAddr().String()),
		first:   map[string]*sip.Request{},
		count:   map[string]int{},
		arrived: make(chan struct{}),
		proceed: make(chan struct{}, 1),
		stop:    make(chan struct{}),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		u.serve(t)
	}()
	t.Cleanup(func() {
		close(u.stop)
		conn.Close()
		<-done
	})
	return u
}

func (u *uas) serve(t *testing.T) {
	buf := make([]byte, 65535)
	for {
		n, src, err := u.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		msg, err := sip.ParseMessage(slices.Clone(buf[:n]))
		if err != nil {
			t.Errorf("uas: parse: %v", err)
			continue
		}
		req, ok := msg.(*sip.Request)
		if !ok {
			t.Errorf("uas: got %T", msg)
			continue
		}
		req.SetSource(src.String())
		callID := req.CallID().Value()
		u.mu.Lock()
		if u.count[callID] == 0 {
			u.first[callID] = req
		}
		u.count[callID]++
		close(u.arrived)
		u.arrived = make(chan struct{})
		u.mu.Unlock()

		var out []*sip.Response
		switch req.Recipient.Host {
		case "busy.test":
			res := sip.NewResponseFromRequest(req, 503, "Service Unavailable", nil)
			res.AppendHeader(sip.NewHeader("Retry-After", "30"))
			out = append(out, res)
		case "nf.test":
			out = append(out, sip.NewResponseFromRequest(req, 404, "Not Found", nil))
		case "silent.test", "pending.test":
		case "ringing.test": // a final answer never follows
			out = append(out, sip.NewResponseFromRequest(req, 180, "Ringing", nil))
		case "trying.test":
			u.send(t, sip.NewResponseFromRequest(req, 100, "Trying", nil), src)
			select {
			case <-u.proceed: // the Ping has the 100
			case <-u.stop:
				return
			}
			out = append(out, sip.NewResponseFromRequest(req, 200, "OK", nil))
		default:
			out = append(out, sip.NewResponseFromRequest(req, 200, "OK", nil))
		}
		for _, res := range out {
			u.send(t, res, src)
		}
	}
}

func (u *uas) send(t *testing.T, res *sip.Response, to net.Addr) {
	if _, err := u.conn.WriteTo([]byte(res.String()), to); err != nil {
		t.Errorf("uas: write: %v", err)
	}
}

// waitReceived waits until the request to host has been sent n times.
func (u *uas) waitReceived(t *testing.T, host string, n int) {
	t.Helper()
	limit := time.After(waitLimit)
	for {
		u.mu.Lock()
		arrived := u.arrived
		u.mu.Unlock()
		if _, got := u.received(host); got >= n {
			return
		}
		select {
		case <-arrived:
		case <-limit:
			_, got := u.received(host)
			t.Fatalf("uas: %d requests to %s, waited for %d", got, host, n)
		}
	}
}

// received returns the first transmission of the request whose
// Request-URI host is host, and how many times it was sent.
func (u *uas) received(host string) (*sip.Request, int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for id, r := range u.first {
		if r.Recipient.Host == host {
			return r, u.count[id]
		}
	}
	return nil, 0
}

func newTestPinger(t *testing.T, opts ...Option) *Pinger {
	t.Helper()
	opts = append([]Option{WithT1(50 * time.Millisecond)}, opts...)
	p, err := NewPinger(netip.MustParseAddrPort("127.0.0.1:0"), "sbc.realm.test", opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

func TestPingerAnswers(t *testing.T) {
	u := newUAS(t)
	var mu sync.Mutex
	var seen []int
	p := newTestPinger(t, WithProvisional(func(dest netip.AddrPort, code int) {
		if dest != u.addr {
			t.Errorf("provisional from %v, want %v", dest, u.addr)
		}
		mu.Lock()
		seen = append(seen, code)
		mu.Unlock()
		select {
		case u.proceed <- struct{}{}:
		default:
		}
	}))
	ctx := t.Context()

	r, err := p.Ping(ctx, u.addr, "")
	if err != nil || r.Code != 200 || r.Reason != "OK" || r.RetryAfter != 0 || len(r.Provisional) != 0 {
		t.Fatalf("ping ok: %+v, %v", r, err)
	}
	r, err = p.Ping(ctx, u.addr, "busy.test")
	if err != nil || r.Code != 503 || r.RetryAfter != 30*time.Second {
		t.Fatalf("ping busy: %+v, %v", r, err)
	}
	r, err = p.Ping(ctx, u.addr, "nf.test")
	if err != nil || r.Code != 404 || r.RetryAfter != 0 {
		t.Fatalf("ping not found: %+v, %v", r, err)
	}

	r, err = p.Ping(ctx, u.addr, "trying.test")
	if err != nil || r.Code != 200 || !slices.Equal(r.Provisional, []int{100}) {
		t.Fatalf("ping trying: %+v, %v", r, err)
	}
	mu.Lock()
	if !slices.Equal(seen, []int{100}) {
		t.Errorf("provisional callback saw %v, want [100]", seen)
	}
	mu.Unlock()
}

// manualTimerF is a Timer F the test fires: armed gives the duration a
// Ping asked for, fire ends the wait.
type manualTimerF struct {
	armed chan time.Duration
	fire  chan time.Time
}

func withManualTimerF() (*manualTimerF, Option) {
	m := &manualTimerF{armed: make(chan time.Duration, 1), fire: make(chan time.Time)}
	return m, func(p *Pinger) {
		p.timerF = func(d time.Duration) (<-chan time.Time, func() bool) {
			m.armed <- d
			return m.fire, func() bool { return true }
		}
	}
}

// TestPingerTimerF: a peer that never answers gets the OPTIONS again
// (Timer E), and the Ping ends with ErrTimeout when its Timer F of 64*T1
// fires, not sipgo's of 32 s.
func TestPingerTimerF(t *testing.T) {
	u := newUAS(t)
	timer, opt := withManualTimerF()
	p := newTestPinger(t, opt)
	type outcome struct {
		r   Result
		err error
	}
	res := make(chan outcome, 1)
	go func() {
		r, err := p.Ping(t.Context(), u.addr, "silent.test")
		res <- outcome{r, err}
	}()
	if d := <-timer.armed; d != 64*50*time.Millisecond {
		t.Errorf("Timer F armed for %v, want 64*T1 = 3.2s", d)
	}
	u.waitReceived(t, "silent.test", 2) // a retransmission
	select {
	case o := <-res:
		t.Fatalf("ping silent ended before its Timer F: %+v, %v", o.r, o.err)
	default:
	}
	timer.fire <- time.Now()
	o := <-res
	if !errors.Is(o.err, ErrTimeout) || o.r.Code != 0 {
		t.Fatalf("ping silent: %+v, %v; want ErrTimeout", o.r, o.err)
	}
}

func TestPingerRequest(t *testing.T) {
	u := newUAS(t)
	p := newTestPinger(t)
	if _, err := p.Ping(t.Context(), u.addr, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Ping(t.Context(), u.addr, "peer.example.com"); err != nil {
		t.Fatal(err)
	}
	req, n := u.received("127.0.0.1")
	if req == nil || n != 1 {
		t.Fatalf("uas got %v (%d times)", req, n)
	}
	local := p.LocalAddr()
	if local.Addr() != netip.MustParseAddr("127.0.0.1") || local.Port() == 0 {
		t.Errorf("local address %v", local)
	}
	check := func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %q, want %q", what, got, want)
		}
	}
	check("method", string(req.Method), "OPTIONS")
	check("Request-URI", req.Recipient.String(), "sip:"+u.addr.String())
	if c := req.Contact(); c == nil {
		t.Error("no Contact")
	} else {
		check("Contact", c.Address.String(), fmt.Sprintf("sip:xdpcac@sbc.realm.test:%d", local.Port()))
	}
	if cs := req.CSeq(); cs == nil || cs.SeqNo != 1 || cs.MethodName != sip.OPTIONS {
		t.Errorf("CSeq %v", cs)
	}
	if mf := req.MaxForwards(); mf == nil || mf.Val() != 70 {
		t.Errorf("Max-Forwards %v", mf)
	}
	if f := req.From(); f == nil || !f.Params.Has("tag") || f.Address.Host != "sbc.realm.test" {
		t.Errorf("From %v", f)
	}
	if to := req.To(); to == nil || to.Params.Has("tag") {
		t.Errorf("To %v", to)
	}
	if ua := req.GetHeader("User-Agent"); ua == nil || ua.Value() != "xdpcac" {
		t.Errorf("User-Agent %v", ua)
	}
	if v := req.Via(); v == nil || v.Host != "127.0.0.1" || v.Port != int(local.Port()) || v.Transport != "UDP" {
		t.Errorf("Via %v", v)
	} else if b, _ := v.Params.Get("branch"); len(b) < 8 || b[:7] != sip.RFC3261BranchMagicCookie {
		t.Errorf("Via branch %q", b)
	}
	if src := req.Source(); src != local.String() {
		t.Errorf("sent from %s, want %s", src, local)
	}

	other, _ := u.received("peer.example.com")
	if other == nil {
		t.Fatal("no OPTIONS with uriHost")
	}
	check("Request-URI with uriHost", other.Recipient.String(), "sip:peer.example.com")
	if other.CallID().Value() == req.CallID().Value() {
		t.Error("two pings share a Call-ID")
	}
}

func TestPingerConcurrent(t *testing.T) {
	u := newUAS(t)
	p := newTestPinger(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			host := "ok.test"
			if i%2 == 1 {
				host = "nf.test"
			}
			r, err := p.Ping(t.Context(), u.addr, host)
			if err == nil && (host == "ok.test") != (r.Code == 200) {
				err = fmt.Errorf("%s: code %d", host, r.Code)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	u.mu.Lock()
	if len(u.first) != n {
		t.Errorf("%d distinct Call-IDs, want %d", len(u.first), n)
	}
	u.mu.Unlock()
}

// TestPingerProvisionalOnly: a peer that answers 180 and never a final
// response ends the Ping with ErrTimeout, and the 1xx is in the Result, so
// that the rules can still count it as an answer. The peer answers each
// retransmission again, so there may be several.
func TestPingerProvisionalOnly(t *testing.T) {
	u := newUAS(t)
	timer, opt := withManualTimerF()
	ringing := make(chan struct{}, 1)
	p := newTestPinger(t, opt, WithProvisional(func(netip.AddrPort, int) {
		select {
		case ringing <- struct{}{}:
		default:
		}
	}))
	go func() {
		<-timer.armed
		<-ringing
		timer.fire <- time.Now()
	}()
	r, err := p.Ping(t.Context(), u.addr, "ringing.test")
	only180 := len(r.Provisional) > 0 && !slices.ContainsFunc(r.Provisional, func(c int) bool { return c != 180 })
	if !errors.Is(err, ErrTimeout) || r.Code != 0 || !only180 {
		t.Fatalf("ping ringing: %+v, %v; want ErrTimeout with Provisional 180s", r, err)
	}
}

func TestPingerContextAndClose(t *testing.T) {
	u := newUAS(t)
	p := newTestPinger(t, WithT1(time.Second))
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := p.Ping(ctx, u.addr, "silent.test"); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrTimeout) {
		t.Errorf("ping with expired context: %v", err)
	}

	// Close ends a pending Ping: one whose OPTIONS the peer has.
	res := make(chan error, 1)
	go func() {
		_, err := p.Ping(t.Context(), u.addr, "pending.test")
		res <- err
	}()
	u.waitReceived(t, "pending.test", 1)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-res:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("pending ping ended by Close with %v, want ErrClosed", err)
		}
	case <-time.After(waitLimit): // its Timer F is 64 s
		t.Fatal("pending ping not ended by Close")
	}
	if _, err := p.Ping(t.Context(), u.addr, ""); !errors.Is(err, ErrClosed) {
		t.Errorf("ping after Close: %v", err)
	}
}
