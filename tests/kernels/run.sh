#!/usr/bin/env bash
# The kernel floor: runs the fast-path and end-to-end tests on the kernel of
# Debian 12 (6.1) in a qemu VM, so that the object is known to load and work
# there and not only on the kernel of the machine that runs the tests. It
# needs no KVM (qemu emulates the CPU, TCG, when KVM is not there or cannot
# boot the VM) and no network in the VM: the VM has no NIC, the tests make
# their veth pairs in their own namespaces.
#
#   tests/kernels/run.sh [kernel package]
#
# The kernel is the package Debian's linux-image-amd64 depends on (or the
# linux-image-* package named), fetched with apt-get download into
# .cache/kernels and unpacked there. The VM boots it with an initramfs built
# here: busybox, the test binaries, cacctl, iproute2's ip and util-linux's
# setpriv with their libraries, the modules the tests need, and init (next
# to this script), which runs the tests and powers off. The console goes to
# the terminal and to .cache/kernels/console.log; the script fails unless
# the VM reports that the tests passed.
#
# XDPCAC_KERNELS_MINUTES (default 60) bounds the test run; the VM gets 10
# minutes more to boot and power off. XDPCAC_KERNELS_PACKAGES (default
# "daemon fastpath e2e libxdp") names the packages under tests/ to run, and
# XDPCAC_KERNELS_RUN, a -test.run pattern, only some of their tests (one
# that failed, say); by default each package runs whole, but for
# tests/daemon, of which the VM runs TestClockJumps only: it sets the wall
# clock an hour ahead and behind, which only a machine whose clock is the
# test's own may do (docs/design.md, "Testing"); the VM's init lets it.
#
# XDPCAC_KERNELS_ACCEL picks qemu's accelerator: unset (auto), KVM when
# /dev/kvm is writable and KVM boots the VM, else TCG; tcg, TCG without
# trying KVM; kvm, KVM or fail. KVM runs with -cpu host, TCG with -cpu max.
# Whether KVM boots is probed first: the same kernel and initramfs boot
# with xdpcac.probe=1 on the command line, and init powers off as soon as
# it has printed its boot marker. KVM cannot boot when qemu ends before the
# marker (some hosts' KVM refuses the CPU's MSRs and qemu aborts) or when
# the marker has not come within XDPCAC_KERNELS_BOOT_SECONDS (default 60;
# KVM boots in seconds, but some hosts' KVM hangs before the kernel prints
# anything); in auto the tests then run under TCG, and the script says why
# on stderr. The probe's console goes to .cache/kernels/probe.log.
set -euo pipefail
shopt -s lastpipe nullglob

cd "$(dirname "$0")/../.."
GO=${GO:-go}
CACHE=$PWD/.cache/kernels
MINUTES=${XDPCAC_KERNELS_MINUTES:-60}
ACCEL=${XDPCAC_KERNELS_ACCEL:-auto}
BOOT_SECONDS=${XDPCAC_KERNELS_BOOT_SECONDS:-60}
KERNEL=${1:-linux-image-amd64}

# busybox-static is the VM's userland; iproute2 and util-linux (essential,
# so always there) give the ip, setpriv and nsenter the tests call;
# xdp-tools the xdp-filter and xdp-loader that tests/libxdp shares an
# interface with, and their BPF objects.
PACKAGES=(qemu-system-x86 busybox-static iproute2 xdp-tools)
HOST_TOOLS=(ip setpriv nsenter xdp-filter xdp-loader)
# Files of the source tree the tests read, by their path in the module:
# copied under /src in the VM, where init runs each package from
# /src/tests/NAME. tests/fastpath's TestModelVectors holds the object to
# the model's recorded vectors, TestDenyTableFullMemory the deny table's
# memory as docs/configuration.md gives it.
DATA=(internal/model/admission/testdata/xdp-vectors.txt docs/configuration.md)
# Modules the tests need that Debian builds as modules, dependencies
# found through modules.dep: veth, and the clsact qdisc and bpf filter the
# egress program is attached with on a kernel without tcx (the VM has no
# modprobe to load them on demand).
MODULES=(veth sch_ingress cls_bpf)
# The test packages that need only the kernel, run whole: BPF_PROG_TEST_RUN
# on the object (tests/fastpath: classifier, admission, charges, agents,
# rejects, the L2TP answer, the verifier's headroom, the differential tests
# against the reference model) and the end-to-end tests on veth pairs in
# network namespaces with cacctl (tests/e2e). The tests of real peers, of
# the daemon and the benchmarks are in packages of their own, run on the
# host only (their timing, or tools the VM lacks). A skipped test fails the
# run: the VM is there to show that every one of them runs on this kernel.
# Of tests/daemon the VM runs only TestClockJumps, which sets the wall
# clock, never on the host; it goes first, as it takes a minute, not half
# an hour. Of tests/fastpath the VM leaves out TestDenyTableFull: its
# 3,000,000 runs of the object, half a minute on the host, would be tens
# of minutes under TCG, and what it shows is the LRU's, not the
# verifier's (TestDenyTableFullMemory, and the access tests, run here).
PACKAGES_UNDER_TEST=(${XDPCAC_KERNELS_PACKAGES:-daemon fastpath e2e libxdp})
declare -A PACKAGE_RUN=([daemon]='^TestClockJumps$')
declare -A PACKAGE_SKIP=([fastpath]='^TestDenyTableFull$')

die() {
	echo "kernels: $*" >&2
	exit 1
}

case $ACCEL in
auto | kvm | tcg) ;;
*) die "XDPCAC_KERNELS_ACCEL=$ACCEL: expected kvm, tcg or nothing (auto)" ;;
esac
[[ $BOOT_SECONDS =~ ^[1-9][0-9]*$ ]] ||
	die "XDPCAC_KERNELS_BOOT_SECONDS=$BOOT_SECONDS: expected a number of seconds"

apt_install() {
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# apt_retry runs an apt command, and again after apt-get update if it fails:
# the package lists of a fresh machine may be missing or stale.
apt_retry() {
	"$@" || { apt-get update -qq && "$@"; }
}

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "installing: ${missing[*]}"
	apt_retry apt_install "${missing[@]}"
fi

tmp=$(mktemp -d)
# stop_qemu ends the VM of the pid file, if still there: the probe's or the
# tests'. Each qemu writes the same pid file, removed when it has ended, and
# the pid is signalled only while it is still a qemu's. It never fails, as
# the cleanup (under set -e) calls it.
stop_qemu() {
	local pid i
	# qemu removes the file when it exits, so it may go at any moment.
	pid=$(cat "$tmp/qemu.pid" 2>/dev/null) && [[ -n $pid ]] || return 0
	rm -f "$tmp/qemu.pid"
	# Gone (or a zombie, or another program's pid now): done. Else
	# SIGTERM, and SIGKILL if it is still there 5 s later.
	for ((i = 0; i < 50; i++)); do
		[[ $(cat "/proc/$pid/comm" 2>/dev/null) == qemu* ]] || return 0
		[[ $(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null) != Z ]] || return 0
		((i > 0)) || kill "$pid" 2>/dev/null || true
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
}
# On every way out: the VM goes (if still there), then the temporary files,
# once the jobs that write there (the VM's, which end with it) have ended.
cleanup() {
	local i
	stop_qemu || true
	for ((i = 0; i < 50; i++)); do
		[[ -n $(jobs -pr) ]] || break
		sleep 0.1
	done
	rm -rf "$tmp" || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The kernel package: linux-image-amd64 is a metapackage whose dependency
# names the current ABI (linux-image-6.1.0-N-amd64), which changes with
# Debian's updates.
kernel_package() {
	if [[ $KERNEL =~ ^linux-image-[0-9] ]]; then
		echo "$KERNEL"
	else
		apt-cache depends "$KERNEL" 2>/dev/null |
			awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }' | grep .
	fi
}
pkg=$(apt_retry kernel_package) || die "no kernel package found for $KERNEL"

# The cache keeps the kernel under test: its .deb, and the package unpacked
# with a modules.dep (Debian's postinst makes it, dpkg-deb -x does not).
mkdir -p "$CACHE"
debs=("$CACHE/${pkg}_"*.deb)
if ((${#debs[@]} == 0)); then
	for old in "$CACHE"/linux-image-*; do
		rm -rf "$old"
	done
	echo "downloading $pkg"
	(cd "$CACHE" && apt_retry apt-get download -qq -o APT::Sandbox::User=root "$pkg")
	debs=("$CACHE/${pkg}_"*.deb)
	((${#debs[@]})) || die "apt-get download $pkg left no .deb in $CACHE"
fi
kroot=$CACHE/$pkg
if [[ ! -e $kroot/.unpacked ]]; then
	rm -rf "$kroot"
	dpkg-deb -x "${debs[0]}" "$kroot"
	for d in "$kroot"/lib/modules/*/; do
		busybox depmod -b "$kroot" "$(basename "$d")"
	done
	touch "$kroot/.unpacked"
fi
vmlinuz=("$kroot"/boot/vmlinuz-*)
((${#vmlinuz[@]} == 1)) || die "$pkg: expected one vmlinuz, found ${#vmlinuz[@]}"
kver=${vmlinuz[0]##*/vmlinuz-}
moddir=$kroot/lib/modules/$kver

# The VM's root filesystem.
root=$tmp/root
mkdir -p "$root"/{bin,dev,proc,sys,tmp,run,root,var,etc/xdpcac,usr/local/bin}
ln -s ../run "$root/var/run"
cp "$(command -v busybox)" "$root/bin/busybox"
ln -s busybox "$root/bin/sh" # init's interpreter; init makes the other links
install -m 755 tests/kernels/init "$root/init"

echo "building the test binaries (${PACKAGES_UNDER_TEST[*]}) and cacctl"
: >"$root/etc/xdpcac/packages"
for p in "${PACKAGES_UNDER_TEST[@]}"; do
	[[ $p =~ ^[a-z0-9]+$ && -d tests/$p ]] || die "XDPCAC_KERNELS_PACKAGES: no package tests/$p"
	CGO_ENABLED=0 "$GO" test -c -o "$root/usr/local/bin/$p.test" "./tests/$p"
	echo "$p ${XDPCAC_KERNELS_RUN:-${PACKAGE_RUN[$p]:-.}} ${PACKAGE_SKIP[$p]:-}" >>"$root/etc/xdpcac/packages"
done
CGO_ENABLED=0 "$GO" build -o "$root/usr/local/bin/cacctl" ./cmd/cacctl
for f in "${DATA[@]}"; do
	[[ -f $f ]] || die "$f, which the tests read, is not there"
	mkdir -p "$root/src/$(dirname "$f")"
	cp "$f" "$root/src/$f"
done

# Host tools, with the shared libraries they load (the VM runs the same
# x86-64 code, only its kernel differs).
for tool in "${HOST_TOOLS[@]}"; do
	path=$(command -v "$tool") || die "$tool not found"
	cp "$path" "$root/usr/local/bin/"
	ldd "$path" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' |
		while read -r lib; do
			cp -L --parents "$lib" "$root"
		done
done

# libxdp's programs (its dispatcher, xdp-filter's filters), where the
# tools look for them.
for obj in $(dpkg -L libxdp1 xdp-tools | grep '/bpf/.*\.o$'); do
	cp --parents "$obj" "$root"
done

# Modules, each after the ones it depends on.
declare -A added=()
add_module() { # $1: path in modules.dep, relative to the module directory
	local dep
	[[ -z ${added[$1]:-} ]] || return 0
	added[$1]=1
	for dep in $(awk -v m="$1:" '$1 == m { $1 = ""; print }' "$moddir/modules.dep"); do
		add_module "$dep"
	done
	mkdir -p "$root/lib/modules/$kver/$(dirname "$1")"
	cp "$moddir/$1" "$root/lib/modules/$kver/$1"
	echo "/lib/modules/$kver/$1" >>"$root/etc/xdpcac/modules"
}
: >"$root/etc/xdpcac/modules"
for m in "${MODULES[@]}"; do
	path=$(awk -F: -v m="$m.ko" '$1 == m || $1 ~ "/" m "$" { print $1; exit }' "$moddir/modules.dep")
	[[ -n $path ]] || die "$pkg has no module $m (built in?)"
	add_module "$path"
done

echo "${MINUTES}m" >"$root/etc/xdpcac/timeout"
(cd "$root" && find . | busybox cpio -o -H newc -R 0:0 2>/dev/null) | gzip -1 >"$tmp/initrd.gz"

seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", b - a }'; }
# console_filter drops the carriage returns and the terminal escapes of
# the firmware and the kernel.
console_filter() { sed -u 's/\r$//; s/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1b.//g'; }

# qemu_vm runs the VM under accelerator $1, bounded by timeout's duration
# $2, with $3 added to the kernel's command line; the console on stdout.
# KVM passes the host's CPU through; TCG emulates the most it can.
qemu_vm() {
	local cpu=max
	[[ $1 == kvm ]] && cpu=host
	timeout --foreground -k 10 "$2" \
		qemu-system-x86_64 -machine q35 -accel "$1" -cpu "$cpu" -m 2048 -smp 2 \
		-nographic -no-reboot -nic none -pidfile "$tmp/qemu.pid" \
		-kernel "${vmlinuz[0]}" -initrd "$tmp/initrd.gz" \
		-append "console=ttyS0 panic=-1 quiet${3:+ $3}" </dev/null 2>&1
}

# probe_kvm boots the VM under KVM with xdpcac.probe=1, for which init
# powers off right after its boot marker, and succeeds if the marker came
# within BOOT_SECONDS. If not, it says why in $probe_failure; $probe_note
# is for the summary. qemu runs in the background and the script waits for
# it, so that a signal's trap (and the cleanup, which ends qemu) runs at
# once rather than after qemu.
probe_kvm() {
	local status=0 t0=$EPOCHREALTIME
	probe_log=$CACHE/probe.log
	echo "kernels: probing KVM: booting with -accel kvm -cpu host, marker within ${BOOT_SECONDS}s"
	# qemu's output to the log, its exit status the job's; the shell's own
	# notice of a qemu that aborted ("Aborted ...") nowhere: the reason
	# follows.
	{ qemu_vm kvm "${BOOT_SECONDS}s" xdpcac.probe=1 | console_filter >"$probe_log"; } 2>/dev/null &
	wait $! || status=$?
	stop_qemu
	probe_seconds=$(seconds "$t0" "$EPOCHREALTIME")
	if grep -aq "xdpcac-kernels: booted" "$probe_log"; then
		echo "kernels: KVM booted the VM in ${probe_seconds}s"
		probe_note=" KVM probe ${probe_seconds}s,"
		return 0
	fi
	if ((status == 124 || status == 137)) && ((probe_seconds >= BOOT_SECONDS)); then
		probe_failure="no boot within ${BOOT_SECONDS}s"
	else
		probe_failure="qemu exit $status"
	fi
	probe_note=" KVM probe failed in ${probe_seconds}s,"
	return 1
}

prepared=$SECONDS # the packages, the kernel, the binaries, the initramfs

# The accelerator: KVM if asked for or if auto and KVM boots the VM, else
# TCG.
probe_note=
case $ACCEL in
tcg) accel=tcg ;;
kvm)
	[[ -w /dev/kvm ]] || die "XDPCAC_KERNELS_ACCEL=kvm, but /dev/kvm is not there or not writable"
	if ! probe_kvm; then
		tail -n 5 "$probe_log" | sed 's/^/kernels:   /' >&2
		die "KVM could not boot the VM ($probe_failure), and XDPCAC_KERNELS_ACCEL=kvm allows no fallback; console in .cache/kernels/probe.log"
	fi
	accel=kvm
	;;
auto)
	accel=tcg
	if [[ ! -w /dev/kvm ]]; then
		echo "kernels: no KVM (/dev/kvm is not there or not writable); qemu emulates the CPU (TCG)"
	elif probe_kvm; then
		accel=kvm
	else
		tail -n 5 "$probe_log" | sed 's/^/kernels:   /' >&2
		echo "kernels: KVM could not boot the VM ($probe_failure); falling back to TCG" >&2
	fi
	;;
esac

log=$CACHE/console.log
echo "booting $pkg ($kver) under qemu ($accel); console in .cache/kernels/console.log"
start=$EPOCHREALTIME
# In the background and waited for, as the probe; the console filtered to
# the terminal and the log, and the time the boot marker came in a file.
{
	qemu_vm "$accel" "$((MINUTES + 10))m" || echo $? >"$tmp/qemu-status"
} 2>&1 | console_filter | tee "$log" |
	while IFS= read -r line; do
		echo "$line"
		[[ -s $tmp/booted || $line != *"xdpcac-kernels: booted"* ]] || echo "$EPOCHREALTIME" >"$tmp/booted"
	done &
wait $! || true
stop_qemu
booted=$(cat "$tmp/booted" 2>/dev/null || true)
qemu_status=$(cat "$tmp/qemu-status" 2>/dev/null || echo 0)
end=$EPOCHREALTIME

# count counts the tests of result $1, subtests included with a second
# argument: a skipped subtest fails the run as a skipped test does.
count() { grep -ac "^${2:+ *}--- $1: " "$log" || true; }
echo
echo "kernels: $pkg, uname -r $(sed -n 's/.*xdpcac-kernels: booted: uname -r \([^,]*\),.*/\1/p' "$log")"
if [[ -n $booted ]]; then
	echo "kernels: prepared in ${prepared}s,$probe_note boot $(seconds "$start" "$booted")s, tests $(seconds "$booted" "$end")s (qemu $accel)"
fi
# Each package's result and time, as init measured them in the VM.
sed -n 's/.*xdpcac-kernels: package \([a-z0-9]*\) done: result \([^ ]*\) in \([0-9]*s\)$/kernels: package \1: result \2 in \3/p' "$log"
echo "kernels: $(count PASS) tests passed, $(count FAIL) failed, $(count SKIP all) skipped (subtests included)"
result=$(sed -n 's/.*xdpcac-kernels: result //p' "$log" | head -n 1)
# A skip is a failure (init says so too; this holds should it not).
if [[ $result == 0 && $(count SKIP all) != 0 ]]; then
	result=skipped
fi
if [[ $result == 0 ]]; then
	echo "kernels: PASS on $kver"
	exit 0
fi
# Why: a kernel that refuses the object fails the first test that loads it,
# with the feature it lacks or the verifier's log, whose last lines before
# "processed N insns" name the instruction refused and the reason.
awk '/load program|lacks .*Linux/ && !seen++ { print "kernels: the kernel refused the object:"; print }
	/processed [0-9]+ insns/ && !refused++ { print "kernels: the verifier'"'"'s last lines:"; for (i = 4; i > 0; i--) print last[i]; print }
	{ for (i = 4; i > 1; i--) last[i] = last[i - 1]; last[1] = $0 }' "$log" >&2
if [[ $qemu_status == 124 ]]; then
	die "FAIL on $kver: timed out after $(seconds "$start" "$end")s"
elif [[ -z $booted ]]; then
	die "FAIL on $kver: the VM did not boot to the tests (qemu exit $qemu_status)"
elif [[ -z $result ]]; then
	die "FAIL on $kver: the VM ended before the tests did (qemu exit $qemu_status)"
fi
if [[ $result == skipped ]]; then
	grep -a -B 1 "^ *--- SKIP: " "$log" | sed 's/^/kernels:   /' >&2
	die "FAIL on $kver: $(count SKIP all) tests skipped, and every test here must run"
fi
die "FAIL on $kver: the tests exited $result"
