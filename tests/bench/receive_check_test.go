package bench

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/internal/model/classify"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// callLetters is what frameGen writes for the random word r: the nibbles
// of r from the lowest, each as a letter a–p (nibbleLetters).
func callLetters(r uint32) []byte {
	var v [callRun]byte
	for i := range v {
		v[i] = 'a' + byte(r>>(4*i)&15)
	}
	return v[:]
}

// stamped is f's frame as its generator sends it with the random word r.
func stamped(f rcvFrame, r uint32) []byte {
	d := bytes.Clone(f.data)
	for _, c := range f.calls {
		copy(d[c:], callLetters(r))
	}
	return d
}

// TestReceiveFrames holds the frames of BenchmarkReceiveCPU to what their
// rows say they are, by the reference classifier
// (internal/model/classify, which the XDP program is held to, bounds and
// all): every INVITE, whatever call its generator writes into it, a new
// call charged as sip-invite;
// the SDP one a plain one of about 900 bytes; the worst one at every
// bound of the filter, and read to its last To header. No root needed.
func TestReceiveFrames(t *testing.T) {
	ports := classify.NewPorts(harness.TestL2TPPorts, harness.TestSIPPorts)
	frames := rcvFrames(t, Ether{})
	for _, name := range []string{"invite4", "invite4-retransmission", "invite6", "invite-sdp", "worst"} {
		f := frames[name]
		if len(f.data) > rcvMaxFrame {
			t.Errorf("%s: %d bytes, more than the testbed sends", name, len(f.data))
		}
		if (f.calls == nil) != (name == "invite4-retransmission") {
			t.Errorf("%s: new calls at %v", name, f.calls)
		}
		for _, r := range []uint32{0, 0xffffffff, rand.Uint32(), rand.Uint32()} {
			want := classify.Result{Kind: cac.Session, Class: cac.SIPInvite, Odd: name == "worst"} // its leading bytes
			if got := classify.Classify(stamped(f, r), ports); got != want {
				t.Errorf("%s with call %08x: %+v, want %+v", name, r, got, want)
			}
		}
	}

	sdp := frames["invite-sdp"].data
	head, body, _ := bytes.Cut(sdp[14+20+8:], []byte("\r\n\r\n"))
	_, cl, _ := bytes.Cut(head, []byte("\r\nContent-Length: "))
	if n, _ := strconv.Atoi(string(cl)); n != len(body) || !bytes.Contains(head, []byte("\r\nContent-Type: application/sdp")) {
		t.Errorf("SDP INVITE: Content-Length %q for a body of %d", cl, len(body))
	}
	if len(sdp) < 850 || len(sdp) > 950 {
		t.Errorf("SDP INVITE: %d bytes, want about 900", len(sdp))
	}

	worst := frames["worst"].data
	msg := worst[14+40+8*worstExtHeaders+8:]
	lead := len(msg) - len(bytes.TrimLeft(msg, "\r\n "))
	msg = msg[lead:]
	lines := strings.Split(string(msg), "\r\n")
	to := strings.Index(string(msg), "\r\nTo: ") + 2
	if len(worst) != rcvMaxFrame || lead == 0 || lead > classify.SIPLeadMax || to != classify.SIPScanMax-1 ||
		lines[worstLines] != "To: "+worstTo || strings.Index(string(msg[to:]), "\n")-len("To:") >= classify.SIPToMax {
		t.Errorf("worst INVITE: %d bytes, %d leading, To at %d, header line %d %.20q", len(worst), lead, to, worstLines, lines[worstLines])
	}
	t.Logf("worst INVITE: %d bytes, %d of them leading; SDP INVITE: %d bytes", len(worst), lead, len(sdp))

	// The walk reaches the worst INVITE's To, and only just: with a tagged
	// To first (over the first filler, without the leading bytes, which
	// make the request odd on their own), the last To is a second one,
	// which makes it odd; a byte later, or a line more, and the bounds end
	// the walk before it.
	src, dst := netip.MustParseAddr("2001:db8::1:1"), netip.MustParseAddr("2001:db8::2")
	reached := func(late int, more bool) bool {
		m := worstMessage(t, src.String(), late)
		h := slicesIndexPrefix(m.Headers, "C-Filler-00:")
		tagged := "To:<sip:b@x>;tag=1"
		m.Headers[h] = tagged + strings.Repeat("x", len(m.Headers[h])-len(tagged))
		if more { // the same bytes in one more line
			m.Headers[h+1] = m.Headers[h+1][:len(m.Headers[h+1])-5]
			m.Headers = append(m.Headers[:h+2], append([]string{"X:1"}, m.Headers[h+2:]...)...)
		}
		r := classify.Classify(Frame(Ether{}, worstIPv6(src, dst), UDP{Src: 5060, Dst: 5060}, m), ports)
		return r.Kind == cac.Session && r.Class == cac.SIPInvite && r.Odd
	}
	if !reached(0, false) || reached(1, false) || reached(0, true) {
		t.Errorf("worst INVITE's To read: %v; a byte later: %v; a line more: %v", reached(0, false), reached(1, false), reached(0, true))
	}
	// And one extension header more than the walk takes is malformed.
	ip := worstIPv6(src, dst)
	ip.Ext = append(ip.Ext, Ext{Proto: 60})
	if r := classify.Classify(Frame(Ether{}, ip, UDP{Dst: 5060}, SIPRequest("INVITE", harness.ToNoTag)), ports); r.Kind != cac.Malformed {
		t.Errorf("%d extension headers: %v, want malformed", worstExtHeaders+1, r)
	}
}

func slicesIndexPrefix(v []string, prefix string) int {
	for i, s := range v {
		if strings.HasPrefix(s, prefix) {
			return i
		}
	}
	return -1
}

// TestReceivePrograms runs the benchmark's own XDP programs once on each
// frame they are flooded with: the floors verify and drop what their rows
// say (the worst INVITE too, behind its extension headers), and the
// generators write new calls and sources that leave each frame the
// request it was, the IPv4 header checksum still right.
func TestReceivePrograms(t *testing.T) {
	testenv.RequireBPF(t)
	frames := rcvFrames(t, Ether{})
	gcra, refused := floorGCRAProg(t)
	progs := map[string]*ebpf.Program{"floor": floorProg(t), "floor-read": floorReadProg(t),
		"floor-lines": floorLinesProg(t), "floor-gcra": gcra}
	for _, c := range []struct {
		prog   string
		want   uint32
		frames []string
	}{
		{"floor", xdpDrop, []string{"padi", "icrq", "invite4", "invite6", "invite-sdp", "worst"}},
		{"floor-read", xdpDrop, []string{"invite4", "invite6", "invite-sdp", "worst"}},
		{"floor-lines", xdpDrop, []string{"invite4", "invite6", "invite-sdp", "worst"}},
		{"floor-gcra", xdpDrop, []string{"padi", "icrq"}},
		{"floor", xdpPass, []string{"other"}},
		{"floor-gcra", xdpPass, []string{"other"}},
	} {
		for _, f := range c.frames {
			if got, _, err := progs[c.prog].Test(frames[f].data); err != nil || got != c.want {
				t.Errorf("%s/%s: %d, %v; want %d", c.prog, f, got, err, c.want)
			}
		}
	}
	if n := refused(); n != 2 {
		t.Errorf("floor-gcra refused %d, want 2", n)
	}

	ports := classify.NewPorts(harness.TestL2TPPorts, harness.TestSIPPorts)
	for name, f := range frames {
		for _, spoof := range []bool{false, true} {
			spec, ok := specOf(f, spoof)
			if !ok {
				continue
			}
			const xdpRedirect = 4
			got, out, err := frameGen(t, 1, spec).Test(f.data)
			if err != nil || got != xdpRedirect || len(out) != len(f.data) {
				t.Fatalf("generator of %s (spoofed %v): %d, %v, %d bytes", name, spoof, got, err, len(out))
			}
			for _, c := range f.calls {
				if !bytes.Equal(out[c:c+callRun], out[f.calls[0]:f.calls[0]+callRun]) ||
					len(bytes.Trim(out[c:c+callRun], "abcdefghijklmnop")) != 0 {
					t.Errorf("generator of %s: call %q at %d", name, out[c:c+callRun], c)
				}
			}
			if spoof && spec.kind == spoofV4 && ipSum(out[spec.off:spec.off+20]) != 0xffff {
				t.Errorf("generator of %s: the IPv4 header checksum is wrong", name)
			}
			if a, b := classify.Classify(f.data, ports), classify.Classify(out, ports); a != b {
				t.Errorf("generator of %s (spoofed %v): %v, was %v", name, spoof, b, a)
			}
		}
	}
}

// ipSum is the ones' complement sum of an IPv4 header: 0xffff when its
// checksum is right.
func ipSum(h []byte) uint32 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return sum
}
