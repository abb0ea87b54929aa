# Every committed fuzz finding, and the seed models, replayed through the fuzz
# entry point: no input may crash (a sanitizer build makes this check stronger).
add_executable(memest_fuzz_replay ${CMAKE_CURRENT_LIST_DIR}/onnx_fuzz.cc ${CMAKE_CURRENT_LIST_DIR}/replay_main.cc)
target_link_libraries(memest_fuzz_replay PRIVATE memest_core)
add_test(NAME fuzz_regressions
         COMMAND memest_fuzz_replay ${CMAKE_CURRENT_LIST_DIR}/regressions)
set_tests_properties(fuzz_regressions PROPERTIES TIMEOUT 300)

# The shape-arithmetic target (text graphs over symbolic integer tensors), the same way.
add_executable(memest_shape_fuzz_replay ${CMAKE_CURRENT_LIST_DIR}/shape_fuzz.cc ${CMAKE_CURRENT_LIST_DIR}/replay_main.cc)
target_link_libraries(memest_shape_fuzz_replay PRIVATE memest_core)
add_test(NAME shape_fuzz_regressions
         COMMAND memest_shape_fuzz_replay ${CMAKE_CURRENT_LIST_DIR}/shape_regressions)
set_tests_properties(shape_fuzz_regressions PROPERTIES TIMEOUT 300)

# The wire-format reader against the reference reader (protobuf's message classes)
# on the same files, and on the bundled models: same Graph or same error.
add_executable(memest_reader_diff ${CMAKE_CURRENT_LIST_DIR}/reader_diff_fuzz.cc ${CMAKE_CURRENT_LIST_DIR}/replay_main.cc
               ${CMAKE_CURRENT_LIST_DIR}/reference_reader.cc)
target_link_libraries(memest_reader_diff PRIVATE memest_core onnx_proto protobuf::libprotobuf)
add_test(NAME reader_matches_reference
         COMMAND memest_reader_diff ${CMAKE_CURRENT_LIST_DIR}/regressions ${PROJECT_SOURCE_DIR}/models
                 ${PROJECT_SOURCE_DIR}/models/blind ${PROJECT_SOURCE_DIR}/models/holdout
                 ${PROJECT_SOURCE_DIR}/models/torch113)
set_tests_properties(reader_matches_reference PROPERTIES TIMEOUT 300)
# Protobuf corner cases written byte by byte, every truncation and a few hundred
# mutations of one model, through the same comparison.
add_test(NAME reader_cases
         COMMAND ${MEMEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/reader_cases.py $<TARGET_FILE:memest_reader_diff>)
set_tests_properties(reader_cases PROPERTIES TIMEOUT 300)
