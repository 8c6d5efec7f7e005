package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/redis/go-redis/v9"
)

// sentinels asks the Sentinels of a Sentinel-watched master which master
// is in force, for show fleet: go-redis's failover client follows the
// master without saying which it follows.
type sentinels struct {
	name    string
	clients []*redis.SentinelClient
}

// newSentinels returns the Sentinels of o, nil unless o.MasterName is
// set. It dials none: the first question does.
func newSentinels(o Options) *sentinels {
	if o.MasterName == "" {
		return nil
	}
	s := &sentinels{name: o.MasterName}
	for _, a := range o.Addresses {
		s.clients = append(s.clients, redis.NewSentinelClient(&redis.Options{
			Addr: a, Username: o.SentinelUsername, Password: o.SentinelPassword, TLSConfig: o.TLS,
			MaxRetries: -1, ContextTimeoutEnabled: true,
			DialTimeout: o.Timeout, ReadTimeout: o.Timeout, WriteTimeout: o.Timeout, PoolTimeout: o.Timeout,
		}))
	}
	return s
}

// master is the address of the master the first Sentinel that answers
// names.
func (s *sentinels) master(ctx context.Context) (string, error) {
	var errs []error
	for _, c := range s.clients {
		a, err := c.GetMasterAddrByName(ctx, s.name).Result()
		if err == nil && len(a) == 2 {
			return net.JoinHostPort(a[0], a[1]), nil
		}
		if err == nil {
			err = fmt.Errorf("sentinel answered %q", a)
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return "", fmt.Errorf("master %q: no Sentinel named it: %w", s.name, errors.Join(errs...))
}

func (s *sentinels) close() error {
	var errs []error
	for _, c := range s.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
