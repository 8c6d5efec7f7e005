package config

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// UserMax is the longest cli or called prefix: the fast path keeps the
// first CAC_USER_MAX bytes of a URI's user (bpf/shared.h).
const UserMax = 32

// userChars are the bytes a cli or called prefix may hold: digits,
// letters and what telephone numbers and SIP users spell them with.
func userChar(c byte) bool {
	switch {
	case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		return true
	}
	switch c {
	case '+', '*', '#', '.', '_', '-':
		return true
	}
	return false
}

// userPrefix decodes a cli or called prefix: 1 to UserMax characters of
// [0-9A-Za-z+*#._-].
func (d *decoder) userPrefix(n *yaml.Node, path string, dst *string) {
	s, ok := d.scalar(n, path)
	if !ok {
		return
	}
	if len(s) == 0 || len(s) > UserMax {
		d.errorf(n, path, "must be 1 to %d characters, got %d", UserMax, len(s))
		return
	}
	for i := 0; i < len(s); i++ {
		if !userChar(s[i]) {
			d.errorf(n, path, "%q: only digits, letters and + * # . _ - may be in a prefix of a user", s)
			return
		}
	}
	*dst = s
}

// rule notes a key that names an account's rule (source, cli or called),
// for checkRules.
func (a *Account) rule(v *yaml.Node, path string) {
	if a.ruleNode == nil {
		a.ruleNode = v
		a.rulePath = path
		return
	}
	a.extraRules = append(a.extraRules, ruleKey{v, path})
}

type ruleKey struct {
	node *yaml.Node
	path string
}

// checkRules refuses an account without a rule, or with more than one:
// which of two would identify its requests is not the operator's to guess.
func (d *decoder) checkRules(n *yaml.Node, path string, a *Account) {
	if a.ruleNode == nil {
		d.errorf(n, join(path, "source"), "is required (or cli, or called): an account is identified by one of them")
		return
	}
	for _, k := range a.extraRules {
		d.errorf(k.node, k.path, "an account has one of source, cli and called; this one also has %s", a.rulePath[len(path)+1:])
	}
}

// checkUserRules refuses a cli (or called) prefix that two accounts have:
// nested prefixes are fine, the longest wins, but the same one twice would
// leave the account to chance.
func (d *decoder) checkUserRules(c *Config) {
	seen := map[string]string{}
	for i, cu := range c.Customers {
		for j, a := range cu.Accounts {
			key, value := "", ""
			switch {
			case a.CLI != "":
				key, value = "cli", a.CLI
			case a.Called != "":
				key, value = "called", a.Called
			default:
				continue
			}
			path := fmt.Sprintf("customers[%d].accounts[%d].%s", i, j, key)
			if other, ok := seen[key+" "+value]; ok {
				d.errorf(a.ruleNode, path, "%s %s belongs to two accounts: %s and %s", key, value, other, a.Name)
				continue
			}
			seen[key+" "+value] = a.Name
		}
	}
}
