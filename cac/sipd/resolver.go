package sipd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// ErrNoAddress is Resolve's error when a name has no usable address.
var ErrNoAddress = errors.New("no address")

// ResolvConf is read for DNS servers when Resolver.Server and
// Resolver.ResolvConf are "".
const ResolvConf = "/etc/resolv.conf"

// netnsEtc is where `ip netns exec` finds the files it bind-mounts over
// /etc for a named namespace; a variable so that tests can move it.
var netnsEtc = "/etc/netns"

// NetnsResolvConf is the resolv.conf a process started by `ip netns exec
// name` reads: /etc/netns/NAME/resolv.conf when that file exists, since ip
// bind-mounts it over /etc/resolv.conf, else /etc/resolv.conf itself. An
// empty name is this process's own namespace.
func NetnsResolvConf(name string) string {
	if name == "" {
		return ResolvConf
	}
	p := filepath.Join(netnsEtc, name, "resolv.conf")
	if _, err := os.Stat(p); err != nil {
		return ResolvConf
	}
	return p
}

// Resolver turns a session agent's hostname into destinations: an IP is
// itself; an FQDN is resolved with SRV _sip._udp.NAME first (targets ordered
// by priority, then weight, each target's A then AAAA), then plain A and
// AAAA. With all=false only the first address is used (Oracle's
// ping-all-addresses off).
type Resolver struct {
	// Server is the "ip:port" of a DNS server; "" uses the servers of
	// ResolvConf, in its order.
	Server string
	// ResolvConf is the file naming the servers when Server is "", read
	// at each Resolve; "" is /etc/resolv.conf.
	ResolvConf string
	// Timeout bounds the dial and each exchange with a server; 0 is
	// miekg/dns's (2 s).
	Timeout time.Duration
	// Dial opens the connection of every query, UDP and TCP alike; nil is
	// a net.Dialer. A socket stays in the network namespace it was made
	// in, so a Dial that makes it inside another namespace sends every
	// query from there, through its interfaces and routes.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
}

// dnsTimeout is miekg/dns's own default, for the dial we do ourselves.
const dnsTimeout = 2 * time.Second

// Resolve returns the destinations of hostname, deduplicated, in a stable
// order. An SRV target's port replaces port. hostname is taken as fully
// qualified (no search list). A name with no address is ErrNoAddress.
func (r *Resolver) Resolve(ctx context.Context, hostname string, port uint16, all bool) ([]netip.AddrPort, error) {
	if ip, err := netip.ParseAddr(strings.Trim(hostname, "[]")); err == nil {
		return []netip.AddrPort{netip.AddrPortFrom(ip.Unmap(), port)}, nil
	}
	if _, ok := dns.IsDomainName(hostname); !ok || hostname == "" || hostname == "." {
		return nil, fmt.Errorf("sipd: resolve %q: not a hostname", hostname)
	}
	servers, err := r.servers()
	if err != nil {
		return nil, fmt.Errorf("sipd: resolve %q: %w", hostname, err)
	}
	name := dns.Fqdn(hostname)
	q := querier{servers: servers, client: &dns.Client{Timeout: r.Timeout}, dial: r.Dial, timeout: cmp.Or(r.Timeout, dnsTimeout)}
	if q.dial == nil {
		q.dial = (&net.Dialer{}).DialContext
	}

	var out []netip.AddrPort
	srvs, srvErr := q.srv(ctx, "_sip._udp."+name)
	for _, s := range srvs {
		ips, err := q.addrs(ctx, s.Target)
		if err != nil {
			srvErr = errors.Join(srvErr, err)
		}
		for _, ip := range ips {
			out = append(out, netip.AddrPortFrom(ip, s.Port))
		}
	}
	if len(out) == 0 {
		ips, err := q.addrs(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("sipd: resolve %q: %w", hostname, errors.Join(err, srvErr))
		}
		// A round-robin server rotates its answer: sorted, the first
		// address (ping-all-addresses off) stays the same target.
		slices.SortFunc(ips, func(a, b netip.Addr) int { return a.Compare(b) })
		for _, ip := range ips {
			out = append(out, netip.AddrPortFrom(ip, port))
		}
	}
	out = dedup(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("sipd: resolve %q: %w (no SRV, A or AAAA record)", hostname, ErrNoAddress)
	}
	if !all {
		out = out[:1]
	}
	return out, nil
}

func (r *Resolver) servers() ([]string, error) {
	if r.Server != "" {
		return []string{r.Server}, nil
	}
	file := cmp.Or(r.ResolvConf, ResolvConf)
	cfg, err := dns.ClientConfigFromFile(file)
	if err != nil {
		return nil, fmt.Errorf("read DNS servers: %w", err)
	}
	if len(cfg.Servers) == 0 {
		return nil, fmt.Errorf("read DNS servers: none in %s", file)
	}
	out := make([]string, len(cfg.Servers))
	for i, s := range cfg.Servers {
		out[i] = net.JoinHostPort(s, cfg.Port)
	}
	return out, nil
}

// querier asks the servers in order until one answers.
type querier struct {
	servers []string
	client  *dns.Client // its timeouts; it never dials, dial does
	dial    func(ctx context.Context, network, address string) (net.Conn, error)
	timeout time.Duration // of a dial
}

// exchange sends m to server over network ("udp" or "tcp") on a connection
// of its own dial, so that a Resolver's Dial decides where every query
// leaves from.
func (q *querier) exchange(ctx context.Context, m *dns.Msg, network, server string) (*dns.Msg, error) {
	dctx, cancel := context.WithTimeout(ctx, q.timeout)
	conn, err := q.dial(dctx, network, server)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	defer conn.Close()
	in, _, err := q.client.ExchangeWithConnContext(ctx, m, &dns.Conn{Conn: conn})
	return in, err
}

// query returns the answer section; a name that does not exist (NXDOMAIN)
// or has no such record is an empty answer, not an error.
func (q *querier) query(ctx context.Context, name string, qtype uint16) ([]dns.RR, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.RecursionDesired = true
	var errs error
	for _, server := range q.servers {
		in, err := q.exchange(ctx, m, "udp", server)
		if err == nil && in.Truncated {
			in, err = q.exchange(ctx, m, "tcp", server)
		}
		if err != nil {
			errs = errors.Join(errs, fmt.Errorf("%s %s @%s: %w", dns.TypeToString[qtype], name, server, err))
			if ctx.Err() != nil {
				return nil, errs
			}
			continue
		}
		switch in.Rcode {
		case dns.RcodeSuccess, dns.RcodeNameError:
			return in.Answer, nil
		default:
			errs = errors.Join(errs, fmt.Errorf("%s %s @%s: %s", dns.TypeToString[qtype], name, server, dns.RcodeToString[in.Rcode]))
		}
	}
	return nil, errs
}

// srv returns name's SRV records by priority (ascending), then weight
// (descending), keeping the answer's order among equals; "." is dropped.
func (q *querier) srv(ctx context.Context, name string) ([]*dns.SRV, error) {
	rrs, err := q.query(ctx, name, dns.TypeSRV)
	if err != nil {
		return nil, err
	}
	var srvs []*dns.SRV
	for _, rr := range rrs {
		if s, ok := rr.(*dns.SRV); ok && s.Target != "." {
			srvs = append(srvs, s)
		}
	}
	slices.SortStableFunc(srvs, func(a, b *dns.SRV) int {
		return cmp.Or(cmp.Compare(a.Priority, b.Priority), cmp.Compare(b.Weight, a.Weight))
	})
	return srvs, nil
}

// addrs returns name's A then AAAA addresses.
func (q *querier) addrs(ctx context.Context, name string) ([]netip.Addr, error) {
	var out []netip.Addr
	var errs error
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
		rrs, err := q.query(ctx, name, qtype)
		if err != nil {
			errs = errors.Join(errs, err)
			continue
		}
		for _, rr := range rrs {
			var ip net.IP
			switch a := rr.(type) {
			case *dns.A:
				ip = a.A
			case *dns.AAAA:
				ip = a.AAAA
			default:
				continue // CNAME and the like: the addresses follow
			}
			if addr, ok := netip.AddrFromSlice(ip); ok {
				out = append(out, addr.Unmap())
			}
		}
	}
	if len(out) == 0 && errs != nil {
		return nil, errs
	}
	return out, nil
}

func dedup(in []netip.AddrPort) []netip.AddrPort {
	seen := make(map[netip.AddrPort]bool, len(in))
	out := in[:0]
	for _, a := range in {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}
