package bench

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xdpcac/xdpcac/bpf"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// What BenchmarkReceiveDenied floods besides rcvFrames' INVITEs, and how
// it puts a source on the access lists or in the deny table of an
// attached xdpcac: written into its pinned maps, as the daemon writes
// them (docs/design.md, "Access control").

// synPort is the SIP TLS port the SYN rows flood.
const synPort = 5061

// deniedFrames adds to rb's frames an OPTIONS over IPv4 (a new call each
// frame, as invite4) and the SYN of the sip-connect rows, to synPort from
// 198.51.100.1: syn4 from a new source port every frame, syn4-sources
// from a new source of 198.51.100.0/24 and port too. The TCP checksum is
// right and stays so (spoofTCPPort, spoofV4TCP): conntrack drops a SYN
// whose checksum is wrong as invalid, never new.
func deniedFrames(tb testing.TB, frames map[string]rcvFrame, eth Ether) {
	tb.Helper()
	v4 := IPv4{Src: netip.MustParseAddr("198.51.100.1"), Dst: netip.MustParseAddr("203.0.113.1"), ID: ipv4ID}
	options := Frame(eth, v4, UDP{Src: 5060, Dst: 5060}, SIPRequest("OPTIONS", harness.ToNoTag))
	frames["options4"] = rcvFrame{data: options, calls: callOffsets(tb, options), spoof: spoofing{spoofV4, 14}}
	syn := synFrame(eth, v4)
	frames["syn4"] = rcvFrame{data: syn, spoof: spoofing{spoofTCPPort, 14}}
	frames["syn4-sources"] = rcvFrame{data: syn, spoof: spoofing{spoofV4TCP, 14}}
}

// synFrame is a TCP SYN to synPort, source port 0, its sequence number
// 0xffff then ipv4ID (the halves spoofTCPPort and spoofV4TCP change
// opposite to the port and source), with its checksum.
func synFrame(eth Ether, v4 IPv4) []byte {
	f := Frame(eth, v4, TCP{Src: 0, Dst: synPort})
	tcp := f[14+20:]
	binary.BigEndian.PutUint16(tcp[4:], 0xffff)
	binary.BigEndian.PutUint16(tcp[6:], ipv4ID)
	binary.BigEndian.PutUint16(tcp[16:], 0)
	binary.BigEndian.PutUint16(tcp[16:], ^uint16(tcpSum(f)))
	return f
}

// tcpSum is the ones' complement sum of an IPv4 frame's TCP segment and
// pseudo-header: 0xffff when its checksum is right.
func tcpSum(f []byte) uint32 {
	ip, tcp := f[14:14+20], f[14+20:]
	pseudo := append(append([]byte{}, ip[12:20]...), 0, 6, byte(len(tcp)>>8), byte(len(tcp)))
	return ipSum(append(pseudo, tcp...))
}

// floorSYNProg is the least a filter of SIP connections must do:
// Ethernet, IPv4 and its header length, TCP, its flags (SYN without ACK)
// and its destination port, and a drop for synPort; anything else
// passes. The SYN rows' floor, as floorProg is the UDP rows'.
func floorSYNProg(b testing.TB) *ebpf.Program {
	return xdpProg(b, "rcv_floor_syn", append(etherType(),
		asm.JNE.Imm(asm.R5, netOrder(0x0800), "pass"),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 14+20),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R2, 14+9, asm.Byte),
		asm.JNE.Imm(asm.R5, 6, "pass"),
		asm.LoadMem(asm.R5, asm.R2, 14, asm.Byte),
		asm.And.Imm(asm.R5, 0x0f),
		asm.LSh.Imm(asm.R5, 2),
		asm.JLT.Imm(asm.R5, 20, "pass"),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 14),
		asm.Add.Reg(asm.R4, asm.R5), // the TCP header
		asm.Mov.Reg(asm.R5, asm.R4),
		asm.Add.Imm(asm.R5, 20),
		asm.JGT.Reg(asm.R5, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R4, 13, asm.Byte),
		asm.And.Imm(asm.R5, 0x12), // SYN and ACK
		asm.JNE.Imm(asm.R5, 0x02, "pass"),
		asm.LoadMem(asm.R5, asm.R4, 2, asm.Half),
		asm.JNE.Imm(asm.R5, netOrder(synPort), "pass"),
		asm.Mov.Imm(asm.R0, xdpDrop),
		asm.Return(),
		asm.Mov.Imm(asm.R0, xdpPass).WithSymbol("pass"),
		asm.Return(),
	))
}

// policyBits turns bits of the policy word on: the fast path looks at
// the access maps only under POLICY_ACCESS_LISTS or POLICY_AUTO_DENY.
func policyBits(slot *ebpf.Map, bits uint32) error {
	var word uint32
	if err := slot.Lookup(uint32(0), &word); err != nil {
		return err
	}
	return slot.Update(uint32(0), word|bits, ebpf.UpdateExist)
}

// denyPrefix puts an IPv4 prefix on the static deny list.
func denyPrefix(list, slot *ebpf.Map, p netip.Prefix) error {
	k := bpf.XdpCacPrefix{Prefixlen: uint32(96 + p.Bits())}
	k.Addr[10], k.Addr[11] = 0xff, 0xff
	a := p.Addr().As4()
	copy(k.Addr[12:], a[:])
	if err := list.Update(&k, uint32(bpf.XdpCacAccessCAC_ACCESS_DENY), ebpf.UpdateAny); err != nil {
		return err
	}
	return policyBits(slot, uint32(bpf.XdpCacPolicyPOLICY_ACCESS_LISTS))
}

// autoDeny turns auto-deny on (refused refusals within a second) and
// puts the IPv4 sources of p in the deny table until the end of time, as
// the fast path puts a source that earned it.
func autoDeny(settings, denied, slot *ebpf.Map, p netip.Prefix, refused uint32) error {
	set := bpf.XdpCacAccessSettings{SlotNs: 1e9 / 8, DenyForNs: 600e9, Refused: refused, Ipv6Prefix: 64}
	if err := settings.Update(uint32(0), &set, ebpf.UpdateAny); err != nil {
		return err
	}
	for a := p.Masked().Addr(); p.Contains(a); a = a.Next() {
		k := bpf.XdpCacDenyKey{Family: 4}
		v4 := a.As4()
		copy(k.Addr[:], v4[:])
		if err := denied.Update(&k, &bpf.XdpCacDenied{UntilNs: math.MaxUint64}, ebpf.UpdateAny); err != nil {
			return err
		}
	}
	return policyBits(slot, uint32(bpf.XdpCacPolicyPOLICY_AUTO_DENY))
}

// sipTCPPorts makes a SYN to each of ports a sip-connect.
func sipTCPPorts(m *ebpf.Map, ports ...uint16) error {
	var v bpf.XdpCacTcpPorts
	for _, p := range ports {
		v.Sip[p] = 1
	}
	return m.Update(uint32(0), &v, ebpf.UpdateAny)
}

// pinnedMaps runs fn on maps of the xdpcac that rb attached, by name.
func (rb *rcvBench) pinnedMaps(fn func(m ...*ebpf.Map) error, names ...string) {
	var ms []*ebpf.Map
	for _, name := range names {
		m, err := ebpf.LoadPinnedMap(filepath.Join(rb.tb.State, rb.tb.Box+":"+rb.tb.BoxIface, name), nil)
		if err != nil {
			rb.b.Fatalf("open pinned map %s: %v", name, err)
		}
		defer m.Close()
		ms = append(ms, m)
	}
	if err := fn(ms...); err != nil {
		rb.b.Fatalf("maps %v: %v", names, err)
	}
}

func (rb *rcvBench) denyPrefix(p netip.Prefix) {
	rb.pinnedMaps(func(m ...*ebpf.Map) error { return denyPrefix(m[0], m[1], p) }, bpf.XdpMapAccessList, bpf.XdpMapPolicySlot)
}

func (rb *rcvBench) autoDeny(p netip.Prefix, refused uint32) {
	rb.pinnedMaps(func(m ...*ebpf.Map) error { return autoDeny(m[0], m[1], m[2], p, refused) },
		bpf.XdpMapAccessSettings, bpf.XdpMapDenied, bpf.XdpMapPolicySlot)
}

func (rb *rcvBench) sipTCPPorts(ports ...uint16) {
	rb.pinnedMaps(func(m ...*ebpf.Map) error { return sipTCPPorts(m[0], ports...) }, bpf.XdpMapTcpPorts)
}

// deniedCount counts the frames xdpcac dropped as denied by the static
// lists (auto false) or by the deny table.
func (rb *rcvBench) deniedCount(auto bool) func() uint64 {
	return func() uint64 {
		var perCPU []bpf.XdpCacStats
		rb.pinnedMaps(func(m ...*ebpf.Map) error { return m[0].Lookup(uint32(0), &perCPU) }, bpf.XdpMapStats)
		var n uint64
		for _, c := range perCPU {
			if auto {
				n += c.DeniedAuto
			} else {
				n += c.DeniedStatic
			}
		}
		return n
	}
}

// nftTable brings up a table of nftables in the box namespace, its body
// given; with addr, the box veth has 203.0.113.1/24 while it is up, so
// that the stack takes the frames through prerouting and conntrack.
func (rb *rcvBench) nftTable(family, body string, addr bool) (up, down func()) {
	file := rb.b.TempDir() + "/syn.nft"
	text := fmt.Sprintf("table %s xdpcac_syn {\n%s}\n", family, body)
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		rb.b.Fatal(err)
	}
	return func() {
			if addr {
				testenv.Run(rb.b, rb.tb.Box, "ip", "addr", "add", "203.0.113.1/24", "dev", rb.tb.BoxIface)
			}
			testenv.Run(rb.b, rb.tb.Box, "nft", "-f", file)
		}, func() {
			testenv.Command(rb.tb.Box, "nft", "delete", "table", family, "xdpcac_syn").Run()
			if addr {
				testenv.Command(rb.tb.Box, "ip", "addr", "del", "203.0.113.1/24", "dev", rb.tb.BoxIface).Run()
			}
		}
}

// nftDropped counts the packets of every counter of nftTable's table.
func (rb *rcvBench) nftDropped(family string) func() uint64 {
	return func() uint64 {
		out := testenv.Run(rb.b, rb.tb.Box, "nft", "list", "table", family, "xdpcac_syn")
		var n uint64
		for _, m := range regexp.MustCompile(`counter packets (\d+)`).FindAllStringSubmatch(out, -1) {
			v, _ := strconv.ParseUint(m[1], 10, 64)
			n += v
		}
		return n
	}
}
