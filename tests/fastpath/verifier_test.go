package fastpath

import (
	"testing"

	"github.com/xdpcac/xdpcac/tests/harness"
)

// verifierBudget is the kernel's limit on instructions the verifier walks
// for one program (BPF_COMPLEXITY_LIMIT_INSNS).
const verifierBudget = 1_000_000

// TestVerifierHeadroom keeps a tenth of the verifier's budget free, so
// that a change to the parsers or the admission pipeline that would soon
// make the program unloadable shows here first, with the figure.
func TestVerifierHeadroom(t *testing.T) {
	f := harness.NewFastPath(t, false)
	info, err := f.Objs.XdpCac.Info()
	if err != nil {
		t.Fatal(err)
	}
	n, ok := info.VerifiedInstructions()
	if !ok {
		t.Skip("this kernel does not report verified instructions")
	}
	t.Logf("xdp_cac verified in %d instructions of %d", n, verifierBudget)
	if n > verifierBudget*9/10 {
		t.Errorf("xdp_cac verified in %d instructions: less than a tenth of the budget of %d is left", n, verifierBudget)
	}
}
