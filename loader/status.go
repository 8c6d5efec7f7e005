package loader

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/xdpcac/xdpcac/maps"
)

// AttachmentStatus is one attachment as `cacctl status` shows it.
type AttachmentStatus struct {
	Attachment
	Mode string // native, generic, offload, multi; "" when the interface is gone
	// Priority is the run priority in the libxdp dispatcher (multi mode).
	Priority uint32
	// Link is active, or defunct when its interface went away (Adopt
	// attaches again when it returns).
	Link string
	// ProgramTag is the kernel's tag of the running program; Current
	// says whether it is this version's.
	ProgramTag string
	// ProgramID is the kernel's ID of that program, as bpftool and
	// xdp-loader name it.
	ProgramID uint32
	Current   bool
	// Egress is how the egress program is attached: EgressTCX,
	// EgressClsact, EgressNone or EgressGone.
	Egress string
}

// Status reads the state of every attachment in stateDir. To tell whether
// a program is this version's it loads this version's program once against
// the pinned maps, as an upgrade would, and compares the kernel's tags.
func Status(stateDir string) ([]AttachmentStatus, error) {
	atts, err := List(stateDir)
	if err != nil || len(atts) == 0 {
		return nil, err
	}
	var current string
	var out []AttachmentStatus
	for _, a := range atts {
		st := AttachmentStatus{Attachment: a, Link: "active"}
		dir := filepath.Join(stateDir, a.dirName())
		if pinnedMulti(dir) {
			if err := multiStatus(&st, dir); err != nil {
				return nil, err
			}
			if current == "" {
				if current, err = embeddedTag(stateDir, a); err != nil {
					return nil, err
				}
			}
			st.Current = st.ProgramTag == current
			out = append(out, st)
			continue
		}
		l, err := link.LoadPinnedLink(filepath.Join(dir, pinLink), nil)
		if err != nil {
			return nil, fmt.Errorf("open the pinned link of %s: %w", a, err)
		}
		info, err := l.Info()
		l.Close()
		if err != nil {
			return nil, fmt.Errorf("link info of %s: %w", a, err)
		}
		if info.XDP() == nil || info.XDP().Ifindex == 0 {
			st.Link = "defunct"
		}
		if st.Egress, err = egressKind(a, dir); err != nil {
			return nil, err
		}
		if nl, err := linkByName(a.Netns, a.Iface); err == nil && nl.Attrs().Xdp != nil && nl.Attrs().Xdp.Attached {
			st.Mode = attachModeName(nl.Attrs().Xdp.AttachMode)
		}
		prog, err := ebpf.NewProgramFromID(info.Program) // what runs
		if err != nil {
			return nil, fmt.Errorf("open the running program of %s: %w", a, err)
		}
		pinfo, err := prog.Info()
		prog.Close()
		if err != nil {
			return nil, fmt.Errorf("program info of %s: %w", a, err)
		}
		st.ProgramTag, st.ProgramID = pinfo.Tag, uint32(info.Program)
		if current == "" {
			if current, err = embeddedTag(stateDir, a); err != nil {
				return nil, err
			}
		}
		st.Current = st.ProgramTag == current
		out = append(out, st)
	}
	return out, nil
}

// embeddedTag is the kernel's tag of this version's program, loaded
// against the pinned maps of a so that nothing large is allocated.
func embeddedTag(stateDir string, a Attachment) (string, error) {
	p, err := Open(stateDir, a)
	if err != nil {
		return "", err
	}
	defer p.Close()
	objs, err := loadAgainst(p, nil)
	if err != nil {
		return "", fmt.Errorf("load this version's program to compare: %w", err)
	}
	defer objs.Close()
	info, err := objs.XdpCac.Info()
	if err != nil {
		return "", fmt.Errorf("program info: %w", err)
	}
	return info.Tag, nil
}

// multiStatus fills st for an attachment in multi mode: it is active while
// the dispatcher of its interface runs its program, which has the slot's
// priority; the tag is the pinned program's. Its instructions are those of
// the XDP program, so its tag compares with this version's as any other.
func multiStatus(st *AttachmentStatus, dir string) error {
	var err error
	if st.Egress, err = egressKind(st.Attachment, dir); err != nil {
		return err
	}
	st.Mode, st.Link = ModeMulti, "defunct"
	d, slot, err := multiSlot(st.Attachment, dir)
	if err != nil {
		return nil // its interface's dispatcher cannot be read now: defunct, as far as status can tell
	}
	defer d.close()
	if slot >= 0 {
		st.Link, st.Priority = "active", d.conf.RunPrios[slot]
	}
	p, err := ebpf.LoadPinnedProgram(filepath.Join(dir, pinProgram), nil)
	if err != nil {
		return fmt.Errorf("open the pinned program of %s: %w", st.Attachment, err)
	}
	defer p.Close()
	info, err := p.Info()
	if err != nil {
		return fmt.Errorf("program info of %s: %w", st.Attachment, err)
	}
	st.ProgramTag = info.Tag
	if id, ok := info.ID(); ok {
		st.ProgramID = uint32(id)
	}
	return nil
}

// SIPPorts are the SIP ports the filters of stateDir watch, as their
// shared port tables hold them (ports.sip and ports.sip-tcp of the file
// last put in force): udp over UDP, tcp the ports whose SYNs are
// sip-connect, none for a program that predates sip-connect. None with
// nothing attached.
func SIPPorts(stateDir string) (udp, tcp []uint16, err error) {
	p, err := OpenShared(stateDir)
	if errors.Is(err, ErrNothingAttached) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer p.Close()
	if _, udp, err = maps.ReadPorts(p.UdpPorts); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", p.Attachment, err)
	}
	if p.TcpPorts == nil {
		return udp, nil, nil
	}
	if tcp, err = maps.ReadTCPPorts(p.TcpPorts); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", p.Attachment, err)
	}
	return udp, tcp, nil
}
