package peers

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
//
// and, for a frame around the message other than the plain one
// (receivers_encap_test.go), each optional:
//
//	tags: 8100:a000 88a8:0000   (priority tags, TPID:TCI in hex, outermost first)
//	ipv4-options: 94040000      (in hex, before padding)
//	fragments: 16 1400          (sizes of all fragments but the last, in bytes
//	                             of the fragmentable part: multiples of 8)
//	after: 2                    (of the ext, the trailing destination options
//	                             that follow the fragment header)

const (
	fzCorpusDir   = "receivers/corpus"
	fzCorpusMagic = "xdpcac receivers corpus"
)

type fzEntry struct {
	file, marker, why string
	v6                bool
	ext               []Ext
	encap             fzEncap
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
			case "tags", "ipv4-options", "fragments", "after":
				if err := e.encap.parse(k, v); err != nil {
					t.Fatalf("%s: %s %q: %v", f, k, v, err)
				}
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
		if err := e.encap.check(e.v6, len(e.ext), len(msg)); err != nil {
			t.Fatalf("%s: %v", f, err)
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
		msg: bytes.ReplaceAll(e.msg, []byte(e.marker), []byte(marker)), v6: e.v6, ext: e.ext, encap: e.encap,
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
	encap := c.encap.lines()
	b.WriteString(encap)
	why = strings.NewReplacer("\n", " ", "\r", " ").Replace(c.origin + ", mutations " + strings.Join(c.muts, "; ") + ": " + why)
	fmt.Fprintf(&b, "marker: %s\nwhy: %s\n\n", c.marker, why)
	data := append([]byte(b.String()), c.msg...)
	// Named by the message and its frame (the message alone when the
	// frame is plain, as before frames varied).
	sum := sha256.Sum256(append(slices.Clone(c.msg), encap...))
	name := fmt.Sprintf("found-%x.msg", sum[:8])
	if err := os.WriteFile(filepath.Join(fzCorpusDir, name), data, 0o644); err != nil {
		t.Errorf("record %s: %v", name, err)
	}
	return name
}

// lines is e as the corpus's header lines, "" for the plain frame.
func (e fzEncap) lines() string {
	var b strings.Builder
	if len(e.tags) > 0 {
		fmt.Fprintf(&b, "tags: %s\n", e.tagList())
	}
	if len(e.opts) > 0 {
		fmt.Fprintf(&b, "ipv4-options: %x\n", e.opts)
	}
	if len(e.frags) > 0 {
		fmt.Fprintf(&b, "fragments: %s\n", e.fragList())
	}
	if e.after > 0 {
		fmt.Fprintf(&b, "after: %d\n", e.after)
	}
	return b.String()
}

// parse reads the corpus's header line key: v into e.
func (e *fzEncap) parse(key, v string) error {
	var err error
	switch key {
	case "tags":
		for _, f := range strings.Fields(v) {
			var g fzTag
			if _, err = fmt.Sscanf(f, "%x:%x", &g.tpid, &g.tci); err != nil {
				return err
			}
			e.tags = append(e.tags, g)
		}
	case "ipv4-options":
		_, err = fmt.Sscanf(v, "%x", &e.opts)
	case "fragments":
		for _, f := range strings.Fields(v) {
			var n int
			if _, err = fmt.Sscan(f, &n); err != nil || n <= 0 || n%8 != 0 {
				return fmt.Errorf("%q: not a positive multiple of 8 (%v)", f, err)
			}
			e.frags = append(e.frags, n)
		}
	case "after":
		_, err = fmt.Sscan(v, &e.after)
	}
	return err
}

// check reports what makes e no frame around a message of n bytes behind
// ext extension headers over IPv6 (v6) or IPv4.
func (e fzEncap) check(v6 bool, ext, n int) error {
	total := 8 + 8*e.after + n
	for _, f := range e.frags {
		total -= f
	}
	switch {
	case e.after > 0 && (!v6 || len(e.frags) == 0 || e.after >= ext):
		return fmt.Errorf("after %d: not behind a fragment header of IPv6 with more headers before", e.after)
	case len(e.frags) > 0 && (e.firstPayload() < 0 || total <= 0):
		return fmt.Errorf("fragments %v: no UDP header in the first, or nothing left for the last", e.frags)
	case v6 && len(e.opts) > 0:
		return fmt.Errorf("IPv4 options over IPv6")
	}
	return nil
}
