package admission

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/internal/model/classify"
)

// The vectors are frames and what the XDP object decided of each, run in
// order through one object at time 0, with the UDP ports and dialog table
// they name and no limits.
// tests/fastpath records them as root and holds the object to them on
// every run; this package's own test holds the model to them without
// root, so that a change of the model's rules shows in `make check`, where
// the differential tests, which need the object, skip.
//
// The file is text: a line "ports l2tp 1701,1702 sip 5060,5080 dialogs
// 1024" (the dialogs map's max_entries), then a line per frame, the decision (DecisionText), a tab and the frame in hex.
// Lines starting with # are comments.

// vectorsName is the vectors' file, from this package's directory, and
// VectorsFile from the root of the module.
const (
	vectorsName = "testdata/xdp-vectors.txt"
	VectorsFile = "internal/model/admission/" + vectorsName
)

// Vectors are the frames run, their decisions and what they ran under.
type Vectors struct {
	L2TPPorts, SIPPorts []uint16
	DialogSets          uint32
	Frames              [][]byte
	Decisions           []string
}

// DecisionText is a decision as the vectors keep it: "session sip-invite
// pass odd", its kind, class, verdict and the flags set. String leaves out
// some fields; this names every field not at its zero value (the class
// always of a session), so that two decisions are alike exactly when their
// texts are.
func DecisionText(d Decision) string {
	s := d.Kind.String()
	if d.Kind == cac.Session || d.Class != 0 {
		s += " " + d.Class.String()
	}
	s += " " + d.Verdict.String()
	for _, f := range []struct {
		set  bool
		name string
	}{{d.Rejected, "rejected"}, {d.Odd, "odd"}, {d.Uncharged, "uncharged"}, {d.Retransmit, "retransmit"},
		{d.Answered, "answered"}, {d.Unanswered, "unanswered"}} {
		if f.set {
			s += " " + f.name
		}
	}
	if d.Rejected || d.Reason != 0 {
		s += " reason=" + d.Reason.String()
	}
	return s
}

// Model is a model set up as the object the frames ran through.
func (v *Vectors) Model() *Model {
	m := &Model{Ports: classify.NewPorts(v.L2TPPorts, v.SIPPorts)}
	m.SetDialogTable(v.DialogSets)
	return m
}

// WriteVectors writes v to path, below a comment that says where the
// decisions come from and how they are made again.
func WriteVectors(path, comment string, v *Vectors) error {
	var b strings.Builder
	for _, l := range strings.Split(comment, "\n") {
		b.WriteString("# " + l + "\n")
	}
	fmt.Fprintf(&b, "ports l2tp %s sip %s dialogs %d\n", portList(v.L2TPPorts), portList(v.SIPPorts), v.DialogSets)
	for i, f := range v.Frames {
		fmt.Fprintf(&b, "%s\t%x\n", v.Decisions[i], f)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// ReadVectors reads what WriteVectors wrote.
func ReadVectors(path string) (*Vectors, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	v := &Vectors{}
	ports := false
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; s.Scan(); n++ {
		l := s.Text()
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case !ports:
			var l2tp, sip string
			if _, err := fmt.Sscanf(l, "ports l2tp %s sip %s dialogs %d", &l2tp, &sip, &v.DialogSets); err != nil {
				return nil, fmt.Errorf("%s:%d: want the ports line: %v", path, n, err)
			}
			if v.L2TPPorts, err = parsePorts(l2tp); err == nil {
				v.SIPPorts, err = parsePorts(sip)
			}
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %v", path, n, err)
			}
			ports = true
		default:
			d, x, ok := strings.Cut(l, "\t")
			frame, err := hex.DecodeString(x)
			if !ok || err != nil {
				return nil, fmt.Errorf("%s:%d: want a decision, a tab and a frame in hex", path, n)
			}
			v.Frames, v.Decisions = append(v.Frames, frame), append(v.Decisions, d)
		}
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if !ports {
		return nil, fmt.Errorf("%s: no ports line", path)
	}
	return v, nil
}

func portList(ps []uint16) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ",")
}

func parsePorts(s string) ([]uint16, error) {
	var ps []uint16
	for _, f := range strings.Split(s, ",") {
		p, err := strconv.ParseUint(f, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("port %q: %v", f, err)
		}
		ps = append(ps, uint16(p))
	}
	return ps, nil
}
