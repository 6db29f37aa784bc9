#!/usr/bin/env bash
# Debian's 6.12 kernel (bookworm-security's linux-image-6.12-amd64) with vkms, the virtual KMS
# driver, built out of tree from Debian's own source of that kernel (no Debian kernel enables
# it) and patched by rigs/vm/vkms-yuv.patch (ours): its overlay planes take NV12 and YUV420
# with COLOR_ENCODING / COLOR_RANGE, as a board's display engine does, and the last composed
# frame is readable from debugfs (dri/0/vkms_capture). vkms has real 60 Hz vblank pacing and
# does not scale planes. Downloaded and unpacked (not installed: no postinst, nothing in
# /boot) into $VM_DIR/k612, once per patch; prints "KVER=<version>".
set -euo pipefail
VM_DIR=${VM_DIR:?} REPO=${REPO:?}
PATCH=$REPO/rigs/vm/vkms-yuv.patch
D=$VM_DIR/k612
mkdir -p "$D"
cd "$D"
SUM=$(sha256sum "$PATCH" | cut -c1-16)
if [ -f kroot/.done ] && [ "$(cat kroot/.patch 2>/dev/null)" = "$SUM" ]; then
  echo "KVER=$(cat kroot/.done)"
  exit 0
fi
# The ABI is in the package name (6.12.NNN+deb12) and old ones leave the mirror: resolve it each time.
KPKG=$(apt-cache depends linux-image-6.12-amd64 | awk '/Depends: linux-image-6\.12\.[0-9]/{print $2; exit}')
[ -n "$KPKG" ] || { echo "kernel-vkms.sh: cannot resolve linux-image-6.12-amd64 (apt-get update?)" >&2; exit 1; }
KVER=${KPKG#linux-image-}   # 6.12.117+deb12-amd64
ABI=${KVER%-amd64}          # 6.12.117+deb12
rm -rf kroot hroot src ./*.deb
apt-get download "$KPKG" "linux-headers-$KVER" "linux-headers-$ABI-common" "linux-kbuild-$ABI" linux-source-6.12 >/dev/null
kv=$(dpkg-deb -f "${KPKG}"_*.deb Version) sv=$(dpkg-deb -f linux-source-6.12_*.deb Version)
[ "$kv" = "$sv" ] || echo "kernel-vkms.sh: kernel $kv, source $sv (vkms is built from the source's version)" >&2
dpkg-deb -x "${KPKG}"_*.deb kroot
for f in linux-headers-*.deb linux-kbuild-*.deb; do dpkg-deb -x "$f" hroot; done
dpkg-deb -x linux-source-6.12_*.deb src
H=$D/hroot/usr/src/linux-headers-$KVER
# the headers package includes its common half by absolute path: point it at the unpacked one
sed -i "s|include /usr/src/|include $D/hroot/usr/src/|" "$H/Makefile"
mkdir -p src/vkms
tar -xJf src/usr/src/linux-source-6.12.tar.xz -C src/vkms --strip-components=5 --wildcards 'linux-source-6.12/drivers/gpu/drm/vkms/*'
patch -d src/vkms -p1 -s < "$PATCH"
# (no BTF for the module: that needs pahole, and the kernel loads it without)
make -s -C "$H" M="$D/src/vkms" CONFIG_DRM_VKMS=m CONFIG_DEBUG_INFO_BTF_MODULES= modules
mkdir -p "kroot/lib/modules/$KVER/extra"
cp src/vkms/vkms.ko "kroot/lib/modules/$KVER/extra/"
depmod -b kroot "$KVER"
rm -rf ./*.deb hroot src
echo "$SUM" > kroot/.patch
echo "$KVER" > kroot/.done
echo "KVER=$KVER"
