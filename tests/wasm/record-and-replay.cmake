# cmake -DGOLDEN=<arena_golden> -DDIR=<dir> -P record-and-replay.cmake: writes the recording and
# the native build's lines (DIR/arena_golden.bin, DIR/arena_golden.native.txt).
execute_process(COMMAND ${GOLDEN} record ${DIR}/arena_golden.bin RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "arena_golden record failed: ${rc}")
endif()
execute_process(COMMAND ${GOLDEN} replay ${DIR}/arena_golden.bin
                OUTPUT_FILE ${DIR}/arena_golden.native.txt RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "arena_golden replay failed: ${rc}")
endif()
file(STRINGS ${DIR}/arena_golden.native.txt lines)
list(LENGTH lines count)
list(GET lines -1 stats)
message(STATUS "native: ${count} lines; ${stats}")
