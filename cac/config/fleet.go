package config

import (
	"time"

	"go.yaml.in/yaml/v3"
)

// Fleet is the fleet this box is one of (docs/design.md, "Fleet"): the
// Redis that keeps the fleet-scope limits, how leases of them are sized,
// and what the box does when Redis is gone.
type Fleet struct {
	Name string
	// Member is this box's name in the fleet; empty is the host name.
	// Boxes of one fleet must have names of their own.
	Member string
	Redis  Redis
	Lease  Lease
	// OnFleetLost is what a fleet-scope level does once Redis has been
	// unreachable for LostAfter: local (the fleet's rate over the last
	// number of boxes seen), static (the rate the last leases came at)
	// or closed (refuse, reason fleet).
	OnFleetLost string
	LostAfter   time.Duration
}

// Redis is how the daemon reaches the fleet's Redis: one address, the
// addresses of a Cluster, or of Sentinels with MasterName; an address
// that is a path (or unix:PATH) is a unix socket.
type Redis struct {
	Addresses    []string
	MasterName   string
	Username     string
	PasswordFile string
	// SentinelUsername and SentinelPasswordFile authenticate to the
	// Sentinels, which keep their own users (with MasterName only).
	SentinelUsername     string
	SentinelPasswordFile string
	DB                   int
	// WaitReplicas is how many replicas must have a grant before it is
	// spent (Redis's WAIT); 0 waits for none.
	WaitReplicas int
	// TLS is set when the connection is TLS: CAFile verifies the
	// server (empty: the system's roots), ServerName names it.
	TLS *TLS
}

// TLS is the TLS of the connection to Redis. ServerName empty verifies
// each address by its own host; CertFile and KeyFile, together, are the
// client certificate a Redis with tls-auth-clients asks for.
type TLS struct {
	CAFile, ServerName string
	CertFile, KeyFile  string
}

// Lease sizes the leases a box holds of each fleet-scope limit: a token
// not spent within Lifetime of its grant expires, and the daemon renews
// every Renew, asking for what the box's demand would spend in Lifetime.
type Lease struct {
	Lifetime time.Duration
	Renew    time.Duration
}

// Fleet defaults: a lease lives a second and is renewed ten times in it,
// so a box holds about a tenth of a second of its demand unspent per
// renewal, and one lost renewal costs nothing.
const (
	DefaultLeaseLifetime = time.Second
	DefaultLeaseRenew    = 100 * time.Millisecond
	DefaultLostAfter     = 2 * time.Second
)

// onFleetLost are the values of on-fleet-lost.
var onFleetLost = []string{"local", "static", "closed"}

// fleet decodes the fleet block.
func (d *decoder) fleet(path string, n *yaml.Node) *Fleet {
	f := &Fleet{
		Lease:       Lease{Lifetime: DefaultLeaseLifetime, Renew: DefaultLeaseRenew},
		OnFleetLost: "local", LostAfter: DefaultLostAfter,
	}
	named := false
	var sentinelKey, waitKey string // a sentinel-* key, which needs master-name; wait-replicas
	var sentinelNode, waitNode *yaml.Node
	d.mapping(n, path, fields{
		"name":   func(p string, v *yaml.Node) { named = true; d.fleetName(v, p, &f.Name) },
		"member": func(p string, v *yaml.Node) { d.fleetName(v, p, &f.Member) },
		"redis": func(p string, v *yaml.Node) {
			d.mapping(v, p, fields{
				"addresses": func(p string, v *yaml.Node) {
					d.sequence(v, p, func(p string, v *yaml.Node) {
						var a string
						d.str(v, p, &a)
						f.Redis.Addresses = append(f.Redis.Addresses, a)
					})
				},
				"master-name":   func(p string, v *yaml.Node) { d.str(v, p, &f.Redis.MasterName) },
				"username":      func(p string, v *yaml.Node) { d.str(v, p, &f.Redis.Username) },
				"password-file": func(p string, v *yaml.Node) { d.str(v, p, &f.Redis.PasswordFile) },
				"sentinel-username": func(p string, v *yaml.Node) {
					d.str(v, p, &f.Redis.SentinelUsername)
					sentinelKey, sentinelNode = p, v
				},
				"sentinel-password-file": func(p string, v *yaml.Node) {
					d.str(v, p, &f.Redis.SentinelPasswordFile)
					sentinelKey, sentinelNode = p, v
				},
				"db": func(p string, v *yaml.Node) {
					if db, ok := d.integer(v, p, 0, 15); ok {
						f.Redis.DB = int(db)
					}
				},
				"wait-replicas": func(p string, v *yaml.Node) {
					if n, ok := d.integer(v, p, 0, 16); ok {
						f.Redis.WaitReplicas = int(n)
						waitNode, waitKey = v, p
					}
				},
				"tls": func(p string, v *yaml.Node) {
					t := &TLS{}
					f.Redis.TLS = t
					d.mapping(v, p, fields{
						"ca-file":     func(p string, v *yaml.Node) { d.str(v, p, &t.CAFile) },
						"server-name": func(p string, v *yaml.Node) { d.str(v, p, &t.ServerName) },
						"cert-file":   func(p string, v *yaml.Node) { d.str(v, p, &t.CertFile) },
						"key-file":    func(p string, v *yaml.Node) { d.str(v, p, &t.KeyFile) },
					})
					if (t.CertFile == "") != (t.KeyFile == "") {
						d.errorf(v, join(p, "cert-file"), "and key-file go together: the client certificate and its key")
					}
				},
			})
			if sentinelNode != nil && f.Redis.MasterName == "" {
				d.errorf(sentinelNode, sentinelKey, "needs master-name: only Sentinels take it")
			}
			if f.Redis.WaitReplicas > 0 && len(f.Redis.Addresses) > 1 && f.Redis.MasterName == "" {
				d.errorf(waitNode, waitKey, "is for one Redis or a Sentinel-watched master: a Cluster's WAIT is not on the node that ran the grant")
			}
			if len(f.Redis.Addresses) == 0 {
				d.errorf(v, join(p, "addresses"), "is required: the Redis (or its Sentinels, or Cluster nodes) that keeps the fleet's limits")
			}
		},
		"lease": func(p string, v *yaml.Node) {
			d.mapping(v, p, fields{
				"lifetime": func(p string, v *yaml.Node) { d.duration(v, p, &f.Lease.Lifetime) },
				"renew":    func(p string, v *yaml.Node) { d.duration(v, p, &f.Lease.Renew) },
			})
			if f.Lease.Renew < 10*time.Millisecond || f.Lease.Renew*2 > f.Lease.Lifetime {
				d.errorf(v, join(p, "renew"), "must be at least 10ms and at most half of lifetime (%v), got %v: a lease must be renewed before it runs out", f.Lease.Lifetime, f.Lease.Renew)
			}
		},
		"on-fleet-lost": func(p string, v *yaml.Node) { d.oneOf(v, p, &f.OnFleetLost, onFleetLost...) },
		"lost-after":    func(p string, v *yaml.Node) { d.duration(v, p, &f.LostAfter) },
	})
	if !named {
		d.errorf(n, join(path, "name"), "is required: boxes that share limits name the same fleet")
	}
	if f.Redis.Addresses == nil && n.Kind == yaml.MappingNode {
		d.errorf(n, join(path, "redis"), "is required: the fleet's limits are kept in Redis")
	}
	return f
}

// fleetName decodes a name that keys Redis: no braces, which would move
// the keys out of the fleet's hash tag.
func (d *decoder) fleetName(n *yaml.Node, path string, dst *string) {
	var s string
	d.str(n, path, &s)
	for _, r := range s {
		if r == '{' || r == '}' || r <= ' ' {
			d.errorf(n, path, "must not hold braces, spaces or control characters, got %q", s)
			return
		}
	}
	*dst = s
}

// scopeField is the scope key of a level that may be fleet-scope.
func (d *decoder) scopeField(l *Limit) func(string, *yaml.Node) {
	return func(p string, v *yaml.Node) {
		var s string
		d.oneOf(v, p, &s, "box", "fleet")
		l.Fleet = s == "fleet"
		if l.Fleet {
			l.scopeNode, l.scopePath = v, p
		}
	}
}

// callAdmissionScope is the call-admission-scope key.
func (d *decoder) callAdmissionScope(c *Config) func(string, *yaml.Node) {
	return func(p string, v *yaml.Node) {
		var s string
		d.oneOf(v, p, &s, "box", "fleet")
		c.CallAdmissionFleet, c.callAdmissionScope = s == "fleet", v
	}
}

// checkFleet refuses scope: fleet without a fleet to share the limit
// with, or without a rate to share.
func (c *Config) checkFleet(d *decoder) {
	check := func(l Limit) {
		switch {
		case !l.Fleet:
		case c.Fleet == nil:
			d.errorf(l.scopeNode, l.scopePath, "scope: fleet needs a fleet: block naming the fleet and its Redis")
		case l.Unlimited():
			d.errorf(l.scopeNode, l.scopePath, "scope: fleet needs a cps: an unlimited level has nothing to share")
		}
	}
	for _, cl := range c.Classes {
		check(cl.Limit)
	}
	check(c.Environment)
	switch n := c.callAdmissionScope; {
	case !c.CallAdmissionFleet:
	case c.Fleet == nil:
		d.errorf(n, "call-admission-scope", "scope: fleet needs a fleet: block naming the fleet and its Redis")
	case c.CallAdmission.Limit == nil:
		d.errorf(n, "call-admission-scope", "scope: fleet needs `call admission limit`: without one there is no budget to share")
	}
	for _, cu := range c.Customers {
		check(cu.Limit)
		for _, a := range cu.Accounts {
			check(a.Limit)
		}
	}
}

// HasFleet reports whether some level of c is fleet-scope.
func (c *Config) HasFleet() bool {
	fleet := c.Environment.Fleet || c.CallAdmissionFleet
	for _, cl := range c.Classes {
		fleet = fleet || cl.Fleet
	}
	for _, cu := range c.Customers {
		fleet = fleet || cu.Limit.Fleet
		for _, a := range cu.Accounts {
			fleet = fleet || a.Limit.Fleet
		}
	}
	return fleet
}
