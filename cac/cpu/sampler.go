package cpu

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

const tick = time.Second / userHZ

// Options point the Sampler at its inputs; the zero value reads the real
// machine.
type Options struct {
	ProcRoot   string           // default "/proc"
	CgroupRoot string           // the cgroup2 mount; default: found by Cgroup2Root
	Now        func() time.Time // wall clock of process and cgroup sources; default time.Now
}

// Reading is the CPU time of a source accumulated since its Sampler was
// made. Busy is work that counts towards Pcpu, Total the capacity it is a
// share of. Only differences between two readings of one Sampler mean
// anything.
type Reading struct {
	At          time.Time
	Busy, Total time.Duration
}

// Sampler reads cumulative CPU time of a source. It is safe for concurrent
// use.
type Sampler struct {
	src        Source
	procRoot   string
	cgroupRoot string
	now        func() time.Time

	mu sync.Mutex
	// system: the counters at NewSampler, so that readings start near 0
	// instead of at the machine's whole uptime.
	base procStat
	// process and cgroup: what was last read, and the sums kept from it.
	lastAt   time.Time
	lastPids map[pidKey]uint64
	lastUsec uint64
	busy     time.Duration
	total    time.Duration
}

// NewSampler checks that the source can be read and takes the starting
// point of its readings. It fails if /proc/stat or the cgroup's cpu.stat
// cannot be read; a process name no process has yet is not an error, it
// reads 0 busy until one appears.
func NewSampler(src Source, opt Options) (*Sampler, error) {
	if _, err := ParseSource(src.String()); err != nil {
		return nil, err
	}
	s := &Sampler{
		src:        src,
		procRoot:   opt.ProcRoot,
		cgroupRoot: opt.CgroupRoot,
		now:        opt.Now,
	}
	if s.procRoot == "" {
		s.procRoot = "/proc"
	}
	if s.cgroupRoot == "" {
		s.cgroupRoot = Cgroup2Root()
	}
	if s.now == nil {
		s.now = time.Now
	}
	st, err := readProcStat(s.procRoot)
	if err != nil {
		return nil, err
	}
	s.base = st
	s.lastAt = s.now()
	switch src.Kind {
	case KindProcess:
		if s.lastPids, err = scanProcs(s.procRoot, src.Name); err != nil {
			return nil, err
		}
	case KindCgroup:
		dir := filepath.Join(s.cgroupRoot, src.Name)
		if fi, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("cgroup %s: %w", dir, err)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("cgroup %s: not a directory", dir)
		}
		if s.lastUsec, err = readCgroupUsec(s.cgroupRoot, src.Name); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Source is what the Sampler reads.
func (s *Sampler) Source() Source { return s.src }

// Sample reads the source once.
func (s *Sampler) Sample() (Reading, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	st, err := readProcStat(s.procRoot)
	if err != nil {
		return Reading{}, err
	}
	if s.src.Kind == KindSystem {
		// Unsigned wrap-around keeps differences right even if a counter
		// dips below the base; Percent then clamps.
		return Reading{
			At:    now,
			Busy:  ticks(st.busy - s.base.busy),
			Total: ticks(st.total - s.base.total),
		}, nil
	}

	var add time.Duration
	switch s.src.Kind {
	case KindProcess:
		pids, err := scanProcs(s.procRoot, s.src.Name)
		if err != nil {
			return Reading{}, err
		}
		for k, t := range pids {
			// A process new since the last sample brings all its time:
			// children start at 0, so that is time spent since then. A
			// process that left takes nothing away; what it did since the
			// last sample is lost with it.
			if old, ok := s.lastPids[k]; ok {
				t = max(t, old) - old
			}
			add += ticks(t)
		}
		s.lastPids = pids
	case KindCgroup:
		u, err := readCgroupUsec(s.cgroupRoot, s.src.Name)
		if err != nil {
			return Reading{}, err
		}
		// A cgroup removed and made again starts from 0: count nothing
		// for that interval rather than a negative.
		add = time.Duration(max(u, s.lastUsec)-s.lastUsec) * time.Microsecond
		s.lastUsec = u
	}
	s.busy += add
	// CPUs are counted at every sample so that hot-plugging one changes
	// the capacity from then on, not in hindsight.
	if el := now.Sub(s.lastAt); el > 0 {
		s.total += el * time.Duration(st.cpus)
		s.lastAt = now
	}
	return Reading{At: now, Busy: s.busy, Total: s.total}, nil
}

func ticks(n uint64) time.Duration { return time.Duration(n * uint64(tick)) }

// Percent is 100 × Δbusy / Δtotal from one reading to a later one, clamped
// to [0, 100]; 0 when Δtotal is not positive.
func Percent(from, to Reading) float64 {
	db, dt := to.Busy-from.Busy, to.Total-from.Total
	if dt <= 0 || db <= 0 {
		return 0
	}
	return min(100, 100*float64(db)/float64(dt))
}

// LoadCharge is Cisco's load charge, (Pcpu + 95) × multiplier / 200: at
// multiplier 100 an idle box charges 47.5 and a saturated one 97.5.
func LoadCharge(pcpu float64, multiplier uint32) float64 {
	return (pcpu + 95) * float64(multiplier) / 200
}

// Cgroup2Root is where cgroup2 is mounted: /sys/fs/cgroup on a unified
// system, /sys/fs/cgroup/unified on systemd's hybrid layout, whose cgroup2
// tree still has every cgroup's cpu.stat.
func Cgroup2Root() string {
	for _, r := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		if _, err := os.Stat(filepath.Join(r, "cgroup.controllers")); err == nil {
			return r
		}
	}
	return "/sys/fs/cgroup"
}
