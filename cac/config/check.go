package config

import (
	"fmt"
	"net/netip"
	"slices"

	"go.yaml.in/yaml/v3"
)

// check looks across keys, once each key has been read.
func (c *Config) check(d *decoder, root *yaml.Node) {
	at := func(key string) *yaml.Node {
		if root.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(root.Content); i += 2 {
				if root.Content[i].Value == key {
					return root.Content[i+1]
				}
			}
		}
		return root
	}
	for _, p := range c.Ports.SIP {
		if slices.Contains(c.Ports.L2TP, p) {
			d.errorf(at("ports"), "ports", "port %d is both an L2TP and a SIP port", p)
		}
	}
	seen := map[string]bool{}
	for n, i := range c.Interfaces {
		if seen[i.Name] && i.Name != "" {
			d.errorf(i.node, fmt.Sprintf("interfaces[%d].name", n), "interface %s is listed twice", i.Name)
		}
		seen[i.Name] = true
	}
	d.checkLimit(at("environment"), "environment", c.Environment)
	c.checkFleet(d)

	names := map[string]bool{}
	for i, cu := range c.Customers {
		path := fmt.Sprintf("customers[%d]", i)
		if names[cu.Name] && cu.Name != "" {
			d.errorf(cu.node, path+".name", "customer %s is defined twice", cu.Name)
		}
		names[cu.Name] = true
		for j, a := range cu.Accounts {
			apath := fmt.Sprintf("%s.accounts[%d]", path, j)
			if names["account "+a.Name] && a.Name != "" {
				d.errorf(a.node, apath+".name", "account %s is defined twice", a.Name)
			}
			names["account "+a.Name] = true
			if names["source "+mapped(a.Source).String()] && a.Source.IsValid() {
				d.errorf(a.node, apath+".source", "source %s belongs to two accounts", a.Source)
			}
			names["source "+mapped(a.Source).String()] = true
		}
	}

	d.checkUserRules(c)

	// A source in two customers' accounts would be charged to whichever
	// prefix is longer, silently: refuse overlaps across customers.
	fits := c.checkSizes(d)
	for i, cu := range c.Customers {
		if !fits {
			break
		}
		for _, a := range cu.Accounts {
			for j := i + 1; j < len(c.Customers); j++ {
				for _, b := range c.Customers[j].Accounts {
					if a.Source.IsValid() && b.Source.IsValid() && mapped(a.Source).Overlaps(mapped(b.Source)) {
						d.errorf(b.node, fmt.Sprintf("customers[%d].accounts", j),
							"source %s of account %s overlaps %s of account %s in customer %s", b.Source, b.Name, a.Source, a.Name, cu.Name)
					}
				}
			}
		}
	}

	// Buffers are a gate of call admission, which acts only with a limit.
	if b := c.Buffers; len(b.UDPPorts)+len(b.PacketProtocols) > 0 && c.CallAdmission.Limit == nil {
		d.errorf(at("buffers"), "buffers", "never acts without `call admission limit <1-1000000000>` in call-admission, which this file lacks: add the limit line, or drop buffers")
	}

	// The fast path takes a heartbeat older than stale-after for a dead
	// control plane; one that writes less often would be stale between
	// writes, and on-stale closed would reject calls half the time.
	if c.StaleAfter < 2*c.CPU.SampleInterval {
		d.errorf(at("stale-after"), "stale-after", "%v is less than two sample intervals (cpu.sample-interval %v): the control plane would go stale between its writes", c.StaleAfter, c.CPU.SampleInterval)
	}

	realms := map[string]bool{}
	for i, r := range c.Realms {
		if realms[r.Name] {
			d.errorf(r.node, fmt.Sprintf("realms[%d].name", i), "realm %s is defined twice", r.Name)
		}
		realms[r.Name] = true
	}
	agents := map[string]bool{}
	for i, a := range c.SessionAgents {
		path := fmt.Sprintf("session-agents[%d]", i)
		if agents[a.Name] {
			d.errorf(a.node, path, "session agent %s is defined twice", a.Name)
		}
		agents[a.Name] = true
		switch {
		case a.RealmID == "*" && len(a.EgressRealmIDs) == 0:
			d.errorf(a.node, path+".egress-realm-id", `realm-id "*" needs a list of egress realms`)
		case a.RealmID != "*" && a.RealmID != "" && !realms[a.RealmID]:
			d.errorf(a.node, path+".realm-id", "no realm named %q", a.RealmID)
		}
		for _, e := range a.EgressRealmIDs {
			if !realms[e] {
				d.errorf(a.node, path+".egress-realm-id", "no realm named %q", e)
			}
		}
	}
}

// mapped is a prefix as the fast path's account trie sees it: IPv4 mapped
// into IPv6, so that 10.0.0.0/8 and ::ffff:10.0.0.0/104 are the same.
func mapped(p netip.Prefix) netip.Prefix {
	if p.IsValid() && p.Addr().Is4() {
		return netip.PrefixFrom(netip.AddrFrom16(p.Addr().As16()), p.Bits()+96)
	}
	return p
}
