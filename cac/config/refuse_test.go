package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// header is what the first line of a testdata file says after "# key: ".
func header(t *testing.T, path, key string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	want, ok := strings.CutPrefix(first, "# "+key+": ")
	if !ok {
		t.Fatalf("%s: the first line must be # %s: ...", path, key)
	}
	return want
}

// TestRefusedFiles: each file of testdata/refused is refused, with no
// config, by an error at file:line:column: key that its first line gives.
func TestRefusedFiles(t *testing.T) {
	eachFile(t, "refused", func(t *testing.T, f, want string) {
		cfg, err := Load(f)
		if err == nil || cfg != nil {
			t.Fatalf("accepted: %+v", cfg)
		}
		if want = f + ":" + want; !strings.Contains(err.Error(), want) {
			t.Errorf("got  %v\nwant %s", err, want)
		}
	})
}

// eachFile runs fn on every file of testdata/dir with what its first line
// gives ("# refused: ..." for testdata/refused, "# lines: ..." for
// testdata/ios).
func eachFile(t *testing.T, dir string, fn func(t *testing.T, file, want string)) {
	key := map[string]string{"refused": "refused", "ios": "lines"}[dir]
	files, _ := filepath.Glob("testdata/" + dir + "/*.yaml")
	if len(files) == 0 {
		t.Fatalf("no testdata/%s files", dir)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { fn(t, f, header(t, f, key)) })
	}
}

// TestIOSForms: each file of testdata/ios is accepted, and its IOS lines
// come to the lines its first line gives.
func TestIOSForms(t *testing.T) {
	eachFile(t, "ios", func(t *testing.T, f, want string) {
		cfg, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(cfg.CallAdmission.Lines(), " | "); got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	})
}

// TestIOSInline: forms a testdata file cannot hold as pasted (line ends
// of another system) and the forms Lines must print back.
func TestIOSInline(t *testing.T) {
	cfg, err := Parse("crlf.yaml", []byte("interfaces: [{name: a}]\r\ncall-admission: |\r\n  call admission limit 10\r\n  call admission pppoe 10 1 ! x\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c := cfg.CallAdmission; *c.Limit != 10 || c.Charges["pppoe"] != (Charge{10, time.Second}) {
		t.Errorf("CRLF lines: %+v", c)
	}
}

// TestEmptyFile: a file of no bytes is refused as one of comments is.
func TestEmptyFile(t *testing.T) {
	for _, data := range []string{"", "\n \n", "---\n", "~\n"} {
		if _, err := Parse("e.yaml", []byte(data)); err == nil || !strings.Contains(err.Error(), "(document): holds no keys") {
			t.Errorf("%q: got %v", data, err)
		}
	}
}

// sized is a file with n customers of per accounts each and agents
// session agents, the biggest tables a file names.
func sized(customers, per, agents int) []byte {
	var b strings.Builder
	b.WriteString("realms: [{name: core, address: 192.0.2.1}]\ncustomers:\n")
	for i := 0; i < customers; i++ {
		if per == 0 {
			fmt.Fprintf(&b, "  - {name: c%d}\n", i)
			continue
		}
		fmt.Fprintf(&b, "  - name: c%d\n    accounts:\n", i)
		for j := 0; j < per; j++ {
			n := i*per + j
			fmt.Fprintf(&b, "      - {name: a%d, source: 10.%d.%d.0/24}\n", n, n>>8&0xff, n&0xff)
		}
	}
	if agents > 0 {
		b.WriteString("session-agents:\n")
	}
	for i := 0; i < agents; i++ {
		fmt.Fprintf(&b, "  - {name: p%d, hostname: 198.51.100.%d, realm-id: core}\n", i, i%250)
	}
	return []byte(b.String())
}

// TestTableSizes: a file past a table's capacity is refused at the first
// item past it, and one of 50,000 accounts is refused fast: the count
// comes before the pairwise overlap check.
func TestTableSizes(t *testing.T) {
	cases := []struct {
		name                   string
		customers, per, agents int
		want                   string
	}{
		{"accounts", 2, 2049, 0, ":4103:9: customers[1].accounts[2047]: 4098 accounts: the fast path holds at most 4096"},
		{"customers", 1025, 0, 0, ":1027:5: customers[1024]: 1025 customers: the fast path holds at most 1024"},
		{"agents", 0, 0, 257, ":260:5: session-agents[256]: 257 session agents: the fast path holds at most 256"},
	}
	for _, c := range cases {
		_, err := Parse("s.yaml", sized(c.customers, c.per, c.agents))
		if err == nil || !strings.Contains(err.Error(), "s.yaml"+c.want) {
			t.Errorf("%s: got %v\nwant %s", c.name, err, c.want)
		}
	}
	if _, err := Parse("s.yaml", sized(1, MaxAccounts, MaxAgents)); err != nil {
		t.Errorf("at capacity: %v", err)
	}
	start := time.Now()
	_, err := Parse("s.yaml", sized(10, 5000, 0))
	if err == nil || !strings.Contains(err.Error(), "50000 accounts") {
		t.Errorf("50,000 accounts: %v", err)
	}
	// How long it took is for the log: no test passes or fails on time.
	t.Logf("50,000 accounts refused after %v", time.Since(start))
}
