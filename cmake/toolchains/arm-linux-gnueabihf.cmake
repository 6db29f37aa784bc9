# Cross toolchain: 32-bit ARM hard-float Linux (Raspberry Pi OS 32-bit, older Amlogic/Rockchip
# images). Same two library sources as aarch64-linux-gnu.cmake, with the armhf architecture:
#   dpkg --add-architecture armhf; apt-get install gcc-arm-linux-gnueabihf libc6-dev:armhf
#   lib{avformat,avcodec,avutil,swresample,swscale,asound2,drm}-dev:armhf
# or -DMQ_SYSROOT=/path/to/rootfs. Tests: -DCMAKE_CROSSCOMPILING_EMULATOR=qemu-arm.
# (Not exercised by scripts/cross-test; only aarch64 is.)
set(MQ_TRIPLE arm-linux-gnueabihf)
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR arm)
include("${CMAKE_CURRENT_LIST_DIR}/linux-gnu-common.cmake")
