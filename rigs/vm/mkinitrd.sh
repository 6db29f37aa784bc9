#!/usr/bin/env bash
# Builds $INITRD (default $VM_DIR/initrd.cpio.gz): busybox-static, the module closures ($MODS,
# default bochs-drm, virtio 9p, snd-aloop; from the kernel unpacked in $KROOT, default
# $VM_DIR/kroot; module parameters in $MOD_PARAMS as "file.ko:param=value ...") and an /init
# that mounts the host root read-only over 9p at /host, the repository (read-only) and the
# writable output share at /tmp/marquee and /tmp/marquee-out inside it, and runs
# rigs/vm/$GUEST (default guest.sh) in a chroot there.
set -euo pipefail
VM_DIR=${VM_DIR:?} KVER=${KVER:?} REPO=${REPO:?} OUT_DIR=${OUT_DIR:?}
K=${KROOT:-$VM_DIR/kroot}
MODS=${MODS:-bochs virtio_pci 9pnet_virtio 9p snd-aloop}
GUEST=${GUEST:-guest.sh}
INITRD=${INITRD:-$VM_DIR/initrd.cpio.gz}
R=$VM_DIR/initrd
rm -rf "$R"
mkdir -p "$R"/{bin,sbin,proc,sys,dev,host,lib/modules}
cp /bin/busybox "$R/bin/busybox"
for app in $(/bin/busybox --list); do
  [ "$app" = busybox ] || ln -sf busybox "$R/bin/$app"   # (a self-link would loop)
done
mods=()
for m in $MODS; do
  while read -r _ path _; do
    mods+=("$path")
  done < <(modprobe -d "$K" -S "$KVER" --show-depends "$m" | grep '^insmod')
done
: > "$R/modules"
for path in "${mods[@]}"; do
  base=$(basename "$path")
  cut -d" " -f1 "$R/modules" | grep -qxF "$base" && continue
  cp "$path" "$R/lib/modules/$base"
  params=""
  for mp in ${MOD_PARAMS:-}; do [ "${mp%%:*}" = "$base" ] && params="$params ${mp#*:}"; done
  echo "$base$params" >> "$R/modules"
done
cat > "$R/init" <<INIT
#!/bin/sh
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
while read -r m args; do insmod /lib/modules/\$m \$args || echo "INIT: insmod \$m failed"; done < /modules
echo "INIT: modules loaded"
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose hostroot /host || echo "INIT: 9p root failed"
mount -t proc proc /host/proc; mount -t sysfs sys /host/sys; mount -t devtmpfs dev /host/dev
mount -t tmpfs tmp /host/tmp; mount -t tmpfs run /host/run 2>/dev/null
# The repository and the output on shares of their own, at fixed places under the guest's /tmp
# (whose tmpfs hides the host's /tmp): wherever the checkout is, the guest sees it, and every
# run is a run from a checkout under /tmp (issue 21).
mkdir -p /host/tmp/marquee /host/tmp/marquee-out
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose repo /host/tmp/marquee || echo "INIT: 9p repo failed"
mount -t 9p -o trans=virtio,version=9p2000.L,cache=none vmout /host/tmp/marquee-out || echo "INIT: 9p out failed"
if [ -f /host/tmp/marquee/rigs/vm/$GUEST ] && [ -f /host/tmp/marquee/.build-vm/marquee-path ]; then
  chroot /host /bin/sh /tmp/marquee/rigs/vm/$GUEST /tmp/marquee-out
else
  echo "@@FAIL the guest cannot see the repository $REPO (9p share 'repo' at /tmp/marquee): no rigs/vm/$GUEST or .build-vm/marquee-path there"
fi
echo "INIT: test exit \$?"
poweroff -f
INIT
chmod +x "$R/init"
(cd "$R" && find . | cpio -o -H newc --quiet | gzip -1) > "$INITRD"
echo "initrd: $(du -h "$INITRD" | cut -f1), ${#mods[@]} modules"
