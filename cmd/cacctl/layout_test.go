package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// within80 fails t for each line of out wider than 80 columns.
func within80(t *testing.T, what, out string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if len(l) > 80 {
			t.Errorf("%s: a line of %d columns:\n%s", what, len(l), out)
		}
	}
}

// TestNarrowLayouts: status and show stats keep within 80 columns with
// counts of seven digits and an interface in a namespace; status -o wide
// adds the program tags, and says what another version is.
func TestNarrowLayouts(t *testing.T) {
	const n = 1_234_567
	var s maps.Stats
	s.Classes[cac.PPPoEPADI].Admitted, s.Classes[cac.PPPoEPADI].Rejected[cac.ReasonSource] = n, n
	s.Fragment, s.PassedOther, s.SIPOddForms, s.PPPoEOddForms = n, n, n, n
	s.SIPInDialogVerified, s.SIPRetransmits, s.SIPRetransmitsRefused = n, n, n
	s.L2TPAnswered, s.L2TPUnanswered, s.L2TPRetransmits = n, n, n
	s.DeniedStatic, s.DeniedAuto, s.DenyAdded = n, n+1, n+2
	att := loader.Attachment{Iface: "bond0.1234", Netns: "bras-access"}
	var stats bytes.Buffer
	if err := writeStatsText(&stats, s, []loader.AttachmentStats{{Attachment: att, Stats: s}}); err != nil {
		t.Fatal(err)
	}
	within80(t, "show stats", stats.String())
	for _, line := range []string{"denied frames: 1234567 by deny lists, 1234568 by the deny table\n",
		"auto-denied: 1234569 sources added to the deny table\n"} {
		if !strings.Contains(stats.String(), line) {
			t.Errorf("show stats lacks %q:\n%s", line, stats.String())
		}
	}

	v := api.StatusReport{Version: "devel+0123456789ab-dirty", StateDir: "/sys/fs/bpf/xdpcac",
		Interfaces: []api.InterfaceStatus{
			{Interface: att.Key(), Mode: "multi", Priority: 20, Link: "active", ProgramTag: "23b07aa6c2810981", ProgramID: 4_000_000, Current: true, Egress: "clsact"},
			{Interface: "eth1", Mode: "native", Link: "active", ProgramTag: "9f86b833051bcc7e", ProgramID: 412, Egress: "tcx"},
		}}
	var narrow, wide bytes.Buffer
	writeStatus(&narrow, v, false)
	writeStatus(&wide, v, true)
	within80(t, "status", narrow.String())
	if strings.Contains(narrow.String(), "23b07aa6c2810981") || !strings.Contains(wide.String(), "23b07aa6c2810981") ||
		!strings.Contains(wide.String(), "9f86b833051bcc7e") {
		t.Errorf("tags only in wide:\n%s\n%s", narrow.String(), wide.String())
	}
	if !strings.Contains(narrow.String(), "4000000  this") || !strings.Contains(narrow.String(), "another version: ") {
		t.Errorf("status: program ids and versions:\n%s", narrow.String())
	}
}
