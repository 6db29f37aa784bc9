# cmake -DEMULATOR=a|b -DEXE=path -DARGS=x|y -DPATTERN=regex -P expect_output.cmake
# Runs EXE (through EMULATOR when given) with ARGS and fails unless it exits 0 AND its output
# matches PATTERN: ctest's PASS_REGULAR_EXPRESSION alone ignores the exit status.
string(REPLACE "|" ";" emulator "${EMULATOR}")
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND ${emulator} "${EXE}" ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exited ${rc}")
endif()
if(NOT "${out}${err}" MATCHES "${PATTERN}")
  message(FATAL_ERROR "no \"${PATTERN}\" in its output")
endif()
