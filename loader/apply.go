package loader

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/cac"
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

	if err := checkSizes(stateDir, atts[0], o); err != nil {
		return nil, err
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

// TableSizeError is a file whose per-source-table or dialog-table differs
// from the size of the table in force. The tables are made with the
// first attachment and shared by all: only a detach of every interface
// and an attach again changes their size.
type TableSizeError struct {
	Key           string // per-source-table or dialog-table
	InForce, File uint32
}

func (e TableSizeError) Error() string {
	return fmt.Sprintf("%s is %d in force and %d in the file: the table is sized when the first interface is attached; "+
		"detach every interface and attach again to change it (nothing was changed)", e.Key, e.InForce, e.File)
}

// TableSizes are the sizes of the per-source and dialog tables in force;
// ErrNothingAttached when none is.
func TableSizes(stateDir string) (sources, dialogs uint32, err error) {
	p, err := OpenShared(stateDir)
	if err != nil {
		return 0, 0, err
	}
	defer p.Close()
	return p.Sources.MaxEntries(), maps.Dialogs(p.Dialogs), nil
}

// CheckTableSizes is checkSizes before anything is attached or loaded:
// nil when nothing is attached, whose tables the file sizes.
func CheckTableSizes(stateDir string, o Options) error {
	sources, dialogs, err := TableSizes(stateDir)
	if errors.Is(err, ErrNothingAttached) {
		return nil
	}
	if err != nil {
		return err
	}
	if o.SourceTable != 0 && o.SourceTable != sources {
		return TableSizeError{Key: "per-source-table", InForce: sources, File: o.SourceTable}
	}
	if o.DialogTable != 0 && !cac.SameDialogTable(o.DialogTable, dialogs) {
		return TableSizeError{Key: "dialog-table", InForce: dialogs, File: o.DialogTable}
	}
	return nil
}

// checkSizes refuses options whose table sizes (0: keep) are not those of
// the tables in force, which a of stateDir holds.
func checkSizes(stateDir string, a Attachment, o Options) error {
	p, err := Open(stateDir, a)
	if err != nil {
		return err
	}
	defer p.Close()
	if n := p.Sources.MaxEntries(); o.SourceTable != 0 && o.SourceTable != n {
		return TableSizeError{Key: "per-source-table", InForce: n, File: o.SourceTable}
	}
	if n := maps.Dialogs(p.Dialogs); o.DialogTable != 0 && !cac.SameDialogTable(o.DialogTable, n) {
		return TableSizeError{Key: "dialog-table", InForce: n, File: o.DialogTable}
	}
	return nil
}
