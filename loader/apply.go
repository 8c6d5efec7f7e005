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
	if err := writeAccess(p, o); err != nil {
		return err
	}
	if err := maps.WriteSettings(p.Settings, o.Settings); err != nil {
		return err
	}
	if err := maps.WriteAgentAddrs(p.Agents, o.AgentAddrs); err != nil {
		return err
	}
	pol := o.Policy
	pol.AccessLists, pol.AutoDeny = !o.Access.Empty(), o.AutoDeny.On()
	return maps.WritePolicy(maps.PolicyMapsOf(&p.XdpMaps), pol)
}

// writeAccess writes the SIP TCP ports, the static lists and the
// auto-deny settings before the policy word that tells the fast path to
// read them (docs/design.md, "Access control"). An attachment pinned by a
// version before them has none of their maps, until it is upgraded.
func writeAccess(p *Pinned, o Options) error {
	if p.TcpPorts == nil || p.AccessList == nil || p.AccessMac == nil || p.AccessSettings == nil {
		if len(o.SIPTCPPorts) > 0 || !o.Access.Empty() || o.AutoDeny.On() {
			return fmt.Errorf("this attachment predates access control and ports.sip-tcp (it has no maps for them): restart the daemon to upgrade it, or attach again")
		}
		return nil
	}
	if err := maps.WriteTCPPorts(p.TcpPorts, o.SIPTCPPorts); err != nil {
		return err
	}
	if err := maps.WriteAccess(p.AccessList, p.AccessMac, o.Access); err != nil {
		return err
	}
	return maps.WriteAutoDeny(p.AccessSettings, o.AutoDeny)
}

// TableSizeError is a file whose per-source-table, dialog-table or
// access.auto-deny.table differs from the size of the table in force. The
// tables are made with the first attachment and shared by all, and the
// deny table is pinned with the sources it denies: only a detach of every
// interface and an attach again changes their size.
type TableSizeError struct {
	Key           string // per-source-table, dialog-table or access.auto-deny.table
	InForce, File uint32
}

func (e TableSizeError) Error() string {
	return fmt.Sprintf("%s is %d in force and %d in the file: the table is sized when the first interface is attached; "+
		"detach every interface and attach again to change it (nothing was changed)", e.Key, e.InForce, e.File)
}

// TableSizes are the sizes of the per-source and dialog tables in force;
// ErrNothingAttached when none is.
func TableSizes(stateDir string) (sources, dialogs uint32, err error) {
	t, err := TablesInForce(stateDir)
	return t.Sources, t.Dialogs, err
}

// TablesInForce are the sizes of the tables in force; ErrNothingAttached
// when none is. Denied is 0 for an attachment of a version before the
// deny table.
func TablesInForce(stateDir string) (Tables, error) {
	p, err := OpenShared(stateDir)
	if err != nil {
		return Tables{}, err
	}
	defer p.Close()
	return tablesOfPinned(p), nil
}

// tablesOfPinned are the sizes of the tables p holds.
func tablesOfPinned(p *Pinned) Tables {
	t := Tables{Sources: p.Sources.MaxEntries(), Dialogs: maps.Dialogs(p.Dialogs)}
	if p.Denied != nil {
		t.Denied = p.Denied.MaxEntries()
	}
	return t
}

// CheckTableSizes is checkSizes before anything is attached or loaded:
// nil when nothing is attached, whose tables the file sizes.
func CheckTableSizes(stateDir string, o Options) error {
	t, err := TablesInForce(stateDir)
	if errors.Is(err, ErrNothingAttached) {
		return nil
	}
	if err != nil {
		return err
	}
	return compareTables(t, o)
}

// checkSizes refuses options whose table sizes (0: keep) are not those of
// the tables in force, which a of stateDir holds.
func checkSizes(stateDir string, a Attachment, o Options) error {
	p, err := Open(stateDir, a)
	if err != nil {
		return err
	}
	defer p.Close()
	return compareTables(tablesOfPinned(p), o)
}

// compareTables refuses options whose table sizes (0: keep) are not those
// in force; a deny table the attachments lack (a version before it) is
// made at the next upgrade, of the object's size.
func compareTables(t Tables, o Options) error {
	if o.SourceTable != 0 && o.SourceTable != t.Sources {
		return TableSizeError{Key: "per-source-table", InForce: t.Sources, File: o.SourceTable}
	}
	if o.DialogTable != 0 && !cac.SameDialogTable(o.DialogTable, t.Dialogs) {
		return TableSizeError{Key: "dialog-table", InForce: t.Dialogs, File: o.DialogTable}
	}
	if o.DenyTable != 0 && t.Denied != 0 && o.DenyTable != t.Denied {
		return TableSizeError{Key: "access.auto-deny.table", InForce: t.Denied, File: o.DenyTable}
	}
	return nil
}
