package config

import (
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// CallAdmission is the Cisco broadband CAC configuration, from IOS lines
// pasted as they are. A nil Limit means CAC is not operational.
type CallAdmission struct {
	NewModel bool
	Limit    *uint32
	CPULimit *uint8 // percent, new model
	Charges  map[string]Charge
	Load     *Charge // the multiplier is in Charge
}

// Charge is what each admitted call of a type costs, and for how long.
type Charge struct {
	Charge   uint32
	Lifetime time.Duration
}

// MaxChargeLifetime is the longest lifetime of a call's charge, in
// seconds: the fast path counts charges in force in a ring of 100 ms ticks
// that holds 300 s of them (bpf/cac.h).
const MaxChargeLifetime = 300

// The call types of `call admission <type> <charge> <lifetime>`.
var callTypes = []string{"pppoe", "vpdn", "sip"}

// callAdmission parses the IOS lines of call-admission; each error names
// the line of the file it stands on.
func (d *decoder) callAdmission(path string, n *yaml.Node) CallAdmission {
	ca := CallAdmission{Charges: map[string]Charge{}}
	text, ok := d.scalar(n, path)
	if !ok {
		return ca
	}
	// Only a literal block keeps one IOS line per line; folding would
	// run the lines together and point errors at the wrong line.
	if n.Style != yaml.LiteralStyle && strings.Count(strings.ToLower(text), "call admission") > 1 {
		d.errorf(n, path, "write the IOS lines as a literal block, one per line (call-admission: |)")
		return ca
	}
	defer func() {
		if ca.CPULimit != nil && !ca.NewModel {
			d.errorf(n, path, "call admission cpu-limit applies to the new model only: add `call admission new-model`, or drop the cpu-limit line")
		}
	}()
	first := n.Line
	if n.Style == yaml.LiteralStyle || n.Style == yaml.FoldedStyle {
		first++ // the block starts on the line after | or >
	}
	for i, line := range strings.Split(text, "\n") {
		at := &yaml.Node{Line: first + i, Column: n.Column}
		words := strings.Fields(strings.ToLower(line))
		if len(words) == 0 || strings.HasPrefix(words[0], "!") {
			continue
		}
		if len(words) < 3 || words[0] != "call" || words[1] != "admission" {
			d.errorf(at, path, "%q is not a `call admission` line", strings.TrimSpace(line))
			continue
		}
		d.callAdmissionLine(at, path, words[2:], &ca)
	}
	return ca
}

func (d *decoder) callAdmissionLine(at *yaml.Node, path string, w []string, ca *CallAdmission) {
	num := func(s, what string, min, max uint64) (uint64, bool) {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil || v < min || v > max {
			d.errorf(at, path, "call admission %s: %s must be from %d to %d, got %q", w[0], what, min, max, s)
			return 0, false
		}
		return v, true
	}
	args := func(n int, usage string) bool {
		if len(w) != n+1 {
			d.errorf(at, path, "want `call admission %s %s`", w[0], usage)
			return false
		}
		return true
	}
	switch w[0] {
	case "new-model":
		if args(0, "") {
			ca.NewModel = true
		}
	case "limit":
		if args(1, "<1-1000000000>") {
			if v, ok := num(w[1], "the limit", 1, 1e9); ok {
				l := uint32(v)
				ca.Limit = &l
			}
		}
	case "cpu-limit":
		if args(1, "<1-100>") {
			if v, ok := num(w[1], "the CPU limit", 1, 100); ok {
				p := uint8(v)
				ca.CPULimit = &p
			}
		}
	case "load":
		if args(2, "<multiplier 1-1000000> <lifetime 1-3600>") {
			m, ok1 := num(w[1], "the multiplier", 1, 1e6)
			l, ok2 := num(w[2], "the lifetime in seconds", 1, 3600)
			if ok1 && ok2 {
				ca.Load = &Charge{Charge: uint32(m), Lifetime: time.Duration(l) * time.Second}
			}
		}
	case "pppoa":
		d.errorf(at, path, "call admission pppoa: PPPoA runs over ATM, not Ethernet; xdpcac cannot see it (use pppoe, vpdn or sip)")
	case "pppoe", "vpdn", "sip":
		if args(2, "<charge 1-1000000> <lifetime 1-300>") {
			c, ok1 := num(w[1], "the charge", 1, 1e6)
			l, ok2 := num(w[2], "the lifetime in seconds", 1, MaxChargeLifetime)
			if ok1 && ok2 {
				ca.Charges[w[0]] = Charge{Charge: uint32(c), Lifetime: time.Duration(l) * time.Second}
			}
		}
	default:
		d.errorf(at, path, "unknown `call admission %s` (want new-model, limit, cpu-limit, load or a call type: %s)",
			w[0], strings.Join(callTypes, ", "))
	}
}
