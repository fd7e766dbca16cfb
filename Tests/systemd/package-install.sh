#!/usr/bin/env bash
# The proof that the Debian package (scripts/package) works on a Debian 12 system with no Swift
# toolchain: boots a guest systemd with boot-guest.sh (over a tmpfs overlay of /, so neither the
# install nor the removal of /opt/swift reaches the host), installs the .deb with apt, and checks
# the binary, the user, the socket unit, a thumbnail served through socket activation, its render's
# journal entry (THUMBD_ASSET=) and the man pages; then the upgrade path (a reinstall restarts the
# daemon), remove and reinstall (the units' mask comes and goes), and purge, which must leave
# nothing of the package behind. Prints
# PASS/FAIL per check and exits 0 only when all pass. Root only; takes about a minute.
#
# Usage: Tests/systemd/package-install.sh DEB
#   THUMBD_PACKAGE_KEEP_TOOLCHAIN=1  keep /opt/swift in the guest and only warn when the binary
#                                    links it: for testing this script with a dynamically linked
#                                    (non --static-swift-stdlib) build.
#   THUMBD_CORPUS=DIR                the test corpus (default: ../shared/corpus of the checkout)
set -euo pipefail

die() { echo "package-install: $*" >&2; exit 2; }
(($# == 1)) || die "usage: Tests/systemd/package-install.sh DEB"
[[ $(id -u) == 0 ]] || die "needs root (it boots systemd in new namespaces)"
deb="$(realpath "$1")"
[[ -f $deb && $deb == *.deb ]] || die "$1 is not a .deb"
here="$(cd "$(dirname "$0")" && pwd)"
boot="$here/boot-guest.sh"
corpus="$(realpath "${THUMBD_CORPUS:-$here/../../../shared/corpus}")"
[[ -f $corpus/manifest.tsv ]] || die "no corpus at $corpus (set THUMBD_CORPUS)"
keep_toolchain="${THUMBD_PACKAGE_KEEP_TOOLCHAIN:-0}"
version="$(dpkg-deb -f "$deb" Version)"

# A small JPEG the corpus says must decode, at least 96 px each way (contact-avatar@2x fills 96x96).
photo="$(awk -F'\t' -v root="$corpus" '$5 == "JPEG" && $7 == "OK" && $8 == "valid" {
    split($6, size, "x"); if (size[1] >= 96 && size[2] >= 96 && $3 < 500000) { print root "/" $1 "/" $2; exit } }' \
  "$corpus/manifest.tsv")"
[[ -f $photo ]] || die "no valid JPEG of 96x96 px or more in $corpus/manifest.tsv"

scratch="$(mktemp -d /tmp/thumbd-package-install.XXXXXX)"
boot_pid=""
cleanup() {
  "$boot" teardown "$scratch" >/dev/null 2>&1 || echo "package-install: teardown of the guest failed" >&2
  [[ -z $boot_pid ]] || wait "$boot_pid" 2>/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# The guest sees the package through a read-only bind of its folder: a copy in a folder of its
# own, so that a .deb kept in /tmp does not make the guest's whole /tmp read-only.
mkdir "$scratch/deb"
cp "$deb" "$scratch/deb/"

# guest SECONDS CMD...: CMD in the guest, killed there after SECONDS and, should nsenter hang,
# here a little later.
guest() { local seconds=$1; shift; timeout --kill-after=5 $((seconds + 10)) "$boot" run "$scratch" "$seconds" "$@"; }

failures=0
# check [--warn] NAME SECONDS SCRIPT: SCRIPT (bash, -euo pipefail) in the guest; PASS, or FAIL
# (WARN with --warn, which does not fail the run) followed by its output.
check() {
  local verdict=FAIL
  [[ $1 == --warn ]] && { verdict=WARN; shift; }
  local name=$1 seconds=$2 script=$3 output
  if output="$(guest "$seconds" bash -euo pipefail -c "$script" 2>&1)"; then
    echo "PASS  $name"
  else
    echo "$verdict  $name"
    sed 's/^/      /' <<< "$output"
    [[ $verdict == WARN ]] || failures=$((failures + 1))
  fi
}

# --- Boot ---------------------------------------------------------------------------------------
# --pdeathsig: should this script die, the boot process goes, and the guest's PID 1 with it.
setpriv --pdeathsig KILL -- bash "$boot" boot "$scratch" "$scratch/deb" "$corpus" \
  > "$scratch/console.log" 2>&1 &
boot_pid=$!
for _ in $(seq 200); do
  [[ -f $scratch/pid ]] && break
  kill -0 "$boot_pid" 2>/dev/null || { cat "$scratch/console.log" >&2; die "the guest did not boot"; }
  sleep 0.1
done
[[ -f $scratch/pid ]] || die "the guest wrote no PID file in 20 s"
# Until PID 1 is systemd, `run` refuses, and until its manager is up systemctl answers "offline".
state=""
for _ in $(seq 120); do
  state="$(guest 60 systemctl is-system-running --wait 2>/dev/null || true)"
  [[ -n $state && $state != offline ]] && break
  sleep 0.5
done
[[ $state == running || $state == degraded ]] || { cat "$scratch/console.log" >&2; die "the guest's systemd did not finish booting ($state)"; }
echo "guest booted ($state); package $(basename "$deb")"

# --- Install ------------------------------------------------------------------------------------
q() { printf '%q' "$1"; }
install_deb="cd $(q "$scratch/deb") && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ./$(q "$(basename "$deb")")"

# The guest starts as a copy of this machine: a container image's policy-rc.d (exit 101: no
# service starts during apt) would keep postinst from starting the socket, as it should there.
# The hostname and the overlay root make sure this is the guest's /, whatever happened above.
in_guest='[[ $(hostname) == thumbd-guest && $(findmnt -n -o FSTYPE /) == overlay ]] || { echo "not in the guest"; exit 1; }'
check "no policy-rc.d in the guest (services may start)" 30 "$in_guest
  rm -f /usr/sbin/policy-rc.d"
if [[ $keep_toolchain == 1 ]]; then
  echo "SKIP  hiding /opt/swift (THUMBD_PACKAGE_KEEP_TOOLCHAIN=1)"
else
  check "the Swift toolchain is gone from the guest" 30 "$in_guest
    rm -rf /opt/swift; [[ ! -e /opt/swift ]]"
fi
# apt resolves the dependencies from what is installed: the guest has no network.
check "apt-get install ./$(basename "$deb")" 180 "$install_deb"

ldd_check=()
[[ $keep_toolchain == 1 ]] && ldd_check=(--warn)
check "${ldd_check[@]}" "ldd: no /opt/swift, nothing missing (thumbd, backtracer)" 30 '
  for binary in /usr/bin/thumbd /usr/libexec/thumbd/swift-backtrace-static; do
    ldd "$binary" > /tmp/ldd; if grep -e /opt/swift -e "not found" /tmp/ldd; then echo "in $binary"; exit 1; fi
  done'
check "thumbd --version names the package's version" 30 "
  printed=\$(thumbd --version); echo \"\$printed\"
  [[ $(q "$version") == \"\${printed#thumbd }\"* ]]"
check "user and group thumbd exist" 30 'getent passwd thumbd && getent group thumbd'
check "thumbd.socket is enabled and active" 30 '
  systemctl is-enabled thumbd.socket; systemctl is-active thumbd.socket
  [[ $(systemctl is-enabled thumbd.socket) == enabled && $(systemctl is-active thumbd.socket) == active ]]'
check "the unit runs /usr/bin/thumbd with the packaged backtracer" 30 '
  systemctl show -p ExecStart --value thumbd.service | grep -q "path=/usr/bin/thumbd "
  backtracer=$(systemctl show -p Environment --value thumbd.service | grep -o "swift-backtrace=[^ ]*")
  echo "$backtracer"; [[ -x ${backtracer#swift-backtrace=} && $backtracer == */usr/libexec/thumbd/* ]]'

# A thumbnail through the socket (root may connect; clients are group thumbd). The first request
# starts the service; contact-avatar@2x is a 96x96 circle, so a PNG.
thumbnail='curl --silent --show-error --max-time 60 --unix-socket /run/thumbd/thumbd.sock \
    -o /tmp/thumbnail -w "%{http_code}\n" http://localhost/v1/thumbnails/contact-avatar@2x/photo.jpg > /tmp/status \
    || true
  status=$(cat /tmp/status); echo "HTTP $status: $(file -b /tmp/thumbnail 2>&1)"
  if [[ $status != 200 ]] || ! file -b /tmp/thumbnail | grep -q "^PNG image data, 96 x 96"; then
    head -c 300 /tmp/thumbnail 2>/dev/null || true; echo
    journalctl --no-pager -q -n 15 -u thumbd.service -u thumbd.socket; exit 1
  fi
  [[ $(systemctl is-active thumbd.service) == active ]] || { echo "thumbd.service is not active"; exit 1; }'
check "a thumbnail over /run/thumbd/thumbd.sock (socket activation): 200, 96x96 PNG" 90 "
  install -m 0644 $(q "$photo") /srv/thumbd/assets/photo.jpg
  $thumbnail"
check "journalctl -u thumbd THUMBD_ASSET=photo.jpg finds the render (native journal fields)" 30 '
  journalctl --sync
  journalctl --no-pager -o cat -u thumbd THUMBD_ASSET=photo.jpg THUMBD_KIND=contact-avatar@2x THUMBD_EVENT=rendered | tee /tmp/entries
  grep -q "^rendered photo.jpg as contact-avatar@2x: 96x96 png" /tmp/entries'
check "man thumbd and man thumbd.json render" 30 '
  MANPAGER=cat man -P cat thumbd > /tmp/man1 2>&1; MANPAGER=cat man -P cat 5 thumbd.json > /tmp/man5 2>&1
  head -3 /tmp/man1; head -3 /tmp/man5
  grep -q "^NAME" /tmp/man1 && grep -q "thumbd - " /tmp/man1 && grep -q "thumbd.json - " /tmp/man5'

# --- Upgrade, remove, reinstall -----------------------------------------------------------------
# Reinstalling runs postinst configure with the old version, as an upgrade does: the running
# daemon must be replaced (a new main PID) and the socket must go on serving.
check "upgrade path (reinstall): the daemon is restarted and serves" 150 "
  before=\$(systemctl show -p MainPID --value thumbd.service)
  ${install_deb/apt-get install/apt-get install --reinstall} > /tmp/apt.log 2>&1 || { cat /tmp/apt.log; exit 1; }
  after=\$(systemctl show -p MainPID --value thumbd.service); echo \"main PID \$before -> \$after\"
  [[ \$after != 0 && \$after != \$before ]]
  $thumbnail"
check "apt-get remove: units stopped and masked, the conffile kept" 120 '
  DEBIAN_FRONTEND=noninteractive apt-get remove -y thumbd > /tmp/apt.log 2>&1 || { cat /tmp/apt.log; exit 1; }
  for unit in thumbd.socket thumbd.service; do
    echo "$unit: $(systemctl is-active $unit), $(systemctl is-enabled $unit)"
    [[ $(systemctl is-active $unit) != active && $(systemctl is-enabled $unit) == masked ]]
  done
  [[ ! -e /usr/bin/thumbd && -f /etc/thumbd/thumbd.json ]]'
check "reinstall after remove: socket unmasked, enabled, serving" 150 "
  $install_deb > /tmp/apt.log 2>&1 || { cat /tmp/apt.log; exit 1; }
  [[ \$(systemctl is-enabled thumbd.socket) == enabled && \$(systemctl is-active thumbd.socket) == active ]]
  $thumbnail"

# Through all of the above (starts, the upgrade's restart, the removal's stop).
check "the units' journal holds no warning" 30 '
  journalctl --sync
  journalctl --no-pager -q -o short-monotonic -p warning -u thumbd.service -u thumbd.socket > /tmp/warnings
  [[ ! -s /tmp/warnings ]] || { echo "$(wc -l < /tmp/warnings) lines; the last ones:"; tail -n 12 /tmp/warnings; exit 1; }'

# --- Purge --------------------------------------------------------------------------------------
check "apt-get purge -y thumbd" 120 'DEBIAN_FRONTEND=noninteractive apt-get purge -y thumbd'
check "nothing of thumbd is left (files, units, dpkg, processes)" 30 '
  left=0
  for path in /usr/bin/thumbd /usr/libexec/thumbd /etc/thumbd /var/lib/thumbd /var/cache/thumbd /run/thumbd \
      /usr/lib/systemd/system/thumbd.service /usr/lib/systemd/system/thumbd.socket /usr/lib/sysusers.d/thumbd.conf \
      /etc/systemd/system/thumbd.service /etc/systemd/system/thumbd.socket \
      /etc/systemd/system/sockets.target.wants/thumbd.socket; do
    if [[ -e $path || -L $path ]]; then echo "left: $path"; left=1; fi
  done
  if dpkg-query -W -f="\${db:Status-Abbrev}\n" thumbd 2>/dev/null | grep -v -e "^un" -e "^pn"; then echo "dpkg still knows thumbd"; left=1; fi
  if systemctl list-unit-files --no-legend | grep thumbd; then left=1; fi
  if pgrep -a -x thumbd; then left=1; fi
  ((left == 0))'
# Policy keeps a system user (files may still carry its IDs); not a failure either way.
echo "INFO  after purge: user thumbd $(guest 30 getent passwd thumbd > /dev/null && echo kept || echo gone)," \
  "/srv/thumbd/assets $(guest 30 test -d /srv/thumbd/assets && echo kept || echo gone)"

if ((failures)); then
  echo "package-install: $failures check(s) failed"
  exit 1
fi
echo "package-install: all checks passed"
