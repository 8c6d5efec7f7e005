package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/xdpcac/xdpcac/cac"
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
// that holds 300 s of them (bpf/shared.h).
const MaxChargeLifetime = 300

// Lines are the IOS lines that give ca, one per setting in a fixed order:
// what a block of pasted lines, abbreviations and `no` lines came to.
func (ca CallAdmission) Lines() []string {
	var out []string
	if ca.NewModel {
		out = append(out, "call admission new-model")
	}
	if ca.Limit != nil {
		out = append(out, fmt.Sprintf("call admission limit %d", *ca.Limit))
	}
	if ca.CPULimit != nil {
		out = append(out, fmt.Sprintf("call admission cpu-limit %d", *ca.CPULimit))
	}
	for _, t := range cac.CallTypeNames() {
		if c, ok := ca.Charges[t]; ok {
			out = append(out, fmt.Sprintf("call admission %s %d %d", t, c.Charge, int(c.Lifetime.Seconds())))
		}
	}
	if ca.Load != nil {
		out = append(out, fmt.Sprintf("call admission load %d %d", ca.Load.Charge, int(ca.Load.Lifetime.Seconds())))
	}
	return out
}

// iosBlock is the state of a block of IOS lines as they are read in
// order, with the line each setting in force came from, so that a setting
// that can never act is refused at its own line (docs/design.md,
// "Configuration").
type iosBlock struct {
	ca CallAdmission
	at map[string]*yaml.Node // "new-model", "limit", "cpu-limit", "load" or a call type
}

// set notes the line a setting in force came from; a later line replaces
// an earlier one, as it does on the router.
func (b *iosBlock) set(key string, at *yaml.Node) { b.at[key] = at }

// unset is what a `no` line does: the setting is gone, whatever it was.
func (b *iosBlock) unset(key string) {
	delete(b.at, key)
	switch key {
	case "new-model":
		b.ca.NewModel = false
	case "limit":
		b.ca.Limit = nil
	case "cpu-limit":
		b.ca.CPULimit = nil
	case "load":
		b.ca.Load = nil
	default:
		delete(b.ca.Charges, key)
	}
}

// callAdmission parses the IOS lines of call-admission; each error names
// the line of the file it stands on.
func (d *decoder) callAdmission(path string, n *yaml.Node) CallAdmission {
	b := &iosBlock{ca: CallAdmission{Charges: map[string]Charge{}}, at: map[string]*yaml.Node{}}
	text, ok := d.scalar(n, path)
	if !ok {
		return b.ca
	}
	lines := strings.Split(text, "\n")
	// Only a literal block keeps one IOS line per line; folding would
	// run the lines together and point errors at the wrong line.
	if n.Style != yaml.LiteralStyle && runTogether(lines) {
		d.errorf(n, path, "write the IOS lines as a literal block, one per line (call-admission: |)")
		return b.ca
	}
	first := n.Line
	if n.Style == yaml.LiteralStyle || n.Style == yaml.FoldedStyle {
		first++ // the block starts on the line after | or >
	}
	for i, line := range lines {
		at := d.lineAt(first+i, n)
		if text, _, _ := strings.Cut(line, "!"); strings.TrimSpace(text) != "" {
			d.iosLine(at, path, text, b)
		}
	}
	d.neverActs(path, b)
	return b.ca
}

// neverActs refuses settings that the fast path would hold and never use:
// without a limit nothing of call admission is checked, and cpu-limit is
// the new model's alone. Each is named at its own line, with the line it
// lacks.
func (d *decoder) neverActs(path string, b *iosBlock) {
	if at := b.at["cpu-limit"]; at != nil && !b.ca.NewModel {
		d.errorf(at, path, "call admission cpu-limit applies to the new model only: add `call admission new-model`, or drop the cpu-limit line")
	}
	if b.ca.Limit != nil {
		return
	}
	for _, key := range append([]string{"new-model", "cpu-limit", "load"}, cac.CallTypeNames()...) {
		if at := b.at[key]; at != nil {
			d.errorf(at, path, "`call admission %s` never acts without `call admission limit <1-1000000000>`, which this block lacks: add the limit line, or drop this one", key)
		}
	}
}

// lineAt is the position of line ln of the file, at its first non-blank
// column: an IOS line inside a block scalar is pointed at where it is
// written, not at the key.
func (d *decoder) lineAt(ln int, n *yaml.Node) *yaml.Node {
	col := n.Column
	if ln >= 1 && ln <= len(d.src) {
		src := d.src[ln-1]
		if trimmed := strings.TrimLeft(src, " \t"); trimmed != "" {
			col = len(src) - len(trimmed) + 1
		}
	}
	return &yaml.Node{Line: ln, Column: col}
}

// runTogether reports a line that holds more than one IOS command.
func runTogether(lines []string) bool {
	for _, l := range lines {
		n := 0
		for _, w := range strings.Fields(strings.ToLower(l)) {
			if w == "call" {
				n++
			}
		}
		if n > 1 {
			return true
		}
	}
	return false
}
