package config

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Realm is a local SIP interface that pings leave from.
type Realm struct {
	Name             string
	Address          netip.Addr
	Port             uint16
	FQDNHostname     string
	TeamsFQDN        string
	TeamsFQDNInURI   bool
	MultiTenancyFQDN string

	node *yaml.Node
}

// SessionAgent is a known SIP peer, watched with OPTIONS pings (Oracle SBC
// semantics).
type SessionAgent struct {
	Name                       string
	Hostname                   string // IP or FQDN
	Port                       uint16
	RealmID                    string // a realm, or "*" with EgressRealmIDs
	EgressRealmIDs             []string
	PingMethod                 string
	PingInterval               time.Duration
	PingSendMode               string // keep-alive or continuous
	PingInServiceResponseCodes []int
	OutServiceResponseCodes    []int
	PingFailureCount           int
	PingAllAddresses           bool
	Limit                      Limit
	// Connection is the agent as a connection (FlySIP's vendor Max
	// CPS): the INVITEs the SIP server sends toward it, held at egress.
	// Its burst defaults to one second of calls (at least one): a
	// vendor counts its Max CPS per second.
	Connection Limit
	// OnOutOfService is what an INVITE toward the agent gets while it is
	// out of service in every realm: fail-fast (answered at once) or pass.
	OnOutOfService string
	// EgressResponseCode answers an INVITE refused at egress on the
	// agent's behalf.
	EgressResponseCode int
	// MaxSessions is how many dialogs the SIP server may have up toward
	// the agent at once (key max-sessions, FlySIP's connection
	// capacity); 0 is no limit.
	MaxSessions uint32

	node *yaml.Node // where it was defined, for errors that span keys
}

func (d *decoder) realm(path string, n *yaml.Node) Realm {
	r := Realm{Port: 5060, node: n}
	d.mapping(n, path, fields{
		"name": func(p string, v *yaml.Node) { d.str(v, p, &r.Name) },
		"address": func(p string, v *yaml.Node) {
			if s, ok := d.scalar(v, p); ok {
				a, err := netip.ParseAddr(s)
				if err != nil {
					d.errorf(v, p, "must be an IP address, got %q", s)
				}
				r.Address = a
			}
		},
		"port":               func(p string, v *yaml.Node) { d.port(v, p, &r.Port) },
		"fqdn-hostname":      func(p string, v *yaml.Node) { d.str(v, p, &r.FQDNHostname) },
		"teams-fqdn":         func(p string, v *yaml.Node) { d.str(v, p, &r.TeamsFQDN) },
		"teams-fqdn-in-uri":  func(p string, v *yaml.Node) { d.boolean(v, p, &r.TeamsFQDNInURI) },
		"multi-tenancy-fqdn": func(p string, v *yaml.Node) { d.str(v, p, &r.MultiTenancyFQDN) },
	})
	if r.Name == "" {
		d.errorf(n, join(path, "name"), "is required")
	}
	if !r.Address.IsValid() {
		d.errorf(n, join(path, "address"), "is required")
	}
	return r
}

func (d *decoder) codes(n *yaml.Node, path string, dst *[]int) {
	d.sequence(n, path, func(p string, v *yaml.Node) {
		if c, ok := d.integer(v, p, 100, 699); ok {
			*dst = append(*dst, int(c))
		}
	})
}

// What an INVITE toward an agent out of service gets (on-out-of-service).
const (
	OnOutOfServiceFailFast = "fail-fast"
	OnOutOfServicePass     = "pass"
)

func (d *decoder) agent(path string, n *yaml.Node) SessionAgent {
	a := SessionAgent{
		Port: 5060, PingMethod: "OPTIONS", PingInterval: 30 * time.Second,
		PingSendMode: "keep-alive", PingFailureCount: 1, node: n,
		OnOutOfService: OnOutOfServiceFailFast, EgressResponseCode: 503,
	}
	var connNode, burstNode *yaml.Node // where the connection limit was set, for its errors
	d.mapping(n, path, d.limitFields(&a.Limit, fields{
		"name":     func(p string, v *yaml.Node) { d.str(v, p, &a.Name) },
		"hostname": func(p string, v *yaml.Node) { d.str(v, p, &a.Hostname) },
		"port":     func(p string, v *yaml.Node) { d.port(v, p, &a.Port) },
		"realm-id": func(p string, v *yaml.Node) { d.str(v, p, &a.RealmID) },
		"egress-realm-id": func(p string, v *yaml.Node) {
			d.sequence(v, p, func(p string, v *yaml.Node) {
				var s string
				d.str(v, p, &s)
				a.EgressRealmIDs = append(a.EgressRealmIDs, s)
			})
		},
		"ping-method":                    func(p string, v *yaml.Node) { d.oneOf(v, p, &a.PingMethod, "OPTIONS") },
		"ping-interval":                  func(p string, v *yaml.Node) { d.duration(v, p, &a.PingInterval) },
		"ping-send-mode":                 func(p string, v *yaml.Node) { d.oneOf(v, p, &a.PingSendMode, "keep-alive", "continuous") },
		"ping-in-service-response-codes": func(p string, v *yaml.Node) { d.codes(v, p, &a.PingInServiceResponseCodes) },
		"out-service-response-codes":     func(p string, v *yaml.Node) { d.codes(v, p, &a.OutServiceResponseCodes) },
		"ping-all-addresses":             func(p string, v *yaml.Node) { d.boolean(v, p, &a.PingAllAddresses) },
		"connection-cps": func(p string, v *yaml.Node) {
			d.number(v, p, 0.001, &a.Connection.CPS)
			connNode = v
		},
		"connection-burst": func(p string, v *yaml.Node) {
			d.number(v, p, 1, &a.Connection.Burst)
			burstNode = v
		},
		"on-out-of-service": func(p string, v *yaml.Node) {
			d.oneOf(v, p, &a.OnOutOfService, OnOutOfServiceFailFast, OnOutOfServicePass)
		},
		"max-sessions": func(p string, v *yaml.Node) { d.maxSessions(v, p, &a.MaxSessions) },
		"egress-response-code": func(p string, v *yaml.Node) {
			if c, ok := d.integer(v, p, 400, 699); ok {
				a.EgressResponseCode = int(c)
			}
		},
		"options": func(p string, v *yaml.Node) {
			d.sequence(v, p, func(p string, v *yaml.Node) {
				s, ok := d.scalar(v, p)
				if !ok {
					return
				}
				name, val, _ := strings.Cut(s, "=")
				n, err := strconv.Atoi(val)
				if name != "ping-failure-count" || err != nil || n < 1 || n > 100 {
					d.errorf(v, p, "want ping-failure-count=N with N from 1 to 100, got %q", s)
					return
				}
				a.PingFailureCount = n
			})
		},
	}))
	d.checkLimit(n, path, a.Limit)
	if a.Connection.CPS == nil && a.Connection.Burst != nil {
		d.errorf(burstNode, join(path, "connection-burst"), "without connection-cps: a connection limit needs a rate")
	} else if a.Connection.CPS != nil {
		if a.Connection.Burst == nil {
			b := max(1, *a.Connection.CPS)
			a.Connection.Burst = &b
		}
		d.checkLimit(connNode, join(path, "connection-cps"), a.Connection)
	}
	for key, missing := range map[string]bool{"name": a.Name == "", "hostname": a.Hostname == "", "realm-id": a.RealmID == ""} {
		if missing {
			d.errorf(n, join(path, key), "is required")
		}
	}
	return a
}

// SIPReject is how refused SIP requests of a class with action: reject are
// answered: 503 with Retry-After, at most Rate answers a second (beyond
// that they are dropped, and counted).
type SIPReject struct {
	RetryAfter time.Duration
	Rate       float64
}

func (d *decoder) sipReject(path string, n *yaml.Node, r *SIPReject) {
	d.mapping(n, path, fields{
		"retry-after": func(p string, v *yaml.Node) { d.duration(v, p, &r.RetryAfter) },
		"rate": func(p string, v *yaml.Node) {
			if x, ok := d.integer(v, p, 1, 100000); ok {
				r.Rate = float64(x)
			}
		},
	})
}

// hostPort decodes an "address:port" such as 127.0.0.1:9477.
func (d *decoder) hostPort(n *yaml.Node, path string, dst *string) {
	d.str(n, path, dst)
	if *dst == "" {
		return
	}
	host, port, err := net.SplitHostPort(*dst)
	if err != nil {
		d.errorf(n, path, "must be host:port such as 127.0.0.1:9477, got %q", *dst)
		return
	}
	// What listens or is dialled later must not fail only then: a daemon
	// that attaches and dies on its metrics address loops under
	// Restart=on-failure.
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 && !d.portZeroOK(path) {
		d.errorf(n, path, "port must be a number from 1 to 65535, got %q", port)
		return
	}
	if host != "" && host != "localhost" {
		if _, err := netip.ParseAddr(host); err != nil {
			d.errorf(n, path, "host must be an IP address (or empty for every address), got %q", host)
		}
	}
}

// portZeroOK: a listen address may ask for any free port (port 0, for
// tests); an address dialled may not.
func (d *decoder) portZeroOK(path string) bool { return strings.HasSuffix(path, ".listen") }
