package admission

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/internal/model/classify"
	"github.com/xdpcac/xdpcac/internal/pkt"
)

// TestDecideWalksOnce: one Decide (or Egress) walks a SIP request's header
// lines once, with the Model's own Reader, however many of its readers
// (the classifier's To search, the transaction, the Call-ID, the CLI, an
// answer's headers) ask about the message; a frame with other bytes is
// walked again.
func TestDecideWalksOnce(t *testing.T) {
	m := &Model{Ports: classify.NewPorts(nil, []uint16{5060})}
	udp4Frame := func(port uint16, payload []byte) []byte {
		return pkt.Frame(pkt.Ether{}, pkt.IPv4{}, pkt.UDP{Dst: port}, pkt.Raw(payload))
	}
	invite := func(callid string) []byte {
		return udp4Frame(5060, []byte("INVITE sip:+4420@example.com SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK-1\r\n"+
			"To: <sip:b@example.com>\r\nFrom: <sip:alice@example.com>;tag=1\r\nCall-ID: "+callid+"\r\nCSeq: 1 INVITE\r\n\r\n"))
	}
	bye := udp4Frame(5060, []byte("BYE sip:+4420@example.com SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK-2\r\n"+
		"To: <sip:b@example.com>;tag=2\r\nFrom: <sip:alice@example.com>;tag=1\r\nCall-ID: a@192.0.2.1\r\nCSeq: 2 BYE\r\n\r\n"))
	ok := udp4Frame(5060, []byte("SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK-1\r\n"+
		"Call-ID: a@192.0.2.1\r\nCSeq: 1 INVITE\r\n\r\n"))
	for i, step := range []struct {
		name  string
		run   func()
		walks int
	}{
		{"an INVITE", func() { m.Decide(invite("a@192.0.2.1"), 0) }, 1},
		{"another INVITE", func() { m.Decide(invite("b@192.0.2.1"), 1) }, 1},
		{"a BYE", func() { m.Decide(bye, 2) }, 1},
		{"an INVITE going out", func() { m.Egress(invite("c@192.0.2.1"), 3) }, 1},
		{"an answer going out", func() { m.Egress(ok, 4) }, 1},
	} {
		before := m.sip.Walks()
		step.run()
		if n := m.sip.Walks() - before; n != step.walks {
			t.Errorf("step %d, %s: %d walks over the header lines, want %d", i, step.name, n, step.walks)
		}
	}
}

// TestOnlyItsReader: the Model reads SIP messages with its own Reader
// alone; the package's functions that walk header lines with a Reader of
// their own would walk them again, unseen by TestDecideWalksOnce.
func TestOnlyItsReader(t *testing.T) {
	walkers := map[string]bool{"Classify": true, "ClassifySIP": true, "ClassifySIPEgress": true,
		"Txn": true, "CallID": true, "CLIOf": true, "Answer": true}
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "classify" && walkers[sel.Sel.Name] {
					t.Errorf("%v: classify.%s: a walk of its own, not the Model's Reader", fset.Position(sel.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	}
}
