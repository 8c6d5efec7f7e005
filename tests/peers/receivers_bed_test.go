package peers

import (
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
	"golang.org/x/sys/unix"
)

// The bed of the receiver differential: Kamailio behind the filter, as in
// TestKamailioReceiver, with what sending one message at a time many
// thousand times needs. cacctl per counter read would cost more than the
// message; the stats map is read from its pin instead. A packet socket
// stays open in the peer's namespace. And sentinels, OPTIONS sent inside
// the box where no filter sees them, tell when Kamailio has read all that
// came before.

// receiversClasses lifts every limit ({} takes away even the defaults of
// sip-indialog and malformed): nothing is refused, so every message
// reaches Kamailio and each counts once in its class's admitted.
const receiversClasses = `classes:
  sip-invite:   {}
  sip-options:  {}
  sip-register: {}
  sip-other:    {}
  sip-indialog: {}
  malformed:    {}
`

// fzMTU is the veth's MTU in both namespaces: a message with 1500 bytes
// before its request line fits in one frame. XDP on a veth allows about
// 3.5 kB.
const fzMTU = "3000"

// fzCountWait bounds the wait for a frame's counters: the veth runs XDP
// as the frame is sent, so they have mostly moved by the first read.
const fzCountWait = 500 * time.Millisecond

// fzMarker finds a message's marker in a Call-ID: fz (generated) or rp
// (replayed), a number, '-', a number. Greedy digits end where the
// marker does, for nothing after it is a digit.
var fzMarker = regexp.MustCompile(`(?:fz|rp)[0-9]+-[0-9]+`)

// fzSentinelPrefix starts the sentinels' Call-IDs.
const fzSentinelPrefix = "fzsentinel-"

type fzBed struct {
	*kamBed
	fd       int // AF_PACKET, in the peer's namespace
	sll      unix.SockaddrLinklayer
	stats    *ebpf.Map
	last     maps.Stats
	v4, v6   netip.Addr     // the sources of the messages
	probes   []*net.UDPConn // in the box, one to each of Kamailio's addresses
	dests    []netip.AddrPort
	logOff   int
	sentinel int
	fragID   uint32 // the last fragmented message's identification
}

func newFzBed(t *testing.T) *fzBed {
	b := &fzBed{kamBed: newKamBed(t, receiversClasses)}
	for ns, ifc := range map[string]string{b.Box: b.BoxIface, b.Peer: b.PeerIfc} {
		testenv.Run(t, ns, "ip", "link", "set", "dev", ifc, "mtu", fzMTU)
	}
	b.v4, b.v6 = b.source(t, 100, false), b.source(t, 100, true)
	// Kamailio answers at the source's port 5062: a socket there keeps
	// the peer from sending port-unreachables back through the filter.
	harness.ListenUDP(t, b.Peer, "[::]:5062")

	err := testenv.Do(b.Peer, func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
		if err != nil {
			return err
		}
		b.fd = fd
		ifi, err := testenv.InterfaceIndex(b.PeerIfc)
		b.sll = unix.SockaddrLinklayer{Ifindex: ifi, Halen: 6}
		return err
	})
	if err != nil {
		t.Fatalf("packet socket in %s: %v", b.Peer, err)
	}
	t.Cleanup(func() { unix.Close(b.fd) })

	atts, err := loader.List(b.State)
	if err != nil || len(atts) != 1 {
		t.Fatalf("attachments in %s: %v %v", b.State, atts, err)
	}
	b.stats, err = ebpf.LoadPinnedMap(filepath.Join(atts[0].Dir(b.State), bpf.XdpMapStats), nil)
	if err != nil {
		t.Fatalf("stats map: %v", err)
	}
	t.Cleanup(func() { b.stats.Close() })
	b.last = b.read(t)

	for _, a := range []string{kamBoxV4, kamBoxV6} {
		ip := netip.MustParseAddr(a)
		b.dests = append(b.dests, netip.AddrPortFrom(ip, 5060))
		var c *net.UDPConn
		err := testenv.Do(b.Box, func() (err error) {
			c, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
			return err
		})
		if err != nil {
			t.Fatalf("sentinel socket on %s: %v", a, err)
		}
		t.Cleanup(func() { c.Close() })
		b.probes = append(b.probes, c)
	}
	return b
}

func (b *fzBed) read(t *testing.T) maps.Stats {
	s, err := maps.ReadStats(b.stats)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fzTotal is every count a frame to the SIP port moves one of: a class's
// admitted or refused, passed as other traffic, or passed as a fragment
// after the first.
func fzTotal(s maps.Stats) uint64 {
	n := s.PassedOther + s.Fragment
	for _, c := range s.Classes {
		n += c.Seen()
	}
	return n
}

// send sends the frames of one message and returns what the filter made
// of them: the classes it charged, "other" for passed uncharged. Every
// frame moves one count, a fragmented message's first its charge and
// each other one the fragment counter; so the counts are read until
// they have moved by the number of frames, and the message's charge is
// the sum of the deltas over all its frames. A fragment count other than
// one for each frame after the first is named with the charge, and
// "uncounted" ends it when fewer counts moved within fzCountWait.
func (b *fzBed) send(t *testing.T, frames [][]byte) string {
	for _, f := range frames {
		if err := unix.Sendto(b.fd, f, 0, &b.sll); err != nil {
			t.Fatalf("send: %v", err)
		}
	}
	want := fzTotal(b.last) + uint64(len(frames))
	var s maps.Stats
	start, short := time.Now(), false
	for {
		s = b.read(t)
		if fzTotal(s) >= want {
			break
		}
		if time.Since(start) > fzCountWait {
			short = true
			break
		}
		if time.Since(start) > time.Millisecond {
			time.Sleep(50 * time.Microsecond)
		}
	}
	var moved []string
	for i, c := range s.Classes {
		if n := c.Seen() - b.last.Classes[i].Seen(); n > 0 {
			moved = append(moved, strings.Repeat(cac.Class(i).String()+"+", int(n-1))+cac.Class(i).String())
		}
	}
	if s.PassedOther != b.last.PassedOther {
		moved = append(moved, "other")
	}
	if n := s.Fragment - b.last.Fragment; n != uint64(len(frames)-1) {
		moved = append(moved, fmt.Sprintf("fragment×%d", n))
	}
	if short {
		moved = append(moved, "uncounted")
	}
	b.last = s
	return strings.Join(moved, "+")
}

// sync sends a sentinel to each of Kamailio's addresses from inside the
// box and waits until Kamailio has logged both: what came before them on
// the same socket has been read by then. It returns the requests logged
// since the last sync.
func (b *fzBed) sync(t *testing.T) []testenv.KamailioRequest {
	b.sentinel++
	want := map[string]bool{}
	for i, c := range b.probes {
		id := fmt.Sprintf("%s%d-%d", fzSentinelPrefix, b.sentinel, i)
		want[id] = true
		local := c.LocalAddr().(*net.UDPAddr).AddrPort()
		req := sipText("OPTIONS sip:"+b.dests[i].String()+" SIP/2.0", []string{
			"Via: SIP/2.0/UDP " + local.String() + ";branch=z9hG4bK-" + id,
			"From: <sip:sentinel@" + local.Addr().String() + ">;tag=s",
			"To: <sip:" + b.dests[i].String() + ">",
			"Call-ID: " + id, "CSeq: 1 OPTIONS", "Max-Forwards: 70", "Content-Length: 0"}, "")
		if _, err := c.WriteToUDPAddrPort([]byte(req), b.dests[i]); err != nil {
			t.Fatalf("sentinel: %v", err)
		}
	}
	var got []testenv.KamailioRequest
	ok := testenv.Poll(10*time.Second, 200*time.Microsecond, func() bool {
		var reqs []testenv.KamailioRequest
		reqs, b.logOff = b.k.RequestsSince(b.logOff)
		for _, r := range reqs {
			if want[r.CallID] {
				delete(want, r.CallID)
			} else if !strings.HasPrefix(r.CallID, fzSentinelPrefix) {
				got = append(got, r)
			}
		}
		return len(want) == 0
	})
	if !ok {
		t.Fatalf("Kamailio logged no sentinel in 10 s: stopped?")
	}
	return got
}
