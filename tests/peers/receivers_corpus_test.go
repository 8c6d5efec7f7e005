package peers

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	. "github.com/xdpcac/xdpcac/internal/pkt"
)

// The corpus of the receiver differential, receivers/corpus/*.msg: the
// forms an attacker is known to try, and every finding a run recorded
// (XDPCAC_FUZZ_RECORD=1). Each run replays it before it generates, so
// make test holds the filter to every form ever found. A file is a few
// header lines, a blank line, and the UDP payload to the end of the
// file, byte for byte (CRLFs, NULs and all):
//
//	xdpcac receivers corpus
//	family: v4 or v6
//	ext: 0 60          (IPv6 extension headers, by protocol; optional)
//	marker: fz1-17     (in the Call-ID; a replay puts its own in its place)
//	why: what it is, or what the run found

const (
	fzCorpusDir   = "receivers/corpus"
	fzCorpusMagic = "xdpcac receivers corpus"
)

type fzEntry struct {
	file, marker, why string
	v6                bool
	ext               []Ext
	msg               []byte
}

func fzReadCorpus(t *testing.T) []fzEntry {
	files, err := filepath.Glob(filepath.Join(fzCorpusDir, "*.msg"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus in %s: %v", fzCorpusDir, err)
	}
	sort.Strings(files)
	var out []fzEntry
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		head, msg, ok := bytes.Cut(data, []byte("\n\n"))
		lines := strings.Split(string(head), "\n")
		if !ok || lines[0] != fzCorpusMagic {
			t.Fatalf("%s: not %q, header lines, a blank line and the message", f, fzCorpusMagic)
		}
		e := fzEntry{file: filepath.Base(f), msg: msg}
		for _, l := range lines[1:] {
			k, v, _ := strings.Cut(l, ": ")
			switch k {
			case "family":
				e.v6 = v == "v6"
			case "marker":
				e.marker = v
			case "why":
				e.why = v
			case "ext":
				for _, p := range strings.Fields(v) {
					n, err := strconv.ParseUint(p, 10, 8)
					if err != nil {
						t.Fatalf("%s: ext %q: %v", f, p, err)
					}
					e.ext = append(e.ext, Ext{Proto: uint8(n)})
				}
			}
		}
		if e.marker == "" || !bytes.Contains(msg, []byte(e.marker)) {
			t.Fatalf("%s: the marker %q is not in the message", f, e.marker)
		}
		out = append(out, e)
	}
	return out
}

// replay is entry i as a case to send, its marker replaced by one of the
// same length where that fits, so that no offset in the message moves.
func (e fzEntry) replay(i int) *fzCase {
	n := strconv.Itoa(i)
	marker := "rp" + strings.Repeat("0", max(1, len(e.marker)-3-len(n))) + "-" + n
	return &fzCase{origin: "corpus " + e.file + " (" + e.why + ")", marker: marker,
		msg: bytes.ReplaceAll(e.msg, []byte(e.marker), []byte(marker)), v6: e.v6, ext: e.ext,
		muts: []string{"corpus " + e.file}, replayed: true}
}

// fzWriteCorpus writes c to the corpus, named by its content, and returns
// the file's name.
func fzWriteCorpus(t *testing.T, c *fzCase, why string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nfamily: %s\n", fzCorpusMagic, map[bool]string{false: "v4", true: "v6"}[c.v6])
	if len(c.ext) > 0 {
		var p []string
		for _, e := range c.ext {
			p = append(p, strconv.Itoa(int(e.Proto)))
		}
		fmt.Fprintf(&b, "ext: %s\n", strings.Join(p, " "))
	}
	why = strings.NewReplacer("\n", " ", "\r", " ").Replace(c.origin + ", mutations " + strings.Join(c.muts, "; ") + ": " + why)
	fmt.Fprintf(&b, "marker: %s\nwhy: %s\n\n", c.marker, why)
	data := append([]byte(b.String()), c.msg...)
	sum := sha256.Sum256(c.msg)
	name := fmt.Sprintf("found-%x.msg", sum[:8])
	if err := os.WriteFile(filepath.Join(fzCorpusDir, name), data, 0o644); err != nil {
		t.Errorf("record %s: %v", name, err)
	}
	return name
}
