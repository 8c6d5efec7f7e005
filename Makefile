# xdpcac: build, generate, test, bench.
#
#   make            build bin/cacctl (no clang needed: the BPF object is committed)
#   make generate   rebuild the BPF object and its Go bindings with clang
#   make check      gofmt, vet and the unit tests that need no root, in seconds
#   sudo make test  everything CI runs: packages, generate check, vet, all tests,
#                   the kernel floor
#   sudo make bench fast-path cost against an empty XDP program
#   sudo make bench-journal  a storm's reject records through a daemon, and
#                   show rejects's answer time during it
#   sudo make bench-flood  receiving-CPU time per frame of a live veth flood,
#                   against an XDP floor, nftables and iptables, and on two CPUs
#   sudo make bench-denied  a flood from a denied source against the
#                   parse-and-drop floor, in the kernel's test runs and in
#                   receive floods paired with the floor's
#   sudo make demo  storms against the filter on a testbed, with live counts
#   sudo make soak  floods flat out with applies and restarts for XDPCAC_SOAK (default 10m)
#   sudo make fuzz  every fuzz target for FUZZTIME (default 30s)
#   sudo make fuzz-receivers  FUZZ_RECEIVERS_N (default 200000) generated SIP
#                   requests through the filter to Kamailio and sipgo, each
#                   charge held to what they read (half a minute)
#   sudo make kernels  the kernel-floor tests on Debian 12's kernel (6.1) in qemu

GO ?= go
# Debian packages: tests/provision.sh installs what the tests need (the
# Vagrantfile provisions its VM with the same script); the benchmarks also
# compare against nftables and iptables on a veth.
BENCH_PACKAGES := nftables iptables ethtool

.PHONY: all build deps generate check-generate vet check test bench bench-journal bench-flood bench-denied soak fuzz fuzz-receivers kernels demo clean
.PHONY: deb

all: build

build:
	$(GO) build -buildvcs=auto -o bin/cacctl ./cmd/cacctl

# deps installs what is missing, so that a fresh machine needs only Go.
deps:
	tests/provision.sh $(EXTRA_PACKAGES)

generate: deps
	$(GO) generate ./bpf

# check-generate fails when the committed object or bindings differ from
# what the sources compile to.
check-generate: generate
	@git diff --exit-code --stat -- bpf/ || \
		{ echo "bpf/: committed object is stale; run make generate and commit the result"; exit 1; }

# vet checks the Vagrantfile's syntax where ruby is (make test's deps
# install it); make check needs only Go, so elsewhere it says it skipped.
vet:
	@if command -v ruby >/dev/null 2>&1; then ruby -c Vagrantfile >/dev/null; \
	else echo "vet: ruby not found, Vagrantfile not checked (tests/provision.sh installs ruby)"; fi
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt wants to change: $$unformatted"; exit 1; fi
	$(GO) vet ./...

# check is the quick one, for any user: gofmt, vet and the tests of every
# package but the system tests under tests/ (which need root and real
# peers; testenv's own tests run, they need neither, and so do those of
# docs, which hold the pages to the code, and of hostguard, which holds
# the tests to what they may touch on the host). -short leaves out
# the tests that need root, as they would be without it (testenv's
# RequireBPF and RequireRoot skip them), so that check takes as long
# under sudo as without; make test runs them all, without -short.
check: vet
	$(GO) test -short -count=1 $$($(GO) list ./... | grep -v '/tests/' ) ./tests/testenv/ ./tests/docs/ ./tests/hostguard/

# promtool checks the daemon's /metrics. It comes from Debian's prometheus
# package, unpacked here rather than installed, so that the tests start no
# Prometheus server on the machine.
PROMTOOL := $(CURDIR)/.cache/prometheus/usr/bin/promtool
$(PROMTOOL):
	@mkdir -p .cache/prometheus
	@cd .cache && { ls prometheus_*.deb >/dev/null 2>&1 || apt-get download -o APT::Sandbox::User=root prometheus >/dev/null || \
		{ apt-get update -qq && apt-get download -o APT::Sandbox::User=root prometheus >/dev/null; }; }
	dpkg-deb -x .cache/prometheus_*.deb .cache/prometheus

# test runs its steps through tests/steps.sh, one after another, and
# prints at the end the wall time of each (deps, the generate check, vet,
# promtool, each host package, the kernel VM and each package in it); the
# first that fails ends it, the summary still prints and the exit status
# is not 0. XDPCAC_REQUIRE_BPF=1 turns a BPF test that cannot run into a
# failure; -p 1 runs one package at a time: the packages under tests/
# measure time and CPU, and side by side they would take each other's
# (the daemon's cpu-limit test fails so). XDPCAC_PROMTOOL makes the
# metrics test run promtool. Nothing of the host is touched but the
# namespaces, veths and pins the tests create and remove: never its
# clock, sysctls, routes or addresses (docs/design.md, "Testing";
# tests/hostguard holds the tests to it). TestClockJumps, which sets the
# wall clock, runs in the kernel VM only, whose clock is its own, with
# the kernel-floor packages (tests/fastpath, tests/e2e, tests/libxdp) on
# Debian 12's kernel (about half an hour under TCG). The packages under
# tests/ by what they need: fastpath and e2e the kernel only, daemon a
# running cacctl daemon, peers the real peers, bench the benchmarks, soak
# and storms.
test:
	GO="$(GO)" MAKE="$(MAKE)" PROMTOOL="$(PROMTOOL)" tests/steps.sh

bench:
	$(MAKE) deps EXTRA_PACKAGES="$(BENCH_PACKAGES)"
	XDPCAC_REQUIRE_BPF=1 $(GO) test -count=1 -run '^$$' -bench 'FastPath|SourceTable|Flood|Fleet|CallCost' -benchtime 1x ./tests/bench/

# bench-journal: BENCHMARKS.md, "The rejects journal in a storm": a
# storm of refused PADIs through a daemon, timing show rejects. Half a
# minute.
bench-journal: deps
	XDPCAC_REQUIRE_BPF=1 $(GO) test -count=1 -tags journalstorm -run JournalStormLive -v ./tests/bench/

# bench-flood: BENCHMARKS.md, "Receiving CPU per frame" and "Receiving CPU
# on two queues". A few minutes.
bench-flood:
	$(MAKE) deps EXTRA_PACKAGES="$(BENCH_PACKAGES)"
	XDPCAC_REQUIRE_BPF=1 $(GO) test -count=1 -run '^$$' -bench 'ReceiveCPU|ReceiveScale' -benchtime 1x -timeout 60m ./tests/bench/

# bench-denied: BENCHMARKS.md, "Denied sources and SIP connections": a
# denied source's flood under BPF_PROG_TEST_RUN, then in receive floods
# paired with the floor's, the frames reaching the box as skbs and then
# through a redirect hop as xdp_frames. About three minutes.
bench-denied:
	$(MAKE) deps EXTRA_PACKAGES="$(BENCH_PACKAGES)"
	XDPCAC_REQUIRE_BPF=1 $(GO) test -count=1 -run '^$$' -bench 'FastPathDenied|ReceiveDeniedPaired' -benchtime 1x -timeout 30m ./tests/bench/
	XDPCAC_RCV_HOP=1 XDPCAC_REQUIRE_BPF=1 $(GO) test -count=1 -run '^$$' -bench 'ReceiveDeniedPaired' -benchtime 1x -timeout 30m ./tests/bench/

# fuzz runs every fuzz target for FUZZTIME each; the seed corpora under
# testdata/fuzz run in make test as plain tests. FuzzXDP holds the real
# object to the model on mutated frames, so it needs root.
FUZZTIME ?= 30s
FUZZ_TARGETS := ./cac/config:FuzzParse ./cac/config:FuzzCallAdmission ./internal/model/classify:FuzzClassify \
	./cac/sipd:FuzzResponseOf ./cac/sipd:FuzzReject503 ./maps:FuzzDecodeEvents ./tests/fastpath:FuzzXDP
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t#*:} ($${t%%:*}) for $(FUZZTIME)"; \
		XDPCAC_REQUIRE_BPF=1 $(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) $${t%%:*} || exit 1; \
	done

# fuzz-receivers is the generative receiver differential of tests/peers
# (receivers_fuzz_test.go) at length: FUZZ_RECEIVERS_N requests, each a
# valid one with one to four mutations of the message and, for half, of
# its frame (priority tags, IPv4 options, IPv6 extension headers,
# fragments), sent through the filter to
# Kamailio and read by sipgo's parser, the filter's charge of each held to
# what they read. XDPCAC_FUZZ_SEED picks another seed (default 1);
# XDPCAC_FUZZ_RECORD=1 writes its findings to tests/peers/receivers/corpus,
# which make test replays. make test runs it short (50000).
FUZZ_RECEIVERS_N ?= 200000
fuzz-receivers: deps
	XDPCAC_REQUIRE_BPF=1 XDPCAC_FUZZ_N=$(FUZZ_RECEIVERS_N) $(GO) test -count=1 -run '^TestReceiversFuzzShort$$' -timeout 0 -v ./tests/peers/

# soak floods PADI, ICRQ and INVITE flat out at the daemon for XDPCAC_SOAK
# (default 10m), with an apply every 10 s and a new daemon every minute;
# kept out of make test. BENCHMARKS.md has its figures.
soak: deps
	XDPCAC_REQUIRE_BPF=1 $(GO) test -count=1 -tags soak -run Soak -timeout 0 -v ./tests/bench/

# kernels boots Debian 12's kernel in qemu (no KVM needed) with the test
# binaries of the packages that need only the kernel (tests/fastpath,
# tests/e2e, tests/libxdp) and runs them whole, failing on any skipped
# test: the floor the README states. It runs tests/daemon's TestClockJumps
# there too, which sets the VM's wall clock, never the host's. Its
# downloads are kept in .cache/kernels. It uses KVM (-cpu host)
# if a probe boot under KVM reaches init within XDPCAC_KERNELS_BOOT_SECONDS
# (default 60), else TCG (-cpu max); XDPCAC_KERNELS_ACCEL=tcg skips KVM,
# XDPCAC_KERNELS_ACCEL=kvm fails rather than fall back to TCG.
kernels:
	GO="$(GO)" tests/kernels/run.sh

# demo needs root: a testbed in network namespaces, the daemon on it,
# 45 s of storms beside a trusted peer's calls; it fails when the filter
# did not do what it shows, and everything it makes goes when it ends or
# is stopped.
demo:
	@dpkg -s iproute2 >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2; }
	$(GO) build -buildvcs=auto -o bin/cacctl ./cmd/cacctl
	bin/cacctl demo

clean:
	rm -rf bin .cache

# deb builds dist/xdpcac_VERSION_ARCH.deb with dpkg-deb (deploy/debian/build.sh):
# cacctl in /usr/sbin, its man pages and bash completion (which the built
# binary writes: cacctl gen-docs), the unit in /lib/systemd/system naming
# it there, cac.yaml as a conffile, the alert rules and the dashboard in
# /usr/share/xdpcac; gzip-compressed (DEB_COMPRESS=xz for a smaller file).
# DEB_VERSION defaults to one made from git describe or the commit; CGO
# stays off, so the binary is static and needs no libc.
DEB_VERSION ?=
DEB_CGO ?= 0
deb:
	GO="$(GO)" CGO_ENABLED=$(DEB_CGO) DEB_VERSION="$(DEB_VERSION)" deploy/debian/build.sh dist
