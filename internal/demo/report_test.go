package demo

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/maps"
)

// TestWriteSecondRates: a line's /s figures are the counts over the time
// between the two readings, not the counts of a tick that came late: 1,600
// PADIs admitted and 2,640 rejected over 2 s are 800/s and 1,320/s.
func TestWriteSecondRates(t *testing.T) {
	var d maps.Stats
	d.Classes[cac.PPPoEPADI].Admitted = 1600
	d.Classes[cac.PPPoEPADI].Rejected[cac.ReasonSource] = 2000
	d.Classes[cac.PPPoEPADI].Rejected[cac.ReasonClass] = 640
	var b bytes.Buffer
	writeSecond(&b, d, perSecond(2*time.Second), maps.CallAdmissionView{})
	want := "pppoe-padi 800/s admitted, 1320/s rejected (source 1000, class 320)"
	if !strings.Contains(b.String(), want) {
		t.Errorf("over 2 s:\n%s\nwant %q", b.String(), want)
	}
	if got := perSecond(1500 * time.Millisecond)(1000); got != 667 {
		t.Errorf("1000 over 1.5 s: %d/s, want 667", got)
	}
	if got := perSecond(0)(7); got != 7 {
		t.Errorf("7 over no time: %d, want the count", got)
	}
}
