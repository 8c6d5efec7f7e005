package daemon

import (
	"fmt"
	"reflect"
	"time"

	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/cac/cpu"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/cac/sockbuf"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// measure is the control loop of one configuration with what it holds
// open. It is built before a configuration is put in force, so that a
// source that cannot be measured refuses the file and changes nothing.
type measure struct {
	loop    *control.Loop
	watcher *sockbuf.Watcher
	pinned  *loader.Pinned // opened at the first write
	gen     uint64         // pinned's Generation
	// refusals finds the samples the cpu-limit gate refused calls with.
	refusals cpuRefusals
}

// measuredPart is what of a configuration the control loop depends on: a
// reload that leaves it alone keeps the loop and its CPU window running.
func measuredPart(cfg *config.Config) any {
	return struct {
		CPU     config.CPU
		Buffers config.Buffers
		Load    *config.Charge
	}{cfg.CPU, cfg.Buffers, cfg.CallAdmission.Load}
}

func sameMeasure(a, b *config.Config) bool {
	return reflect.DeepEqual(measuredPart(a), measuredPart(b))
}

// newMeasure opens the CPU source and the buffer watcher of cfg.
func (d *Daemon) newMeasure(cfg *config.Config) (*measure, error) {
	src, err := cpu.ParseSource(cfg.CPU.Source)
	if err != nil {
		return nil, fmt.Errorf("cpu.source: %w", err)
	}
	sampler, err := cpu.NewSampler(src, cpu.Options{})
	if err != nil {
		return nil, fmt.Errorf("cpu.source: %w", err)
	}
	span, mult := cfg.CPU.SampleInterval, uint32(0)
	if ld := cfg.CallAdmission.Load; ld != nil {
		span, mult = ld.Lifetime, ld.Charge
	}
	m := &measure{refusals: cpuRefusals{stateDir: d.cfg.StateDir}}
	if b := cfg.Buffers; len(b.UDPPorts)+len(b.PacketProtocols) > 0 {
		// The protected daemons' sockets live beside the interfaces.
		err := loader.InNetns(d.cfg.Netns, func() error {
			var err error
			m.watcher, err = sockbuf.NewWatcher(sockbuf.Watch{UDPPorts: b.UDPPorts, PacketProtocols: b.PacketProtocols})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("buffers: %w", err)
		}
	}
	m.loop = &control.Loop{
		Sampler: sampler, Window: cpu.NewWindow(span), Buffers: m.watcher, Multiplier: mult,
		Interval: cfg.CPU.SampleInterval, Log: d.log, Write: func(in policy.Inputs) error {
			refused, ok := m.refusals.before()
			err := m.write(d.cfg.StateDir, in)
			if err == nil {
				now := time.Now()
				d.wrote.Store(now.UnixNano())
				if r := m.refusals.wrote(now, in.CPUMilli, refused, ok); r != nil {
					d.mu.Lock()
					d.status.LastCPURefusal = r
					d.mu.Unlock()
				}
			}
			return err
		},
	}
	return m, nil
}

// write puts measurements into the maps every attachment shares; any
// attachment's do. None may be attached yet, while interfaces come up.
// Maps opened before every interface was detached and attached again are
// no program's: they are opened again, or the new filter would never see a
// heartbeat while the writes (and the watchdog) went on.
func (m *measure) write(stateDir string, in policy.Inputs) error {
	if m.pinned != nil {
		if gen, err := m.pinned.Attachment.Generation(stateDir); err != nil || gen != m.gen {
			m.pinned.Close()
			m.pinned = nil
		}
	}
	if m.pinned == nil {
		p, err := loader.OpenShared(stateDir)
		if err != nil {
			return err
		}
		if m.gen, err = p.Attachment.Generation(stateDir); err != nil {
			p.Close()
			return err
		}
		m.pinned = p
	}
	return maps.WriteInputs(maps.InputMapsOf(&m.pinned.XdpMaps), in)
}

func (m *measure) close() {
	if m.watcher != nil {
		m.watcher.Close()
	}
	if m.pinned != nil {
		m.pinned.Close()
	}
}
