#!/bin/sh
# Runs INSIDE the VM booted with vkms (rigs/vm/kernel-vkms.sh: overlay planes that take
# YUV420 / NV12, no scaling, 60 Hz vblank, 1024x768): the video plane path of the real
# `marquee` binary. Screens are read back from the driver (dri/0/vkms_capture: the frame vkms
# composed from the primary and overlay planes) into $OUT/<name>.ppm and announced with
# "@@CAPTURE <name>"; run_vm.py --suite vkms compares them with the expected pictures.
. "$(dirname "$0")/guest-lib.sh"

mount -t debugfs none /sys/kernel/debug
DBG=/sys/kernel/debug/dri/0
capture() { # <name>: vkms composes only while its CRC is read
  echo auto > $DBG/crtc-0/crc/control
  cat $DBG/crtc-0/crc/data >/dev/null 2>&1 &
  CRC=$!
  sleep 0.6
  cat $DBG/vkms_capture > "$OUT/$1.ppm"
  kill $CRC 2>/dev/null; wait $CRC 2>/dev/null
  echo "@@CAPTURE $1"
}
count() { grep -c "$2" "/tmp/$1.log"; }

busybox ip link set lo up
busybox httpd -p 127.0.0.1:8080 -h "$M"
t0=$(date +%s.%N)

# 1. scaledown: the 640x360 picture 1:1 on the 1024x768 screen: on the video plane, copied
play plane-scaledown "$URL/still/manifest.mpd" --video drm --audio null --fit scaledown
wait_for /tmp/plane-scaledown.log "on video plane" 60 && sleep 1.5 && capture plane-scaledown
echo "@@RESULT plane-scaledown $(count plane-scaledown 'on video plane') $(count plane-scaledown 'refused')"
stop

# 2. the buffering band over the held picture (the video track stops after 2 s, audio goes on):
# the plane goes off and the band is drawn in software over the picture
play plane-band "$URL/short/manifest.mpd" --video drm --audio null --fit scaledown
wait_for /tmp/plane-band.log "on video plane" 60 && sleep 4 && capture plane-band
echo "@@RESULT plane-band $(count plane-band 'on video plane') $(count plane-band 'refused')"
stop

# 3. contain: the picture must be scaled, which vkms cannot: the plane refuses, software draws
play plane-contain "$URL/still/manifest.mpd" --video drm --audio null --fit contain
wait_for /tmp/plane-contain.log "refused" 60 && wait_for /tmp/plane-contain.log "fit 640x360" 30 &&
  sleep 1.5 && capture plane-contain
echo "@@RESULT plane-contain $(count plane-contain 'on video plane') $(count plane-contain 'refused')"
stop

# 4. zero copy: a picture in a dma-buf of another device (vgem, as a hardware decoder's) imported
# onto the plane, then the same picture copied into our own buffer: both read back
"$RB" prime 640x360 >/tmp/prime.log 2>&1 &
RBP=$!
wait_for /tmp/prime.log "PRIME SHOWN" 30 && sleep 0.5 && capture prime-import
wait_for /tmp/prime.log "COPY SHOWN" 30 && sleep 0.5 && capture prime-copy
wait $RBP || { fail "render_bench prime: $(cat /tmp/prime.log)"; }

# 5. CPU per presented frame: the video plane (copy + atomic commit) against the software path
# (swscale conversion into XRGB + page flip), same pictures, same screen, both 1:1
# (TCG emulates the CPU: these figures compare paths, not boxes)
for size in 640x360:1024x768 1280x720:1920x1080 1920x1080:1920x1080; do
  "$RB" plane "${size%%:*}" scaledown 90 "${size#*:}"
  "$RB" drm "${size%%:*}" scaledown 90 "${size#*:}"
done

echo "@@RESULT guest-seconds $(awk "BEGIN{print $(date +%s.%N) - $t0}")"
exit $fails
