package loader

import (
	"fmt"
	"strings"

	"github.com/safchain/ethtool"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/bucket"
	"github.com/xdpcac/xdpcac/cac/policy"
)

// The offload features under which a NIC takes a frame's VLAN tags out of
// it and into the receive metadata, before XDP sees the frame: the
// kernel's names, which `ethtool -k` shows as rx-vlan-offload and
// rx-vlan-stag-hw-parse.
var vlanStripping = []string{"rx-vlan-hw-parse", "rx-vlan-stag-hw-parse"}

// vlanKeyed lists the classes whose per-source key holds VLAN IDs.
func vlanKeyed(p policy.Policy) []string {
	var classes []string
	for c, ps := range p.PerSource {
		if ps.Limit != bucket.Unlimited && (ps.Key == policy.SourceVLAN || ps.Key == policy.SourceMACVLAN) {
			classes = append(classes, cac.Class(c).String())
		}
	}
	return classes
}

// checkVLANKeys refuses a policy that keys a class by VLAN on an interface
// whose NIC strips the tags before XDP runs: the program would find none,
// and hold every VLAN in one bucket (docs/design.md "Outer layers"). An
// interface whose features cannot be read is not refused for it.
func checkVLANKeys(a Attachment, p policy.Policy) error {
	classes := vlanKeyed(p)
	if len(classes) == 0 {
		return nil
	}
	var on []string
	err := inNetns(a.Netns, func() error {
		e, err := ethtool.NewEthtool()
		if err != nil {
			return err
		}
		defer e.Close()
		features, err := e.Features(a.Iface)
		if err != nil {
			return err
		}
		for _, f := range vlanStripping {
			if features[f] {
				on = append(on, f)
			}
		}
		return nil
	})
	if err != nil || len(on) == 0 {
		return nil
	}
	return fmt.Errorf("%s takes VLAN tags out of the frames it receives before XDP sees them (%s on), so the VLAN key of %s would hold every VLAN in one bucket: "+
		"turn that off (ethtool -K %s rxvlan off rx-vlan-stag-hw-parse off) or key by mac; nothing was changed",
		a, strings.Join(on, ", "), strings.Join(classes, ", "), a.Iface)
}
