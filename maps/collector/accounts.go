package collector

import (
	"fmt"
	"net/netip"
	"sort"
	"sync"
	"time"

	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/maps"
)

// AccountBucket is the state of one account's own bucket, and of its
// limit of concurrent sessions.
type AccountBucket struct {
	Customer, Account string
	Limited           bool // with a rate: Tokens and Burst are its bucket's
	Tokens, Burst     float64
	Sessions          maps.SessionsInForce // Max 0: no max-sessions
}

// CustomerBucket is the state of the bucket a customer's accounts share,
// and of the limit of concurrent sessions they share.
type CustomerBucket struct {
	Customer      string
	Limited       bool
	Tokens, Burst float64
	Sessions      maps.SessionsInForce
}

// AccountName is what the configuration calls an account and its
// customer.
type AccountName struct{ Account, Customer string }

// Names are the names of a configuration's accounts, by rule as the fast
// path's tries hold it (policy.Rule: a source prefix mapped, or a cli or
// called prefix). The fast path knows accounts only by rule and customers
// only by a bucket index, so the names come from the configuration in
// force.
type Names map[policy.Rule]AccountName

// NamesOf reads the names of cfg's accounts.
func NamesOf(cfg *config.Config) Names {
	n := Names{}
	for _, cu := range cfg.Customers {
		for _, a := range cu.Accounts {
			r := policy.Rule{Prefix: policy.Mapped(a.Source)}
			switch {
			case a.CLI != "":
				r = policy.Rule{Kind: policy.RuleCLI, User: a.CLI}
			case a.Called != "":
				r = policy.Rule{Kind: policy.RuleCalled, User: a.Called}
			}
			n[r] = AccountName{Account: a.Name, Customer: cu.Name}
		}
	}
	return n
}

// FileNames holds the Names of the configuration file in force, read
// once for each time a file is put in force rather than on every scrape.
type FileNames struct {
	mu     sync.Mutex
	file   string
	loaded time.Time
	names  Names
	err    error
}

// Of returns the Names of file, put in force at loaded, reading it only
// when either differs from the last call's.
func (f *FileNames) Of(file string, loaded time.Time) (Names, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if file == f.file && loaded.Equal(f.loaded) && (f.names != nil || f.err != nil) {
		return f.names, f.err
	}
	f.file, f.loaded, f.names, f.err = file, loaded, nil, nil
	cfg, err := config.Load(file)
	if err != nil {
		f.err = fmt.Errorf("names of accounts and customers: %w", err)
		return nil, f.err
	}
	f.names = NamesOf(cfg)
	return f.names, nil
}

// nameBuckets names the account and customer buckets the fast path holds;
// only those with a rate have a series. A prefix in force that names lack
// (the file changed after it was put in force) is left out, and said.
func nameBuckets(tokens []maps.AccountTokens, names Names) ([]AccountBucket, []CustomerBucket, error) {
	var accounts []AccountBucket
	var customers []CustomerBucket
	seen := map[string]bool{}
	var missing []string
	for _, t := range tokens {
		n, ok := names[t.Rule]
		if !ok {
			if t.Rule.Kind == policy.RuleSource {
				missing = append(missing, unmapped(t.Rule.Prefix).String())
			} else {
				missing = append(missing, t.Rule.String())
			}
			continue
		}
		if t.Limited || t.Sessions.Max > 0 {
			accounts = append(accounts, AccountBucket{Customer: n.Customer, Account: n.Account, Limited: t.Limited,
				Tokens: t.Tokens, Burst: t.Burst, Sessions: t.Sessions})
		}
		if (t.CustomerLimited || t.CustomerSessions.Max > 0) && !seen[n.Customer] {
			seen[n.Customer] = true
			customers = append(customers, CustomerBucket{Customer: n.Customer, Limited: t.CustomerLimited,
				Tokens: t.CustomerTokens, Burst: t.CustomerBurst, Sessions: t.CustomerSessions})
		}
	}
	sort.Slice(accounts, func(i, j int) bool { return accounts[i].Account < accounts[j].Account })
	sort.Slice(customers, func(i, j int) bool { return customers[i].Customer < customers[j].Customer })
	if len(missing) > 0 {
		sort.Strings(missing)
		return accounts, customers, fmt.Errorf("account rules in force that the configuration file does not name: %v", missing)
	}
	return accounts, customers, nil
}

func (c *Collector) collectAccounts(e *emitter, accounts []AccountBucket, customers []CustomerBucket) {
	seen := map[string]bool{}
	for _, a := range accounts {
		if seen[a.Account] {
			e.fail(fmt.Errorf("export account %q: duplicate", a.Account))
			continue
		}
		seen[a.Account] = true
		if a.Limited {
			e.emit(c.accountTokens, a.Tokens, a.Customer, a.Account)
			e.emit(c.accountBurst, a.Burst, a.Customer, a.Account)
		}
		if a.Sessions.Max > 0 {
			e.emit(c.accountSessions, float64(a.Sessions.Held), a.Customer, a.Account)
			e.emit(c.accountMaxSessions, float64(a.Sessions.Max), a.Customer, a.Account)
		}
	}
	seen = map[string]bool{}
	for _, cu := range customers {
		if seen[cu.Customer] {
			e.fail(fmt.Errorf("export customer %q: duplicate", cu.Customer))
			continue
		}
		seen[cu.Customer] = true
		if cu.Limited {
			e.emit(c.customerTokens, cu.Tokens, cu.Customer)
			e.emit(c.customerBurst, cu.Burst, cu.Customer)
		}
		if cu.Sessions.Max > 0 {
			e.emit(c.customerSessions, float64(cu.Sessions.Held), cu.Customer)
			e.emit(c.customerMaxSessions, float64(cu.Sessions.Max), cu.Customer)
		}
	}
}

// unmapped is an IPv4 prefix as the file writes it, undoing policy.Mapped.
func unmapped(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p
}
