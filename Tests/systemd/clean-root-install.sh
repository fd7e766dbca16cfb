#!/usr/bin/env bash
# The package's install test on a clean Debian 12 rather than on this machine's own root: a
# debootstrapped bookworm (minbase, plus systemd and the tools the test uses: curl, file, man-db),
# into which apt installs the .deb from Debian's mirror (so the package's Depends alone must pull
# every library it needs) and purges it again; then Tests/systemd/package-install.sh boots that
# root as its guest (THUMBD_GUEST_ROOT) and runs every check there. Root and network only; about
# 4 minutes the first time (debootstrap), 1 minute after (ROOT is kept). Not part of scripts/test,
# which runs package-install.sh over this machine's root, for CI's time.
#
# Usage: Tests/systemd/clean-root-install.sh ROOT DEB   (ROOT: a folder outside the checkout)
set -euo pipefail
die() { echo "clean-root-install: $*" >&2; exit 2; }
(($# == 2)) || die "usage: Tests/systemd/clean-root-install.sh ROOT DEB"
[[ $(id -u) == 0 ]] || die "needs root (debootstrap, chroot, and a guest systemd)"
root="$(realpath -m "$1")"
deb="$(realpath "$2")"
[[ -f $deb && $deb == *.deb ]] || die "$2 is not a .deb"
here="$(cd "$(dirname "$0")" && pwd)"

if [[ ! -x $root/lib/systemd/systemd ]]; then
  command -v debootstrap >/dev/null || {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
  }
  mkdir -p "$root"
  debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,curl,file,man-db,ca-certificates \
    bookworm "$root" http://deb.debian.org/debian
fi

# In the chroot (this machine's network): install from the mirror, then purge, keeping what the
# package pulled in; the guest has no network and needs those libraries present.
cp "$deb" "$root/tmp/thumbd.deb"
mount -t proc proc "$root/proc"
trap 'umount "$root/proc" 2>/dev/null || true; rm -f "$root/tmp/thumbd.deb"' EXIT
chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive bash -euo pipefail -c '
  apt-get update -qq
  apt-get install -y -qq /tmp/thumbd.deb >/dev/null
  ! ldd /usr/bin/thumbd | grep -e "not found" -e /opt/swift
  echo "clean root: $(thumbd --version) installed with its dependencies from the mirror"
  apt-get purge -y -qq thumbd >/dev/null'
umount "$root/proc"

THUMBD_GUEST_ROOT="$root" "$here/package-install.sh" "$deb"
