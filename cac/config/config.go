package config

import (
	"math"
	"net/netip"
	"strings"
	"time"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/cpu"
	"go.yaml.in/yaml/v3"
)

// Config is a checked cac.yaml. Zero values and nil pointers mean the key
// was absent; the defaults (docs/design.md "Configuration") are applied by Load.
type Config struct {
	File          string
	Interfaces    []Interface
	Ports         Ports
	MalformedDrop bool
	Classes       map[cac.Class]Class
	Environment   Limit
	// EnvironmentAgentReserve is environment.agent-reserve.
	EnvironmentAgentReserve *float64
	Customers               []Customer
	CallAdmission           CallAdmission
	CPU                     CPU
	Buffers                 Buffers
	StaleAfter              time.Duration
	OnStale                 string // static, open or closed
	Realms                  []Realm
	SessionAgents           []SessionAgent
	Metrics                 Metrics
	API                     API
	// SourceTable is how many sources the per-source table of the fast
	// path holds (key per-source-table).
	SourceTable uint32
	// DialogTable is how many dialogs the dialog table of the fast path
	// holds (key dialog-table): the Call-IDs of admitted INVITEs, whose
	// in-dialog requests pass uncharged.
	DialogTable uint32
	SIPReject   SIPReject
	// DNSServer resolves session agents' hostnames ("ip:port"); empty
	// uses the system's resolvers.
	DNSServer string
	// SIPT1 is RFC 3261's T1 for pings: no answer within 64 × T1 is a
	// failed ping (key sip-t1, default 500ms).
	SIPT1 time.Duration
	// SessionExpiry is how long a dialog that holds a session of a
	// max-sessions limit keeps it with no message of the dialog seen
	// (key session-expiry, default 12h): the cost of a lost BYE.
	SessionExpiry time.Duration
	// Fleet is the fleet this box shares its fleet-scope limits with;
	// nil for none.
	Fleet *Fleet
	// CallAdmissionFleet is call-admission-scope: fleet, the call
	// admission limit one budget for every box of the fleet
	// (docs/design.md, "Fleet").
	CallAdmissionFleet bool
	// Access is the access block: static lists and auto-deny.
	Access Access

	callAdmissionScope *yaml.Node
}

// Interface is one interface to attach to.
type Interface struct {
	Name string
	Mode string // auto, native, generic or multi
	// Priority is the run priority in a libxdp dispatcher (mode multi, or
	// auto on an interface that has one); 0 is the loader's default
	// (docs/design.md, "Sharing an interface").
	Priority uint32

	node *yaml.Node
}

// Ports are the UDP destination ports of L2TP and SIP, and the TCP ports
// of SIP over TCP and TLS, a SYN to which is a sip-connect
// (docs/design.md, "SIP connections"); none turns that class off.
type Ports struct {
	L2TP   []uint16
	SIP    []uint16
	SIPTCP []uint16
}

// Limit is a token bucket with FlySIP semantics: it starts full, refills at
// CPS up to Burst calls, and a call takes one. A nil CPS is unlimited.
type Limit struct {
	CPS          *float64
	Burst        *float64
	BurstSeconds *float64
	// Fleet is scope: fleet, the rate shared by every box of the fleet
	// (docs/design.md, "Fleet"); classes, the environment, customers and
	// accounts may have it.
	Fleet bool

	scopeNode *yaml.Node
	scopePath string
}

// DefaultBurstSeconds is how many seconds of calls a bucket holds unless
// burst or burst-seconds says otherwise.
const DefaultBurstSeconds = 60

// Unlimited reports whether no cps is set.
func (l Limit) Unlimited() bool { return l.CPS == nil }

// EffectiveBurst is the bucket size in calls.
func (l Limit) EffectiveBurst() float64 {
	switch {
	case l.CPS == nil:
		return 0
	case l.Burst != nil:
		return *l.Burst
	case l.BurstSeconds != nil:
		return *l.CPS * *l.BurstSeconds
	}
	return *l.CPS * DefaultBurstSeconds
}

// Class holds the limits of one traffic class.
type Class struct {
	Limit
	PerSource *PerSource
	// AgentReserve is how many calls of the class bucket strangers leave
	// to the session agents (key agent-reserve); nil is the default.
	AgentReserve *float64
	// Reject answers a refused SIP request out of dialog (sip-invite,
	// sip-options, sip-register, sip-other) with 503 instead of dropping
	// it (action: reject).
	Reject bool
}

// PerSource is the automatic bucket each source of a class gets.
type PerSource struct {
	Limit
	Key        string // ip, mac, mac-vlan or vlan
	IPv6Prefix int    // IPv6 sources are aggregated to this prefix length
}

// Customer shares one bucket among its accounts.
type Customer struct {
	Name     string
	Limit    Limit
	Accounts []Account
	// MaxSessions is how many dialogs the customer's accounts hold at
	// once (key max-sessions); 0 is no limit.
	MaxSessions uint32

	node *yaml.Node
}

// Account is a bucket of its own for the requests one authentication
// rule identifies: a source prefix, or a prefix of the CLI or of the
// called number (docs/design.md, "Authentication rules"). Exactly one of
// Source, CLI and Called is set.
type Account struct {
	Name   string
	Source netip.Prefix
	CLI    string
	Called string
	Limit  Limit
	// MaxSessions is how many dialogs the account holds at once (key
	// max-sessions); 0 is no limit.
	MaxSessions uint32

	node, ruleNode *yaml.Node
	rulePath       string    // the path of ruleNode's key
	extraRules     []ruleKey // rule keys past the first: refused
}

// CPU says where the CPU load for the load charge comes from.
type CPU struct {
	Source         string // system, process:NAME or cgroup:PATH
	SampleInterval time.Duration
}

// MinSampleInterval is the shortest CPU sample interval.
const MinSampleInterval = 100 * time.Millisecond

// Buffers lists the sockets whose receive queues make the buffer charge.
type Buffers struct {
	UDPPorts        []uint16
	PacketProtocols []uint16
}

// Metrics is where Prometheus metrics are served.
type Metrics struct {
	Listen string
}

// API is who may use the daemon's socket besides root.
type API struct {
	// ReadGroup names a group whose members may read what the daemon
	// serves (show, status, top) but change nothing; "" is root only.
	ReadGroup string
}

// DefaultAgentReserve is the agent-reserve of a shared bucket of burst
// calls when there are session agents and the file sets none: a tenth of
// the burst, so that strangers who fill the bucket leave the agents a tenth
// of it, and the agents take it before any stranger (the bucket refills
// above the reserve before a stranger's call conforms again).
func DefaultAgentReserve(burst float64) float64 { return math.Floor(burst / 10) }

// checkReserve checks an agent-reserve against the bucket it is part of.
func (d *decoder) checkReserve(n *yaml.Node, path string, l Limit, reserve *float64) {
	if reserve == nil {
		return
	}
	if l.CPS == nil {
		d.errorf(n, join(path, "agent-reserve"), "needs a cps: an unlimited bucket has nothing to reserve")
		return
	}
	if b := l.EffectiveBurst(); *reserve > b-1 {
		d.errorf(n, join(path, "agent-reserve"), "must leave strangers at least one call of the burst (%.6g), got %.6g", b, *reserve)
	}
}

// DefaultClasses are the limits of the classes that are limited unless the
// file says otherwise (an empty mapping, {}, lifts them): in-dialog
// requests, whose To tag anyone can write, and malformed frames. A real
// peer sends neither anywhere near these rates from one source; a flood
// of them is held like any other.
func DefaultClasses() map[cac.Class]Class {
	f := func(v float64) *float64 { return &v }
	perSource := func(cps, burst float64) *PerSource {
		return &PerSource{Limit: Limit{CPS: f(cps), Burst: f(burst)}, Key: "ip", IPv6Prefix: 64}
	}
	return map[cac.Class]Class{
		cac.SIPInDialog:    {PerSource: perSource(50, 500)},
		cac.ClassMalformed: {Limit: Limit{CPS: f(100), Burst: f(200)}, PerSource: perSource(5, 10)},
	}
}

func (c *Config) fields(d *decoder) fields {
	malformed := "pass"
	return fields{
		"interfaces": func(p string, v *yaml.Node) {
			d.sequence(v, p, func(p string, v *yaml.Node) { c.Interfaces = append(c.Interfaces, d.iface(p, v)) })
		},
		"ports": func(p string, v *yaml.Node) {
			d.mapping(v, p, fields{
				"l2tp":    func(p string, v *yaml.Node) { d.ports(v, p, &c.Ports.L2TP) },
				"sip":     func(p string, v *yaml.Node) { d.ports(v, p, &c.Ports.SIP) },
				"sip-tcp": func(p string, v *yaml.Node) { d.ports(v, p, &c.Ports.SIPTCP) },
			})
		},
		"malformed": func(p string, v *yaml.Node) {
			d.oneOf(v, p, &malformed, "pass", "drop")
			c.MalformedDrop = malformed == "drop"
		},
		"classes": func(p string, v *yaml.Node) { d.classes(v, p, c.Classes) },
		"environment": func(p string, v *yaml.Node) {
			d.mapping(v, p, d.limitFields(&c.Environment, fields{
				"agent-reserve": func(p string, v *yaml.Node) { d.number(v, p, 0, &c.EnvironmentAgentReserve) },
				"scope":         d.scopeField(&c.Environment),
			}))
			d.checkReserve(v, p, c.Environment, c.EnvironmentAgentReserve)
		},
		"customers": func(p string, v *yaml.Node) {
			d.sequence(v, p, func(p string, v *yaml.Node) { c.Customers = append(c.Customers, d.customer(p, v)) })
		},
		"call-admission":       func(p string, v *yaml.Node) { c.CallAdmission = d.callAdmission(p, v) },
		"call-admission-scope": d.callAdmissionScope(c),
		"cpu": func(p string, v *yaml.Node) {
			d.mapping(v, p, fields{
				"source": func(p string, v *yaml.Node) { d.cpuSource(v, p, &c.CPU.Source) },
				"sample-interval": func(p string, v *yaml.Node) {
					d.duration(v, p, &c.CPU.SampleInterval)
					if c.CPU.SampleInterval < MinSampleInterval {
						d.errorf(v, p, "must be at least %v (the charge budget counts in ticks of 100 ms), got %q", MinSampleInterval, v.Value)
					}
				},
			})
		},
		"buffers": func(p string, v *yaml.Node) {
			d.mapping(v, p, fields{
				"udp-ports": func(p string, v *yaml.Node) { d.ports(v, p, &c.Buffers.UDPPorts) },
				"packet-protocols": func(p string, v *yaml.Node) {
					d.sequence(v, p, func(p string, v *yaml.Node) {
						if n, ok := d.integer(v, p, 1, 0xffff); ok {
							c.Buffers.PacketProtocols = append(c.Buffers.PacketProtocols, uint16(n))
						}
					})
				},
			})
		},
		"stale-after": func(p string, v *yaml.Node) { d.duration(v, p, &c.StaleAfter) },
		"per-source-table": func(p string, v *yaml.Node) {
			if n, ok := d.integer(v, p, 1024, 1<<24); ok {
				c.SourceTable = uint32(n)
			}
		},
		"dialog-table": func(p string, v *yaml.Node) {
			if n, ok := d.integer(v, p, 1024, 1<<24); ok {
				c.DialogTable = uint32(n)
			}
		},
		"on-stale": func(p string, v *yaml.Node) { d.oneOf(v, p, &c.OnStale, cac.OnStaleNames()...) },
		"realms": func(p string, v *yaml.Node) {
			d.sequence(v, p, func(p string, v *yaml.Node) { c.Realms = append(c.Realms, d.realm(p, v)) })
		},
		"sip-reject": func(p string, v *yaml.Node) { d.sipReject(p, v, &c.SIPReject) },
		"dns-server": func(p string, v *yaml.Node) { d.hostPort(v, p, &c.DNSServer) },
		"sip-t1":     func(p string, v *yaml.Node) { d.duration(v, p, &c.SIPT1) },
		"session-expiry": func(p string, v *yaml.Node) {
			d.duration(v, p, &c.SessionExpiry)
			if c.SessionExpiry != 0 && c.SessionExpiry < time.Second {
				d.errorf(v, p, "must be at least 1s (the daemon sweeps the sessions once a second), got %q", v.Value)
			}
		},
		"session-agents": func(p string, v *yaml.Node) {
			d.sequence(v, p, func(p string, v *yaml.Node) { c.SessionAgents = append(c.SessionAgents, d.agent(p, v)) })
		},
		"metrics": func(p string, v *yaml.Node) {
			d.mapping(v, p, fields{"listen": func(p string, v *yaml.Node) { d.hostPort(v, p, &c.Metrics.Listen) }})
		},
		"fleet":  func(p string, v *yaml.Node) { c.Fleet = d.fleet(p, v) },
		"access": func(p string, v *yaml.Node) { d.access(p, v, &c.Access) },
		"api": func(p string, v *yaml.Node) {
			d.mapping(v, p, fields{"read-group": func(p string, v *yaml.Node) { d.str(v, p, &c.API.ReadGroup) }})
		},
	}
}

func (d *decoder) iface(path string, n *yaml.Node) Interface {
	i := Interface{Mode: "auto", node: n}
	d.mapping(n, path, fields{
		"name": func(p string, v *yaml.Node) {
			d.str(v, p, &i.Name)
			if len(i.Name) > 15 || strings.ContainsAny(i.Name, "/ \t") {
				d.errorf(v, p, "%q is not an interface name", i.Name)
			}
		},
		"mode": func(p string, v *yaml.Node) { d.oneOf(v, p, &i.Mode, "auto", "native", "generic", "multi") },
		"priority": func(p string, v *yaml.Node) {
			// libxdp runs lower priorities first; 0 means its default.
			if n, ok := d.integer(v, p, 1, 1000); ok {
				i.Priority = uint32(n)
			}
		},
	})
	if i.Name == "" {
		d.errorf(n, join(path, "name"), "is required")
	}
	return i
}

func (d *decoder) cpuSource(n *yaml.Node, path string, dst *string) {
	s, ok := d.scalar(n, path)
	if !ok {
		return
	}
	if _, err := cpu.ParseSource(s); err != nil {
		d.errorf(n, path, "%v", err)
		return
	}
	*dst = s
}

// limitFields are the keys of a token bucket, plus extra keys.
func (d *decoder) limitFields(l *Limit, extra fields) fields {
	f := fields{
		"cps":           func(p string, v *yaml.Node) { d.number(v, p, 0.001, &l.CPS) },
		"burst":         func(p string, v *yaml.Node) { d.number(v, p, 1, &l.Burst) },
		"burst-seconds": func(p string, v *yaml.Node) { d.number(v, p, 0.001, &l.BurstSeconds) },
	}
	for k, fn := range extra {
		f[k] = fn
	}
	return f
}

// checkLimit refuses a bucket too small to ever hold one call.
func (d *decoder) checkLimit(n *yaml.Node, path string, l Limit) {
	if l.CPS == nil && (l.Burst != nil || l.BurstSeconds != nil) {
		d.errorf(n, path, "burst without cps: a bucket needs a rate (cps)")
		return
	}
	if l.Burst != nil && l.BurstSeconds != nil {
		d.errorf(n, path, "set burst or burst-seconds, not both")
		return
	}
	if b := l.EffectiveBurst(); l.CPS != nil && b < 1 {
		d.errorf(n, path, "the bucket holds %.3g calls (cps × burst-seconds), less than one: no call could pass; raise burst or burst-seconds", b)
		return
	}
	d.checkRate(n, path, l)
}

func (d *decoder) classes(n *yaml.Node, path string, dst map[cac.Class]Class) {
	f := fields{}
	for _, cl := range cac.Classes() {
		f[cl.String()] = func(p string, v *yaml.Node) {
			var c Class
			extra := fields{
				"per-source": func(p string, v *yaml.Node) { c.PerSource = d.perSource(p, v, cl) },
				"scope":      d.scopeField(&c.Limit),
			}
			if !cl.Sessionless() {
				extra["agent-reserve"] = func(p string, v *yaml.Node) { d.number(v, p, 0, &c.AgentReserve) }
			}
			if cl.Answerable() {
				extra["action"] = func(p string, v *yaml.Node) {
					var a string
					d.oneOf(v, p, &a, "drop", "reject")
					c.Reject = a == "reject"
				}
			}
			d.mapping(v, p, d.limitFields(&c.Limit, extra))
			d.checkLimit(v, p, c.Limit)
			d.checkReserve(v, p, c.Limit, c.AgentReserve)
			dst[cl] = c
		}
	}
	d.mapping(n, path, f)
}

func isPPPoE(c cac.Class) bool { return c == cac.PPPoEPADI || c == cac.PPPoEPADR }

func (d *decoder) perSource(path string, n *yaml.Node, cl cac.Class) *PerSource {
	ps := &PerSource{Key: "ip", IPv6Prefix: 64}
	if isPPPoE(cl) {
		ps.Key = "mac"
	}
	d.mapping(n, path, d.limitFields(&ps.Limit, fields{
		"key": func(p string, v *yaml.Node) {
			if isPPPoE(cl) {
				d.oneOf(v, p, &ps.Key, "mac", "mac-vlan", "vlan")
			} else {
				d.oneOf(v, p, &ps.Key, "ip")
			}
		},
		"ipv6-prefix": func(p string, v *yaml.Node) {
			if isPPPoE(cl) {
				d.errorf(v, p, "PPPoE sources are MAC addresses or VLANs, not IPv6 prefixes")
				return
			}
			if b, ok := d.integer(v, p, 1, 128); ok {
				ps.IPv6Prefix = int(b)
			}
		},
	}))
	d.checkLimit(n, path, ps.Limit)
	return ps
}
