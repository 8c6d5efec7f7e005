package maps

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac/policy"
)

// The rules that name accounts, in two tries of each slot: source
// prefixes (IPv4-mapped) in the accounts tries, and the authentication
// rules (docs/design.md, "Authentication rules") in the user_accounts
// tries, a cli or called prefix keyed by its kind and its bytes (struct
// cac_user_key). writePolicy reads those of the slot in force, empties
// and fills those of the other, and empties user_scratch.

// userKey is the trie key of a rule of kind for the prefix user.
func userKey(kind policy.RuleKind, user string) bpf.XdpCacUserKey {
	k := bpf.XdpCacUserKey{Prefixlen: uint32(8 * (1 + len(user)))}
	k.Data[0] = uint8(kind)
	copy(k.Data[1:], user)
	return k
}

// ruleOfKey is the rule a trie key holds.
func ruleOfKey(k bpf.XdpCacUserKey) policy.Rule {
	n := min(int(k.Prefixlen/8), len(k.Data)) - 1
	if n < 0 {
		n = 0
	}
	return policy.Rule{Kind: policy.RuleKind(k.Data[0]), User: string(k.Data[1 : 1+n])}
}

// readRules reads the rules of the slot in force and their indexes: the
// source prefixes (mapped) and the cli and called prefixes.
func readRules(pm PolicyMaps, slot uint32) (map[policy.Rule]policy.Index, error) {
	prefixes, err := readAccounts(pm.Accounts[slot])
	if err != nil {
		return nil, err
	}
	out := make(map[policy.Rule]policy.Index, len(prefixes))
	for p, idx := range prefixes {
		out[policy.Rule{Prefix: p}] = idx
	}
	users, err := readUserAccounts(pm.UserAccounts[slot])
	if err != nil {
		return nil, err
	}
	for r, idx := range users {
		out[r] = idx
	}
	return out, nil
}

// prefixKey is the key of a source prefix in a trie of them (struct
// cac_prefix): IPv4 mapped into IPv6 (policy.Mapped). The accounts tries
// and the access list are keyed so.
func prefixKey(p netip.Prefix) bpf.XdpCacPrefix {
	m := policy.Mapped(p)
	return bpf.XdpCacPrefix{Prefixlen: uint32(m.Bits()), Addr: m.Addr().As16()}
}

// prefixOfKey is the prefix a trie key holds, IPv4 as mapped.
func prefixOfKey(k bpf.XdpCacPrefix) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom16(k.Addr), int(k.Prefixlen))
}

// readAccounts reads a trie of account prefixes.
func readAccounts(m *ebpf.Map) (map[netip.Prefix]policy.Index, error) {
	out := map[netip.Prefix]policy.Index{}
	var key bpf.XdpCacPrefix
	var val bpf.XdpCacAccount
	it := m.Iterate()
	for it.Next(&key, &val) {
		out[prefixOfKey(key)] = policy.Index{Account: val.Account, Customer: val.Customer}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read accounts: %w", err)
	}
	return out, nil
}

// readUserAccounts reads a trie of cli and called prefixes; none from an
// attachment that has no such trie.
func readUserAccounts(m *ebpf.Map) (map[policy.Rule]policy.Index, error) {
	out := map[policy.Rule]policy.Index{}
	if m == nil {
		return out, nil
	}
	var key bpf.XdpCacUserKey
	var val bpf.XdpCacAccount
	it := m.Iterate()
	for it.Next(&key, &val) {
		out[ruleOfKey(key)] = policy.Index{Account: val.Account, Customer: val.Customer}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read authentication rules: %w", err)
	}
	return out, nil
}

// writeRules empties both tries of slot and puts the rule of every
// account in them, with its account's and its customer's index.
func writeRules(pm PolicyMaps, slot uint32, accounts []policy.Account, idx policy.Indexes) error {
	if err := clearTrie[bpf.XdpCacPrefix](pm.Accounts[slot], "accounts"); err != nil {
		return err
	}
	if err := clearTrie[bpf.XdpCacUserKey](pm.UserAccounts[slot], "authentication rules"); err != nil {
		return err
	}
	for i, a := range accounts {
		val := bpf.XdpCacAccount{Account: idx.Accounts[i], Customer: idx.Customers[a.Customer]}
		if err := writeRule(pm, slot, a, &val); err != nil {
			return err
		}
	}
	return nil
}

// writeRule puts account a's rule into the trie of slot.
func writeRule(pm PolicyMaps, slot uint32, a policy.Account, val *bpf.XdpCacAccount) error {
	if a.Kind == policy.RuleSource {
		key := prefixKey(a.Prefix)
		if err := pm.Accounts[slot].Update(&key, val, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("write account %s: %w", a.Prefix, err)
		}
		return nil
	}
	if pm.UserAccounts[slot] == nil {
		return fmt.Errorf("account %s: this attachment has no tries of authentication rules (it predates them): attach again", a.Rule())
	}
	key := userKey(a.Kind, a.User)
	if err := pm.UserAccounts[slot].Update(&key, val, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("write account %s: %w", a.Rule(), err)
	}
	return nil
}

// clearTrie empties a trie of rules keyed by K, what it holds named in
// its errors; a missing trie (an attachment that predates it) is empty.
func clearTrie[K any](m *ebpf.Map, what string) error {
	if m == nil {
		return nil
	}
	var keys []K
	var key K
	var val bpf.XdpCacAccount
	it := m.Iterate()
	for it.Next(&key, &val) {
		keys = append(keys, key)
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	for _, k := range keys {
		if err := m.Delete(&k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("clear %s: %w", what, err)
		}
	}
	return nil
}

// clearUserScratch empties every CPU's user_scratch (bpf/sip_user.h):
// the reject records of SIP requests name the rule it holds.
func clearUserScratch(m *ebpf.Map) error {
	if m == nil {
		return nil
	}
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return fmt.Errorf("clear user scratch: %w", err)
	}
	if err := m.Update(uint32(0), make([]bpf.XdpCacUserScratch, n), ebpf.UpdateAny); err != nil {
		return fmt.Errorf("clear user scratch: %w", err)
	}
	return nil
}
