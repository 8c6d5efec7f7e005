package maps

import (
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac/bucket"
	"github.com/xdpcac/xdpcac/cac/policy"
)

// AccountTokens is how many calls an account prefix's bucket and its
// customer's hold, as the slot in force limits them.
type AccountTokens struct {
	// Prefix is a source account's source as the trie holds it: an IPv4
	// prefix is mapped into IPv6 (policy.Mapped).
	Prefix netip.Prefix
	// Rule is what identifies the account: its mapped Prefix, or a cli or
	// called prefix (docs/design.md, "Authentication rules").
	Rule policy.Rule
	// Customer is the index of the customer's bucket, shared by all of
	// its accounts.
	Customer uint32
	// Limited is false for an account without a rate of its own, whose
	// Tokens and Burst are then 0; likewise CustomerLimited.
	Limited, CustomerLimited      bool
	Tokens, Burst                 float64
	CustomerTokens, CustomerBurst float64
	// Sessions and CustomerSessions: max-sessions of the account and
	// its customer, and the sessions their dialogs hold.
	Sessions, CustomerSessions SessionsInForce
}

// ReadAccountTokens reads every account of the slot in force (source,
// cli and called ones) and its
// customer's bucket at monotonic time now. There are at most
// policy.MaxAccounts of them: the trie holds no more.
func ReadAccountTokens(pm PolicyMaps, now uint64) ([]AccountTokens, error) {
	var word uint32
	if err := pm.Slot.Lookup(uint32(0), &word); err != nil {
		return nil, fmt.Errorf("read policy slot: %w", err)
	}
	slot := wordSlot(word)
	accounts, err := readRules(pm, slot)
	if err != nil {
		return nil, err
	}
	out := make([]AccountTokens, 0, len(accounts))
	for p, idx := range accounts {
		a := AccountTokens{Prefix: p.Prefix, Rule: p, Customer: idx.Customer}
		if a.Limited, a.Tokens, a.Burst, err = tokensAt(pm.AccountLimits, pm.AccountBuckets,
			slot*policy.MaxAccounts+idx.Account, idx.Account, now); err != nil {
			return out, fmt.Errorf("account %s: %w", p, err)
		}
		if a.CustomerLimited, a.CustomerTokens, a.CustomerBurst, err = tokensAt(pm.CustomerLimits, pm.CustomerBuckets,
			slot*policy.MaxCustomers+idx.Customer, idx.Customer, now); err != nil {
			return out, fmt.Errorf("customer of %s: %w", p, err)
		}
		if a.Sessions, err = readSessionsInForce(pm, slot, AccountSessions(idx.Account)); err != nil {
			return out, fmt.Errorf("account %s: %w", p, err)
		}
		if a.CustomerSessions, err = readSessionsInForce(pm, slot, CustomerSessions(idx.Customer)); err != nil {
			return out, fmt.Errorf("customer of %s: %w", p, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// tokensAt reads the limit at index limit and the bucket at index b;
// a limit without a rate limits nothing and holds no tokens.
func tokensAt(limits, buckets *ebpf.Map, limit, b uint32, now uint64) (bool, float64, float64, error) {
	var l bpf.XdpCacLimit
	if err := limits.Lookup(limit, &l); err != nil {
		return false, 0, 0, fmt.Errorf("read limit: %w", err)
	}
	if l.IntervalNs == 0 {
		return false, 0, 0, nil
	}
	var bk bpf.XdpCacBucket
	if err := buckets.Lookup(b, &bk); err != nil {
		return false, 0, 0, fmt.Errorf("read bucket: %w", err)
	}
	tokens, burst := bucket.Bucket{TATNS: bk.TatNs}.Tokens(bucket.Limit{IntervalNS: l.IntervalNs, ToleranceNS: l.ToleranceNs}, now)
	return true, tokens, burst, nil
}
