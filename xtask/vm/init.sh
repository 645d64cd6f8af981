#!/bin/sh
# /init of the vm-test initramfs (busybox only). Mounts the kernel file systems, runs
# /vm/scenario.sh with /vm/env, and sends everything the scenario left in /out to the host
# through the virtio-serial port named "out", framed as
#   "WAKEVIZ-VM-TAR <bytes>\n" <tar archive of /out>
# then powers off. The host (xtask/src/vm) unpacks the archive and checks it; this script never
# decides whether the test passed.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export LD_LIBRARY_PATH=/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/lib64

log() { echo "wvz-vm: $*"; }

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
mkdir -p /tmp /out
# The kernel console is ttyS0 (the host's console.log); keep our own output there too.
exec </dev/null >/dev/console 2>&1

log "booted: $(uname -r), $(nproc) CPUs, uptime $(cut -d' ' -f1 /proc/uptime)s"

PORT=
for d in /sys/class/virtio-ports/*; do
    [ -r "$d/name" ] || continue
    if [ "$(cat "$d/name")" = out ]; then
        PORT=/dev/${d##*/}
    fi
done
[ -n "$PORT" ] || log "no virtio-serial port named 'out' (is CONFIG_VIRTIO_CONSOLE on?)"

. /vm/env
rc=0
sh /vm/scenario.sh || rc=$?
echo "$rc" >/out/scenario.rc
cut -d' ' -f1 /proc/uptime >/out/uptime
log "scenario exited with $rc at uptime $(cat /out/uptime)s"

if [ -n "$PORT" ]; then
    tar -cf /tmp/out.tar -C /out .
    size=$(wc -c </tmp/out.tar)
    log "sending $size bytes of results on $PORT"
    { printf 'WAKEVIZ-VM-TAR %s\n' "$size"; cat /tmp/out.tar; } >"$PORT"
    sync
    sleep 1
fi
log "powering off"
poweroff -f
# Should poweroff ever return: panic=-1 plus -no-reboot ends qemu.
echo o >/proc/sysrq-trigger
sleep 5
