# The pure-C tests of CCore/tests, run by ctest. When cross-compiling, ctest runs each test
# executable through CMAKE_CROSSCOMPILING_EMULATOR (qemu-aarch64); the media they read is made
# on the build machine by the "media" fixture (ffmpeg CLI), and the board-profile checker runs
# with the build machine's python3.
set(MQ_TESTS "${MQ_CCORE}/tests")
set(MQ_MEDIA "${CMAKE_CURRENT_BINARY_DIR}/test-media")

function(mq_test name)
  add_executable(${name} "${MQ_TESTS}/${name}.c")
  target_compile_definitions(${name} PRIVATE _GNU_SOURCE)
  target_compile_options(${name} PRIVATE ${MQ_WARNINGS})
  target_include_directories(${name} PRIVATE "${MQ_CCORE}/src" "${MQ_TESTS}")
  # Static: the executables run under qemu without an LD_LIBRARY_PATH to the build tree.
  target_link_libraries(${name} PRIVATE marquee-core-static)
endfunction()

# mq_expect_output(NAME PATTERN EXECUTABLE ARGS...): a test that passes when EXECUTABLE exits
# 0 and prints PATTERN (run through the cross-compiling emulator when there is one).
function(mq_expect_output name pattern exe)
  string(REPLACE ";" "|" args "${ARGN}")
  set(emulator "")
  if(CMAKE_CROSSCOMPILING_EMULATOR)
    string(REPLACE ";" "|" emulator "${CMAKE_CROSSCOMPILING_EMULATOR}")
  endif()
  add_test(NAME ${name} COMMAND "${CMAKE_COMMAND}" "-DEMULATOR=${emulator}" "-DEXE=$<TARGET_FILE:${exe}>"
    "-DARGS=${args}" "-DPATTERN=${pattern}" -P "${CMAKE_CURRENT_LIST_DIR}/expect_output.cmake")
endfunction()

find_program(MQ_FFMPEG ffmpeg)
find_program(MQ_PYTHON3 python3)
if(NOT MQ_FFMPEG)
  message(WARNING "ffmpeg not found: the tests that read generated media will fail")
endif()

add_test(NAME make_media COMMAND sh "${MQ_TESTS}/make_test_media.sh" "${MQ_MEDIA}")
set_tests_properties(make_media PROPERTIES FIXTURES_SETUP media)

mq_test(pcm_ring_test)
add_test(NAME pcm_ring COMMAND pcm_ring_test)

mq_test(stretch_test)
add_test(NAME stretch COMMAND stretch_test)

mq_test(mixer_test)
add_test(NAME mixer COMMAND mixer_test)

mq_test(mixer_alloc_test)
# Its exit status and its output both count (PASS_REGULAR_EXPRESSION alone would make ctest
# ignore the exit status: cmake/expect_output.cmake).
mq_expect_output(mixer_alloc "mixer allocs 0 frees 0" mixer_alloc_test)
# Keeps a core busy for 1.5 s sending commands: run alone (real-time tests, 2-core CI).
set_tests_properties(mixer_alloc PROPERTIES RUN_SERIAL ON)

mq_test(captions_test)
add_test(NAME captions COMMAND captions_test)

mq_test(caption_render_test)
add_test(NAME caption_render COMMAND caption_render_test)

mq_test(segment_io_test)
add_test(NAME segment_io COMMAND segment_io_test "${MQ_MEDIA}/video.mp4")

mq_test(demux_decode_test)
add_test(NAME demux_decode COMMAND demux_decode_test
  "${MQ_MEDIA}/video.mp4" "${MQ_MEDIA}/video.md5" "${MQ_MEDIA}/tone440.mp4" 2 "${MQ_MEDIA}/muxed.ts")
if(CMAKE_CROSSCOMPILING_EMULATOR)
  # qemu-user may ignore MADV_DONTNEED on file mappings (and reports its own RSS): the trim's
  # size is not judged there, its safety (the same pictures after it) is.
  set_tests_properties(demux_decode PROPERTIES ENVIRONMENT "MQ_EMULATED=1")
endif()

mq_test(audio_alloc_test)
mq_expect_output(audio_alloc_wav "allocs 0 frees 0 ended 1" audio_alloc_test
  "${MQ_MEDIA}/tone440.mp4" "wav:${CMAKE_CURRENT_BINARY_DIR}/alloc.wav")
mq_expect_output(audio_alloc_alsa_file "allocs 0 frees 0 ended 1" audio_alloc_test
  "${MQ_MEDIA}/tone440.mp4" "alsa:file:'${CMAKE_CURRENT_BINARY_DIR}/alloc.raw',raw")

mq_test(clip_test)
add_test(NAME clip COMMAND clip_test "${MQ_MEDIA}/music660.m4a" "${MQ_MEDIA}/music660.wav")
set_tests_properties(clip PROPERTIES FIXTURES_REQUIRED media)

mq_test(clip_swap_test)
add_test(NAME clip_swap COMMAND clip_swap_test "${MQ_MEDIA}/music660.m4a" "${MQ_MEDIA}/tone440.mp4"
  "${MQ_MEDIA}/tone1k.mp4" "${CMAKE_CURRENT_BINARY_DIR}/clip-swap.wav")
# Real-time (a WAV written on the clock): run alone like the others.
set_tests_properties(clip_swap PROPERTIES FIXTURES_REQUIRED media RUN_SERIAL ON)

mq_test(e2e_wav_test)
# Start-up tolerance (s): the audio thread starts later under an emulator (see the test).
if(CMAKE_CROSSCOMPILING_EMULATOR)
  set(MQ_ONSET_TOLERANCE 0.25)
else()
  set(MQ_ONSET_TOLERANCE 0.05)
endif()
add_test(NAME e2e_wav COMMAND e2e_wav_test
  "${MQ_MEDIA}/tone1k.mp4" 1000 2 "${MQ_MEDIA}/video.mp4" "${MQ_MEDIA}/video.md5"
  "${CMAKE_CURRENT_BINARY_DIR}/e2e-out" ${MQ_ONSET_TOLERANCE})

mq_test(decoder_pref_test)
add_test(NAME decoder_pref COMMAND decoder_pref_test
  "${MQ_MEDIA}/video.mp4" "${MQ_MEDIA}/video.md5" "${MQ_MEDIA}/tone440.mp4"
  "${CMAKE_CURRENT_BINARY_DIR}/pref-out" "${MQ_MEDIA}/muxed.ts")

mq_test(lavf_input_test)
add_test(NAME lavf_input COMMAND lavf_input_test "${MQ_MEDIA}" "${CMAKE_CURRENT_BINARY_DIR}/lavf-input")

set_tests_properties(segment_io demux_decode audio_alloc_wav audio_alloc_alsa_file e2e_wav
  decoder_pref lavf_input PROPERTIES FIXTURES_REQUIRED media)
# Real-time tests: keep them off each other's CPU (2-core CI machine, qemu).
set_tests_properties(audio_alloc_wav audio_alloc_alsa_file e2e_wav PROPERTIES RUN_SERIAL ON)

if(MQ_PYTHON3)
  file(GLOB MQ_BOARDS "${MQ_ROOT}/boards/*.json")
  add_test(NAME board_profiles COMMAND "${MQ_PYTHON3}" "${MQ_ROOT}/boards/check_boards.py" --self-test
    --service "${MQ_ROOT}/boards/marquee.service" ${MQ_BOARDS})
endif()

# Every input the segment fuzz target (CCore/fuzz) found crashing, replayed through its harness.
file(GLOB MQ_FUZZ_REGRESSIONS CONFIGURE_DEPENDS "${MQ_ROOT}/fuzz/regressions/segment/*")
if(MQ_FUZZ_REGRESSIONS)
  add_executable(segment_fuzz_replay "${MQ_CCORE}/fuzz/segment_fuzz.c" "${MQ_CCORE}/fuzz/replay_main.c")
  target_compile_definitions(segment_fuzz_replay PRIVATE _GNU_SOURCE)
  target_compile_options(segment_fuzz_replay PRIVATE ${MQ_WARNINGS})
  target_include_directories(segment_fuzz_replay PRIVATE "${MQ_CCORE}/src" ${MQ_AVFILTER_INCLUDE_DIRS})
  target_link_libraries(segment_fuzz_replay PRIVATE marquee-core-static)
  add_test(NAME segment_fuzz_regressions COMMAND segment_fuzz_replay ${MQ_FUZZ_REGRESSIONS})
endif()
