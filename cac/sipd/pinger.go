package sipd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// UserAgent names this daemon in User-Agent, Server and the Contact user.
const UserAgent = "xdpcac"

// DefaultT1 is RFC 3261's round-trip estimate T1; Timer F is 64*T1.
const DefaultT1 = 500 * time.Millisecond

// ErrTimeout is Ping's error when no final response came before Timer F.
var ErrTimeout = errors.New("no final response (Timer F)")

// ErrClosed is Ping's error on a closed Pinger.
var ErrClosed = errors.New("pinger closed")

// Result is the outcome of one OPTIONS transaction.
type Result struct {
	Code        int           // final status code
	Reason      string        // its reason phrase
	RetryAfter  time.Duration // Retry-After of the final response, 0 if none
	Provisional []int         // 1xx codes received before it, in order
}

// Option configures a Pinger.
type Option func(*Pinger)

// WithT1 sets T1 for this Pinger: a Ping gives up after 64*T1 (Timer F).
// Retransmissions (Timer E) follow sipgo's process-wide timers, which the
// Pinger never changes; sipgo's own Timer F (64*sip.T1, 32 s) still bounds
// a transaction, so a T1 above sip.T1 does not lengthen it.
func WithT1(t1 time.Duration) Option { return func(p *Pinger) { p.t1 = t1 } }

// WithFromHost sets the host of the From URI (default: contactHost).
func WithFromHost(host string) Option { return func(p *Pinger) { p.fromHost = host } }

// WithProvisional has fn called with every 1xx a Ping receives. It may be
// called from several Pings at once.
func WithProvisional(fn func(dest netip.AddrPort, code int)) Option {
	return func(p *Pinger) { p.onProvisional = fn }
}

// WithLogger gives sipgo's transport and transaction layers a logger
// (default: sipgo's, slog.Default).
func WithLogger(l *slog.Logger) Option { return func(p *Pinger) { p.log = l } }

// Pinger sends OPTIONS from one local address (a realm's), over UDP.
type Pinger struct {
	t1            time.Duration
	fromHost      string
	contactHost   string
	onProvisional func(netip.AddrPort, int)
	log           *slog.Logger
	// timerF arms Timer F for one Ping: a channel that receives when it
	// fires, and a stop. A test puts one here that it fires itself.
	timerF func(time.Duration) (<-chan time.Time, func() bool)

	local  netip.AddrPort // as bound
	conn   net.PacketConn
	ua     *sipgo.UserAgent
	client *sipgo.Client
	served chan struct{} // closed when sipgo stops reading conn

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// NewPinger binds UDP on local (port 0 = any free port: the realm's SIP port
// usually belongs to the SIP server on the box) and uses contactHost (a
// hostname or IP; "" = local's IP) in the Contact header and, unless
// WithFromHost says otherwise, in From.
func NewPinger(local netip.AddrPort, contactHost string, opts ...Option) (*Pinger, error) {
	if !local.Addr().IsValid() {
		return nil, fmt.Errorf("sipd: pinger: invalid local address %v", local)
	}
	if contactHost == "" {
		contactHost = local.Addr().String()
	}
	p := &Pinger{t1: DefaultT1, contactHost: contactHost, timerF: newTimer, served: make(chan struct{})}
	for _, o := range opts {
		o(p)
	}
	if p.t1 <= 0 {
		return nil, fmt.Errorf("sipd: pinger: T1 %v is not positive", p.t1)
	}
	if p.fromHost == "" {
		p.fromHost = contactHost
	}

	conn, err := net.ListenPacket("udp", local.String())
	if err != nil {
		return nil, fmt.Errorf("sipd: pinger: bind %v: %w", local, err)
	}
	bound, err := netip.ParseAddrPort(conn.LocalAddr().String())
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("sipd: pinger: local address %v: %w", conn.LocalAddr(), err)
	}
	p.conn, p.local = conn, bound

	if err := p.startUA(); err != nil {
		conn.Close()
		return nil, err
	}
	return p, nil
}

func (p *Pinger) startUA() error {
	txOpts := []sip.TransactionLayerOption{
		// Retransmitted final responses after a Ping returned: drop them.
		sip.WithTransactionLayerUnhandledResponseHandler(func(*sip.Response) {}),
	}
	var tpOpts []sip.TransportLayerOption
	var clOpts []sipgo.ClientOption
	if p.log != nil {
		txOpts = append(txOpts, sip.WithTransactionLayerLogger(p.log))
		tpOpts = append(tpOpts, sip.WithTransportLayerLogger(p.log))
		clOpts = append(clOpts, sipgo.WithClientLogger(p.log))
	}
	ua, err := sipgo.NewUA(
		sipgo.WithUserAgent(UserAgent),
		sipgo.WithUserAgentHostname(p.fromHost),
		sipgo.WithUserAgentTransactionLayerOptions(txOpts...),
		sipgo.WithUserAgentTransportLayerOptions(tpOpts...),
	)
	if err != nil {
		return fmt.Errorf("sipd: pinger: user agent: %w", err)
	}
	viaHost := p.contactHost
	if !p.local.Addr().IsUnspecified() {
		viaHost = p.local.Addr().String()
	}
	clOpts = append(clOpts,
		sipgo.WithClientHostname(viaHost),
		sipgo.WithClientPort(int(p.local.Port())),
		// Requests leave through the listener bound above, never a new socket.
		sipgo.WithClientConnectionAddr(p.conn.LocalAddr().String()),
	)
	client, err := sipgo.NewClient(ua, clOpts...)
	if err != nil {
		ua.Close()
		return fmt.Errorf("sipd: pinger: client: %w", err)
	}
	ua.TransactionLayer().OnRequest(answerRequest)

	tp := ua.TransportLayer()
	go func() {
		defer close(p.served)
		_ = tp.ServeUDP(p.conn) // returns when conn is closed
	}()
	// ServeUDP puts the listener in the UDP pool before it reads; wait for it
	// so the first Ping does not try to bind the same address again.
	deadline := time.Now().Add(2 * time.Second)
	for tp.Pool("udp").Size() == 0 {
		select {
		case <-p.served:
			ua.Close()
			return fmt.Errorf("sipd: pinger: serving %v stopped", p.local)
		default:
		}
		if time.Now().After(deadline) {
			ua.Close()
			return fmt.Errorf("sipd: pinger: serving %v did not start", p.local)
		}
		time.Sleep(time.Millisecond)
	}
	p.ua, p.client = ua, client
	return nil
}

// answerRequest answers requests a peer sends to the pinger's socket:
// 200 to OPTIONS, 405 to anything else, nothing to ACK.
func answerRequest(req *sip.Request, tx *sip.ServerTx) {
	if req.IsAck() {
		return
	}
	res := sip.NewResponseFromRequest(req, sip.StatusOK, "OK", nil)
	if req.Method != sip.OPTIONS {
		res = sip.NewResponseFromRequest(req, sip.StatusMethodNotAllowed, "Method Not Allowed", nil)
	}
	res.AppendHeader(sip.NewHeader("Allow", "OPTIONS"))
	res.AppendHeader(sip.NewHeader("Server", UserAgent))
	_ = tx.Respond(res) // the peer retransmits if this is lost
}

// LocalAddr is the address the Pinger sends from, with the port it bound.
func (p *Pinger) LocalAddr() netip.AddrPort { return p.local }

// Close ends pending Pings and releases the socket.
func (p *Pinger) Close() error {
	p.closeOnce.Do(func() {
		p.closed.Store(true)
		uaErr := p.ua.Close()
		connErr := p.conn.Close()
		<-p.served
		if uaErr != nil || connErr != nil {
			p.closeErr = fmt.Errorf("sipd: pinger %v: close: %w", p.local, errors.Join(uaErr, connErr))
		}
	})
	return p.closeErr
}

// Ping sends one OPTIONS to dest (sip:dest in the Request-URI unless uriHost
// is set, then sip:uriHost) and waits for the final response, 64*T1 or ctx.
// It returns the final status code and its Retry-After, ErrTimeout (wrapped)
// when Timer F fires, or ctx's error. Several Pings may run at once.
func (p *Pinger) Ping(ctx context.Context, dest netip.AddrPort, uriHost string) (Result, error) {
	if p.closed.Load() {
		return Result{}, fmt.Errorf("sipd: ping %v: %w", dest, ErrClosed)
	}
	if !dest.Addr().IsValid() || dest.Port() == 0 {
		return Result{}, fmt.Errorf("sipd: ping: invalid destination %v", dest)
	}
	req := p.newOptions(dest, uriHost)
	timerF := 64 * p.t1
	fired, stop := p.timerF(timerF)
	defer stop()

	// ClientRequestBuild adds Via (with branch), Call-ID, Content-Length and
	// the local address; From, To, CSeq and Max-Forwards are already set.
	tx, err := p.client.TransactionRequest(ctx, req, sipgo.ClientRequestBuild)
	if err != nil {
		return Result{}, fmt.Errorf("sipd: ping %v: send OPTIONS: %w", dest, err)
	}
	defer tx.Terminate()

	var r Result
	for {
		select {
		case res := <-tx.Responses():
			if res.IsProvisional() {
				r.Provisional = append(r.Provisional, res.StatusCode)
				if p.onProvisional != nil {
					p.onProvisional(dest, res.StatusCode)
				}
				continue
			}
			r.Code, r.Reason = res.StatusCode, res.Reason
			r.RetryAfter = retryAfter(res)
			return r, nil
		case <-tx.Done():
			err := tx.Err()
			switch {
			case errors.Is(err, sip.ErrTransactionTimeout):
				return r, fmt.Errorf("sipd: ping %v: %w", dest, ErrTimeout)
			case p.closed.Load():
				return r, fmt.Errorf("sipd: ping %v: %w", dest, ErrClosed)
			default:
				return r, fmt.Errorf("sipd: ping %v: transaction ended: %w", dest, err)
			}
		case <-fired:
			return r, fmt.Errorf("sipd: ping %v: %w after %v", dest, ErrTimeout, timerF)
		case <-ctx.Done():
			return r, fmt.Errorf("sipd: ping %v: %w", dest, ctx.Err())
		}
	}
}

func newTimer(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}

func (p *Pinger) newOptions(dest netip.AddrPort, uriHost string) *sip.Request {
	ruri := sip.Uri{Scheme: "sip", Host: dest.Addr().String(), Port: int(dest.Port())}
	if uriHost != "" {
		ruri = sip.Uri{Scheme: "sip", Host: uriHost}
		if h, port, err := net.SplitHostPort(uriHost); err == nil {
			if n, err := strconv.ParseUint(port, 10, 16); err == nil {
				ruri.Host, ruri.Port = h, int(n)
			}
		}
	}
	req := sip.NewRequest(sip.OPTIONS, ruri)
	req.SetDestination(dest.String()) // the Request-URI may name a host
	req.SetTransport("UDP")

	from := &sip.FromHeader{
		DisplayName: UserAgent,
		Address:     sip.Uri{Scheme: "sip", User: UserAgent, Host: p.fromHost},
		Params:      sip.NewParams(),
	}
	from.Params.Add("tag", sip.GenerateTagN(16))
	to := &sip.ToHeader{Address: sip.Uri{Scheme: "sip", Host: ruri.Host, Port: ruri.Port}}
	maxFwd := sip.MaxForwardsHeader(70)
	contact := &sip.ContactHeader{
		Address: sip.Uri{Scheme: "sip", User: UserAgent, Host: p.contactHost, Port: int(p.local.Port())},
	}
	req.AppendHeader(from)
	req.AppendHeader(to)
	req.AppendHeader(&sip.CSeqHeader{SeqNo: 1, MethodName: sip.OPTIONS})
	req.AppendHeader(&maxFwd)
	req.AppendHeader(contact)
	req.AppendHeader(sip.NewHeader("User-Agent", UserAgent))
	req.AppendHeader(sip.NewHeader("Accept", "application/sdp"))
	return req
}

// retryAfter reads delta-seconds from Retry-After ("30", "30 (x);duration=60").
func retryAfter(res *sip.Response) time.Duration {
	h := res.GetHeader("Retry-After")
	if h == nil {
		return 0
	}
	v := h.Value()
	n := 0
	for n < len(v) && v[n] == ' ' {
		n++
	}
	v = v[n:]
	n = 0
	for n < len(v) && v[n] >= '0' && v[n] <= '9' {
		n++
	}
	secs, err := strconv.ParseUint(v[:n], 10, 32)
	if err != nil {
		return 0
	}
	return time.Duration(secs) * time.Second
}
