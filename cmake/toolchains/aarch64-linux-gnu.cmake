# Cross toolchain: 64-bit ARM Linux (Raspberry Pi 4/5 with a 64-bit OS, Rockchip RK35xx,
# Amlogic S905X3/S922X, qemu-system-aarch64 -M virt).
#
# Two ways to get the target's libraries:
#  - Debian multiarch on the build machine (what scripts/cross-test does):
#      dpkg --add-architecture arm64; apt-get install gcc-aarch64-linux-gnu libc6-dev:arm64
#      lib{avformat,avcodec,avutil,swresample,swscale,asound2,drm}-dev:arm64
#    The :arm64 .pc files live in /usr/lib/aarch64-linux-gnu/pkgconfig; no sysroot needed.
#  - A board's root file system copied or mounted somewhere: -DMQ_SYSROOT=/path/to/rootfs
#    (or the environment variable of the same name).
# Run the tests with -DCMAKE_CROSSCOMPILING_EMULATOR=qemu-aarch64 (qemu-user).
set(MQ_TRIPLE aarch64-linux-gnu)
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
include("${CMAKE_CURRENT_LIST_DIR}/linux-gnu-common.cmake")
