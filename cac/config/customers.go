package config

import "go.yaml.in/yaml/v3"

// customer decodes one of customers: its bucket, max-sessions and
// accounts, each with exactly one rule.
func (d *decoder) customer(path string, n *yaml.Node) Customer {
	c := Customer{node: n}
	d.mapping(n, path, d.limitFields(&c.Limit, fields{
		"name":         func(p string, v *yaml.Node) { d.str(v, p, &c.Name) },
		"max-sessions": func(p string, v *yaml.Node) { d.maxSessions(v, p, &c.MaxSessions) },
		"scope":        d.scopeField(&c.Limit),
		"accounts": func(p string, v *yaml.Node) {
			d.sequence(v, p, func(p string, v *yaml.Node) {
				a := Account{node: v}
				d.mapping(v, p, d.limitFields(&a.Limit, fields{
					"name":         func(p string, v *yaml.Node) { d.str(v, p, &a.Name) },
					"source":       func(p string, v *yaml.Node) { d.prefix(v, p, &a.Source); a.rule(v, p) },
					"cli":          func(p string, v *yaml.Node) { d.userPrefix(v, p, &a.CLI); a.rule(v, p) },
					"called":       func(p string, v *yaml.Node) { d.userPrefix(v, p, &a.Called); a.rule(v, p) },
					"max-sessions": func(p string, v *yaml.Node) { d.maxSessions(v, p, &a.MaxSessions) },
					"scope":        d.scopeField(&a.Limit),
				}))
				d.checkLimit(v, p, a.Limit)
				if a.Name == "" {
					d.errorf(v, join(p, "name"), "is required")
				}
				d.checkRules(v, p, &a)
				c.Accounts = append(c.Accounts, a)
			})
		},
	}))
	d.checkLimit(n, path, c.Limit)
	if c.Name == "" {
		d.errorf(n, join(path, "name"), "is required")
	}
	return c
}

// HasCapacity reports whether some account, customer or session agent of
// c has max-sessions (docs/design.md, "Capacity").
func (c *Config) HasCapacity() bool {
	for _, a := range c.SessionAgents {
		if a.MaxSessions > 0 {
			return true
		}
	}
	for _, cu := range c.Customers {
		if cu.MaxSessions > 0 {
			return true
		}
		for _, a := range cu.Accounts {
			if a.MaxSessions > 0 {
				return true
			}
		}
	}
	return false
}
