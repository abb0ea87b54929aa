# Every committed fuzz finding, and the seed models, replayed through the fuzz
# entry point: no input may crash (a sanitizer build makes this check stronger).
add_executable(memest_fuzz_replay ${CMAKE_CURRENT_LIST_DIR}/onnx_fuzz.cc ${CMAKE_CURRENT_LIST_DIR}/replay_main.cc)
target_link_libraries(memest_fuzz_replay PRIVATE memest_core)
add_test(NAME fuzz_regressions
         COMMAND memest_fuzz_replay ${CMAKE_CURRENT_LIST_DIR}/regressions)
set_tests_properties(fuzz_regressions PROPERTIES TIMEOUT 300)
