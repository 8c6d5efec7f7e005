package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/tests/testenv"
	"golang.org/x/sys/unix"
)

// vethQueues is testenv.Veth with two rx and two tx queues on each end:
// veth makes a NAPI instance, and with threaded NAPI a kernel thread, for
// every rx queue. Deleting the namespaces removes the pair.
func vethQueues(b testing.TB, nsA, nsB string) (string, string) {
	b.Helper()
	a, p := testenv.Unique("xca"), testenv.Unique("xcb")
	q := []string{"numtxqueues", "2", "numrxqueues", "2"}
	args := append(append(append([]string{"link", "add", a}, q...), "netns", nsA, "type", "veth", "peer", "name", p), q...)
	args = append(args, "netns", nsB)
	for _, c := range [][]string{args, {"-n", nsA, "link", "set", a, "up"}, {"-n", nsB, "link", "set", p, "up"}} {
		if out, err := exec.Command("ip", c...).CombinedOutput(); err != nil {
			b.Fatalf("ip %s: %v: %s", strings.Join(c, " "), err, out)
		}
	}
	return a, p
}

// napiThreads are the pids of every threaded-NAPI kernel thread of iface
// (napi/IF-ID), in no particular order: which queue a thread serves is
// found by flooding one queue (queueThreads).
func napiThreads(iface string) []int {
	var pids []int
	comms, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, c := range comms {
		name, err := os.ReadFile(c)
		if err == nil && strings.HasPrefix(string(name), "napi/"+iface+"-") {
			pid, _ := strconv.Atoi(strings.Split(c, "/")[2])
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	return pids
}

// queueThreads finds the NAPI threads of rx queues 0 and 1 and pins the
// thread of queue c to CPU c, beside the generator that feeds queue c.
// veth_xdp_xmit puts a frame on rx queue smp_processor_id() %
// real_num_rx_queues of the peer, so the generator on CPU 0 feeds queue 0:
// a short flood from there tells the two threads apart by which one ran.
func queueThreads(b *testing.B, ns string, gen *ebpf.Program, frame []byte, iface string) [2]int {
	b.Helper()
	var pids []int
	testenv.Poll(2*time.Second, 10*time.Millisecond, func() bool {
		pids = napiThreads(iface)
		return len(pids) == 2
	})
	if len(pids) != 2 {
		b.Fatalf("NAPI threads of %s: %v, want 2 (threaded NAPI off, or not two rx queues?)", iface, pids)
	}
	t0 := []uint64{threadCPU(b, pids[0]), threadCPU(b, pids[1])}
	if err := floodOn(ns, []*ebpf.Program{gen}, frame, 200_000, []int{0}); err != nil {
		b.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	d0, d1 := threadCPU(b, pids[0])-t0[0], threadCPU(b, pids[1])-t0[1]
	if d1 > d0 {
		pids[0], pids[1], d0, d1 = pids[1], pids[0], d1, d0
	}
	if d1*10 > d0 {
		b.Fatalf("a flood from CPU 0 ran both NAPI threads (%d ns, %d ns): rx queue is not the sending CPU?", d0, d1)
	}
	for c, pid := range pids {
		var set unix.CPUSet
		set.Set(c)
		if err := unix.SchedSetaffinity(pid, &set); err != nil {
			b.Fatalf("pin napi thread %d to CPU %d: %v", pid, c, err)
		}
	}
	return [2]int{pids[0], pids[1]}
}

// floodOn runs gens[i] on CPU cpus[i], all at once: each on a thread of
// its own in ns, pinned before the start, and all released together, so
// that the floods overlap but for the few microseconds a start takes.
func floodOn(ns string, gens []*ebpf.Program, frame []byte, n uint32, cpus []int) error {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, len(cpus))
	for i, cpu := range cpus {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			pinned := false
			errs[i] = testenv.Do(ns, func() error {
				runtime.LockOSThread() // Do's thread ends with it: the pinning goes too
				var set unix.CPUSet
				set.Set(cpu)
				err := unix.SchedSetaffinity(0, &set)
				pinned = true
				ready.Done()
				<-start
				if err != nil {
					return err
				}
				_, err = gens[i].Run(&ebpf.RunOptions{Data: frame, Repeat: n, Flags: unix.BPF_F_TEST_XDP_LIVE_FRAMES})
				return err
			})
			if !pinned { // Do failed before fn ran
				ready.Done()
			}
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("generator on CPU %d: %w", cpus[i], err)
		}
	}
	return nil
}
