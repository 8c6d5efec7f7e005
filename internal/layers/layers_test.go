package layers

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/xdpcac/xdpcac/"

// floors rank the packages: a package may import its own floor and those
// below it, never one above. A package missing here fails the test, so
// that a new one is given its place.
var floors = map[string]int{
	"cac": 0, "internal/version": 0, "internal/pkt": 0, "internal/dashboard": 0, "internal/show": 4,
	"internal/top": 6, "internal/demo": 6,
	"cac/bucket": 1, "cac/cpu": 1, "cac/config": 1, "cac/policy": 2, "cac/agents": 1,
	"cac/sipd": 1, "cac/sockbuf": 1, "cac/listeners": 1, "cac/sessions": 0, "cac/control": 3, "bpf": 1,
	"cac/fleet": 1, "cac/violation": 1,
	"maps":           3,
	"loader":         4,
	"maps/collector": 5, "api": 5, "internal/storm": 5,
	"daemon":     6,
	"cmd/cacctl": 7,
	// The reference model and the tests: never imported by what ships.
	"internal/model/classify": 8, "internal/model/l2tp": 8, "internal/model/admission": 8, "internal/model/access": 8,
	"internal/layers": 9,
}

// testOnly are packages no shipped package may link: the reference model
// under internal/model, this package, and everything under tests/.
func testOnly(pkg string) bool {
	return under(pkg, "internal/model") || under(pkg, "tests") || pkg == "internal/layers"
}

// under says whether pkg is dir or a package below it.
func under(pkg, dir string) bool {
	return pkg == dir || strings.HasPrefix(pkg, dir+"/")
}

// goList is `go list` of every package of the module with its imports
// (not those of its tests).
func goList(t *testing.T, args ...string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}"}, args...)...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		var own []string
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module) {
				own = append(own, strings.TrimPrefix(imp, module))
			}
		}
		pkgs[strings.TrimPrefix(f[0], module)] = own
	}
	return pkgs
}

// TestImportsPointDown: no package imports one above its floor.
func TestImportsPointDown(t *testing.T) {
	for pkg, imps := range goList(t, "./...") {
		floor, ok := floors[pkg]
		if !ok && !strings.HasPrefix(pkg, "tests") {
			t.Errorf("%s has no floor: give it one in floors", pkg)
			continue
		}
		if !ok {
			floor = 9
		}
		for _, imp := range imps {
			if f, ok := floors[imp]; ok && f > floor {
				t.Errorf("%s (floor %d) imports %s (floor %d): imports point down", pkg, floor, imp, f)
			}
		}
	}
}

// cacctlLinks are the packages of the module that cmd/cacctl links: what
// ships.
func cacctlLinks(t *testing.T) map[string]bool {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "./cmd/cacctl")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	linked := map[string]bool{}
	for _, dep := range strings.Fields(string(out)) {
		if pkg, ok := strings.CutPrefix(dep, module); ok {
			linked[pkg] = true
		}
	}
	return linked
}

// shippedFaults says what breaks the rule of the layout among the
// packages all, of which cacctl links those in linked: a package outside
// internal/ and tests/ is one that ships, so cacctl links it (code only
// tests link would read as shipped code there), and nothing cacctl links
// is a test package or the reference model.
func shippedFaults(all []string, linked map[string]bool) []string {
	var faults []string
	for _, pkg := range all {
		if !under(pkg, "internal") && !under(pkg, "tests") && !linked[pkg] {
			faults = append(faults, fmt.Sprintf("%s is outside internal/ and tests/ but cacctl does not link it: "+
				"move it under tests/, or internal/model if it models the fast path", pkg))
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(linked)) {
		if testOnly(pkg) {
			faults = append(faults, fmt.Sprintf("cacctl links %s, which is for the tests only", pkg))
		}
	}
	return faults
}

// TestShippedLinked: every package outside internal/ and tests/ is linked
// by cacctl, and cacctl links no test package and not the reference model.
func TestShippedLinked(t *testing.T) {
	all := slices.Sorted(maps.Keys(goList(t, "./...")))
	for _, f := range shippedFaults(all, cacctlLinks(t)) {
		t.Error(f)
	}
}

// TestShippedCatchesMadeUp: a package only tests link left among the
// shipped ones, and cacctl linking the model or a test package, are each
// caught.
func TestShippedCatchesMadeUp(t *testing.T) {
	all := slices.Sorted(maps.Keys(goList(t, "./...")))
	linked := cacctlLinks(t)
	with := func(pkg string) map[string]bool {
		m := maps.Clone(linked)
		m[pkg] = true
		return m
	}
	for name, c := range map[string]struct {
		all    []string
		linked map[string]bool
	}{
		"a package cacctl does not link": {append(slices.Clone(all), "cac/madeup"), linked},
		"the model linked":               {all, with("internal/model/classify")},
		"a test package linked":          {all, with("tests/harness")},
	} {
		if f := shippedFaults(c.all, c.linked); len(f) != 1 {
			t.Errorf("%s: want one fault, got %q", name, f)
		}
	}
}
