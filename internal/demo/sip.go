package demo

import (
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
	"github.com/xdpcac/xdpcac/loader"
)

// The demo's SIP ends speak real SIP over UDP with sipgo, the library the
// daemon's session agents use: its transactions retransmit as a PBX would,
// and its dialogs build the ACK and BYE a filter must recognise as
// in-dialog, which a hand-made responder would only approximate. The
// sockets are bound inside the namespaces and handed to sipgo, which then
// never opens one of its own (as cac/sipd's Pinger does).

// sipEnd is one sipgo user agent serving one UDP socket.
type sipEnd struct {
	ua     *sipgo.UserAgent
	client *sipgo.Client
	conn   net.PacketConn
	served chan struct{}
}

// newSIPEnd binds addr in namespace ns and serves it; setup gives the user
// agent what handles the requests that come in, with the client that
// sends through the same socket.
func newSIPEnd(ns, addr, user string, setup func(*sipgo.UserAgent, *sipgo.Client) error) (*sipEnd, error) {
	var conn net.PacketConn
	err := loader.InNetns(ns, func() error {
		var err error
		conn, err = net.ListenPacket("udp", addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("SIP socket %s in %s: %w", addr, ns, err)
	}
	quiet := slog.New(slog.DiscardHandler) // the counts say what went wrong
	ua, err := sipgo.NewUA(sipgo.WithUserAgent(user), sipgo.WithUserAgentHostname(strings.Split(addr, ":")[0]),
		sipgo.WithUserAgentTransactionLayerOptions(sip.WithTransactionLayerLogger(quiet),
			sip.WithTransactionLayerUnhandledResponseHandler(func(*sip.Response) {})),
		sipgo.WithUserAgentTransportLayerOptions(sip.WithTransportLayerLogger(quiet)))
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("SIP user agent %s: %w", user, err)
	}
	host, port, _ := sip.ParseAddr(addr)
	client, err := sipgo.NewClient(ua, sipgo.WithClientLogger(quiet), sipgo.WithClientHostname(host),
		sipgo.WithClientPort(port), sipgo.WithClientConnectionAddr(addr))
	if err != nil {
		ua.Close()
		conn.Close()
		return nil, fmt.Errorf("SIP client %s: %w", user, err)
	}
	if err := setup(ua, client); err != nil {
		ua.Close()
		conn.Close()
		return nil, err
	}
	e := &sipEnd{ua: ua, client: client, conn: conn, served: make(chan struct{})}
	tp := ua.TransportLayer()
	go func() {
		defer close(e.served)
		tp.ServeUDP(conn) // until conn is closed
	}()
	// ServeUDP puts the socket in its pool before it reads: a request sent
	// before would make sipgo bind the address again.
	for deadline := time.Now().Add(2 * time.Second); tp.Pool("udp").Size() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			e.close()
			return nil, fmt.Errorf("SIP %s: serving %s did not start", user, addr)
		}
	}
	return e, nil
}

func (e *sipEnd) close() {
	e.ua.Close()
	e.conn.Close()
	<-e.served
}

// uas is the BRAS side's SIP server: it answers every INVITE with 100
// and 200, and the BYE with 200.
type uas struct {
	*sipEnd
	invites atomic.Uint64
}

func startUAS(ns, addr string) (*uas, error) {
	u := &uas{}
	end, err := newSIPEnd(ns, addr, "xdpcac-demo-uas", func(ua *sipgo.UserAgent, client *sipgo.Client) error {
		// The server handles the requests of the user agent's transaction
		// layer from here on.
		srv, err := sipgo.NewServer(ua, sipgo.WithServerLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			return fmt.Errorf("SIP server: %w", err)
		}
		host, port, _ := sip.ParseAddr(addr)
		dialogs := sipgo.NewDialogServerCache(client, sip.ContactHeader{Address: sip.Uri{User: "uas", Host: host, Port: port}})
		srv.OnInvite(func(req *sip.Request, tx sip.ServerTransaction) {
			u.invites.Add(1)
			d, err := dialogs.ReadInvite(req, tx)
			if err != nil {
				tx.Respond(sip.NewResponseFromRequest(req, sip.StatusBadRequest, err.Error(), nil))
				return
			}
			// The dialog stays for its BYE, which closes it.
			if d.Respond(sip.StatusTrying, "Trying", nil) != nil || d.Respond(sip.StatusOK, "OK", nil) != nil {
				d.Close() // no ACK came: no BYE will
			}
		})
		srv.OnAck(func(req *sip.Request, tx sip.ServerTransaction) { dialogs.ReadAck(req, tx) })
		srv.OnBye(func(req *sip.Request, tx sip.ServerTransaction) {
			if dialogs.ReadBye(req, tx) != nil {
				tx.Respond(sip.NewResponseFromRequest(req, sip.StatusCallTransactionDoesNotExists, "Call/Transaction Does Not Exist", nil))
			}
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	u.sipEnd = end
	return u, nil
}
