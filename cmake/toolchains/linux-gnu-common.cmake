# Shared by the <triple>.cmake toolchain files: compilers named after MQ_TRIPLE, and pkg-config
# pointed at the target's .pc files only (never the build machine's), either Debian multiarch
# (/usr/lib/<triple>/pkgconfig) or a sysroot (MQ_SYSROOT).
if(NOT DEFINED MQ_SYSROOT AND DEFINED ENV{MQ_SYSROOT})
  set(MQ_SYSROOT "$ENV{MQ_SYSROOT}")
endif()
# try_compile projects re-read this file: hand the choice on to them.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES MQ_SYSROOT)

find_program(CMAKE_C_COMPILER NAMES ${MQ_TRIPLE}-gcc REQUIRED)
set(CMAKE_C_COMPILER_TARGET ${MQ_TRIPLE})

if(MQ_SYSROOT)
  set(CMAKE_SYSROOT "${MQ_SYSROOT}")
  set(_mq_pc "${MQ_SYSROOT}/usr/lib/${MQ_TRIPLE}/pkgconfig:${MQ_SYSROOT}/usr/lib/pkgconfig:${MQ_SYSROOT}/usr/share/pkgconfig")
  set(ENV{PKG_CONFIG_SYSROOT_DIR} "${MQ_SYSROOT}")
  set(CMAKE_FIND_ROOT_PATH "${MQ_SYSROOT}")
  set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
  set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
  set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
  set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
else()
  # Multiarch: the target's libraries sit in /usr/lib/<triple>, which pkg-config names exactly.
  set(_mq_pc "/usr/lib/${MQ_TRIPLE}/pkgconfig:/usr/share/pkgconfig")
  set(ENV{PKG_CONFIG_SYSROOT_DIR} "")
endif()
# PKG_CONFIG_LIBDIR replaces the default search path: no host .pc file can leak in.
set(ENV{PKG_CONFIG_LIBDIR} "${_mq_pc}")
set(ENV{PKG_CONFIG_PATH} "")

