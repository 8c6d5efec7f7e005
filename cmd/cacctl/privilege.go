package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// capability is one of linux/capability.h.
type capability struct {
	name string
	bit  uint
}

// neededCaps are the capabilities cacctl needs to load, attach, pin and
// read the filter; the systemd unit under deploy/ grants these (and
// CAP_PERFMON, which CAP_SYS_ADMIN stands in for here).
func neededCaps() []capability {
	return []capability{{"CAP_NET_ADMIN", 12}, {"CAP_SYS_ADMIN", 21}, {"CAP_BPF", 39}}
}

// checkPrivilege refuses, with what is missing, a command that touches
// the filter when the process lacks the capabilities for it: better than
// a permission error from deep inside. validate, help and completion need
// none.
func checkPrivilege(cmd *cobra.Command) error {
	for c := cmd; c != nil; c = c.Parent() {
		switch c.Name() {
		case "validate", "version", "help", "completion", "__complete":
			return nil
		}
	}
	have, err := effectiveCaps()
	if err != nil {
		return nil // cannot tell: let the kernel say
	}
	var missing []string
	for _, c := range neededCaps() {
		if have&(1<<c.bit) == 0 {
			missing = append(missing, c.name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%s needs root, or the capabilities %s (missing: %s): run it with sudo",
		cmd.CommandPath(), capNames(), strings.Join(missing, ", "))
}

func capNames() string {
	var n []string
	for _, c := range neededCaps() {
		n = append(n, c.name)
	}
	return strings.Join(n, ", ")
}

// effectiveCaps reads this process's effective capability set.
func effectiveCaps() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, fmt.Errorf("no CapEff in /proc/self/status")
}
