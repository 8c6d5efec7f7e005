package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The command tree is cmd/cacctl's, a package main this package cannot
// import. It is read from the binary itself: built once, each command's
// --help gives its subcommands, aliases and flags in cobra's own layout.

// command is one node of cacctl's tree as its --help shows it.
type command struct {
	path    string // "cacctl show stats"
	aliases []string
	subs    map[string]*command
	flags   map[string]bool // "--output", "-o", inherited ones included
}

var (
	treeOnce sync.Once
	tree     *command
	treeErr  error
)

// cacctlTree builds cacctl and reads its tree.
func cacctlTree(t *testing.T) *command {
	t.Helper()
	treeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "docs-cacctl-")
		if err != nil {
			treeErr = err
			return
		}
		defer os.RemoveAll(dir)
		bin := filepath.Join(dir, "cacctl")
		build := exec.Command("go", "build", "-o", bin, "./cmd/cacctl")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			treeErr = fmt.Errorf("go build ./cmd/cacctl: %v\n%s", err, out)
			return
		}
		tree, treeErr = readCommand(bin, nil)
	})
	if treeErr != nil {
		t.Fatal(treeErr)
	}
	return tree
}

// helpSection matches the headings of cobra's usage template.
var helpSection = regexp.MustCompile(`^([A-Z][A-Za-z ]*):$`)

// flagLine is a line of Flags: or Global Flags:, "  -o, --output ..." or
// "      --state-dir string ...".
var flagLine = regexp.MustCompile(`^\s+(?:(-[A-Za-z0-9]), )?(--[a-z0-9-]+)`)

// readCommand reads the command at args and, recursively, those below it.
func readCommand(bin string, args []string) (*command, error) {
	out, err := exec.Command(bin, append(slices.Clone(args), "--help")...).Output()
	if err != nil {
		return nil, fmt.Errorf("cacctl %s --help: %v", strings.Join(args, " "), err)
	}
	c := &command{path: strings.Join(append([]string{"cacctl"}, args...), " "), subs: map[string]*command{}, flags: map[string]bool{}}
	section := ""
	for _, l := range strings.Split(string(out), "\n") {
		if m := helpSection.FindStringSubmatch(l); m != nil {
			section = m[1]
			continue
		}
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		switch section {
		case "Aliases":
			for _, a := range strings.Split(strings.Join(f, ""), ",") {
				c.aliases = append(c.aliases, a)
			}
		case "Available Commands":
			sub, err := readCommand(bin, append(slices.Clone(args), f[0]))
			if err != nil {
				return nil, err
			}
			c.subs[f[0]] = sub
		case "Flags", "Global Flags":
			if m := flagLine.FindStringSubmatch(l); m != nil {
				c.flags[m[2]] = true
				if m[1] != "" {
					c.flags[m[1]] = true
				}
			}
		}
	}
	return c, nil
}

// sub finds the subcommand word names, as cacctl would: its name, an
// alias, or a prefix of only one of them (IOS abbreviations).
func (c *command) sub(word string) *command {
	var found []*command
	for name, s := range c.subs {
		switch {
		case name == word || slices.Contains(s.aliases, word):
			return s
		case strings.HasPrefix(name, word) || slices.ContainsFunc(s.aliases, func(a string) bool { return strings.HasPrefix(a, word) }):
			found = append(found, s)
		}
	}
	if len(found) == 1 {
		return found[0]
	}
	return nil
}

// hasFlag reports whether any command of the tree takes flag.
func (c *command) hasFlag(flag string) bool {
	if c.flags[flag] {
		return true
	}
	for _, s := range c.subs {
		if s.hasFlag(flag) {
			return true
		}
	}
	return false
}

// checkLine checks one command line of the docs, the words after
// `cacctl`: each word before the first argument names a subcommand, and
// every flag is one the command it ends at takes. Brackets and the
// alternatives of a synopsis ([--mode auto|native]) are read as flags and
// arguments.
func checkLine(r reporter, where string, top *command, words []string) {
	r.Helper()
	c, args := top, false
	for _, w := range words {
		w = strings.Trim(w, "[]")
		switch {
		case w == "" || w == "|" || w == "...":
		case strings.HasPrefix(w, "-"):
			name, _, _ := strings.Cut(w, "=")
			if !c.flags[name] {
				r.Errorf("%s: %s has no flag %s", where, c.path, name)
			}
		case len(c.subs) > 0 && !args:
			s := c.sub(w)
			if s == nil {
				r.Errorf("%s: %s has no command %q", where, c.path, w)
				return
			}
			c = s
		default:
			args = true
		}
	}
}

// mention is a cacctl command line, or a flag alone, in the docs.
type mention struct {
	where string   // file:line
	words []string // after cacctl; nil for a flag alone
	flag  string
}

var (
	codeSpan = regexp.MustCompile("`([^`]+)`")
	// invocation is a command line that runs cacctl: cacctl, by name or
	// path, after sudo or not, as the first word of a line, of a prompt
	// ($) or of a command after ;, &&, | or (.
	invocation = regexp.MustCompile(`(?:^|[;&|(]|\$\s)\s*(?:sudo\s+)?(?:[\w./-]*/)?cacctl((?:\s+[^\s#;&|)]+(?:\|[^\s#;&)]+)*)*)`)
	flagAlone  = regexp.MustCompile(`^--[a-z][a-z0-9-]*`)
)

// mentions finds every cacctl command line of the page: in code blocks,
// and in code spans that start with cacctl or with one of its commands
// (`show rejects --top 10`); and every code span that starts with a flag
// (`--detach-on-exit`), which in these pages is always cacctl's.
func mentions(t *testing.T, page string, top *command) []mention {
	t.Helper()
	var out []mention
	fenced := false
	for i, l := range readLines(t, filepath.Join(root, page)) {
		where := fmt.Sprintf("%s:%d", page, i+1)
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			if m := invocation.FindStringSubmatch(l); m != nil {
				out = append(out, mention{where: where, words: strings.Fields(m[1])})
			}
			continue
		}
		for _, s := range codeSpan.FindAllStringSubmatch(l, -1) {
			span := s[1]
			f := strings.Fields(span)
			switch {
			case invocation.MatchString(span) && (f[0] == "cacctl" || f[0] == "sudo" || strings.HasSuffix(f[0], "/cacctl")):
				m := invocation.FindStringSubmatch(span)
				out = append(out, mention{where: where, words: strings.Fields(m[1])})
			case top.subs[f[0]] != nil:
				out = append(out, mention{where: where, words: f})
			case flagAlone.MatchString(span):
				out = append(out, mention{where: where, flag: flagAlone.FindString(span)})
			}
		}
	}
	return out
}

// userPages are the pages written for users, the README and every page
// of docs/, by their paths from the root: the names failures give.
func userPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(docPage("*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, p := range pages {
		out = append(out, "docs/"+filepath.Base(p))
	}
	return out
}

// TestCLIReferences: every cacctl command and flag the README and the
// docs name is one cacctl has.
func TestCLIReferences(t *testing.T) {
	top := cacctlTree(t)
	n := 0
	for _, page := range userPages(t) {
		for _, m := range mentions(t, page, top) {
			n++
			checkMention(t, top, m)
		}
	}
	t.Logf("%d mentions of cacctl checked", n)
	if n < 20 {
		t.Fatalf("only %d mentions of cacctl found: the search is wrong", n)
	}
}

func checkMention(r reporter, top *command, m mention) {
	r.Helper()
	if m.words == nil {
		if !top.hasFlag(m.flag) {
			r.Errorf("%s: no cacctl command has the flag %s", m.where, m.flag)
		}
		return
	}
	checkLine(r, m.where, top, m.words)
}

// TestCLIReferencesCatchMadeUp: a made-up command, subcommand or flag,
// written as the docs write them, fails the check; the real ones pass.
func TestCLIReferencesCatchMadeUp(t *testing.T) {
	top := cacctlTree(t)
	for _, tc := range []struct {
		line string
		bad  bool
	}{
		{"sudo cacctl show rejects --class sip-invite --top 10 -o json", false},
		{"cacctl sh call adm stat", false},
		{"cacctl attach eth1 --config cac.yaml [--mode auto|native|generic|multi]", false},
		{"cacctl show callers", true},
		{"cacctl reload --config cac.yaml", true},
		{"cacctl show stats --watch", true},
		{"cacctl attach eth1 -x", true},
		{"cacctl top --once --interval 2s", true},
	} {
		m := invocation.FindStringSubmatch(tc.line)
		rec := &recorder{}
		checkMention(rec, top, mention{where: "made-up", words: strings.Fields(m[1])})
		if got := len(rec.errs) > 0; got != tc.bad {
			t.Errorf("%q: failures %q, want failing %v", tc.line, rec.errs, tc.bad)
		}
	}
	rec := &recorder{}
	checkMention(rec, top, mention{where: "made-up", flag: "--dry-run"})
	if len(rec.errs) != 1 {
		t.Errorf("--dry-run alone: failures %q, want one", rec.errs)
	}
}

// exitCodes are the codes cacctl exits with: the constants of
// cmd/cacctl/exit.go, whose names start with exit. A read command the
// daemon runs for a reader ends with the code of the same function.
func exitCodes(t *testing.T) map[int]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "cmd", "cacctl", "exit.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[int]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		v, ok := n.(*ast.ValueSpec)
		if !ok || len(v.Values) != len(v.Names) {
			return true
		}
		for i, name := range v.Names {
			lit, ok := v.Values[i].(*ast.BasicLit)
			if !strings.HasPrefix(name.Name, "exit") || !ok || lit.Kind != token.INT {
				continue
			}
			code, err := strconv.Atoi(lit.Value)
			if err != nil {
				t.Fatal(err)
			}
			codes[code] = true
		}
		return true
	})
	if len(codes) < 2 {
		t.Fatalf("cmd/cacctl/exit.go: found exit codes %v: the parse is wrong", codes)
	}
	return codes
}

// exitDegraded is cmd/cacctl's code for a degraded status: the one
// TestExitCodesCatchMadeUp leaves out of a table.
const exitDegraded = 3

// operations is the page whose "Exit codes" table is the reference.
const operations = "operations.md"

// exitTableCodes are the first cells of the table under the heading
// "Exit codes" of the page name.
func exitTableCodes(t *testing.T, name string) map[int]string {
	t.Helper()
	codes := map[int]string{}
	in := false
	for i, l := range readLines(t, docPage(name)) {
		if strings.HasPrefix(l, "#") {
			in = strings.TrimSpace(strings.TrimLeft(l, "#")) == "Exit codes"
			continue
		}
		if !in || !strings.HasPrefix(l, "|") {
			continue
		}
		cell := strings.TrimSpace(strings.Split(l, "|")[1])
		if code, err := strconv.Atoi(cell); err == nil {
			codes[code] = fmt.Sprintf("docs/%s:%d", name, i+1)
		}
	}
	if len(codes) == 0 {
		t.Fatalf("docs/%s: no table under a heading Exit codes", name)
	}
	return codes
}

// exitProse finds exit codes named in running text: "exits 3", "exit
// code 2", "exit 0".
var exitProse = regexp.MustCompile(`\bexit(?:s| codes?)?\s+(\d+)\b`)

// checkExitCodes: every documented code is one cacctl returns, and every
// code cacctl returns is in the table.
func checkExitCodes(r reporter, table map[int]string, prose map[string]int, codes map[int]bool) {
	r.Helper()
	for code, where := range table {
		if !codes[code] {
			r.Errorf("%s: documents exit code %d, which cacctl never returns", where, code)
		}
	}
	for code := range codes {
		if _, ok := table[code]; !ok {
			r.Errorf("docs/%s: exit code %d, which cacctl returns, is not in its Exit codes table", operations, code)
		}
	}
	for where, code := range prose {
		if !codes[code] {
			r.Errorf("%s: says cacctl exits %d, which it never returns", where, code)
		}
	}
}

// proseExits are the exit codes the user pages name in their text.
func proseExits(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, page := range userPages(t) {
		for i, l := range readLines(t, filepath.Join(root, page)) {
			for _, m := range exitProse.FindAllStringSubmatch(l, -1) {
				code, _ := strconv.Atoi(m[1])
				out[fmt.Sprintf("%s:%d", page, i+1)] = code
			}
		}
	}
	return out
}

// TestExitCodes: the documented exit codes are those of cmd/cacctl.
func TestExitCodes(t *testing.T) {
	checkExitCodes(t, exitTableCodes(t, operations), proseExits(t), exitCodes(t))
}

// TestExitCodesCatchMadeUp: a code cacctl never returns fails, in the
// table and in the text; a code left out of the table fails.
func TestExitCodesCatchMadeUp(t *testing.T) {
	codes := exitCodes(t)
	table := map[int]string{}
	for c := range codes {
		table[c] = fmt.Sprintf("table:%d", c)
	}
	madeUp := map[int]string{4: "made-up"}
	for c, w := range table {
		madeUp[c] = w
	}
	missing := map[int]string{}
	for c, w := range table {
		if c != exitDegraded {
			missing[c] = w
		}
	}
	for name, tc := range map[string]struct {
		table map[int]string
		prose map[string]int
	}{
		"a made-up code in the table": {madeUp, nil},
		"a made-up code in the text":  {table, map[string]int{"made-up": 5}},
		"a code left out":             {missing, nil},
	} {
		rec := &recorder{}
		checkExitCodes(rec, tc.table, tc.prose, codes)
		if len(rec.errs) != 1 {
			t.Errorf("%s: want one failure, got %q", name, rec.errs)
		}
	}
}
