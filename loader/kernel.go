package loader

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
)

// kernelFeature is one thing the filter rests on, and the kernel that
// brought it.
type kernelFeature struct {
	what   string
	kernel string
	probe  func() error
}

func kernelFeatures() []kernelFeature {
	helper := func(fn asm.BuiltinFunc) func() error {
		return func() error { return features.HaveProgramHelper(ebpf.XDP, fn) }
	}
	return []kernelFeature{
		{"bounded loops", "5.3", features.HaveBoundedLoops},
		{"BPF ring buffers", "5.8", func() error { return features.HaveMapType(ebpf.RingBuf) }},
		{"bpf_probe_read_kernel in XDP", "5.5", helper(asm.FnProbeReadKernel)},
		{"bpf_ktime_get_coarse_ns", "5.11", helper(asm.FnKtimeGetCoarseNs)},
		{"LPM tries", "4.11", func() error { return features.HaveMapType(ebpf.LPMTrie) }},
	}
}

// CheckKernel says which feature the filter needs that this kernel lacks,
// naming the kernel that brought it: better than the verifier's words
// about an unknown helper. A probe that cannot tell passes.
func CheckKernel() error { return checkFeatures(kernelFeatures()) }

func checkFeatures(fs []kernelFeature) error {
	for _, f := range fs {
		err := f.probe()
		if errors.Is(err, ebpf.ErrNotSupported) {
			return fmt.Errorf("this kernel lacks %s (Linux %s or later): xdpcac needs Linux 5.15 or later", f.what, f.kernel)
		}
	}
	return nil
}
