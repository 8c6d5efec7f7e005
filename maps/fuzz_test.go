package maps

import "testing"

// FuzzDecodeEvents: what comes off the SIP ring buffer is decoded or
// refused, never a panic, and an event's message never reaches past the
// record.
func FuzzDecodeEvents(f *testing.F) {
	f.Add(make([]byte, 60))
	f.Add(make([]byte, 1520))
	f.Add([]byte{2, 4, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, raw []byte) {
		if ev, err := DecodeSIPEvent(raw); err == nil && len(ev.Message) > len(raw) {
			t.Fatalf("a message of %d bytes from a record of %d", len(ev.Message), len(raw))
		}
	})
}
