package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/xdpcac/xdpcac/cac/cpu"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/cac/sockbuf"
	"golang.org/x/sys/unix"
)

// Loop measures and writes. Sampler, Window, Interval and Write are
// required; the rest may be left zero.
type Loop struct {
	Sampler *cpu.Sampler
	// Window spans the load lifetime: the load charge follows the CPU
	// averaged over it, the gate the last interval alone.
	Window *cpu.Window
	// Buffers watches the protected daemons' sockets; nil watches none.
	Buffers *sockbuf.Watcher
	// Multiplier of `call admission load`; 0 is no load charge.
	Multiplier uint32
	Interval   time.Duration
	// Write puts measurements in force (maps.WriteInputs).
	Write func(policy.Inputs) error
	// Clock is the fast path's clock, in ns; default CLOCK_MONOTONIC_COARSE,
	// what bpf_ktime_get_coarse_ns reads.
	Clock func() uint64
	Log   *slog.Logger
}

// FirstInterval is how long the first measurement spans at most.
const FirstInterval = 100 * time.Millisecond

// Measurement is what one step measured and wrote.
type Measurement struct {
	Inputs   policy.Inputs
	Average  float64 // Pcpu over the load lifetime, percent
	Current  float64 // Pcpu of the last interval, percent
	Load     float64 // the load charge
	Pressure sockbuf.Pressure
}

// MonotonicCoarse reads the clock the fast path reads.
func MonotonicCoarse() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC_COARSE, &ts); err != nil {
		return 0 // cannot happen on Linux; 0 reads as no heartbeat
	}
	return uint64(ts.Nano())
}

// Prime takes the first reading, which the next Step measures from.
func (l *Loop) Prime() error {
	r, err := l.Sampler.Sample()
	if err != nil {
		return fmt.Errorf("sample CPU (%v): %w", l.Sampler.Source(), err)
	}
	l.Window.Add(r)
	return nil
}

// Step measures since the last reading and writes the result. On any error it writes
// nothing: a heartbeat must only vouch for fresh measurements.
func (l *Loop) Step() (Measurement, error) {
	var m Measurement
	r, err := l.Sampler.Sample()
	if err != nil {
		return m, fmt.Errorf("sample CPU (%v): %w", l.Sampler.Source(), err)
	}
	l.Window.Add(r)
	m.Average, m.Current = l.Window.Average(), l.Window.Last()
	if l.Multiplier > 0 {
		m.Load = cpu.LoadCharge(m.Average, l.Multiplier)
	}
	if l.Buffers != nil {
		if m.Pressure, err = l.Buffers.Check(); err != nil {
			return m, fmt.Errorf("check receive buffers: %w", err)
		}
	}
	clock := l.Clock
	if clock == nil {
		clock = MonotonicCoarse
	}
	m.Inputs = policy.Inputs{
		HeartbeatNS: clock(),
		LoadMilli:   policy.Milli(m.Load),
		CPUMilli:    uint32(policy.Milli(m.Current)),
		BuffersFull: m.Pressure.Full,

		CPUAverageMilli: uint32(policy.Milli(m.Average)),
	}
	if err := l.Write(m.Inputs); err != nil {
		return m, fmt.Errorf("write measurements: %w", err)
	}
	return m, nil
}

// Run steps at once and then every Interval until ctx ends. A failed step
// is logged (once until it changes) and retried at the next interval; the
// heartbeat it did not write ages meanwhile.
func (l *Loop) Run(ctx context.Context) error {
	if l.Interval <= 0 {
		return errors.New("control loop: sample interval must be positive")
	}
	log := l.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// The first measurement spans a short interval rather than a whole
	// one, so the fast path hears from a new control plane at once.
	if err := l.Prime(); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(min(l.Interval, FirstInterval)):
	}
	tick := time.NewTicker(l.Interval)
	defer tick.Stop()
	var lastErr string
	var full bool
	for {
		m, err := l.Step()
		switch {
		case err != nil && err.Error() != lastErr:
			log.Warn("control loop step failed; the heartbeat ages until it succeeds", "err", err)
			lastErr = err.Error()
		case err == nil:
			if lastErr != "" {
				log.Info("control loop measures again")
				lastErr = ""
			}
			if m.Pressure.Full != full {
				full = m.Pressure.Full
				log.Info("receive buffers", "full", full, "sockets", m.Pressure.String())
			}
			log.Debug("measured", "cpu_percent", m.Current, "cpu_average", m.Average, "load_charge", m.Load, "buffers_full", m.Pressure.Full)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
