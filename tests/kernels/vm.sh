#!/bin/bash
# tests/kernels/vm.sh: run a command on one of Debian's stock kernels in an
# emulated guest whose root file system is this machine's own (9p), so
# that the build tree here runs there as it is.
#
#   tests/kernels/vm.sh [-k 6.1|6.12] [-t SECONDS] [-m MiB] [-c CPUS] \
#       -- COMMAND...
#
# -k 6.1 (the default) is Debian 12's own kernel (linux-image-amd64),
# -k 6.12 Debian 12's backport of 6.12 (linux-image-6.12-amd64): both in
# .ci/packages, with qemu-system-x86 and busybox-static.  COMMAND runs as
# root in the current directory with the guest's own /proc, /sys, /dev,
# bpffs, tracefs and debugfs; its exit status is the script's.  Files the
# guest writes are seen here once it has stopped (the guest caches the
# 9p root).  No KVM is needed: the guest is emulated (TCG), 10-50x
# slower than this machine; it boots in ~10 s.
#
# One CPU by default (-c 1): with two, the emulated 6.12 panicked now
# and then, once while booting, before anything ran ("Oops: int3" at a
# jump label's nop in hrtimer_start_range_ns: qemu's TCG let the other
# CPU run the int3 of a text_poke_bp() after the patching CPU had taken
# it out), and once in __schedule during the watchpoint cases (perf
# events flip static keys, patched the same way).  bpftrace 0.17's
# watchpoints run on a one-CPU 6.12 guest, and so do ubt's.
# no_timer_check: on a loaded host the emulated 6.12 panicked in its
# IO-APIC timer check.  Exit status 124: the guest timed out or crashed;
# 99: something this script needs is missing.
set -euo pipefail

secs=900 mem=2048 cpus=1 kv=6.1
usage()
{
	echo "usage: tests/kernels/vm.sh [-k 6.1|6.12] [-t SECONDS] [-m MiB]" \
		"[-c CPUS] -- COMMAND..." >&2
	exit 2
}
while [[ $# -gt 0 ]]; do
	case $1 in
	-k) kv=${2:?}; shift 2 ;;
	-t) secs=${2:?}; shift 2 ;;
	-m) mem=${2:?}; shift 2 ;;
	-c) cpus=${2:?}; shift 2 ;;
	--) shift; break ;;
	-*) usage ;;
	*) break ;;
	esac
done
[[ $# -gt 0 ]] || usage
case $kv in
6.1 | 6.12) ;;
*) echo "vm.sh: -k takes 6.1 or 6.12" >&2; exit 2 ;;
esac

missing()
{
	echo "vm.sh: $1 is missing (apt-get install $2; .ci/packages has it)" >&2
	exit 99
}
command -v qemu-system-x86_64 >/dev/null ||
	missing qemu-system-x86_64 qemu-system-x86
[[ -x /bin/busybox ]] || missing /bin/busybox busybox-static
command -v cpio >/dev/null || missing cpio cpio
command -v modprobe >/dev/null || missing modprobe kmod
# the newest installed build of the series: vmlinuz-6.1.0-N-amd64,
# vmlinuz-6.12.N+debN-amd64 (the dot or dash keeps 6.1 from 6.12)
kernel=$(ls /boot/vmlinuz-"$kv"[.-]* 2>/dev/null | sort -V | tail -n 1)
[[ -n $kernel ]] || case $kv in
6.1) missing "/boot/vmlinuz-6.1.*" linux-image-amd64 ;;
*) missing "/boot/vmlinuz-6.12.*" linux-image-6.12-amd64 ;;
esac
release=${kernel#/boot/vmlinuz-}

tmp=$(mktemp -d /tmp/ubt-vm.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
init=$tmp/initrd
mkdir -p "$init"/{bin,dev,lib/modules,mnt,proc,sys}
cp /bin/busybox "$init/bin/"

# The modules the guest needs to mount the 9p root, each after the ones
# it depends on (in modprobe's order), uncompressed for busybox's insmod.
for m in virtio_pci 9pnet_virtio 9p; do
	modprobe -S "$release" --show-depends "$m" |
		awk '$1 == "insmod" { print $2 }'
done | awk '!seen[$0]++' | while read -r ko; do
	name=$(basename "$ko")
	name=${name%%.ko*}
	case $ko in
	*.zst) zstd -q -d -c "$ko" ;;
	*.xz) xz -d -c "$ko" ;;
	*) cat "$ko" ;;
	esac >"$init/lib/modules/$name.ko"
	echo "$name" >>"$init/lib/modules/load"
done

# What the guest runs, in this directory and environment.
{
	printf 'cd %q || exit 125\n' "$PWD"
	printf 'export PATH=%q HOME=/root TERM=dumb LANG=C\n' "$PATH"
	[[ -n ${CI:-} ]] && printf 'export CI=%q\n' "$CI"
	printf 'exec'
	printf ' %q' "$@"
	printf '\n'
} >"$tmp/cmd"

cat >"$init/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in \$(cat /lib/modules/load); do
	insmod /lib/modules/\$m.ko || echo "vm.sh: insmod \$m failed"
done
if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose \\
	root /mnt; then
	echo "vm.sh: cannot mount the root over 9p"
	poweroff -f
fi
for d in proc sys dev; do mount --bind /\$d /mnt/\$d; done
mount -t tmpfs shm /mnt/dev/shm 2>/dev/null
chroot /mnt /bin/sh -c 'mount -t bpf bpf /sys/fs/bpf
	mount -t tracefs tracefs /sys/kernel/tracing
	mount -t debugfs debugfs /sys/kernel/debug' 2>/dev/null
echo "vm.sh: guest \$(uname -r)"
chroot /mnt /bin/bash $tmp/cmd
echo "vm.sh: exit status \$?"
sync
poweroff -f
EOF
chmod 755 "$init/init"
(cd "$init" && find . | cpio -o -H newc --quiet | gzip -1) >"$tmp/initrd.gz"

# The serial console is the guest's output: its exit status line is
# taken out of it.
timeout -k 10 "$secs" qemu-system-x86_64 -accel tcg -cpu max \
	-m "$mem" -smp "$cpus" -kernel "$kernel" -initrd "$tmp/initrd.gz" \
	-append "console=ttyS0 quiet loglevel=3 panic=-1 no_timer_check rdinit=/init" \
	-virtfs local,path=/,mount_tag=root,security_model=passthrough,multidevs=remap \
	-display none -serial stdio -no-reboot </dev/null |
	tr -d '\r' | tee "$tmp/console" |
	grep -v -e '^vm.sh: exit status ' -e '^\[ *[0-9.]*\] reboot: ' ||
	true
rc=$(sed -n 's/^vm.sh: exit status \([0-9]*\)$/\1/p' "$tmp/console" |
	tail -n 1)
if [[ -z $rc ]]; then
	echo "vm.sh: the $release guest gave no exit status (timed out" \
		"after ${secs}s, or crashed)" >&2
	exit 124
fi
exit "$rc"
