package peers

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// The corpus, tests/peers/kamailio/corpus/*.sip, is requests in the manner of
// RFC 4475's torture tests and RFC 3665's call flows: odd whitespace,
// escapes, long and many headers, unknown methods, several Vias, requests
// inside dialogs. Each is one Kamailio accepts. They are written with
// LF line ends, which become CRLF; {call-id} becomes a Call-ID of the
// test's, {len} the length of the body.

// kamailioHighClasses are limits no message sent one at a time reaches.
const kamailioHighClasses = `classes:
  sip-invite:   {cps: 1000, burst: 1000, per-source: {cps: 1000, burst: 1000}}
  sip-options:  {cps: 1000, burst: 1000, per-source: {cps: 1000, burst: 1000}}
  sip-register: {cps: 1000, burst: 1000, per-source: {cps: 1000, burst: 1000}}
  sip-other:    {cps: 1000, burst: 1000, per-source: {cps: 1000, burst: 1000}}
  sip-indialog: {per-source: {cps: 1000, burst: 1000}}
  malformed:    {cps: 1000, burst: 1000, per-source: {cps: 1000, burst: 1000}}
`

// corpusMessage reads a corpus file and makes it the message to send.
func corpusMessage(t *testing.T, path, callID string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	msg := strings.ReplaceAll(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n", "\r\n")
	msg = strings.ReplaceAll(msg, "{call-id}", callID)
	_, body, ok := strings.Cut(msg, "\r\n\r\n")
	if !ok {
		t.Fatalf("%s: no blank line after the headers", path)
	}
	return strings.ReplaceAll(msg, "{len}", fmt.Sprint(len(body)))
}

// corpus sends each corpus message once over IPv4 and once over IPv6,
// one at a time under high limits, and checks for each that Kamailio
// handled it and that the filter charged it.
func (b *kamBed) corpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("kamailio", "corpus", "*.sip"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus in kamailio/corpus: %v", err)
	}
	sort.Strings(files)
	high := harness.WriteConfig(t, harness.E2eConfig+kamailioHighClasses)
	if _, stderr, err := b.Cacctl(t, "apply", "--config", high); err != nil {
		t.Fatalf("apply high limits: %v: %s", err, stderr)
	}
	v4, v6 := b.source(t, 200, false), b.source(t, 200, true)
	var uncharged, refused []string
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".sip")
		for _, fam := range []string{"v4", "v6"} {
			addr := v4
			if fam == "v6" {
				addr = v6
			}
			callID := fmt.Sprintf("corpus.%s.%s.%s", name, fam, testenv.Unique(""))
			msg := corpusMessage(t, f, callID)
			before, _ := b.charged(t)
			testenv.Send(t, b.Peer, b.PeerIfc, [][]byte{b.udpFrame(addr, nil, msg)})
			handled := testenv.Poll(2*time.Second, 10*time.Millisecond, func() bool { return b.k.Count(callID) > 0 })
			after, _ := b.charged(t)
			t.Logf("%s over %s (%d bytes): Kamailio handled %v, charged %d", name, fam, len(msg), handled, after-before)
			switch {
			case !handled:
				refused = append(refused, name+"/"+fam)
			case after == before:
				uncharged = append(uncharged, name+"/"+fam)
			}
		}
	}
	if len(refused) > 0 {
		t.Errorf("Kamailio did not handle %s: the corpus holds only requests it accepts", strings.Join(refused, ", "))
	}
	if len(uncharged) > 0 {
		t.Errorf("Kamailio handled %d corpus messages the filter did not charge: %s", len(uncharged), strings.Join(uncharged, ", "))
	}
}
