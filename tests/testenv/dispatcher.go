package testenv

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Dispatcher is Kamailio as a stateful SIP proxy that routes each call
// with its dispatcher module to the first of a list of vendors and hunts
// to the next when one answers 5xx or times out: the carrier's proxy in
// front of the vendors a filter protects. Its log says, for each call,
// where Kamailio relayed the INVITE, what each vendor answered, when it
// hunted and what the caller got, with the times Kamailio saw them; a
// test measures from that what a filter between the proxy and the vendors
// changes.
//
// It runs as StartKamailio does: in the foreground with its log on
// standard error, with a configuration, destination list, pid file and
// runtime directory of its own under t.TempDir(), and with DNS off (every
// destination is an address), so that it looks nothing up; it is killed
// when the test ends.
type Dispatcher struct {
	ns     string
	listen netip.AddrPort
	p      *Process // its log, stdout and stderr: -E logs there
}

// dispatchMarker starts each line the configuration logs about a call:
// KIND|TIME|..., the Call-ID last, so that nothing it holds can shift a
// field. TIME is $TV(Sn), seconds.microseconds since the epoch.
const dispatchMarker = "xdpcac-dispatch|"

// dispatchReadyPrefix starts the Call-IDs of StartDispatcher's probes.
const dispatchReadyPrefix = "dispatcher-ready-"

// dispatcherConfig is the configuration; its verbs are the listen socket
// and the destination list's path. Set 1, in priority order (algorithm
// 8), is the hunt list; flags 2 keeps the rest of it for ds_next_dst.
// Nothing marks a destination inactive: no ds_mark_dst, no pinging
// (interval 0, probing mode 0 and no probing flag in the list), so a 503
// from the first vendor leaves it first for the next call. tm keeps its
// timers' defaults (fr_timer 30 s), as a carrier's proxy would.
const dispatcherConfig = `#!KAMAILIO
debug=2
log_stderror=yes
children=2
dns=no
rev_dns=no
dns_try_ipv6=no
dns_try_naptr=no
use_dns_cache=off
use_dns_failover=off
auto_aliases=no
disable_tcp=yes
enable_sctp=no
enable_tls=no
mhomed=0
server_signature=no
listen=udp:%s

loadmodule "tm.so"
loadmodule "tmx.so"
loadmodule "sl.so"
loadmodule "rr.so"
loadmodule "pv.so"
loadmodule "textops.so"
loadmodule "siputils.so"
loadmodule "maxfwd.so"
loadmodule "xlog.so"
loadmodule "dispatcher.so"

modparam("dispatcher", "list_file", "%s")
modparam("dispatcher", "flags", 2)
modparam("dispatcher", "ds_ping_interval", 0)
modparam("dispatcher", "ds_probing_mode", 0)

request_route {
	if (!mf_process_maxfwd_header("10")) {
		sl_send_reply("483", "Too Many Hops");
		exit;
	}
	if (is_method("OPTIONS") && !has_totag()) {
		sl_send_reply("200", "OK");
		exit;
	}
	if (is_method("CANCEL")) {
		if (t_check_trans()) {
			t_relay();
		}
		exit;
	}
	# A retransmission of a request with a transaction is absorbed.
	if (!is_method("ACK")) {
		if (t_precheck_trans()) {
			t_check_trans();
			exit;
		}
		t_check_trans();
	}
	if (has_totag()) {
		if (loose_route()) {
			t_relay();
		} else if (is_method("ACK") && t_check_trans()) {
			t_relay();
		} else if (!is_method("ACK")) {
			sl_send_reply("404", "Not Here");
		}
		exit;
	}
	if (!is_method("INVITE")) {
		sl_send_reply("405", "Method Not Allowed");
		exit;
	}
	record_route();
	if (!ds_select_dst("1", "8")) {
		xlog("L_ALERT", "` + dispatchMarker + `final|$TV(Sn)|503|$ci\n");
		sl_send_reply("503", "No Vendor");
		exit;
	}
	xlog("L_ALERT", "` + dispatchMarker + `relay|$TV(Sn)|$du|$ci\n");
	t_on_reply("VENDOR");
	t_on_failure("HUNT");
	if (!t_relay()) {
		sl_reply_error();
	}
	exit;
}

onreply_route[VENDOR] {
	if ($rs >= 200) {
		xlog("L_ALERT", "` + dispatchMarker + `reply|$TV(Sn)|$rs|$si:$sp|$ci\n");
	}
}

failure_route[HUNT] {
	if (t_is_canceled()) {
		exit;
	}
	if (t_check_status("5[0-9][0-9]") || t_branch_timeout()) {
		xlog("L_ALERT", "` + dispatchMarker + `hunt|$TV(Sn)|$T_reply_code|$ci\n");
		if (ds_next_dst()) {
			xlog("L_ALERT", "` + dispatchMarker + `relay|$TV(Sn)|$du|$ci\n");
			t_on_reply("VENDOR");
			t_on_failure("HUNT");
			t_relay();
			exit;
		}
	}
	xlog("L_ALERT", "` + dispatchMarker + `final|$TV(Sn)|$T_reply_code|$ci\n");
}
`

// StartDispatcher runs Kamailio (/usr/sbin/kamailio, Debian package
// kamailio) in namespace ns as a proxy on UDP listen, which must be an
// address there, routing every INVITE to dests in that order: the first
// has the highest priority and is tried first for every call. It returns
// once Kamailio has answered an OPTIONS, sent from listen's own address
// so that no frame crosses an interface a filter may be attached to.
// Without kamailio it fails when XDPCAC_REQUIRE_BPF=1, else skips.
func StartDispatcher(t testing.TB, ns string, listen netip.AddrPort, dests []netip.AddrPort) *Dispatcher {
	t.Helper()
	RequireTool(t, "kamailio", "kamailio")
	if len(dests) == 0 {
		t.Fatal("dispatcher: no destinations")
	}
	// setid destination flags priority: the first highest.
	var list strings.Builder
	for i, d := range dests {
		fmt.Fprintf(&list, "1 sip:%s 0 %d\n", d, 10*(len(dests)-i))
	}
	listFile := filepath.Join(t.TempDir(), "dispatcher.list")
	if err := os.WriteFile(listFile, []byte(list.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	d := &Dispatcher{ns: ns, listen: listen}
	d.p = runKamailio(t, ns, "dispatcher kamailio", fmt.Sprintf(dispatcherConfig, listen, listFile), 64)
	if err := probeOptions(ns, d.p, listen, dispatchReadyPrefix, nil); err != nil {
		t.Fatalf("dispatcher kamailio in %s: %v", ns, err) // the cleanup shows its log
	}
	return d
}

// Log returns everything Kamailio wrote.
func (d *Dispatcher) Log() string { return d.p.Log.String() }

// Stop ends Kamailio: SIGTERM, then SIGKILL to the group after 3 s. It
// waits for the exit and may be called again.
func (d *Dispatcher) Stop() { d.p.Stop() }
