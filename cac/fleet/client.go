package fleet

import (
	"context"
	"crypto/tls"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed gcra.lua
var gcraLua string

//go:embed members.lua
var membersLua string

// DefaultStaleness is how long a box that has not renewed a lease still
// counts as a member of its fleet when Options.Staleness is zero.
const DefaultStaleness = 30 * time.Second

// Options say which fleet a Client works for and where its Redis is.
type Options struct {
	// Fleet names the fleet; its keys share the hash tag {Fleet}.
	Fleet string
	// Addresses are host:port of Redis, of the Cluster's nodes (two or
	// more), or of the Sentinels (with MasterName). One address that is a
	// unix socket, "unix:/path/redis.sock" or "/path/redis.sock", is
	// dialled as such.
	Addresses []string
	// MasterName is the Sentinel master's name: set, Addresses are
	// Sentinels.
	MasterName string
	Username   string
	Password   string
	// SentinelUsername and SentinelPassword authenticate to the Sentinels
	// (with MasterName).
	SentinelUsername, SentinelPassword string
	DB                                 int
	TLS                                *tls.Config
	// Staleness is how long a box that has not renewed a lease still counts
	// as a member; zero is DefaultStaleness.
	Staleness time.Duration
	// Timeout bounds dialling, each read and write, and the wait for a
	// pooled connection; zero is go-redis's defaults. A request's context
	// bounds it too: a hung Redis holds no renewal past its deadline.
	Timeout time.Duration
	// WaitReplicas makes each grant wait until that many replicas have
	// it (Redis's WAIT), for at most half of Timeout: a grant fewer
	// acknowledged is not spent, so a failover to a replica loses no
	// grant that was. Not with a Cluster.
	WaitReplicas int
}

// Client asks Redis for leases on the limits of one fleet. It is safe for
// concurrent use.
type Client struct {
	rdb        redis.UniversalClient
	fleet      string
	membersKey string
	staleness  time.Duration
	// sentinels names the master in force; nil without Sentinels.
	sentinels *sentinels
	// probe finds out when an unreachable Redis answers again.
	probe *prober
	// waitReplicas and waitFor are Options.WaitReplicas and how long a
	// grant waits for them.
	waitReplicas int
	waitFor      time.Duration
	// The scripts are sent by SHA (EVALSHA), and in full only when Redis
	// does not have them (NOSCRIPT), which also loads them for next time.
	gcra    *redis.Script
	members *redis.Script
}

// Grant is the answer to one lease request.
type Grant struct {
	// Tokens granted, 0 to want: the box may admit so many calls.
	Tokens int64
	// Members is the number of boxes that renewed within the staleness,
	// this one included.
	Members int
	// ServerTime is Redis's clock when it granted them.
	ServerTime time.Time
	// RTT is the time the request took, seen from the box.
	RTT time.Duration
	// Returned is the tokens given back that the fleet took again:
	// those past a full bucket are not.
	Returned int64
}

// Member is a box of the fleet and when it last renewed a lease, on Redis's
// clock.
type Member struct {
	Box         string
	LastRenewal time.Time
}

// New returns a Client for o. It does not dial: the first request does.
func New(o Options) (*Client, error) {
	if err := checkName("fleet", o.Fleet); err != nil {
		return nil, err
	}
	if len(o.Addresses) == 0 {
		return nil, fmt.Errorf("fleet %q: no Redis address", o.Fleet)
	}
	for _, a := range o.Addresses {
		if a == "" {
			return nil, fmt.Errorf("fleet %q: empty Redis address", o.Fleet)
		}
	}
	if o.Staleness < 0 {
		return nil, fmt.Errorf("fleet %q: staleness %v is negative", o.Fleet, o.Staleness)
	}
	if o.Staleness > 0 && o.Staleness < time.Microsecond {
		return nil, fmt.Errorf("fleet %q: staleness %v is under a microsecond", o.Fleet, o.Staleness)
	}
	staleness := o.Staleness
	if staleness == 0 {
		staleness = DefaultStaleness
	}
	if o.WaitReplicas < 0 {
		return nil, fmt.Errorf("fleet %q: wait for %d replicas: a count of 0 or more", o.Fleet, o.WaitReplicas)
	}
	if o.WaitReplicas > 0 && len(o.Addresses) > 1 && o.MasterName == "" {
		return nil, fmt.Errorf("fleet %q: wait-replicas is for one Redis or a Sentinel-watched master, not a Cluster", o.Fleet)
	}
	waitFor := max(time.Millisecond, o.Timeout/2)
	if o.Timeout == 0 {
		waitFor = time.Second
	}
	rdb, err := dial(o)
	if err != nil {
		return nil, fmt.Errorf("fleet %q: %w", o.Fleet, err)
	}
	return &Client{
		rdb:          rdb,
		fleet:        o.Fleet,
		membersKey:   membersKey(o.Fleet),
		staleness:    staleness,
		sentinels:    newSentinels(o),
		probe:        newProber(o, max(10*time.Millisecond, o.Timeout)),
		waitReplicas: o.WaitReplicas,
		waitFor:      waitFor,
		gcra:         redis.NewScript(gcraLua),
		members:      redis.NewScript(membersLua),
	}, nil
}

// dial builds the client for o's addresses; go-redis dials lazily.
func dial(o Options) (redis.UniversalClient, error) {
	if len(o.Addresses) == 1 && o.MasterName == "" {
		if path, ok := unixPath(o.Addresses[0]); ok {
			if path == "" {
				return nil, fmt.Errorf("address %q: no socket path", o.Addresses[0])
			}
			// A UniversalClient takes no network: a socket needs the
			// plain client.
			return redis.NewClient(&redis.Options{
				Network:   "unix",
				Addr:      path,
				Username:  o.Username,
				Password:  o.Password,
				DB:        o.DB,
				TLSConfig: o.TLS,
				// Never again: see below.
				MaxRetries:            -1,
				ContextTimeoutEnabled: true,
				DialTimeout:           o.Timeout,
				ReadTimeout:           o.Timeout,
				WriteTimeout:          o.Timeout,
				PoolTimeout:           o.Timeout,
			}), nil
		}
	}
	for _, a := range o.Addresses {
		if _, ok := unixPath(a); ok {
			return nil, fmt.Errorf("unix socket %q: only as the one address of a single Redis", a)
		}
	}
	if len(o.Addresses) > 1 && o.MasterName == "" && o.DB != 0 {
		return nil, fmt.Errorf("db %d: a Redis Cluster has only db 0", o.DB)
	}
	return redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs:            o.Addresses,
		MasterName:       o.MasterName,
		Username:         o.Username,
		Password:         o.Password,
		SentinelUsername: o.SentinelUsername,
		SentinelPassword: o.SentinelPassword,
		DB:               o.DB,
		TLSConfig:        o.TLS,
		// A script that timed out may have run: sent again, it would
		// give the same tokens back twice, and the fleet would admit
		// more than its bound. A failed request is the keeper's to judge.
		// A Cluster client retries on a broken connection up to
		// MaxRedirects whatever MaxRetries says: none either. A MOVED
		// reply (the script did not run) then fails the request too, and
		// go-redis reloads the slots for the next renewal.
		MaxRetries:   -1,
		MaxRedirects: -1,
		// Without it go-redis ignores a context's deadline and waits out
		// its own timeouts: a hung Redis held a renewal for seconds.
		ContextTimeoutEnabled: true,
		DialTimeout:           o.Timeout,
		ReadTimeout:           o.Timeout,
		WriteTimeout:          o.Timeout,
		PoolTimeout:           o.Timeout,
	}), nil
}

// unixPath returns the socket path of a unix address, and whether addr is
// one.
func unixPath(addr string) (string, bool) {
	if p, ok := strings.CutPrefix(addr, "unix:"); ok {
		return p, true
	}
	return addr, strings.HasPrefix(addr, "/")
}

// The keys of one fleet share the hash tag {fleet}: Redis Cluster hashes
// only what is between the braces, so they land in one slot, and the script
// may touch them in one call.
func tatKey(fleet, limit string) string { return "xdpcac:{" + fleet + "}:tat:" + limit }
func membersKey(fleet string) string    { return "xdpcac:{" + fleet + "}:members" }

// Grant asks for up to want tokens of limit l for box, and returns how many
// Redis granted: as many as conform to l over the whole fleet, possibly none.
func (c *Client) Grant(ctx context.Context, box string, l Limit, want int64) (Grant, error) {
	return c.Renew(ctx, box, l, want, 0)
}

// Renew is Grant that first gives back tokens the box took out of its
// lease unspent (back), in the same call: the fleet may grant them again.
// want may be 0 when back is not.
func (c *Client) Renew(ctx context.Context, box string, l Limit, want, back int64) (Grant, error) {
	interval, tolerance, err := l.Micros()
	if err != nil {
		return Grant{}, fmt.Errorf("fleet %q: grant: %w", c.fleet, err)
	}
	if box == "" {
		return Grant{}, fmt.Errorf("fleet %q: grant %q: box name is empty", c.fleet, l.Name)
	}
	if want < 0 || back < 0 || want+back < 1 {
		return Grant{}, fmt.Errorf("fleet %q: grant %q: want %d, back %d: want at least one token, or give one back", c.fleet, l.Name, want, back)
	}
	keys := []string{tatKey(c.fleet, l.Name), c.membersKey}
	args := []any{interval, tolerance, want, box, c.staleness.Microseconds(), back}
	start := time.Now()
	var res []int64
	if c.waitReplicas > 0 {
		res, err = c.grantAcked(ctx, keys, args)
	} else {
		res, err = c.gcra.Run(ctx, c.rdb, keys, args...).Int64Slice()
	}
	rtt := time.Since(start)
	if errors.Is(err, ErrNotReplicated) && len(res) == 5 {
		// The script ran: its count of boxes stands, its tokens do not.
		return Grant{Members: int(res[1]), ServerTime: time.UnixMicro(res[2]), RTT: rtt},
			fmt.Errorf("fleet %q: grant %q for box %q: %w", c.fleet, l.Name, box, err)
	}
	if err != nil {
		return Grant{}, fmt.Errorf("fleet %q: grant %q for box %q: %w", c.fleet, l.Name, box, err)
	}
	if len(res) != 5 {
		return Grant{}, fmt.Errorf("fleet %q: grant %q for box %q: script returned %d values, want 5", c.fleet, l.Name, box, len(res))
	}
	if res[0] < 0 || res[0] > want {
		return Grant{}, fmt.Errorf("fleet %q: grant %q for box %q: script granted %d of %d", c.fleet, l.Name, box, res[0], want)
	}
	return Grant{
		Tokens:     res[0],
		Members:    int(res[1]),
		ServerTime: time.UnixMicro(res[2]),
		RTT:        rtt,
		Returned:   res[4],
	}, nil
}

// ErrNotReplicated is a grant fewer replicas had than wait-replicas asks:
// its tokens are not spent, but the script ran, and the Grant that comes
// with it counts the fleet's boxes.
var ErrNotReplicated = errors.New("not on enough replicas")

// grantAcked runs the script and then WAIT on the same connection: the
// grant counts only once waitReplicas replicas have it. A NOSCRIPT
// answer, after which nothing ran, loads the script and asks again, once.
func (c *Client) grantAcked(ctx context.Context, keys []string, args []any) ([]int64, error) {
	for loaded := false; ; loaded = true {
		pipe := c.rdb.Pipeline()
		ev := c.gcra.EvalSha(ctx, pipe, keys, args...)
		acks := pipe.Do(ctx, "wait", c.waitReplicas, c.waitFor.Milliseconds())
		_, err := pipe.Exec(ctx)
		if !loaded && redis.HasErrorPrefix(ev.Err(), "NOSCRIPT") {
			if err := c.gcra.Load(ctx, c.rdb).Err(); err != nil {
				return nil, fmt.Errorf("load the script: %w", err)
			}
			continue
		}
		res, eerr := ev.Int64Slice()
		if eerr != nil {
			return nil, eerr
		}
		if err != nil {
			return nil, err
		}
		n, err := acks.Int64()
		if err != nil {
			return nil, fmt.Errorf("wait for %d replicas: %w", c.waitReplicas, err)
		}
		if n < int64(c.waitReplicas) {
			return res, fmt.Errorf("%d of the %d replicas asked for had the grant within %v: its %d tokens are not spent: %w",
				n, c.waitReplicas, c.waitFor, res[0], ErrNotReplicated)
		}
		return res, nil
	}
}

// Members returns the boxes that renewed a lease within the staleness,
// newest first. Boxes that went silent for longer are left out even before
// a grant prunes them.
func (c *Client) Members(ctx context.Context) ([]Member, error) {
	res, err := c.members.Run(ctx, c.rdb, []string{c.membersKey}, c.staleness.Microseconds()).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("fleet %q: members: %w", c.fleet, err)
	}
	if len(res)%2 != 0 {
		return nil, fmt.Errorf("fleet %q: members: script returned %d values, want pairs", c.fleet, len(res))
	}
	members := make([]Member, 0, len(res)/2)
	for i := 0; i < len(res); i += 2 {
		// Scores are doubles to Redis, which may write them with an
		// exponent; whole microseconds below 2^53 come back exact.
		us, err := strconv.ParseFloat(res[i+1], 64)
		if err != nil {
			return nil, fmt.Errorf("fleet %q: members: box %q: renewal %q: %w", c.fleet, res[i], res[i+1], err)
		}
		members = append(members, Member{Box: res[i], LastRenewal: time.UnixMicro(int64(us))})
	}
	return members, nil
}

// Master is the address of the master the Sentinels name now; "" when
// the fleet's Redis is not Sentinel-watched.
func (c *Client) Master(ctx context.Context) (string, error) {
	if c.sentinels == nil {
		return "", nil
	}
	a, err := c.sentinels.master(ctx)
	if err != nil {
		return "", fmt.Errorf("fleet %q: %w", c.fleet, err)
	}
	return a, nil
}

// Reachable reports whether Redis has answered a PING since the keeper
// held it unreachable (prober): a renewal may go again. Else the error
// is why the last PING failed, nil while one waits.
func (c *Client) Reachable() (bool, error) {
	ok, err := c.probe.reachable()
	if err != nil {
		err = fmt.Errorf("fleet %q: %w", c.fleet, err)
	}
	return ok, err
}

// Close closes the connections to Redis and its Sentinels.
func (c *Client) Close() error {
	err := errors.Join(c.rdb.Close(), c.probe.close())
	if c.sentinels != nil {
		err = errors.Join(err, c.sentinels.close())
	}
	if err != nil {
		return fmt.Errorf("fleet %q: close: %w", c.fleet, err)
	}
	return nil
}
