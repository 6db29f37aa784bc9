# libFuzzer targets of the C core (CCore/fuzz, issue #14): configured with -DMQ_FUZZ=ON and
# clang (scripts/fuzz uses the Swift toolchain's). The core is compiled with coverage
# instrumentation and ASan + UBSan (any report is a crash); each target links libFuzzer's main.
#
#   cmake -S cmake -B .build/fuzz/cmake -DMQ_FUZZ=ON -DMQ_BUILD_TESTS=OFF \
#     -DCMAKE_C_COMPILER=/opt/swift/usr/bin/clang && cmake --build .build/fuzz/cmake
if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "MQ_FUZZ needs clang (libFuzzer): -DCMAKE_C_COMPILER=clang")
endif()
set(MQ_FUZZ_SANITIZERS -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
target_compile_options(marquee-core-objects PRIVATE -fsanitize=fuzzer-no-link ${MQ_FUZZ_SANITIZERS})

file(GLOB MQ_FUZZ_SOURCES CONFIGURE_DEPENDS "${MQ_CCORE}/fuzz/*_fuzz.c")
foreach(src ${MQ_FUZZ_SOURCES})
  get_filename_component(name "${src}" NAME_WE)
  add_executable(${name} "${src}" $<TARGET_OBJECTS:marquee-core-objects>)
  target_compile_definitions(${name} PRIVATE _GNU_SOURCE)
  target_compile_options(${name} PRIVATE ${MQ_WARNINGS} -fsanitize=fuzzer ${MQ_FUZZ_SANITIZERS})
  target_include_directories(${name} PRIVATE "${MQ_CCORE}/src" "${MQ_CCORE}/include" ${MQ_AVFILTER_INCLUDE_DIRS})
  target_link_libraries(${name} PRIVATE PkgConfig::MQ_DEPS Threads::Threads m ${CMAKE_DL_LIBS})
  # lld: gold warns about every ASan symbol it cannot export
  target_link_options(${name} PRIVATE -fsanitize=fuzzer ${MQ_FUZZ_SANITIZERS} -fuse-ld=lld)
endforeach()
