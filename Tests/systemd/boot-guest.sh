#!/usr/bin/env bash
# Boots systemd as PID 1 of fresh PID, mount, network, UTS, IPC and cgroup namespaces, over an
# overlay of / whose upper layer is a tmpfs: whatever the guest writes (units, users, /usr/local,
# journal) vanishes with it and the host's files are never changed. Used by RealSystemdTests.
#
#   boot-guest.sh boot SCRATCH [DIR...]     foreground; SCRATCH is an empty host directory; each DIR
#                                           (the package root, the corpus) is bound read-only at the
#                                           same path in the guest. Writes SCRATCH/pid (host PID of
#                                           the guest's PID 1) and SCRATCH/cgroup, then execs systemd.
#   boot-guest.sh run SCRATCH SECONDS CMD…  runs CMD in the guest (as root, cwd /, clean
#                                           environment), killed after SECONDS.
#   boot-guest.sh teardown SCRATCH          kills every guest process, removes its cgroup.
#   THUMBD_GUEST_ROOT=DIR                   boot DIR (a root file system) instead of the host's /.
#
# Why each step (learned on these machines):
#  - Never over the host's own root: systemd-tmpfiles' `D /tmp` would empty the host's /tmp. The
#    overlay overrides that rule as well, or a checkout under /tmp vanishes inside the guest.
#  - pivot_root, not chroot: a chrooted process may not create the user namespace that the
#    unit's PrivateUsers=yes needs (status 217/USER).
#  - / made rshared before systemd starts (it skips that in a container): LoadCredential= needs it.
#  - Units that would touch the shared kernel (sysctl, binfmt, modules, pstore, audit, TPM, the
#    clock, udev) or start the image's services are masked; the network namespace has only lo.
#  - The guest gets its own cgroup (its cgroup namespace root), so teardown can kill everything.
set -euo pipefail

die() { echo "boot-guest: $*" >&2; exit 1; }

guest_pid() { cat "$1/pid" 2>/dev/null || die "no guest in $1 (no pid file)"; }

case "${1:-}" in
boot)
    scratch=${2:?scratch directory}; shift 2
    [[ $(id -u) == 0 ]] || die "needs root"
    [[ -x /lib/systemd/systemd ]] || die "/lib/systemd/systemd is missing"
    hierarchy=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
    [[ -n $hierarchy ]] || die "no cgroup2 hierarchy mounted (systemd in the guest needs one)"
    own=$(sed -n 's/^0:://p' /proc/self/cgroup)
    cgroup="$hierarchy${own%/}/thumbd-guest-$$"
    mkdir "$cgroup"
    echo "$cgroup" > "$scratch/cgroup"
    # --kill-child: should this process die, the guest's PID 1 (and so the whole guest) dies too.
    exec unshare --pid --mount --net --uts --ipc --fork --kill-child=SIGKILL -- \
        /bin/bash "$0" enter-cgroup "$scratch" "$@"
    ;;
enter-cgroup)
    # PID 1 of the new namespaces moves into the guest's cgroup (unshare stays outside it), then
    # makes that cgroup the root of its own cgroup namespace.
    echo 0 > "$(cat "$2/cgroup")/cgroup.procs"
    exec unshare --cgroup -- /bin/bash "$0" inside "${@:2}"
    ;;
inside)
    scratch=$2; shift 2
    # /proc is still the host's here: /proc/self names this shell by its host PID.
    read -r host_pid _ < /proc/self/stat
    mount --make-rprivate /
    layers="$scratch/layers"
    mkdir -p "$layers"
    mount -t tmpfs -o mode=0755 thumbd-guest "$layers"
    mkdir "$layers/upper" "$layers/work" "$layers/root"
    root="$layers/root"
    # THUMBD_GUEST_ROOT: another root file system as the lower layer (a debootstrapped Debian,
    # for the package's install test on a clean system); the host's / by default.
    mount -t overlay thumbd-guest -o "lowerdir=${THUMBD_GUEST_ROOT:-/},upperdir=$layers/upper,workdir=$layers/work" "$root"

    # API file systems of the guest's own namespaces; /sys and /proc/sys read-only (shared kernel).
    mount -t proc proc "$root/proc"
    mount --bind "$root/proc/sys" "$root/proc/sys"
    mount -o remount,bind,ro "$root/proc/sys"
    if [[ -e $root/proc/sysrq-trigger ]]; then
        mount --bind "$root/proc/sysrq-trigger" "$root/proc/sysrq-trigger"
        mount -o remount,bind,ro "$root/proc/sysrq-trigger"
    fi
    mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$root/sys"
    mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "$root/sys/fs/cgroup"
    # A private /dev with the usual nodes only (systemd would otherwise mount the host's devtmpfs).
    mount -t tmpfs -o mode=0755,nosuid thumbd-dev "$root/dev"
    for node in null zero full random urandom tty; do
        touch "$root/dev/$node"
        mount --bind "/dev/$node" "$root/dev/$node"
    done
    mkdir "$root/dev/pts" "$root/dev/shm"
    mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$root/dev/pts"
    ln -s pts/ptmx "$root/dev/ptmx"
    mount -t tmpfs -o mode=1777,nosuid,nodev thumbd-shm "$root/dev/shm"
    ln -s /proc/self/fd "$root/dev/fd"
    for n in 0:stdin 1:stdout 2:stderr; do ln -s "/proc/self/fd/${n%%:*}" "$root/dev/${n#*:}"; done
    mount -t tmpfs -o mode=0755,nosuid,nodev thumbd-run "$root/run"
    for dir in "$@"; do
        mkdir -p "$root$dir"
        mount --rbind "$dir" "$root$dir"
        mount -o remount,bind,ro "$root$dir"
    done

    etc="$root/etc"
    mkdir -p "$etc/tmpfiles.d" "$etc/systemd/system"
    echo 'd /tmp 1777 root root -' > "$etc/tmpfiles.d/tmp.conf"
    : > "$etc/fstab"
    echo thumbd-guest > "$etc/hostname"
    tr -d '-' < /proc/sys/kernel/random/uuid > "$etc/machine-id"
    masked=(systemd-udevd.service systemd-udevd-control.socket systemd-udevd-kernel.socket
        systemd-udev-trigger.service systemd-udev-settle.service systemd-sysctl.service
        systemd-binfmt.service proc-sys-fs-binfmt_misc.automount proc-sys-fs-binfmt_misc.mount
        systemd-modules-load.service kmod-static-nodes.service systemd-remount-fs.service
        systemd-timesyncd.service systemd-random-seed.service systemd-pstore.service
        systemd-journald-audit.socket systemd-firstboot.service systemd-repart.service
        systemd-pcrphase.service systemd-pcrphase-sysinit.service systemd-pcrphase-initrd.service
        systemd-hwdb-update.service sys-kernel-debug.mount sys-kernel-tracing.mount
        sys-kernel-config.mount sys-fs-fuse-connections.mount dev-hugepages.mount
        getty.target getty@tty1.service console-getty.service serial-getty@ttyS0.service
        nginx.service postgresql.service redis-server.service redis.service)
    # And whatever else the image enables (its /etc/systemd/system/*.wants): e.g. timers of apt.
    for wanted in /etc/systemd/system/*.wants/*; do
        [[ -e $wanted || -L $wanted ]] && masked+=("$(basename "$wanted")")
    done
    for unit in "${masked[@]}"; do
        rm -f "$etc/systemd/system/$unit"
        ln -s /dev/null "$etc/systemd/system/$unit"
    done

    echo "$host_pid" > "$scratch/pid.tmp"
    mv "$scratch/pid.tmp" "$scratch/pid"
    cd "$root"
    pivot_root . .
    umount -l .
    cd /
    # Shared within the guest, as a booted host's / is: systemd does it itself only when not in a
    # container, and without it a service's credentials (LoadCredential=: a ramfs the manager
    # mounts in a helper's namespace and moves into /run/credentials) never reach the service,
    # whose $CREDENTIALS_DIRECTORY stays an empty root-only folder. The guest's mounts were made
    # private from the host's first (above), so nothing propagates out of it.
    mount --make-rshared /
    exec env -i container=thumbd-test PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        /lib/systemd/systemd --show-status=no
    ;;
run)
    scratch=${2:?scratch directory}; seconds=${3:?seconds}; shift 3
    pid=$(guest_pid "$scratch")
    # The PID file is written before pivot_root: until PID 1 is systemd (exec'd after it), the
    # namespaces may still show the host's root, and a systemctl there could reach the host's
    # own service manager.
    [[ $(cat "/proc/$pid/comm" 2>/dev/null) == systemd ]] || die "the guest's PID 1 is not systemd (yet)"
    exec nsenter --target "$pid" --mount --uts --ipc --net --pid --cgroup --root --wd -- \
        /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        LANG=C.UTF-8 SYSTEMD_PAGER=cat SYSTEMD_COLORS=0 HOME=/root \
        timeout --kill-after=2 "$seconds" "$@"
    ;;
teardown)
    scratch=${2:?scratch directory}
    [[ -f $scratch/cgroup ]] || exit 0
    cgroup=$(cat "$scratch/cgroup")
    # cgroup.kill (Linux 5.14+) kills every process of the guest's cgroup tree, PID 1 included,
    # whose death ends the PID namespace and so the processes nsenter put there. Without it, PID 1
    # is killed by PID, but only if it still is in that cgroup (a PID may have been reused).
    for _ in $(seq 100); do
        [[ -d $cgroup ]] || break
        if [[ -e $cgroup/cgroup.kill ]]; then
            echo 1 > "$cgroup/cgroup.kill" 2>/dev/null || true
        elif [[ -f $scratch/pid ]]; then
            pid=$(cat "$scratch/pid")
            grep -qs "^0::${cgroup#"$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)"}" "/proc/$pid/cgroup" \
                && kill -KILL "$pid" 2>/dev/null || true
        fi
        find "$cgroup" -depth -type d -exec rmdir {} + 2>/dev/null || true
        [[ -d $cgroup ]] && sleep 0.1
    done
    [[ -d $cgroup ]] && die "cgroup $cgroup is still busy"
    exit 0
    ;;
*)
    die "usage: boot-guest.sh boot SCRATCH [DIR...] | run SCRATCH SECONDS CMD... | teardown SCRATCH"
    ;;
esac
