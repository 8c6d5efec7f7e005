package layers

import (
	"bufio"
	"bytes"
	"os/exec"
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
	"cac/classify": 8, "cac/l2tp": 8, "cac/admission": 8,
	"internal/layers": 9, "docs": 9, "tests/testenv": 9,
}

// testOnly are packages no shipped package may link.
func testOnly(pkg string) bool {
	return floors[pkg] >= 8 || pkg == "tests" || strings.HasPrefix(pkg, "tests/")
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

// TestShippedLinksNoTests: the binary links no test package and not the
// reference model.
func TestShippedLinksNoTests(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./cmd/cacctl")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if pkg, ok := strings.CutPrefix(dep, module); ok && testOnly(pkg) {
			t.Errorf("cacctl links %s", pkg)
		}
	}
}
