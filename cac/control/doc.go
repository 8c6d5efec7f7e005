// Package control is the control loop of `cacctl run`: every sample
// interval it measures the CPU (cac/cpu) and the watched receive buffers
// (cac/sockbuf), turns them into the load charge, the CPU of the new
// model's gate and the buffer flag, and writes them to the fast path with
// a heartbeat. The fast path never waits for it: if the loop stops, the
// heartbeat ages and the on-stale rule decides what the last values mean.
package control
