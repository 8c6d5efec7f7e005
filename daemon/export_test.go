package daemon

import "context"

// RotateFiles is rotateFiles, for the tests of package daemon_test.
var RotateFiles = rotateFiles

// SwapSIPUnchecked puts in force the SIP jobs of file as a reload does
// once it has put the file in force, without the checks before it: what
// a reload meets when the machine changes between its checks and its
// jobs' start (an address gone, descriptors run out).
func (d *Daemon) SwapSIPUnchecked(ctx context.Context, file string) error {
	cfg, _, err := LoadOptions(file)
	if err != nil {
		return err
	}
	return d.swapSIP(ctx, cfg)
}
