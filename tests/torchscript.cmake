# TorchScript frontend tests. The models are built at test time by Debian's torch
# 1.13 (tests/data/torchscript/make_torchscript.py, a ctest fixture), never
# committed; memest_tests finds them through MEMEST_TS_MODELS and the helper
# through MEMEST_TS_HELPER, and skips with a message when either is missing.
if(NOT TARGET memest-torchscript)
  return()
endif()
find_program(MEMEST_TORCH_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
add_dependencies(memest_tests memest-torchscript)
set(MEMEST_TS_MODELS ${CMAKE_BINARY_DIR}/torchscript_models)
target_compile_definitions(memest_tests PRIVATE MEMEST_TS_HELPER="$<TARGET_FILE:memest-torchscript>")
if(MEMEST_TORCH_PYTHON)
  add_test(NAME torchscript_models
           COMMAND ${MEMEST_TORCH_PYTHON} ${PROJECT_SOURCE_DIR}/tests/data/torchscript/make_torchscript.py
                   ${MEMEST_TS_MODELS})
  set_tests_properties(torchscript_models PROPERTIES FIXTURES_SETUP torchscript_models TIMEOUT 300)
  add_test(NAME torchscript COMMAND memest_tests --test-case=torchscript*)
  set_tests_properties(torchscript PROPERTIES FIXTURES_REQUIRED torchscript_models TIMEOUT 300
                       ENVIRONMENT "MEMEST_TS_MODELS=${MEMEST_TS_MODELS}")
endif()
