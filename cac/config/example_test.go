package config

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const example = "../../deploy/cac.yaml"

// exampleKey is a top-level key of the example, set (`key:`) or left in
// a comment (`# key:`); a comment's deeper lines are indented further.
var exampleKey = regexp.MustCompile(`^(# )?([a-z][a-z0-9-]*):`)

// missingKeys are the keys of want the example text names at no top
// level, set or in a comment.
func missingKeys(want []string, text string) []string {
	have := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		if m := exampleKey.FindStringSubmatch(l); m != nil {
			have[m[2]] = true
		}
	}
	var missing []string
	for _, k := range want {
		if !have[k] {
			missing = append(missing, k)
		}
	}
	return missing
}

// TestExampleHasEveryKey: deploy/cac.yaml says every key appears in it;
// each top-level key the decoder knows must, so that a new key cannot be
// added without its explanation there.
func TestExampleHasEveryKey(t *testing.T) {
	b, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	keys := sortedKeys((&Config{}).fields(&decoder{}))
	if len(keys) < 20 {
		t.Fatalf("the decoder knows %d top-level keys (%v): too few to be its table", len(keys), keys)
	}
	if missing := missingKeys(keys, string(b)); len(missing) > 0 {
		t.Errorf("%s lacks the keys %s: add each, set or in a comment, with its default", example, strings.Join(missing, ", "))
	}
	// The check itself: a key the example does not hold is found missing.
	if got := missingKeys(append(keys, "no-such-key"), string(b)); !slices.Equal(got, []string{"no-such-key"}) {
		t.Errorf("a made-up key: missing %v, want [no-such-key]", got)
	}
}

// TestExampleComments: the blocks the example leaves in comments (`# key:`
// and the lines under it) are valid when uncommented, so that an operator
// who takes one in gets a file that loads.
func TestExampleComments(t *testing.T) {
	b, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	known := (&Config{}).fields(&decoder{})
	lines := strings.Split(string(b), "\n")
	var extra []string
	for i := 0; i < len(lines); i++ {
		// Prose may wrap to a line that reads like a key: "# bucket: ...".
		m := exampleKey.FindStringSubmatch(lines[i])
		if m == nil || m[1] == "" || known[m[2]] == nil {
			continue
		}
		extra = append(extra, strings.TrimPrefix(lines[i], "# "))
		for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "#   ") {
			i++
			extra = append(extra, strings.TrimPrefix(lines[i], "# "))
		}
	}
	if len(extra) == 0 {
		t.Fatalf("%s holds no commented key", example)
	}
	text := string(b) + "\n" + strings.Join(extra, "\n") + "\n"
	if _, err := Parse(example+" (comments taken in)", []byte(text)); err != nil {
		t.Errorf("%v\nthe commented keys:\n%s", err, strings.Join(extra, "\n"))
	}
}
