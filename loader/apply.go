package loader

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/maps"
)

// Apply puts new limits, ports and settings in force on every attachment
// in stateDir while traffic flows: buckets and counters are kept, and the
// fast path never sees a limit half written (maps.WritePolicy). It returns
// the attachments it changed.
func Apply(stateDir string, o Options) ([]Attachment, error) {
	atts, err := List(stateDir)
	if err != nil {
		return nil, err
	}
	if len(atts) == 0 {
		return nil, fmt.Errorf("xdpcac is attached to no interface (no state in %s): use cacctl attach", stateDir)
	}
	lk, err := lockStateDir(stateDir, lockTimeout)
	if err != nil {
		return nil, err
	}
	defer lk.unlock()
	// A VLAN key an interface cannot honour refuses the whole apply,
	// before any attachment changes.
	for _, a := range atts {
		if err := checkVLANKeys(a, o.Policy); err != nil {
			return nil, err
		}
	}

	var done []Attachment
	written := map[ebpf.MapID]bool{} // attachments share their limits
	for _, a := range atts {
		p, err := Open(stateDir, a)
		if err != nil {
			return done, err
		}
		id, err := mapID(p.Limits)
		if err == nil && !written[id] {
			err = apply(p, o)
			written[id] = true
		}
		p.Close()
		if err != nil {
			return done, fmt.Errorf("%s: %w", a, err)
		}
		done = append(done, a)
	}
	return done, nil
}

func apply(p *Pinned, o Options) error {
	if err := maps.WritePorts(p.UdpPorts, o.L2TPPorts, o.SIPPorts); err != nil {
		return err
	}
	if err := maps.WriteSettings(p.Settings, o.Settings); err != nil {
		return err
	}
	if err := maps.WriteAgentAddrs(p.Agents, o.AgentAddrs); err != nil {
		return err
	}
	return maps.WritePolicy(maps.PolicyMapsOf(&p.XdpMaps), o.Policy)
}
