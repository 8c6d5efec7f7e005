package fastpath

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// verifierBudget is the kernel's limit on instructions the verifier walks
// for one program (BPF_COMPLEXITY_LIMIT_INSNS).
const verifierBudget = 1_000_000

// TestVerifierHeadroom keeps a quarter of the verifier's budget free for
// each program (the XDP program and the egress program) on every kernel
// it runs on (make kernels runs it on 6.1 too), so that the SIP parsing
// still to come has room, and a change that would soon make the program
// unloadable shows here first, with the figure.
func TestVerifierHeadroom(t *testing.T) {
	f := harness.NewFastPath(t, false)
	e := newEgress(t, f)
	for _, p := range []struct {
		name string
		prog *ebpf.Program
	}{{"xdp_cac", f.Objs.XdpCac}, {"tc_dialogs", e.objs.TcDialogs}} {
		info, err := p.prog.Info()
		if err != nil {
			t.Fatal(err)
		}
		n, ok := info.VerifiedInstructions()
		if !ok {
			t.Skip("this kernel does not report verified instructions")
		}
		t.Logf("%s verified in %d instructions of %d", p.name, n, verifierBudget)
		if n > verifierBudget*3/4 {
			t.Errorf("%s verified in %d instructions: less than a quarter of the budget of %d is left", p.name, n, verifierBudget)
		}
	}
}
