#!/usr/bin/env bash
# Installs what the tests need on a Debian machine, and nothing it already
# has: `make test` runs it on every machine (CI included), and the
# Vagrantfile provisions its VM with it. With --go it also installs Go,
# for a fresh VM; elsewhere Go is expected to be there.
#
#   tests/provision.sh [--go] [extra Debian packages...]
set -euo pipefail

GO_VERSION=1.26.0
# clang and llvm build the BPF object; iproute2 makes the test namespaces
# and ethtool sets their features; sip-tester is sipp, the SIP peer; pppoe
# has pppoe-server, pppoe-discovery and pppoe, a real BRAS and clients, and
# ppp the pppd their sessions start; xl2tpd a real LAC and LNS;
# kamailio the real SIP server behind the filter; sipvicious (svmap,
# svwar) a SIP scanner; ruby checks the Vagrantfile; xdp-tools has
# xdp-filter and xdp-loader, the libxdp programs tests/libxdp shares an
# interface with; redis-server the Redis that tests/fleet holds the fleet's
# leases (cac/fleet) in; nftables the kernel firewall the benchmarks set
# the filter beside (its ct and limit rules).
PACKAGES=(make git clang llvm iproute2 ethtool sip-tester pppoe ppp xl2tpd kamailio sipvicious ruby xdp-tools redis-server nftables)

want_go=0
if [[ ${1:-} == --go ]]; then
	want_go=1
	shift
fi
PACKAGES+=("$@")

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((want_go)) && ! /usr/local/go/bin/go version 2>/dev/null | grep -q "go$GO_VERSION"; then
	missing+=(curl ca-certificates)
fi
if ((${#missing[@]})); then
	echo "installing: ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
	# The tests start their own xl2tpd; the package's service would hold
	# UDP 1701 on the machine.
	if [[ " ${missing[*]} " == *" xl2tpd "* ]]; then
		systemctl disable --now xl2tpd >/dev/null 2>&1 || service xl2tpd stop >/dev/null 2>&1 || true
	fi
	# The tests start their own redis-server on a unix socket; the
	# package's service would hold TCP 6379 on the machine.
	if [[ " ${missing[*]} " == *" redis-server "* ]]; then
		systemctl disable --now redis-server >/dev/null 2>&1 || {
			service redis-server stop >/dev/null 2>&1
			update-rc.d redis-server disable >/dev/null 2>&1
		} || true
	fi
	# The same for kamailio, which holds UDP 5060 on every address of the
	# machine. Without systemd its init script may have started it; should
	# neither stop it, the package's own instance goes by its pid file,
	# never by name: a test's Kamailio may be running in a namespace.
	if [[ " ${missing[*]} " == *" kamailio "* ]]; then
		systemctl disable --now kamailio >/dev/null 2>&1 || {
			service kamailio stop >/dev/null 2>&1
			update-rc.d kamailio disable >/dev/null 2>&1
		} || true
		pid=$(cat /run/kamailio/kamailio.pid 2>/dev/null || true)
		if [[ -n $pid && $(cat "/proc/$pid/comm" 2>/dev/null) == kamailio ]]; then
			kill "$pid" 2>/dev/null || true
		fi
	fi
fi
if ((want_go)) && ! /usr/local/go/bin/go version 2>/dev/null | grep -q "go$GO_VERSION"; then
	echo "installing: go $GO_VERSION"
	curl -fsSL "https://go.dev/dl/go$GO_VERSION.linux-amd64.tar.gz" | tar -C /usr/local -xz
fi
