package docs

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/config"
	"go.yaml.in/yaml/v3"
)

// configReference is the page that documents every key of cac.yaml.
const configReference = "configuration.md"

// TestConfigKeysDocumented: the keys the configuration reference lists are
// exactly the keys the decoder of cac/config accepts. The decoder is asked,
// not copied: decodeKeys learns its keys from its own refusals.
func TestConfigKeysDocumented(t *testing.T) {
	checkConfigKeys(t, documentedKeys(t, configReference), decodeKeys(t))
}

// checkConfigKeys fails for each key of one set missing from the other.
func checkConfigKeys(t reporter, documented, accepted map[string]bool) {
	t.Helper()
	for _, k := range sorted(accepted) {
		if !documented[k] {
			t.Errorf("docs/%s: key %s, which cac/config accepts, is not documented", configReference, k)
		}
	}
	for _, k := range sorted(documented) {
		if !accepted[k] {
			t.Errorf("docs/%s: documents key %s, which cac/config does not accept", configReference, k)
		}
	}
}

// TestConfigKeysCatchMadeUp: a key made up for the reference, and a key
// left out of it, are both caught.
func TestConfigKeysCatchMadeUp(t *testing.T) {
	accepted := decodeKeys(t)
	for name, documented := range map[string]map[string]bool{
		"a made-up key": union(accepted, map[string]bool{"classes.<class>.per-source.max-rate": true}),
		"a missing key": without(accepted, "fleet.redis.tls.server-name"),
	} {
		rec := &recorder{}
		checkConfigKeys(rec, documented, accepted)
		if len(rec.errs) != 1 {
			t.Errorf("%s: want one failure, got %q", name, rec.errs)
		}
	}
}

// keyCell is the first cell of a row of a key table: a key path in
// backquotes.
var keyCell = regexp.MustCompile("^\\|\\s*`([a-z0-9<>\\[\\].-]+)`\\s*\\|")

// documentedKeys are the first cells of every table of page whose header
// starts with "| key |".
func documentedKeys(t *testing.T, name string) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	inTable := false
	for _, l := range readLines(t, docPage(name)) {
		switch {
		case strings.HasPrefix(l, "| key |"):
			inTable = true
		case !strings.HasPrefix(l, "|"):
			inTable = false
		case inTable:
			if m := keyCell.FindStringSubmatch(l); m != nil {
				keys[m[1]] = true
			}
		}
	}
	if len(keys) == 0 {
		t.Fatalf("docs/%s has no key table", name)
	}
	return keys
}

// probeKey is a key no decoder accepts: the decoder refuses it with the
// keys it accepts in its place.
const probeKey = "zz-no-such-key"

var validKeys = regexp.MustCompile(`unknown key \(valid keys here: ([^)]*)\)`)

// decodeKeys walks the decoder of cac/config. It puts probeKey in a
// mapping at each place and reads the keys the refusal lists; then it puts
// a mapping, and a list of one mapping, under each of those keys and sees
// whether the decoder reads them as such. Paths are written as the
// reference writes them: a list's items as [], a class's name as <class>.
func decodeKeys(t *testing.T) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	var walk func(path []string)
	walk = func(path []string) {
		for _, k := range keysAt(t, path) {
			p := append(slices.Clone(path), k)
			keys[written(p)] = true
			switch {
			case keysAt(t, p) != nil:
				walk(p)
			case keysAt(t, append(p, "[]")) != nil:
				walk(append(p, "[]"))
			}
		}
	}
	walk(nil)
	if len(keys) < 20 {
		t.Fatalf("the decoder gave only %d keys: the probe is wrong", len(keys))
	}
	return keys
}

// keysAt is what the decoder accepts in the mapping at path (a "[]" step
// is the first item of a list), or nil when it reads no mapping there.
func keysAt(t *testing.T, path []string) []string {
	t.Helper()
	var doc any = map[string]any{probeKey: 1}
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == "[]" {
			doc = []any{doc}
		} else {
			doc = map[string]any{path[i]: doc}
		}
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	_, err = config.Parse("probe.yaml", data)
	want := strings.ReplaceAll(strings.Join(append(slices.Clone(path), probeKey), "."), ".[]", "[0]")
	for _, e := range flatten(err) {
		var ce *config.Error
		if errors.As(e, &ce) && ce.Key == want {
			if m := validKeys.FindStringSubmatch(ce.Msg); m != nil {
				return strings.Split(m[1], ", ")
			}
		}
	}
	return nil
}

// written is a probed path as the reference writes it.
func written(path []string) string {
	var b strings.Builder
	for i, s := range path {
		switch {
		case s == "[]":
			b.WriteString("[]")
			continue
		case i > 0 && path[i-1] == "classes" && isClass(s):
			s = "<class>"
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

func isClass(s string) bool {
	for _, c := range cac.Classes() {
		if c.String() == s {
			return true
		}
	}
	return false
}

// flatten undoes errors.Join.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

func sorted(m map[string]bool) []string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}

func union(a, b map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func without(a map[string]bool, key string) map[string]bool {
	out := union(a, nil)
	delete(out, key)
	return out
}

// TestPrintDecodeKeys lists what the decoder accepts (go test -run
// PrintDecodeKeys -v): the rows the reference needs.
func TestPrintDecodeKeys(t *testing.T) {
	if !testing.Verbose() {
		t.Skip("-v lists the keys")
	}
	for _, k := range sorted(decodeKeys(t)) {
		t.Log(k)
	}
}
