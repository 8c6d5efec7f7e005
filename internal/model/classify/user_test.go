package classify

import (
	"strings"
	"testing"
)

// TestCLIOf: the user of the P-Asserted-Identity URI when there is one,
// else of the From URI, through display names quoted or not, compact and
// lower-case header names, sip, sips and tel URIs.
func TestCLIOf(t *testing.T) {
	long := strings.Repeat("1234567890", 4) // 40 bytes: the first 32 are kept
	for _, tc := range []struct {
		name    string
		headers []string
		want    string
	}{
		{"name-addr", []string{"From: <sip:alice@example.com>;tag=1"}, "alice"},
		{"addr-spec", []string{"From: sip:+4420123@example.com;tag=1"}, "+4420123"},
		{"quoted name", []string{`From: "Alice" <sip:alice@example.com>;tag=1`}, "alice"},
		{"quoted name with < and escapes", []string{`From: "A \"<sip:mallory@x>\" B" <sip:alice@example.com>`}, "alice"},
		{"unquoted name", []string{"From: Alice Smith <sips:alice@example.com>"}, "alice"},
		{"compact f", []string{"f: <sip:bob@example.com>;tag=2"}, "bob"},
		{"lower case", []string{"from:   <SIP:carol@example.com>"}, "carol"},
		{"tel", []string{"From: <tel:+442071234567;phone-context=x>"}, "+442071234567"},
		{"tel to the end of the line", []string{"From: tel:+4420"}, "+4420"},
		{"no user", []string{"From: <sip:example.com>;tag=1"}, ""},
		{"no user before the end", []string{"From: sip:example.com"}, ""},
		{"other scheme", []string{"From: <mailto:alice@example.com>"}, ""},
		{"quoted name, no <", []string{`From: "Alice" sip:alice@example.com`}, ""},
		{"user longer than 32", []string{"From: <sip:" + long + "@example.com>"}, long[:32]},
		{"user past the scan bound", []string{"From: <sip:" + strings.Repeat("1", 64) + "@example.com>"}, ""},
		{"PAI present", []string{"From: <sip:alice@example.com>", "P-Asserted-Identity: <sip:+4420@example.com>"}, "+4420"},
		{"PAI lower case, before From", []string{"p-asserted-identity: \"Ops\" <tel:+331>", "From: <sip:alice@example.com>"}, "+331"},
		{"PAI without a user wins", []string{"From: <sip:alice@example.com>", "P-Asserted-Identity: <sip:example.com>"}, ""},
		{"first From", []string{"From: <sip:alice@a>", "From: <sip:bob@b>"}, "alice"},
		{"no From", []string{"Via: SIP/2.0/UDP h"}, ""},
		{"To skipped", []string{"To: <sip:dave@example.com>", "From: <sip:erin@example.com>"}, "erin"},
	} {
		if got := CLIOf(request(tc.headers...)); got != tc.want {
			t.Errorf("%s: CLIOf = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestCalledOf: the user of the Request-URI, after the method and one
// space.
func TestCalledOf(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"INVITE sip:bob@example.com SIP/2.0", "bob"},
		{"OPTIONS sips:+4420@example.com SIP/2.0", "+4420"},
		{"REGISTER sip:example.com SIP/2.0", ""},
		{"INVITE tel:+4420;npdi SIP/2.0", "+4420"},
		{"invite SIP:0800123@example.com SIP/2.0", "0800123"},
		{"INVITE  sip:bob@example.com SIP/2.0", ""}, // two spaces: no URI after the first
		{"FOO sip:x@y SIP/2.0", "x"},
	} {
		m := []byte(tc.line + "\r\nFrom: <sip:a@b>\r\n\r\n")
		if got := CalledOf(m); got != tc.want {
			t.Errorf("%q: CalledOf = %q, want %q", tc.line, got, tc.want)
		}
	}
}

// FuzzUsers: the readers of the authentication rules take any bytes
// without a panic, and a user they find is at most UserMax bytes of the
// message.
func FuzzUsers(f *testing.F) {
	f.Add([]byte("INVITE sip:0800@x SIP/2.0\r\nFrom: \"a\\\"\" <tel:+44;x>\r\n\r\n"))
	f.Add([]byte("OPTIONS tel:1 SIP/2.0\r\np-asserted-identity: sips:b@c\r\n"))
	f.Fuzz(func(t *testing.T, m []byte) {
		for _, u := range []string{CLIOf(m), CalledOf(m)} {
			if len(u) > UserMax || !strings.Contains(string(m), u) {
				t.Fatalf("user %q of %q", u, m)
			}
		}
	})
}
