#!/usr/bin/env bash
# Downloads and unpacks Debian's amd64 kernel into $VM_DIR/kroot (not installed: no postinst,
# nothing in /boot), once. Prints "KVER=<version>". Idempotent; the cache is .build-vm/.
set -euo pipefail
VM_DIR=${VM_DIR:?}
mkdir -p "$VM_DIR"
cd "$VM_DIR"
if [ -f kroot/.done ]; then
  echo "KVER=$(cat kroot/.done)"
  exit 0
fi
# The ABI is in the package name (6.1.0-NN) and old ones leave the mirror: resolve it each time.
KPKG=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
[ -n "$KPKG" ] || { echo "kernel.sh: cannot resolve linux-image-amd64 (apt-get update?)" >&2; exit 1; }
KVER=${KPKG#linux-image-}
rm -rf kroot ./*.deb
apt-get download "$KPKG" >/dev/null
dpkg-deb -x "${KPKG}"_*.deb kroot
depmod -b kroot "$KVER"          # the .deb ships no modules.dep
rm -f ./*.deb
echo "$KVER" > kroot/.done
echo "KVER=$KVER"
