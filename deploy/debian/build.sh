#!/bin/sh
# build.sh OUTDIR: builds OUTDIR/xdpcac_VERSION_ARCH.deb with dpkg-deb and
# prints its path. make deb runs it from the top of the checkout.
#
# Environment: GO (default go); CGO_ENABLED (default 0: a static binary,
# which needs no libc); DEB_GOFLAGS (default -trimpath, so that the
# binary holds no path of the machine that built it); DEB_LDFLAGS
# (default -s -w: stripped, as Debian ships binaries; a panic's stack
# trace keeps its function names and lines); DEB_COMPRESS (dpkg-deb's
# -Z, default gzip: every dpkg reads it, and it takes seconds where xz,
# a quarter smaller, takes several times as long; zstd needs dpkg 1.21.18
# or later to install); DEB_VERSION (default from git, below);
# DEB_MAINTAINER; SOURCE_DATE_EPOCH (default the commit's time), the
# date in the man pages. The package has no maintainer scripts: nothing
# runs at install, the unit is not enabled, and an install into another
# root (dpkg --root) needs no shell there.
set -eu

out=${1:?usage: build.sh OUTDIR}
GO=${GO:-go}
export CGO_ENABLED=${CGO_ENABLED:-0}
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"

# version is a Debian version from git: v1.2.3 → 1.2.3, 4 commits past it
# → 1.2.3+git4.g1a2b3c4d5e6f, without a tag 0.0~gitDATE.COMMIT (the tilde
# sorts before any release), a checkout with changes .dirty at the end.
# Only digits, letters, . + ~ are kept: no hyphen, which would start a
# Debian revision.
version() {
	if ! git rev-parse --git-dir >/dev/null 2>&1; then
		echo 0.0~unknown
		return
	fi
	dirty=
	if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
		dirty=.dirty
	fi
	if d=$(git describe --tags --match 'v[0-9]*' --abbrev=12 2>/dev/null); then
		d=${d#v}
		case $d in
		*-*-g*) n=${d%-g*}; v="${n%-*}+git${n##*-}.g${d##*-g}" ;;
		*) v=$d ;;
		esac
	else
		at=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S)
		v="0.0~git$at.$(git rev-parse --short=12 HEAD)"
	fi
	printf '%s%s\n' "$v" "$dirty"
}

ver=$(printf '%s\n' "${DEB_VERSION:-$(version)}" | tr -c 'A-Za-z0-9.+~\n' '.')
case $ver in
v[0-9]*) ver=${ver#v} ;;
[0-9]*) ;;
*) ver="0~$ver" ;; # a Debian version starts with a digit
esac
goarch=$($GO env GOARCH)
case $goarch in
amd64 | arm64 | riscv64 | s390x) arch=$goarch ;;
386) arch=i386 ;;
arm) arch=armhf ;;
ppc64le) arch=ppc64el ;;
*) echo "build.sh: no Debian architecture for GOARCH $goarch" >&2; exit 1 ;;
esac

stage=$(mktemp -d)
gen=$(mktemp -d)
trap 'rm -rf "$stage" "$gen"' EXIT
chmod 0755 "$stage"
man1=usr/share/man/man1
completions=usr/share/bash-completion/completions
install -d -m 0755 "$stage/DEBIAN" "$stage/usr/sbin" "$stage/lib/systemd/system" \
	"$stage/etc/xdpcac" "$stage/usr/share/xdpcac" "$stage/usr/share/doc/xdpcac" \
	"$stage/$man1" "$stage/$completions"

# shellcheck disable=SC2086 # DEB_GOFLAGS is a list of flags
"$GO" build -buildvcs=auto ${DEB_GOFLAGS--trimpath} -ldflags="${DEB_LDFLAGS--s -w}" -o "$stage/usr/sbin/cacctl" ./cmd/cacctl
chmod 0755 "$stage/usr/sbin/cacctl"

# The man pages and the bash completion are written by the binary just
# built (cacctl gen-docs), from its own command tree; a cross build makes
# one for this machine to run. Pages are gzipped without a name or time
# (gzip -n), as Debian policy asks, so that two builds of a commit match.
docs=$stage/usr/sbin/cacctl
hostarch=$($GO env GOHOSTARCH)
if [ "$goarch" != "$hostarch" ]; then
	docs=$gen/cacctl
	GOARCH=$hostarch "$GO" build -buildvcs=auto -o "$docs" ./cmd/cacctl
fi
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
SOURCE_DATE_EPOCH=$epoch TZ=UTC "$docs" gen-docs "$gen/docs"
for page in "$gen/docs/man1"/*.1; do
	gzip -9n <"$page" >"$stage/$man1/${page##*/}.gz"
done
if [ ! -s "$stage/$man1/cacctl.1.gz" ]; then
	echo "build.sh: cacctl gen-docs wrote no cacctl.1" >&2
	exit 1
fi
install -m 0644 "$gen/docs/bash-completion/cacctl" "$stage/$completions/cacctl"
chmod 0644 "$stage/$man1"/*.gz
# The unit in deploy/ runs the binary of a hand install; the package's is
# in /usr/sbin.
sed 's|/usr/local/sbin/cacctl|/usr/sbin/cacctl|g' deploy/xdpcac.service >"$stage/lib/systemd/system/xdpcac.service"
if grep -q /usr/local/sbin "$stage/lib/systemd/system/xdpcac.service"; then
	echo "build.sh: the unit still names /usr/local/sbin" >&2
	exit 1
fi
install -m 0644 deploy/cac.yaml "$stage/etc/xdpcac/cac.yaml"
install -m 0644 deploy/xdpcac-alerts.yml deploy/grafana-dashboard.json "$stage/usr/share/xdpcac/"
install -m 0644 deploy/debian/copyright "$stage/usr/share/doc/xdpcac/copyright"
install -m 0644 deploy/README.md "$stage/usr/share/doc/xdpcac/README.md"

# A native package's changelog: one entry, this build's.
at=$(git log -1 --format=%cD 2>/dev/null || date -R)
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
maintainer=${DEB_MAINTAINER:-xdpcac developers <xdpcac@packages.invalid>}
printf 'xdpcac (%s) unstable; urgency=medium\n\n  * Built from commit %s.\n\n -- %s  %s\n' \
	"$ver" "$commit" "$maintainer" "$at" | gzip -9n >"$stage/usr/share/doc/xdpcac/changelog.gz"
chmod 0644 "$stage/usr/share/doc/xdpcac/changelog.gz"
# Go links statically by design: say so to lintian.
install -d -m 0755 "$stage/usr/share/lintian/overrides"
printf 'xdpcac: statically-linked-binary [usr/sbin/cacctl]\n' >"$stage/usr/share/lintian/overrides/xdpcac"
chmod 0644 "$stage/usr/share/lintian/overrides/xdpcac"

# Depends: nothing for a static binary; libc6 for one linked against it
# (CGO_ENABLED=1), the only library a Go binary links.
depends=
if ! file -b "$stage/usr/sbin/cacctl" | grep -q 'statically linked'; then
	libs=$(ldd "$stage/usr/sbin/cacctl" | awk '$1 ~ /^lib/ {print $1}' | grep -v '^libc\.so\.' || true)
	if [ -n "$libs" ]; then
		echo "build.sh: cacctl links more than libc ($libs): add their packages to Depends" >&2
		exit 1
	fi
	depends="Depends: libc6
"
fi

size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
awk -v ver="$ver" -v arch="$arch" -v size="$size" -v dep="$depends" -v m="$maintainer" '
	{ gsub(/@VERSION@/, ver); gsub(/@ARCH@/, arch); gsub(/@SIZE@/, size); gsub(/@MAINTAINER@/, m) }
	/@DEPENDS@/ { sub(/@DEPENDS@/, dep) }
	{ printf "%s\n", $0 }' deploy/debian/control.in | sed '/^$/d' >"$stage/DEBIAN/control"
install -m 0644 deploy/debian/conffiles "$stage/DEBIAN/conffiles"
(cd "$stage" && find etc lib usr -type f -exec md5sum {} + | sort -k2) >"$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/control" "$stage/DEBIAN/md5sums"

mkdir -p "$out"
deb="$out/xdpcac_${ver}_${arch}.deb"
dpkg-deb --root-owner-group -Z"${DEB_COMPRESS:-gzip}" --build "$stage" "$deb" >/dev/null
echo "$deb"
