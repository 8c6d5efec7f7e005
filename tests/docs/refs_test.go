package docs

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository, seen from this package's directory; the pages
// these tests read are in its docs/.
const root = "../.."

// docPage is the path of one page of docs/, seen from this directory.
func docPage(name string) string { return filepath.Join(root, "docs", name) }

// citation is how the sources name a section of the design: the path,
// or in the pages beside it a link to it ([design.md](design.md)), an
// optional comma, and the section's heading in double quotes.
var citation = regexp.MustCompile(`(?:docs/design\.md|\[design\.md\]\(design\.md\)),?\s+"([^"]+)"`)

// outside is the name of the design card kept outside the repository.
// Written in two parts so that this file does not mention it itself.
var outside = "DESIGN" + ".md"

// TestDesignCitations fails for every citation of a section that is not a
// heading of design.md, naming the file and line where the citation starts.
// Comment lines are joined first, so a section's name broken over two lines
// is read whole.
func TestDesignCitations(t *testing.T) {
	headings := designHeadings(t)
	n := 0
	walkSources(t, func(path string, lines []string) {
		text, lineAt := joinComments(lines)
		for _, m := range citation.FindAllStringSubmatchIndex(text, -1) {
			n++
			name := strings.Join(strings.Fields(text[m[2]:m[3]]), " ")
			if !headings[name] {
				t.Errorf("%s:%d: cites docs/design.md %q, which is no heading there", path, lineAt(m[0]), name)
			}
		}
	})
	if n == 0 {
		t.Fatal("no citation found: the walk or the pattern is wrong")
	}
}

// TestNoOutsideDesign fails for every mention of the design card outside
// the repository: a reader of the repository cannot open it.
func TestNoOutsideDesign(t *testing.T) {
	walkSources(t, func(path string, lines []string) {
		for i, l := range lines {
			if strings.Contains(l, outside) {
				t.Errorf("%s:%d: mentions %s, which is not in the repository; cite docs/design.md by section", path, i+1, outside)
			}
		}
	})
}

// designHeadings returns the text of every heading of design.md, at any
// level, outside fenced code.
func designHeadings(t *testing.T) map[string]bool {
	t.Helper()
	lines := readLines(t, docPage("design.md"))
	h := map[string]bool{}
	fenced := false
	for _, l := range lines {
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(l, "#") {
			continue
		}
		name := strings.TrimLeft(l, "#")
		if name != l && (name == "" || name[0] == ' ') {
			h[strings.Join(strings.Fields(name), " ")] = true
		}
	}
	if len(h) == 0 {
		t.Fatal("design.md has no headings")
	}
	return h
}

// walkSources calls f with the lines of every .go, .h, .c and .md file of
// the repository, by its path from the root. Hidden directories (.git) and
// the vendored libbpf headers are not the project's words, and are left out.
func walkSources(t *testing.T, f func(path string, lines []string)) {
	t.Helper()
	vendored := filepath.Join(root, "bpf", "include")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || path == vendored) {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".h", ".c", ".md":
		default:
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		f(filepath.ToSlash(rel), readLines(t, path))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// joinComments joins the lines into one text, each without its leading
// blanks and comment marks (//, /*, *), and returns the line of any offset
// in the text.
func joinComments(lines []string) (string, func(int) int) {
	var b strings.Builder
	starts := make([]int, len(lines))
	for i, l := range lines {
		starts[i] = b.Len()
		l = strings.TrimSpace(l)
		for _, mark := range []string{"//", "/*", "*"} {
			if strings.HasPrefix(l, mark) && !strings.HasPrefix(l, "*/") {
				l = strings.TrimSpace(l[len(mark):])
				break
			}
		}
		b.WriteString(l)
		b.WriteByte(' ')
	}
	lineAt := func(off int) int {
		i := len(starts) - 1
		for i > 0 && starts[i] > off {
			i--
		}
		return i + 1
	}
	return b.String(), lineAt
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for s.Scan() {
		lines = append(lines, s.Text())
	}
	if err := s.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return lines
}
