package bench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xdpcac/xdpcac/tests/testenv"
	"golang.org/x/sys/unix"
)

// A second generator of the receive benchmarks, for a kernel that
// refuses BPF_PROG_TEST_RUN's live-frame mode (EPERM for any program on
// some hosts): a userspace sender in the peer namespace, an AF_PACKET
// socket bound to the peer veth, writing the frames frameGen's program
// would send, stamped as it stamps them (stampInto), in batches of
// sendmmsg, pinned to the CPU the program's run would be pinned to. Its
// frames reach the box veth through veth_xmit as skbs, not as
// xdp_frames: the box's NAPI thread takes them from the same ring, but
// gives an XDP program each one copied out of the skb into a page of its
// pool (an AF_PACKET skb has less headroom than XDP wants), and passes
// the stack an skb it already has. The floor rows pay that path too, so
// a row's ratio to the floor of its round still says what the filter
// costs; its ns do not compare with the live-frame generator's.

// rcvGen is a row's generator: frameGen's program run in live-frame
// mode (prog), or the userspace sender of the same frames (pkt).
type rcvGen struct {
	prog *ebpf.Program
	pkt  *packetGen
}

// flood sends n frames of frame from ns, the sender pinned to cpu.
func (g rcvGen) flood(ns string, frame []byte, n uint32, cpu int) error {
	if g.pkt != nil {
		return g.pkt.flood(ns, frame, n, cpu)
	}
	return floodPinned(ns, g.prog, frame, n, cpu)
}

// genName says which generator the rows of rb ran with, for a table's
// heading.
func (r *rcvBench) genName() string {
	if r.userspace {
		return "generator: userspace AF_PACKET sender (live frames refused here), skbs through veth_xmit"
	}
	return "generator: XDP live frames, xdp_frames redirected"
}

// rowGen is the generator of a row of frame, spoofed or not, counting to
// spin before each frame: the live-frame program unless rb runs the
// userspace sender.
func (r *rcvBench) rowGen(frame string, spoof bool, spin int) rcvGen {
	if !r.userspace {
		return rcvGen{prog: r.pacedGen(frame, spoof, spin)}
	}
	return rcvGen{pkt: &packetGen{iface: r.tb.PeerIfc, spec: r.genSpecOf(frame, spoof, spin)}}
}

// useUserspaceGen decides, once a benchmark, which generator its rows
// run with: the live-frame program unless this kernel refuses a
// live-frame run of a program that only drops (EPERM, or not supported).
// XDPCAC_RCV_GEN=packet or =xdp chooses one without the probe, to
// compare the two on a kernel that has both. The
// userspace sender's skbs go through the box's NAPI ring only if the
// peer veth has no TSO on: veth hands a socket's skb from a device with
// TSO to its peer's backlog instead, on the sender's CPU. An XDP program
// on the box veth turns the peer's TSO off itself; for the rows without
// one (nftables'), it turns TSO off there (TestPacketGen shows both).
func (r *rcvBench) useUserspaceGen() {
	switch os.Getenv("XDPCAC_RCV_GEN") {
	case "packet":
		r.userspace = true
	case "xdp":
	case "":
		refused, err := liveFramesRefused()
		if err != nil {
			r.b.Fatal(err)
		}
		r.userspace = refused
	default:
		r.b.Fatalf("XDPCAC_RCV_GEN=%q: want packet or xdp", os.Getenv("XDPCAC_RCV_GEN"))
	}
	if r.userspace {
		testenv.Run(r.b, r.tb.Peer, "ethtool", "-K", r.tb.PeerIfc, "tso", "off")
	}
}

// liveFramesRefused runs a program that only drops once in live-frame
// mode: true if the kernel refuses it (EPERM, ENOTSUPP, EOPNOTSUPP), an
// error for any other failure.
func liveFramesRefused() (bool, error) {
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "rcv_probe", Type: ebpf.XDP, License: "MIT",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, xdpDrop), asm.Return()}})
	if err != nil {
		return false, fmt.Errorf("live-frame probe: %w", err)
	}
	defer p.Close()
	_, err = p.Run(&ebpf.RunOptions{Data: make([]byte, 64), Repeat: 1, Flags: unix.BPF_F_TEST_XDP_LIVE_FRAMES})
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.Errno(524)), // ENOTSUPP
		errors.Is(err, ebpf.ErrNotSupported):
		return true, nil
	}
	return false, fmt.Errorf("live-frame probe: %w", err)
}

// packetGen is the userspace sender of spec's frames out of iface.
type packetGen struct {
	iface string
	spec  genSpec
	sink  int // what the pacing loops counted, kept so they stay
}

// packetBatch is how many frames one sendmmsg sends.
const packetBatch = 64

// flood sends n frames of frame out of g.iface in ns from a thread
// pinned to cpu, each stamped anew (stampInto), packetBatch a call,
// with PACKET_QDISC_BYPASS (veth has no queue to bypass, but the
// socket's frames skip the queueing layer's checks, as a driver's
// redirect does). With spec.spin > 0 it counts to spin before each
// frame, as frameGen's program does.
func (g *packetGen) flood(ns string, frame []byte, n uint32, cpu int) error {
	return testenv.Do(ns, func() error {
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("pin the sender to CPU %d: %w", cpu, err)
		}
		ifindex, err := testenv.InterfaceIndex(g.iface)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
		if err != nil {
			return fmt.Errorf("packet socket: %w", err)
		}
		defer unix.Close(fd)
		// Room for more frames in flight than veth's ring holds, so
		// that the sender never waits for the receiver to free one.
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 64<<20); err != nil {
			return fmt.Errorf("SO_SNDBUFFORCE: %w", err)
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
			return fmt.Errorf("PACKET_QDISC_BYPASS: %w", err)
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifindex}); err != nil {
			return fmt.Errorf("bind to %s: %w", g.iface, err)
		}
		return g.send(fd, frame, n)
	})
}

// send writes n stamped frames to fd, packetBatch a sendmmsg.
func (g *packetGen) send(fd int, frame []byte, n uint32) error {
	bufs := make([][]byte, packetBatch)
	iovs := make([]unix.Iovec, packetBatch)
	msgs := make([]unix.Mmsghdr, packetBatch)
	for i := range bufs {
		bufs[i] = append([]byte(nil), frame...)
		iovs[i].Base = &bufs[i][0]
		iovs[i].SetLen(len(frame))
		msgs[i].Hdr.Iov = &iovs[i]
		msgs[i].Hdr.SetIovlen(1)
	}
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	count := 0
	for left := int(n); left > 0; {
		k := min(left, packetBatch)
		for i := range k {
			stampInto(bufs[i], g.spec, [3]uint32{rng.Uint32(), rng.Uint32(), rng.Uint32()})
			for j := 0; j < g.spec.spin; j++ {
				count++
			}
		}
		for sent := 0; sent < k; {
			r, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[sent])), uintptr(k-sent), 0, 0, 0)
			switch {
			case errno == unix.EINTR:
				continue
			case errno == unix.ENOBUFS:
				// The device refused this frame: it is lost, as a
				// full ring's are; on to the next.
				sent++
				continue
			case errno != 0:
				return fmt.Errorf("sendmmsg of %d frames: %w", k-sent, errno)
			case int(r) < k-sent:
				// It stopped at a frame the device refused, and said
				// so no further: that frame is lost too.
				r++
			}
			sent += int(r)
		}
		left -= k
	}
	runtime.KeepAlive(bufs)
	runtime.KeepAlive(iovs)
	g.sink = count
	return nil
}

// stampInto writes into d, a copy of the frame of spec, what frameGen's
// program writes into it for the random words w (the program's calls of
// bpf_get_prandom_u32 in order: the call's letters, the source, the TCP
// port), each at the offsets and in the byte order the program uses, so
// that the checksums it keeps stay right. TestPacketGenStamps holds it to
// the program.
func stampInto(d []byte, spec genSpec, w [3]uint32) {
	if spec.end() > len(d) {
		return // the program sends such a frame as it is
	}
	next := 0
	word := func() uint32 { next++; return w[next-1] }
	if len(spec.calls) > 0 {
		letters := callLetters(word())
		for _, c := range spec.calls {
			copy(d[c:], letters)
		}
	}
	off := spec.off
	switch spec.kind {
	case spoofWord:
		binary.LittleEndian.PutUint32(d[off:], word()) // a store of the register, as the program's
	case spoofV4, spoofV4TCP:
		r := word() & 0xff
		d[off+15] = byte(r)
		id := uint16(ipv4ID + 1 - r)
		binary.BigEndian.PutUint16(d[off+4:], id)
		if spec.kind == spoofV4TCP {
			binary.BigEndian.PutUint16(d[off+20+6:], id)
		}
	}
	if spec.kind == spoofTCPPort || spec.kind == spoofV4TCP {
		p := uint16(word())
		binary.BigEndian.PutUint16(d[off+20:], p)
		binary.BigEndian.PutUint16(d[off+20+4:], p^0xffff)
	}
}
