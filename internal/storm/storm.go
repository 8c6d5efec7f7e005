package storm

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/loader"
	"golang.org/x/sys/unix"
)

// Generator sends Frame(0), Frame(1), ... at Rate frames a second for
// Duration; at Rate 0, as fast as the socket takes them.
type Generator struct {
	Name     string
	Rate     int
	Duration time.Duration
	Frame    func(i int) []byte
}

// Report is what a run sent.
type Report struct {
	Name string
	Sent int
	// Refused are the frames the interface turned down (ENOBUFS): a veth
	// whose peer's receive ring is full drops them before any XDP program
	// sees them. They are not in Sent.
	Refused int
	Elapsed time.Duration
}

// Rate is the rate the run achieved, frames a second.
func (r Report) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Sent) / r.Elapsed.Seconds()
}

func (r Report) String() string {
	s := fmt.Sprintf("%s: %d frames in %v (%.0f/s)", r.Name, r.Sent, r.Elapsed.Round(time.Millisecond), r.Rate())
	if r.Refused > 0 {
		s += fmt.Sprintf(", %d refused by the interface", r.Refused)
	}
	return s
}

// Run sends from iface in namespace ns (empty: this one) until the
// duration is over or ctx ends. Frames go in batches every 10 ms, so the
// rate holds over any 10 ms, as a crowd of peers would send.
func (g Generator) Run(ctx context.Context, ns, iface string) (Report, error) {
	r := Report{Name: g.Name}
	err := loader.InNetns(ns, func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
		if err != nil {
			return fmt.Errorf("packet socket: %w", err)
		}
		defer unix.Close(fd)
		ifr, err := unix.NewIfreq(iface)
		if err != nil {
			return err
		}
		if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
			return fmt.Errorf("index of %s: %w", iface, err)
		}
		addr := &unix.SockaddrLinklayer{Ifindex: int(ifr.Uint32()), Halen: 6}
		send := func() error {
			err := unix.Sendto(fd, g.Frame(r.Sent+r.Refused), 0, addr)
			switch {
			case err == nil:
				r.Sent++
			case errors.Is(err, unix.ENOBUFS):
				r.Refused++
			default:
				return fmt.Errorf("%s: send: %w", g.Name, err)
			}
			return nil
		}
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		start := time.Now()
		defer func() { r.Elapsed = time.Since(start) }()
		for time.Since(start) < g.Duration {
			if g.Rate <= 0 { // flat out: look at the clock every batch
				if ctx.Err() != nil {
					return nil
				}
				for end := r.Sent + r.Refused + 256; r.Sent+r.Refused < end; {
					if err := send(); err != nil {
						return err
					}
				}
				continue
			}
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
			due := min(int(time.Since(start).Seconds()*float64(g.Rate)), int(g.Duration.Seconds()*float64(g.Rate)))
			for r.Sent+r.Refused < due {
				if err := send(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return r, err
}

// MAC is the i-th of a crowd of modems: locally administered addresses.
func MAC(i int) [6]byte { return [6]byte{0x02, 0x00, 0x5e, byte(i >> 16), byte(i >> 8), byte(i)} }

// PADIStorm is PADIs from macs modems in turn, spread over the VLANs.
func PADIStorm(macs int, vlans ...uint16) func(int) []byte {
	return func(i int) []byte {
		layers := []pkt.Layer{pkt.Ether{Src: MAC(i % macs), Broadcast: true}}
		if len(vlans) > 0 {
			layers = append(layers, pkt.VLAN{ID: vlans[i%len(vlans)]})
		}
		return pkt.Frame(append(layers, pkt.PPPoE{Code: pkt.PADI})...)
	}
}

// L2TPFlood is L2TP control messages of a type from src to dst.
func L2TPFlood(msgType uint16, src, dst netip.Addr) func(int) []byte {
	frame := pkt.Frame(pkt.Ether{}, pkt.IPv4{Src: src, Dst: dst}, pkt.UDP{Src: 1701, Dst: 1701}, pkt.L2TP{MsgType: msgType})
	return func(int) []byte { return frame }
}

// SIPFlood is new SIP requests of a method from sources addresses counted
// up from first, to dst: each a call of its own (a Call-ID of its own), so
// that none is taken for a retransmission of another.
func SIPFlood(method string, first netip.Addr, sources int, dst netip.Addr) func(int) []byte {
	return func(i int) []byte {
		src := first
		for range i % sources {
			src = src.Next()
		}
		req := pkt.SIPRequest(method, "<sip:100@example.com>").With("Call-ID", fmt.Sprintf("flood-%d@%s", i, src))
		return pkt.Frame(pkt.Ether{}, pkt.IPv4{Src: src, Dst: dst}, pkt.UDP{Src: 5060, Dst: 5060}, req)
	}
}

// Mix interleaves frame sources: one of every n frames from minor, the
// rest from major, as a trusted peer's calls among a scanner's flood.
func Mix(major, minor func(int) []byte, n int) func(int) []byte {
	return func(i int) []byte {
		if i%n == 0 {
			return minor(i / n)
		}
		return major(i)
	}
}
