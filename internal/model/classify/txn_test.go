package classify

import (
	"strings"
	"testing"
)

func request(headers ...string) []byte {
	return []byte("INVITE sip:bob@example.com SIP/2.0\r\n" + strings.Join(headers, "\r\n") + "\r\n\r\n")
}

// TestTxn: a retransmission (the same bytes) is the same transaction;
// another CSeq, another top Via or another Call-ID is another; a request
// without one of the three names none; the long and compact forms of a
// header name the same one.
func TestTxn(t *testing.T) {
	via, cseq, callid := "Via: SIP/2.0/UDP 198.51.100.7:5060;branch=z9hG4bK-1", "CSeq: 1 INVITE", "Call-ID: a@198.51.100.7"
	base := request(via, "To: <sip:bob@example.com>", cseq, callid)
	c, txn := Txn(base)
	if c == 0 || txn == 0 || c != CallID(base) {
		t.Fatalf("Txn = %x, %x; CallID %x", c, txn, CallID(base))
	}
	if _, again := Txn(request(via, "To: <sip:bob@example.com>", cseq, callid)); again != txn {
		t.Error("a retransmission is another transaction")
	}
	if _, compact := Txn(request("v: SIP/2.0/UDP 198.51.100.7:5060;branch=z9hG4bK-1", cseq, "i: a@198.51.100.7")); compact != txn {
		t.Error("compact forms name another transaction")
	}
	for name, m := range map[string][]byte{
		"another CSeq":        request(via, "CSeq: 2 INVITE", callid),
		"another branch":      request("Via: SIP/2.0/UDP 198.51.100.7:5060;branch=z9hG4bK-2", cseq, callid),
		"another Call-ID":     request(via, cseq, "Call-ID: b@198.51.100.7"),
		"a second Via on top": request("Via: SIP/2.0/UDP 203.0.113.1;branch=z9hG4bK-p", via, cseq, callid),
	} {
		if _, other := Txn(m); other == txn || other == 0 {
			t.Errorf("%s: transaction %x", name, other)
		}
	}
	for name, m := range map[string][]byte{
		"no Via":     request(cseq, callid),
		"no CSeq":    request(via, callid),
		"no Call-ID": request(via, cseq),
	} {
		if _, none := Txn(m); none != 0 {
			t.Errorf("%s: transaction %x, want none", name, none)
		}
	}
	v4, v6 := Source{Family: 4, Addr: [16]byte{198, 51, 100, 7}}, Source{Family: 6, Addr: [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 7}}
	if FromSource(txn, v4) == FromSource(txn, v6) || FromSource(txn, v4) == txn || FromSource(0, v4) != 0 {
		t.Error("FromSource does not tell senders apart")
	}
}
