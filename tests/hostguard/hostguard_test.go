package hostguard

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the module's directory, from this package's.
const root = "../.."

// vmOnly are the files that may touch what is the machine's own, because
// they run only in the kernel VM of tests/kernels, whose clock, sysctls
// and root namespace are the test's; and this package, whose patterns
// name what it looks for.
var vmOnly = map[string]string{
	"tests/daemon/clock_test.go": "TestClockJumps sets the wall clock only in the kernel VM (XDPCAC_CLOCK_JUMPS=1, set by tests/kernels/init)",
	"tests/kernels/init":         "the kernel VM's init",
	"tests/hostguard/":           "the guard's own patterns",
}

// clockCalls are the system calls that set or slew a clock.
var clockCalls = []string{"ClockSettime", "Settimeofday", "Adjtimex", "ClockAdjtime", "Stime"}

// routeCalls are netlink's changes of addresses and routes.
var routeCalls = []string{"AddrAdd", "AddrReplace", "AddrDel", "RouteAdd", "RouteAppend",
	"RouteReplace", "RouteChange", "RouteDel"}

// Shell commands, in a string a test runs or a script's line.
var (
	clockCmd  = regexp.MustCompile(`\bdate\s+(-\w*s\b|--set)|\bhwclock\b|\btimedatectl\s+set`)
	sysctlCmd = regexp.MustCompile(`\bsysctl\s+(-\w*w\b|\S+=)|>\s*/proc/sys/`)
	routeCmd  = regexp.MustCompile(`\bip\s+(-[46]\s+)?(a|addr|address|r|ro|route)\s+(add|replace|change|append|del|delete|flush)\b`)
	netnsCmd  = regexp.MustCompile(`\bip\s+(-[46]\s+)?(-n|-netns|netns\s+exec)\b|\bnsenter\b`)
)

// The words of an ip command's argument list that change an address or
// a route: the object, then the verb.
var (
	ipObjects = []string{"a", "addr", "address", "r", "ro", "route"}
	ipVerbs   = []string{"add", "replace", "change", "append", "del", "delete", "flush"}
)

// TestHostUntouched: no test outside the kernel VM's sets the wall
// clock, writes a sysctl, or adds an address or a route in the root
// namespace. The test code is every _test.go file, every Go file under
// tests/ (the helpers) and the scripts there.
func TestHostUntouched(t *testing.T) {
	var files int
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if allowed(rel) {
			return nil
		}
		underTests := strings.HasPrefix(rel, "tests/")
		switch {
		case strings.HasSuffix(rel, "_test.go") || underTests && strings.HasSuffix(rel, ".go"):
			files++
			for _, v := range checkGo(t, path) {
				t.Errorf("%s:%s", rel, v)
			}
		case underTests && strings.HasSuffix(rel, ".sh"):
			files++
			for _, v := range checkScript(t, path) {
				t.Errorf("%s:%s", rel, v)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("only %d test files read under %s: the walk went wrong", files, root)
	}
	if t.Failed() {
		t.Log(`a test may touch on the host only what it creates and removes: namespaces, veths, pins (docs/design.md, "Testing"); one that must set the clock runs in the kernel VM (tests/kernels)`)
	}
}

func allowed(rel string) bool {
	for p := range vmOnly {
		if rel == p || strings.HasSuffix(p, "/") && strings.HasPrefix(rel, p) {
			return true
		}
	}
	return false
}

// checkGo returns the violations of a Go file, each as "line: what".
func checkGo(t *testing.T, path string) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	bad := func(pos token.Pos, format string, args ...any) {
		out = append(out, strconv.Itoa(fset.Position(pos).Line)+": "+fmt.Sprintf(format, args...))
	}
	// Reading a sysctl is harmless: literals given to os.ReadFile or
	// os.Open directly are let be.
	reads := map[*ast.BasicLit]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok && isCall(c, "os", "ReadFile", "Open") {
			for _, a := range c.Args {
				if l, ok := a.(*ast.BasicLit); ok {
					reads[l] = true
				}
			}
		}
		return true
	})
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if name := calledName(n); slices.Contains(clockCalls, name) {
				bad(n.Pos(), "%s sets the machine's clock", name)
			}
			words := stringWords(n.Args)
			if len(words) > 0 && words[0] == "date" && slices.ContainsFunc(words[1:], func(w string) bool {
				return w == "-s" || strings.HasPrefix(w, "--set")
			}) {
				bad(n.Pos(), "date -s sets the machine's clock")
			}
			if slices.Contains(words, "hwclock") || slices.Contains(words, "timedatectl") {
				bad(n.Pos(), "hwclock or timedatectl sets the machine's clock")
			}
			if i := slices.Index(words, "sysctl"); i >= 0 && slices.ContainsFunc(words[i+1:], func(w string) bool {
				return w == "-w" || strings.Contains(w, "=")
			}) {
				bad(n.Pos(), "sysctl -w writes a sysctl")
			}
		case *ast.BasicLit:
			s, ok := unquote(n)
			if !ok {
				break
			}
			if clockCmd.MatchString(s) {
				bad(n.Pos(), "%q sets the machine's clock", s)
			}
			if sysctlCmd.MatchString(s) || strings.HasPrefix(s, "/proc/sys") && !reads[n] {
				bad(n.Pos(), "%q writes a sysctl", s)
			}
		}
		return true
	})
	// Addresses and routes, function by function: one that changes them
	// must do it in a namespace, which it names (ip -n, netns, nsenter)
	// or enters (testenv.Do, Run or Command, harness.DoNetlink).
	for _, d := range f.Decls {
		var changes []token.Pos
		var inNetns bool
		ast.Inspect(d, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if name := calledName(n); slices.Contains(routeCalls, name) {
					changes = append(changes, n.Pos())
				}
				if isCall(n, "testenv", "Do", "Run", "Command") || isCall(n, "harness", "DoNetlink") || isCall(n, "", "Do", "Run", "Command", "DoNetlink") {
					inNetns = true
				}
				if ipChange(stringWords(n.Args)) {
					changes = append(changes, n.Pos())
				}
			case *ast.CompositeLit:
				if ipChange(stringWords(n.Elts)) {
					changes = append(changes, n.Pos())
				}
			case *ast.BasicLit:
				s, _ := unquote(n)
				switch {
				case s == "-n" || s == "-netns" || s == "netns" || s == "nsenter" || netnsCmd.MatchString(s):
					inNetns = true
				case routeCmd.MatchString(s):
					changes = append(changes, n.Pos())
				}
			}
			return true
		})
		if !inNetns {
			for _, p := range changes {
				bad(p, "adds or changes an address or a route, and not in a namespace of the test's own")
			}
		}
	}
	return out
}

// checkScript returns the violations of a shell script, line by line.
func checkScript(t *testing.T, path string) []string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.Index(line, "#"); i >= 0 && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t') {
			line = line[:i]
		}
		switch {
		case clockCmd.MatchString(line):
			out = append(out, strconv.Itoa(n)+": sets the machine's clock")
		case sysctlCmd.MatchString(line):
			out = append(out, strconv.Itoa(n)+": writes a sysctl")
		case routeCmd.MatchString(line) && !netnsCmd.MatchString(line):
			out = append(out, strconv.Itoa(n)+": adds or changes an address or a route in the root namespace")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// ipChange says whether words hold an ip object then a verb that
// changes it ("addr", "add"; "route", "replace").
func ipChange(words []string) bool {
	for i := 0; i+1 < len(words); i++ {
		if slices.Contains(ipObjects, words[i]) && slices.Contains(ipVerbs, words[i+1]) {
			return true
		}
	}
	return false
}

// stringWords are the string literals among exprs, in order, those of
// composite literals ([]string{...}) and append calls included.
func stringWords(exprs []ast.Expr) []string {
	var words []string
	for _, e := range exprs {
		switch e := e.(type) {
		case *ast.BasicLit:
			if s, ok := unquote(e); ok {
				words = append(words, s)
			}
		case *ast.CompositeLit:
			words = append(words, stringWords(e.Elts)...)
		case *ast.CallExpr:
			if id, ok := e.Fun.(*ast.Ident); ok && id.Name == "append" {
				words = append(words, stringWords(e.Args)...)
			}
		}
	}
	return words
}

func unquote(l *ast.BasicLit) (string, bool) {
	if l.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(l.Value)
	return s, err == nil
}

// calledName is the name of the function or method c calls.
func calledName(c *ast.CallExpr) string {
	switch f := c.Fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		return f.Sel.Name
	}
	return ""
}

// isCall says whether c calls pkg.name for one of names; pkg "" is a
// call of the bare name, within the package.
func isCall(c *ast.CallExpr, pkg string, names ...string) bool {
	switch f := c.Fun.(type) {
	case *ast.Ident:
		return pkg == "" && slices.Contains(names, f.Name)
	case *ast.SelectorExpr:
		x, ok := f.X.(*ast.Ident)
		return ok && x.Name == pkg && slices.Contains(names, f.Sel.Name)
	}
	return false
}
