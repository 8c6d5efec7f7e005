#!/usr/bin/env bash
# make test's steps, one after another, each timed, with a summary of
# their wall times at the end: deps, the generate check, vet, promtool,
# the host packages (one line each, as go test times them), and the kernel
# VM (its boot, and each package it runs, TestClockJumps among them). The
# first step that fails ends the run; the summary still prints, and the
# exit status is 1. Times are read on /proc/uptime, which no jump of the
# wall clock moves. The logs are in .cache/test.
#
# The Makefile's test target runs it with GO, MAKE and PROMTOOL set.
set -uo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}
MAKE=${MAKE:-make}
PROMTOOL=${PROMTOOL:?"the path of promtool, the Makefile's target"}
LOGS=$PWD/.cache/test
mkdir -p "$LOGS"
rm -f "$LOGS"/*.log

uptime() { local up _; read -r up _ </proc/uptime; echo "$up"; }
seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", b - a }'; }

names=() results=() times=()
begin=$(uptime)
failed=

# step NAME COMMAND...: runs the command (unless a step before failed),
# its output to the terminal and to .cache/test/NAME.log.
step() {
	local name=$1 t0 rc
	shift
	if [[ -n $failed ]]; then
		names+=("$name") results+=("not run") times+=("")
		return
	fi
	echo "make test: $name"
	t0=$(uptime)
	"$@" 2>&1 | tee "$LOGS/${name// /-}.log"
	rc=${PIPESTATUS[0]}
	names+=("$name") times+=("$(seconds "$t0" "$(uptime)")s")
	if ((rc == 0)); then
		results+=(ok)
	else
		results+=("FAIL ($rc)")
		failed=$name
	fi
}

summary() {
	local i line
	echo
	echo "make test: wall time of each step"
	for i in "${!names[@]}"; do
		printf '  %-10s %-28s %8s\n' "${results[i]}" "${names[i]}" "${times[i]}"
		[[ ${results[i]} != "not run" ]] || continue
		case ${names[i]} in
		"host packages")
			# go test's line of each package: ok or FAIL, the package, its
			# test binary's time; those without tests left out.
			[[ -s $LOGS/host-packages.log ]] &&
				awk -F '\t' '($1 ~ /^ok/ || $1 ~ /^FAIL/) && NF >= 3 && $3 ~ /^[0-9.]+s/ {
					sub(/^github.com\/xdpcac\/xdpcac\/?/, "./", $2); sub(/ .*/, "", $3)
					printf "    %-8s %-42s %8s\n", ($1 ~ /^ok/ ? "ok" : "FAIL"), $2, $3 }' "$LOGS/host-packages.log"
			;;
		"kernel VM")
			[[ -s $LOGS/kernel-VM.log ]] &&
				sed -n 's/^kernels: \(prepared in .*\)/    \1/p; s/^kernels: package \(.*\)/    package \1/p' "$LOGS/kernel-VM.log"
			[[ -s .cache/kernels/console.log ]] &&
				grep -a -m 1 -- '^--- [A-Z]*: TestClockJumps ' .cache/kernels/console.log | sed 's/^/    in the VM: /'
			;;
		esac
	done
	if [[ -n $failed ]]; then
		echo "make test: FAIL at $failed, after $(seconds "$begin" "$(uptime)")s"
	else
		echo "make test: PASS in $(seconds "$begin" "$(uptime)")s"
	fi
}
trap 'failed=${failed:-interrupted}; summary; exit 130' INT TERM

step deps "$MAKE" --no-print-directory deps
step "generate check" "$MAKE" --no-print-directory -o deps check-generate
step vet "$MAKE" --no-print-directory vet
step promtool "$MAKE" --no-print-directory "$PROMTOOL"
# -p 1: one package at a time, as the packages under tests/ measure time
# and CPU, and side by side they would take each other's. TestClockJumps
# skips here: it runs in the kernel VM, whose clock is its own.
step "host packages" env XDPCAC_REQUIRE_BPF=1 XDPCAC_PROMTOOL="$PROMTOOL" \
	"$GO" test -count=1 -p 1 -timeout 30m ./...
step "kernel VM" env GO="$GO" tests/kernels/run.sh

summary
[[ -z $failed ]]
