package maps

import (
	"encoding/binary"
	"testing"

	"github.com/xdpcac/xdpcac/bpf"
)

// FuzzDecodeEvents: what comes off the SIP ring buffer is decoded or
// refused, never a panic, and an event's message never reaches past the
// record nor past the data of struct cac_sip_event.
func FuzzDecodeEvents(f *testing.F) {
	size := binary.Size(bpf.XdpCacSipEvent{})
	full := func(msgLen uint16) []byte {
		raw := make([]byte, size)
		raw[0], raw[1] = SIPRejected, 4
		binary.NativeEndian.PutUint16(raw[2:], msgLen)
		return raw
	}
	f.Add(make([]byte, 60))
	f.Add(make([]byte, size))
	f.Add(full(uint16(bpf.XdpCacCapacityCAC_SIP_COPY)))
	f.Add(full(uint16(bpf.XdpCacCapacityCAC_SIP_COPY) + 1))
	f.Add(full(0xffff))
	f.Add([]byte{2, 4, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, raw []byte) {
		ev, err := DecodeSIPEvent(raw)
		if err != nil {
			return
		}
		if len(ev.Message) > len(raw) || len(ev.Message) > int(bpf.XdpCacCapacityCAC_SIP_COPY) {
			t.Fatalf("a message of %d bytes from a record of %d", len(ev.Message), len(raw))
		}
	})
}
