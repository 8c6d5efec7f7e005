package config

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// decoder walks YAML nodes and collects every error with its position, so
// that one run of `cacctl validate` reports all of a file's mistakes.
type decoder struct {
	file string
	src  []string // the file's lines, to point inside a block scalar
	errs []error
}

// Error is one mistake in a configuration file.
type Error struct {
	File   string
	Line   int
	Column int
	Key    string // the key path, such as classes.sip-invite.cps
	Msg    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s: %s", e.File, e.Line, e.Column, e.Key, e.Msg)
}

func (d *decoder) errorf(n *yaml.Node, key, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.file, Line: n.Line, Column: n.Column, Key: key, Msg: fmt.Sprintf(format, args...)})
}

func (d *decoder) err() error { return errors.Join(d.errs...) }

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fields maps the keys a mapping accepts to what decodes each value.
type fields map[string]func(path string, v *yaml.Node)

// mapping decodes a mapping node: unknown and repeated keys are errors
// that list the keys it accepts.
func (d *decoder) mapping(n *yaml.Node, path string, f fields) {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "must be a mapping of keys to values, got %s", describe(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := join(path, k.Value)
		decode, ok := f[k.Value]
		switch {
		case !ok:
			d.errorf(k, key, "unknown key (valid keys here: %s)", strings.Join(sortedKeys(f), ", "))
		case seen[k.Value]:
			d.errorf(k, key, "repeated key")
		default:
			seen[k.Value] = true
			decode(key, v)
		}
	}
}

func sortedKeys(f fields) []string {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// sequence decodes each item of a sequence node.
func (d *decoder) sequence(n *yaml.Node, path string, item func(path string, v *yaml.Node)) {
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, path, "must be a list, got %s", describe(n))
		return
	}
	for i, v := range n.Content {
		item(fmt.Sprintf("%s[%d]", path, i), v)
	}
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Value == "" {
		return "nothing"
	}
	return strconv.Quote(n.Value)
}

func (d *decoder) scalar(n *yaml.Node, path string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		d.errorf(n, path, "must be a single value, got %s", describe(n))
		return "", false
	}
	if n.Tag == "!!null" {
		d.errorf(n, path, "must have a value, got %s", describe(n))
		return "", false
	}
	return n.Value, true
}

func (d *decoder) str(n *yaml.Node, path string, dst *string) {
	if s, ok := d.scalar(n, path); ok {
		if s == "" {
			d.errorf(n, path, "must not be empty")
			return
		}
		*dst = s
	}
}

// oneOf decodes a string that must be one of choices.
func (d *decoder) oneOf(n *yaml.Node, path string, dst *string, choices ...string) {
	s, ok := d.scalar(n, path)
	if !ok {
		return
	}
	if !slices.Contains(choices, s) {
		d.errorf(n, path, "must be one of %s, got %q", strings.Join(choices, ", "), s)
		return
	}
	*dst = s
}

// number decodes a finite number of at least min.
func (d *decoder) number(n *yaml.Node, path string, min float64, dst **float64) {
	s, ok := d.scalar(n, path)
	if !ok {
		return
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		d.errorf(n, path, "must be a number, got %q", s)
		return
	}
	if v < min {
		d.errorf(n, path, "must be at least %g, got %s", min, s)
		return
	}
	*dst = &v
}

// integer decodes a whole number in [min, max], in decimal (leading zeros
// are not octal: 05060 is 5060) or in hexadecimal after 0x.
func (d *decoder) integer(n *yaml.Node, path string, min, max int64) (int64, bool) {
	s, ok := d.scalar(n, path)
	if !ok {
		return 0, false
	}
	digits, base := s, 10
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		digits, base = h, 16
	}
	v, err := strconv.ParseInt(digits, base, 64)
	if err != nil {
		d.errorf(n, path, "must be a whole number, got %q", s)
		return 0, false
	}
	if v < min || v > max {
		d.errorf(n, path, "must be from %d to %d, got %d", min, max, v)
		return 0, false
	}
	return v, true
}

func (d *decoder) port(n *yaml.Node, path string, dst *uint16) {
	if v, ok := d.integer(n, path, 1, 65535); ok {
		*dst = uint16(v)
	}
}

// ports decodes a list of distinct UDP ports.
func (d *decoder) ports(n *yaml.Node, path string, dst *[]uint16) {
	var out []uint16
	d.sequence(n, path, func(p string, v *yaml.Node) {
		var port uint16
		d.port(v, p, &port)
		if port != 0 && slices.Contains(out, port) {
			d.errorf(v, p, "port %d is listed twice", port)
			return
		}
		if port != 0 {
			out = append(out, port)
		}
	})
	*dst = out
}

// maxDurationSeconds keeps a bare number of seconds inside time.Duration.
const maxDurationSeconds = 1 << 32

// duration decodes a Go duration ("1s", "200ms") or a bare number of
// seconds, which must be positive.
func (d *decoder) duration(n *yaml.Node, path string, dst *time.Duration) {
	s, ok := d.scalar(n, path)
	if !ok {
		return
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		secs, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || math.IsInf(secs, 0) || math.IsNaN(secs) {
			d.errorf(n, path, "must be a duration such as 1s or 200ms, or a number of seconds, got %q", s)
			return
		}
		if secs > maxDurationSeconds {
			d.errorf(n, path, "must be at most %d seconds, got %q", maxDurationSeconds, s)
			return
		}
		v = time.Duration(secs * float64(time.Second))
	}
	if v <= 0 {
		d.errorf(n, path, "must be longer than zero, got %q", s)
		return
	}
	*dst = v
}

func (d *decoder) boolean(n *yaml.Node, path string, dst *bool) {
	s, ok := d.scalar(n, path)
	if !ok {
		return
	}
	switch s {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		d.errorf(n, path, "must be true or false, got %q", s)
	}
}

func (d *decoder) prefix(n *yaml.Node, path string, dst *netip.Prefix) {
	s, ok := d.scalar(n, path)
	if !ok {
		return
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		a, aerr := netip.ParseAddr(s)
		if aerr != nil {
			d.errorf(n, path, "must be an address or prefix such as 192.0.2.10/32, got %q", s)
			return
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if p != p.Masked() {
		d.errorf(n, path, "%s has host bits set; did you mean %s?", p, p.Masked())
		return
	}
	*dst = p
}

// MaxMaxSessions bounds a max-sessions key: no more dialogs than the fast
// path's table of dialogs that hold sessions keeps (bpf/maps.h).
const MaxMaxSessions = 65536

// maxSessions decodes a max-sessions key: a count of concurrent dialogs,
// at least 1.
func (d *decoder) maxSessions(n *yaml.Node, path string, dst *uint32) {
	if v, ok := d.integer(n, path, 1, MaxMaxSessions); ok {
		*dst = uint32(v)
	}
}
