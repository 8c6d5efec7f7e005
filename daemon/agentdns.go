package daemon

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/xdpcac/xdpcac/cac/sipd"
	"github.com/xdpcac/xdpcac/loader"
)

// agentResolver is the resolver of the session agents' hostnames. A
// daemon run with --netns NAME works for that namespace, whose DNS servers
// and routes may be nothing like the host's: it looks names up as a
// process started by `ip netns exec NAME` would, with the servers of
// /etc/netns/NAME/resolv.conf when there is one, and sends every query,
// to dns-server too, from a socket made inside the namespace. The file is
// chosen when the agents are started, at start and at each reload.
func agentResolver(server, ns string) *sipd.Resolver {
	r := &sipd.Resolver{Server: server, Timeout: 2 * time.Second}
	if ns == "" {
		return r
	}
	r.ResolvConf = sipd.NetnsResolvConf(ns)
	r.Dial = func(ctx context.Context, network, address string) (net.Conn, error) {
		var conn net.Conn
		// InNetns names the namespace when it cannot enter it; a dial
		// error says where the socket was.
		err := loader.InNetns(ns, func() error {
			var err error
			if conn, err = (&net.Dialer{}).DialContext(ctx, network, address); err != nil {
				return fmt.Errorf("from network namespace %s: %w", ns, err)
			}
			return nil
		})
		if err != nil && conn != nil {
			conn.Close() // made, but the thread did not get back out
			return nil, err
		}
		return conn, err
	}
	return r
}
