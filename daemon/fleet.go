package daemon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/cac/fleet"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// fleetRunner renews the leases of the fleet-scope levels (docs/design.md,
// "Fleet"). It outlives reloads: a limit kept keeps its lease, and only a
// change of the fleet block makes a new connection to Redis.
type fleetRunner struct {
	log      *slog.Logger
	stateDir string
	room     *room // configure's outcome; the keeper's state is the view's

	mu      sync.Mutex
	cfg     *config.Fleet // in force; nil: no fleet
	box     string
	client  *fleet.Client
	keeper  *fleet.Keeper
	leases  leasePool
	pinned  *loader.Pinned
	cancel  context.CancelFunc
	stopped chan struct{}
	// members is what Redis last said of the fleet's boxes, asked apart
	// from the renewals (watchMembers).
	members fleetMembers
}

func newFleetRunner(log *slog.Logger, stateDir string) *fleetRunner {
	return &fleetRunner{log: log, stateDir: stateDir, room: newRoom("fleet")}
}

// configure puts the fleet of cfg in force with the policy p that was
// just written: its limits' leases are found in the maps in force.
func (r *fleetRunner) configure(ctx context.Context, cfg *config.Config, p policy.Policy) error {
	err := r.configureLeases(ctx, cfg, p)
	switch {
	case err != nil:
		r.room.fail(err)
	case cfg.Fleet == nil:
		r.room.off()
	default:
		r.room.running()
	}
	return err
}

func (r *fleetRunner) configureLeases(ctx context.Context, cfg *config.Config, p policy.Policy) error {
	if cfg.Fleet == nil {
		r.stop()
		return nil
	}
	r.mu.Lock()
	same := r.keeper != nil && reflect.DeepEqual(r.cfg, cfg.Fleet)
	r.mu.Unlock()
	if !same {
		r.stop()
		if err := r.start(ctx, cfg.Fleet); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	inForce, err := maps.LeasesInForce(maps.PolicyMapsOf(&r.pinned.XdpMaps), p)
	if err != nil {
		return fmt.Errorf("fleet: leases in force: %w", err)
	}
	var limits []fleet.Limit
	var leases []uint32
	for i, f := range p.Fleet {
		if lease, ok := inForce[i]; ok {
			limits = append(limits, fleet.Limit{Name: f.Name, CPS: f.CPS, Burst: f.Burst})
			leases = append(leases, lease)
		}
	}
	r.keeper.SetLimits(limits, leases)
	r.log.Info("fleet limits in force", "fleet", r.cfg.Name, "member", r.box, "limits", len(limits))
	return nil
}

// start connects to the fleet's Redis and starts renewing.
func (r *fleetRunner) start(ctx context.Context, f *config.Fleet) error {
	o, err := redisOptions(f)
	if err != nil {
		return err
	}
	box := f.Member
	if box == "" {
		if box, err = os.Hostname(); err != nil {
			return fmt.Errorf("fleet %s: this box's name (set fleet.member): %w", f.Name, err)
		}
	}
	client, err := fleet.New(o)
	if err != nil {
		return err
	}
	pinned, err := loader.OpenShared(r.stateDir)
	if err != nil {
		client.Close()
		return fmt.Errorf("fleet %s: %w", f.Name, err)
	}
	if pinned.Leases == nil {
		pinned.Close()
		client.Close()
		return fmt.Errorf("fleet %s: the attachment in force has no leases map: attach it again with this version", f.Name)
	}
	mapped, err := maps.MapLeases(pinned.Leases)
	if err != nil {
		pinned.Close()
		client.Close()
		return fmt.Errorf("fleet %s: %w", f.Name, err)
	}
	kcfg := fleet.KeeperConfig{
		Box: box, Lifetime: f.Lease.Lifetime, Renew: f.Lease.Renew,
		LostAfter: f.LostAfter, OnLost: fleet.OnLost(f.OnFleetLost),
		Members: loadFleetSize(api.PathsOf(r.stateDir).Fleet, f.Name),
	}
	leases := leasePool{mapped}
	k := fleet.NewKeeper(kcfg, client, leases, time.Now())
	fctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	r.mu.Lock()
	r.cfg, r.box, r.client, r.keeper, r.leases, r.pinned = f, box, client, k, leases, pinned
	r.cancel, r.stopped, r.members = cancel, stopped, fleetMembers{}
	r.mu.Unlock()
	go r.renew(fctx, k, client, stopped)
	return nil
}

// fleetLogEvery is how often the log says what each lease was granted,
// spent and lost.
const fleetLogEvery = 10 * time.Second

// renew steps the keeper at each renewal it draws (Keeper.NextRenewal)
// until ctx ends, and asks client for the members beside it.
func (r *fleetRunner) renew(ctx context.Context, k *fleet.Keeper, client *fleet.Client, stopped chan struct{}) {
	defer close(stopped)
	members := make(chan struct{})
	go r.watchMembers(ctx, client, members)
	defer func() { <-members }()
	t := time.NewTimer(time.Until(k.NextRenewal(time.Now())))
	defer t.Stop()
	var was fleet.State
	saved := k.Status().Members // as loaded
	lastLog := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			// The keeper asks Redis without r.mu or its own lock held:
			// show fleet and the scrapes read it meanwhile.
			r.mu.Lock()
			leases := r.leases
			r.mu.Unlock()
			k.Step(ctx, now)
			t.Reset(time.Until(k.NextRenewal(now))) // from the step's start: Renew apart on average
			st := k.Status()
			if now.Sub(lastLog) >= fleetLogEvery {
				lastLog = now
				k.Read(func(_ fleet.Status, hs []*fleet.Holder) {
					for _, h := range hs {
						r.log.Info("fleet lease", "limit", h.Limit.Name, "granted", h.Granted, "spent", h.Spent(leases),
							"expired", h.Expired, "returned", h.Returned, "holds", leases.Tokens(h.Lease), "demand", h.Demand)
					}
				})
			}
			if st.State != was {
				r.log.Warn("fleet state", "state", st.State, "was", was, "members", st.Members, "err", st.Err)
				was = st.State
			}
			if st.Members != saved {
				r.saveFleetSize(st.Members)
				saved = st.Members
			}
		}
	}
}

// leasePool is the leases map as the keeper's fleet.Pool: a grant's
// expiry, a time of this box's wall clock, goes into the map on the fast
// path's clock, which it spends the lease's tokens until.
type leasePool struct{ *maps.Leases }

// Grant adds n tokens to lease i, to be spent until expires.
func (p leasePool) Grant(i uint32, n int64, expires time.Time) {
	p.Leases.Grant(i, n, control.MonotonicCoarse()+uint64(max(0, time.Until(expires))))
}

// fleetSize is what the daemon keeps of its fleet across restarts
// (api.Paths.Fleet): how many boxes it last counted.
type fleetSize struct {
	Fleet   string `json:"fleet"`
	Members int    `json:"members"`
}

// loadFleetSize is the number of boxes the fleet name last counted, as a
// daemon before this one kept it; 0 when none did, or of another fleet.
// A box started while Redis is unreachable divides the rate by it, where
// one that knew nothing gave each box the whole fleet's.
func loadFleetSize(path, name string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var fs fleetSize
	if json.Unmarshal(b, &fs) != nil || fs.Fleet != name || fs.Members < 1 {
		return 0
	}
	return fs.Members
}

// saveFleetSize keeps n as the fleet's last count of boxes.
func (r *fleetRunner) saveFleetSize(n int) {
	r.mu.Lock()
	name := ""
	if r.cfg != nil {
		name = r.cfg.Name
	}
	r.mu.Unlock()
	b, err := json.Marshal(fleetSize{Fleet: name, Members: n})
	if err == nil {
		err = writeOwn(api.PathsOf(r.stateDir).Fleet, b)
	}
	if err != nil {
		r.log.Warn("keep the fleet's number of boxes", "err", err)
	}
}

// stop ends the renewals and takes back what the leases hold: no level
// spends a lease no one renews.
func (r *fleetRunner) stop() {
	r.mu.Lock()
	cancel, stopped := r.cancel, r.stopped
	r.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-stopped
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keeper.DrainAll()
	r.leases.Close()
	r.pinned.Close()
	r.client.Close()
	r.cfg, r.keeper, r.leases, r.pinned, r.client, r.cancel, r.stopped = nil, nil, leasePool{}, nil, nil, nil, nil
}

// redisOptions are the client options of a fleet block: its passwords
// read from their files, its TLS with its CA and client certificate.
func redisOptions(f *config.Fleet) (fleet.Options, error) {
	o := fleet.Options{
		Fleet: f.Name, Addresses: f.Redis.Addresses, MasterName: f.Redis.MasterName,
		Username: f.Redis.Username, SentinelUsername: f.Redis.SentinelUsername, DB: f.Redis.DB,
		WaitReplicas: f.Redis.WaitReplicas,
		// A box that has not renewed for ten lease lifetimes is gone:
		// local divides the rate among the others.
		Staleness: 10 * f.Lease.Lifetime,
		// A renewal is over by the next: a Redis that does not answer
		// within one is unreachable, and lost after lost-after.
		Timeout: f.Lease.Renew,
	}
	var err error
	if o.Password, err = readSecret(f.Redis.PasswordFile); err != nil {
		return o, fmt.Errorf("fleet %s: redis password: %w", f.Name, err)
	}
	if o.SentinelPassword, err = readSecret(f.Redis.SentinelPasswordFile); err != nil {
		return o, fmt.Errorf("fleet %s: sentinel password: %w", f.Name, err)
	}
	if t := f.Redis.TLS; t != nil {
		// ServerName empty: crypto/tls verifies each address by its own
		// host, a Sentinel by its name and the master it names by its.
		o.TLS = &tls.Config{ServerName: t.ServerName, MinVersion: tls.VersionTLS12}
		if t.CAFile != "" {
			pem, err := os.ReadFile(t.CAFile)
			if err != nil {
				return o, fmt.Errorf("fleet %s: redis tls: %w", f.Name, err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return o, fmt.Errorf("fleet %s: redis tls: %s holds no PEM certificate", f.Name, t.CAFile)
			}
			o.TLS.RootCAs = pool
		}
		if t.CertFile != "" {
			cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
			if err != nil {
				return o, fmt.Errorf("fleet %s: redis tls client certificate %s: %w", f.Name, t.CertFile, err)
			}
			o.TLS.Certificates = []tls.Certificate{cert}
		}
	}
	return o, nil
}

// readSecret is what the file at path holds, without the line end it
// ends with; "" for no path.
func readSecret(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}
