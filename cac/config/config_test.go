package config

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/cac"
)

func TestFullExample(t *testing.T) {
	c, err := Load("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Interfaces) != 1 || c.Interfaces[0] != (Interface{Name: "eth1", Mode: "auto", node: c.Interfaces[0].node}) {
		t.Errorf("interfaces = %+v", c.Interfaces)
	}
	padi := c.Classes[cac.PPPoEPADI]
	if *padi.CPS != 100 || padi.EffectiveBurst() != 200 || padi.PerSource.Key != "mac" || padi.PerSource.EffectiveBurst() != 3 {
		t.Errorf("pppoe-padi = %+v / %+v", padi, padi.PerSource)
	}
	inv := c.Classes[cac.SIPInvite]
	if inv.EffectiveBurst() != 1800 || inv.PerSource.Key != "ip" || inv.PerSource.IPv6Prefix != 64 || inv.PerSource.EffectiveBurst() != 300 {
		t.Errorf("sip-invite = %+v / %+v", inv, inv.PerSource)
	}
	if _, ok := c.Classes[cac.L2TPSCCRQ]; ok {
		t.Error("an absent class must stay absent (unlimited)")
	}
	ca := c.CallAdmission
	if !ca.NewModel || *ca.Limit != 200 || *ca.CPULimit != 60 || ca.Charges["pppoe"] != (Charge{10, time.Second}) ||
		ca.Load.Charge != 100 || ca.Load.Lifetime != time.Second {
		t.Errorf("call admission = %+v", ca)
	}
	if len(c.Buffers.PacketProtocols) != 1 || c.Buffers.PacketProtocols[0] != 0x8863 {
		t.Errorf("buffers = %+v", c.Buffers)
	}
	a := c.SessionAgents[0]
	if a.PingFailureCount != 3 || a.PingInterval != 30*time.Second || !a.PingAllAddresses || *a.Limit.CPS != 50 ||
		*a.Connection.CPS != 10 || a.Connection.EffectiveBurst() != 10 || a.OnOutOfService != OnOutOfServicePass || a.EgressResponseCode != 480 {
		t.Errorf("agent = %+v", a)
	}
	if c.Customers[0].Accounts[0].Source.String() != "192.0.2.10/32" {
		t.Errorf("account = %+v", c.Customers[0].Accounts[0])
	}
}

func TestDefaults(t *testing.T) {
	c, err := Parse("min.yaml", []byte("interfaces: [{name: veth0}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Ports.L2TP[0] != 1701 || c.Ports.SIP[0] != 5060 || c.MalformedDrop || c.StaleAfter != 5*time.Second ||
		c.OnStale != "static" || c.Interfaces[0].Mode != "auto" || c.CallAdmission.Limit != nil {
		t.Errorf("defaults = %+v", c)
	}
}

func TestPortsAreDecimal(t *testing.T) {
	c, err := Parse("p.yaml", []byte("ports: {sip: [05060], l2tp: [0x6a5]}\nbuffers: {packet-protocols: [0x8863]}\ncall-admission: |\n  call admission limit 10\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Ports.SIP[0] != 5060 || c.Ports.L2TP[0] != 1701 || c.Buffers.PacketProtocols[0] != 0x8863 {
		t.Errorf("ports %+v, buffers %+v: 05060 is decimal, 0x6a5 hex", c.Ports, c.Buffers)
	}
}

func TestSyntaxErrorNamesLine(t *testing.T) {
	_, err := Parse("s.yaml", []byte("ports:\n  sip: [5060\nmalformed: pass\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "s.yaml:") || !strings.Contains(err.Error(), "YAML syntax") {
		t.Errorf("got %v", err)
	}
}

func TestDurations(t *testing.T) {
	for in, want := range map[string]time.Duration{"5s": 5 * time.Second, "200ms": 200 * time.Millisecond, "2": 2 * time.Second, "0.5": 500 * time.Millisecond} {
		c, err := Parse("d.yaml", []byte("cpu: {sample-interval: 100ms}\nstale-after: "+in+"\n"))
		if err != nil || c.StaleAfter != want {
			t.Errorf("stale-after %s = %v, %v; want %v", in, c, err, want)
		}
	}
}

// TestHeldByDefault: in-dialog requests and malformed frames are limited
// unless the file says otherwise, and an empty mapping lifts the limits.
func TestHeldByDefault(t *testing.T) {
	c, err := Parse("d.yaml", []byte("malformed: pass\n"))
	if err != nil {
		t.Fatal(err)
	}
	in, mal := c.Classes[cac.SIPInDialog], c.Classes[cac.ClassMalformed]
	if in.PerSource == nil || *in.PerSource.CPS != 50 || !in.Unlimited() {
		t.Errorf("sip-indialog by default: %+v", in)
	}
	if mal.PerSource == nil || *mal.PerSource.CPS != 5 || mal.Unlimited() || *mal.CPS != 100 {
		t.Errorf("malformed by default: %+v", mal)
	}
	c, err = Parse("d.yaml", []byte("classes:\n  sip-indialog: {}\n  malformed: {per-source: {cps: 2}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if in := c.Classes[cac.SIPInDialog]; in.PerSource != nil || !in.Unlimited() {
		t.Errorf("sip-indialog: {} still limits: %+v", in)
	}
	if mal := c.Classes[cac.ClassMalformed]; !mal.Unlimited() || *mal.PerSource.CPS != 2 {
		t.Errorf("malformed set by the file: %+v", mal)
	}
}

// TestBadInput: every mistake names the file, line and key, and no config
// comes back.
func TestBadInput(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"unknown top key", "interfaces: []\nfoo: 1\n", "bad.yaml:2:1: foo: unknown key"},
		{"unknown nested key", "classes:\n  sip-invite: {cps: 3, bursty: 4}\n", "bad.yaml:2:24: classes.sip-invite.bursty: unknown key"},
		{"negative cps", "classes:\n  l2tp-icrq:\n    cps: -5\n", "bad.yaml:3:10: classes.l2tp-icrq.cps: must be at least 0.001, got -5"},
		{"non-numeric cps", "environment: {cps: lots}\n", `bad.yaml:1:20: environment.cps: must be a number, got "lots"`},
		{"port out of range", "ports: {sip: [5060, 70000]}\n", "bad.yaml:1:21: ports.sip[1]: must be from 1 to 65535, got 70000"},
		{"port zero", "ports: {l2tp: [0]}\n", "bad.yaml:1:16: ports.l2tp[0]: must be from 1 to 65535, got 0"},
		{"bad deny prefix", "access: {deny: [198.51.100.0/33]}\n", `bad.yaml:1:17: access.deny[0]: must be an address or prefix such as 192.0.2.10/32, got "198.51.100.0/33"`},
		{"host bits", "access:\n  allow: [198.51.100.1/24]\n", "bad.yaml:2:11: access.allow[0]: 198.51.100.1/24 has host bits set; did you mean 198.51.100.0/24?"},
		{"deny and allow", "access:\n  deny: [192.0.2.0/24]\n  allow: [192.0.2.0/24]\n", "bad.yaml:3:11: access.allow[0]: 192.0.2.0/24 is in both access.deny and access.allow"},
		{"short mac", "access: {deny-mac: [\"02:00:00:00:01\"]}\n", `bad.yaml:1:21: access.deny-mac[0]: must be a MAC of 6 bytes such as 02:00:00:00:00:01, got "02:00:00:00:01"`},
		{"long mac", "access: {allow-mac: [\"02:00:00:00:00:00:00:01\"]}\n", `access.allow-mac[0]: must be a MAC of 6 bytes`},
		{"refused zero", "access: {auto-deny: {refused: 0, within: 1s, deny-for: 1m}}\n", "bad.yaml:1:31: access.auto-deny.refused: must be from 1 to"},
		{"within short", "access: {auto-deny: {refused: 5, within: 10ms, deny-for: 1m}}\n", `bad.yaml:1:42: access.auto-deny.within: must be from 80ms to 1h0m0s, got "10ms"`},
		{"within slots", "access: {auto-deny: {refused: 5, within: 100000001ns, deny-for: 1m}}\n", `access.auto-deny.within: must be counted in 8 slots of whole nanoseconds`},
		{"deny-for long", "access: {auto-deny: {refused: 5, within: 1s, deny-for: 200h}}\n", `access.auto-deny.deny-for: must be from 1s to 168h0m0s, got "200h"`},
		{"table small", "access: {auto-deny: {refused: 5, within: 1s, deny-for: 1m, table: 10}}\n", "access.auto-deny.table: must be from 1024 to 4194304, got 10"},
		{"auto-deny incomplete", "access: {auto-deny: {refused: 5}}\n", "access.auto-deny.within: is required"},
		{"sip-connect mac", "classes:\n  sip-connect: {per-source: {cps: 1, key: mac}}\n", "classes.sip-connect.per-source.key: must be one of ip"},
		{"sip-connect action", "classes:\n  sip-connect: {cps: 1, action: reject}\n", "classes.sip-connect.action: unknown key"},
		{"sip-tcp port zero", "ports: {sip-tcp: [5061, 0]}\n", "bad.yaml:1:25: ports.sip-tcp[1]: must be from 1 to 65535, got 0"},
		{"sip-tcp port twice", "ports: {sip-tcp: [5061, 5061]}\n", "bad.yaml:1:25: ports.sip-tcp[1]: port 5061 is listed twice"},
		{"unknown class", "classes:\n  sip-subscribe: {cps: 1}\n", "bad.yaml:2:3: classes.sip-subscribe: unknown key (valid keys here: l2tp-icrq, l2tp-sccrq, malformed, pppoe-padi, pppoe-padr, sip-connect, sip-indialog, sip-invite, sip-options, sip-other, sip-register)"},
		{"port in both", "ports: {l2tp: [5060], sip: [5060]}\n", "ports: port 5060 is both an L2TP and a SIP port"},
		{"bad mode", "interfaces: [{name: eth1, mode: turbo}]\n", "interfaces[0].mode: must be one of auto, native, generic"},
		{"bad malformed", "malformed: maybe\n", "malformed: must be one of pass, drop"},
		{"bucket below one call", "environment: {cps: 0.001}\n", "less than one"},
		{"pppoa", "call-admission: |\n  call admission limit 10\n  call admission pppoa 10 1\n", "bad.yaml:3:3: call-admission: call admission pppoa: PPPoA runs over ATM"},
		{"bad ios line", "call-admission: |\n  call admission limit ten\n", "bad.yaml:2:3: call-admission: call admission limit: the limit must be from 1 to 1000000000"},
		{"per-source mac on sip", "classes:\n  sip-invite: {per-source: {key: mac, cps: 1}}\n", "classes.sip-invite.per-source.key: must be one of ip"},
		{"overlapping customers", "customers:\n  - {name: a, accounts: [{name: a1, source: 192.0.2.0/24}]}\n  - {name: b, accounts: [{name: b1, source: 192.0.2.7/32}]}\n", "bad.yaml:3:26: customers[1].accounts: source 192.0.2.7/32 of account b1 overlaps 192.0.2.0/24 of account a1 in customer a"},
		{"overlap across families", "customers:\n  - {name: a, accounts: [{name: a1, source: 10.0.0.0/8}]}\n  - {name: b, accounts: [{name: b1, source: \"::ffff:10.1.0.0/112\"}]}\n", "overlaps 10.0.0.0/8 of account a1"},
		{"same prefix two ways", "customers:\n  - {name: a, accounts: [{name: a1, source: 10.0.0.0/8}, {name: a2, source: \"::ffff:10.0.0.0/104\"}]}\n", "belongs to two accounts"},
		{"source table", "per-source-table: 10\n", "per-source-table: must be from 1024 to 16777216"},
		{"dialog table", "dialog-table: 100000000\n", "dialog-table: must be from 1024 to 16777216"},
		{"prefix host bits", "customers: [{name: a, accounts: [{name: b, source: 192.0.2.1/24}]}]\n", "did you mean 192.0.2.0/24"},
		{"missing realm", "session-agents: [{name: p, hostname: 192.0.2.2, realm-id: core}]\n", `session-agents[0].realm-id: no realm named "core"`},
		{"connection burst alone", "realms: [{name: core, address: 192.0.2.1}]\nsession-agents: [{name: p, hostname: 192.0.2.2, realm-id: core, connection-burst: 5}]\n",
			"bad.yaml:2:83: session-agents[0].connection-burst: without connection-cps: a connection limit needs a rate"},
		{"on out of service", "realms: [{name: core, address: 192.0.2.1}]\nsession-agents: [{name: p, hostname: 192.0.2.2, realm-id: core, on-out-of-service: wait}]\n",
			"session-agents[0].on-out-of-service: must be one of fail-fast, pass"},
		{"egress code", "realms: [{name: core, address: 192.0.2.1}]\nsession-agents: [{name: p, hostname: 192.0.2.2, realm-id: core, egress-response-code: 200}]\n",
			"session-agents[0].egress-response-code: must be from 400 to 699, got 200"},
		{"repeated key", "malformed: pass\nmalformed: drop\n", "bad.yaml:2:1: malformed: repeated key"},
		{"list not mapping", "ports: [1701]\n", "ports: must be a mapping"},
		{"bad duration", "stale-after: soon\n", `stale-after: must be a duration`},
		{"huge duration", "stale-after: 1e10\n", `stale-after: must be at most 4294967296 seconds`},
		{"null name", "interfaces: [{name: ~}]\n", `interfaces[0].name: must have a value`},
		{"second document", "malformed: pass\n---\nmalformed: bogus\n", "bad.yaml:2:1: ---: a second YAML document"},
		{"syntax", "ports: {sip: [5060\nmalformed: pass\n", "bad.yaml:"},
		{"charge lifetime", "call-admission: |\n  call admission limit 10\n  call admission sip 5 301\n", "bad.yaml:3:3: call-admission: call admission sip: the lifetime in seconds must be from 1 to 300"},
		{"cpu-limit without new model", "call-admission: |\n  call admission limit 10\n  call admission cpu-limit 60\n", "cpu-limit applies to the new model only"},
		{"sample interval", "cpu: {sample-interval: 50ms}\n", "bad.yaml:1:24: cpu.sample-interval: must be at least 100ms"},
		{"cpu source", "cpu: {source: \"cgroup:../etc\"}\n", "cpu.source:"},
		{"stale before a sample", "cpu: {sample-interval: 3s}\n", "bad.yaml:1:1: stale-after: 5s is less than two sample intervals (cpu.sample-interval 3s)"},
		{"reserve over burst", "classes:\n  sip-invite: {cps: 10, burst: 20, agent-reserve: 20}\n", "bad.yaml:2:15: classes.sip-invite.agent-reserve: must leave strangers at least one call of the burst (20), got 20"},
		{"reserve unlimited", "environment: {agent-reserve: 5}\n", "environment.agent-reserve: needs a cps"},
		{"reserve in dialog", "classes:\n  sip-indialog: {cps: 10, agent-reserve: 1}\n", "classes.sip-indialog.agent-reserve: unknown key"},
		{"reject in dialog", "classes:\n  sip-indialog: {action: reject}\n", "classes.sip-indialog.action: unknown key"},
		{"folded ios", "call-admission: >\n  call admission limit 10\n  call admission vpdn 10 1\n", "call-admission: write the IOS lines as a literal block"},
	}
	for _, c := range cases {
		cfg, err := Parse("bad.yaml", []byte(c.yaml))
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if cfg != nil {
			t.Errorf("%s: a config came back with the error", c.name)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %s", c.name, err, c.want)
		}
	}
}

func TestAllErrorsReported(t *testing.T) {
	_, err := Parse("bad.yaml", []byte("foo: 1\nports: {sip: [99999]}\nmalformed: x\n"))
	if err == nil || strings.Count(err.Error(), "bad.yaml:") != 3 {
		t.Errorf("want three errors, got %v", err)
	}
}

// TestDeployExample: the example configuration shipped under deploy/ is
// valid, so it cannot rot as keys change.
func TestDeployExample(t *testing.T) {
	if _, err := Load("../../deploy/cac.yaml"); err != nil {
		t.Fatal(err)
	}
}

// TestSIPTCPPorts: ports.sip-tcp is 5060 and 5061 unless the file says
// otherwise, and an empty list is none (sip-connect off).
func TestSIPTCPPorts(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []uint16
	}{
		{"interfaces: [{name: veth0}]\n", []uint16{5060, 5061}},
		{"ports: {sip-tcp: [5080]}\n", []uint16{5080}},
		{"ports: {sip-tcp: []}\n", nil},
	} {
		cfg, err := Parse("t.yaml", []byte(c.in))
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		if !slices.Equal(cfg.Ports.SIPTCP, c.want) {
			t.Errorf("%q: sip-tcp %v, want %v", c.in, cfg.Ports.SIPTCP, c.want)
		}
	}
}

// TestAccess: the access block's lists and auto-deny read as written,
// the table 65,536 unless set.
func TestAccess(t *testing.T) {
	cfg, err := Parse("a.yaml", []byte("access:\n  deny: [198.51.100.0/24, 2001:db8::1]\n  allow: [198.51.100.7]\n"+
		"  deny-mac: [02:00:00:00:00:01]\n  auto-deny: {refused: 20, within: 10s, deny-for: 1h}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Access
	if fmt.Sprint(a.Deny, a.Allow, a.DenyMAC) != "[198.51.100.0/24 2001:db8::1/128] [198.51.100.7/32] [02:00:00:00:00:01]" {
		t.Errorf("lists %v %v %v", a.Deny, a.Allow, a.DenyMAC)
	}
	if ad := a.AutoDeny; ad == nil || *ad != (AutoDeny{Refused: 20, Within: 10 * time.Second, DenyFor: time.Hour, Table: 65536}) {
		t.Errorf("auto-deny %+v", ad)
	}
	if cfg.AutoDenyIPv6Prefix() != 64 {
		t.Errorf("IPv6 prefix /%d, want the default /64", cfg.AutoDenyIPv6Prefix())
	}
	cfg, err = Parse("a.yaml", []byte("classes:\n  sip-invite: {per-source: {cps: 1, ipv6-prefix: 48}}\n  sip-connect: {cps: 100, per-source: {cps: 2}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AutoDenyIPv6Prefix() != 48 || cfg.Access.AutoDeny != nil {
		t.Errorf("IPv6 prefix /%d and auto-deny %v, want /48 (the shortest) and off", cfg.AutoDenyIPv6Prefix(), cfg.Access.AutoDeny)
	}
}

// TestAccessCapacity: the prefix past the fast path's 16,384 and the MAC
// past its 4,096 are refused at their own line.
func TestAccessCapacity(t *testing.T) {
	var b strings.Builder
	b.WriteString("access:\n  deny:\n")
	for i := range MaxAccessPrefixes + 1 {
		fmt.Fprintf(&b, "    - 10.%d.%d.0/24\n", i>>8, i&255)
	}
	_, err := Parse("c.yaml", []byte(b.String()))
	if want := fmt.Sprintf("c.yaml:%d:7: access.deny[%d]: more than %d prefixes", MaxAccessPrefixes+3, MaxAccessPrefixes, MaxAccessPrefixes); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%d prefixes: %v, want %q", MaxAccessPrefixes+1, err, want)
	}
	b.Reset()
	b.WriteString("access:\n  deny-mac:\n")
	for i := range MaxAccessMACs + 1 {
		fmt.Fprintf(&b, "    - 02:00:00:00:%02x:%02x\n", i>>8, i&255)
	}
	_, err = Parse("c.yaml", []byte(b.String()))
	if want := fmt.Sprintf("c.yaml:%d:7: access.deny-mac[%d]: more than %d MACs", MaxAccessMACs+3, MaxAccessMACs, MaxAccessMACs); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%d MACs: %v, want %q", MaxAccessMACs+1, err, want)
	}
}
