# Tests that run the built binary: bad input, golden CLI output, and the accuracy
# regression against the committed GPU measurements. They use Debian's python3
# (python3-onnx builds the bad files; compare needs no torch).
find_program(MEMEST_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT MEMEST_PYTHON)
  find_program(MEMEST_PYTHON NAMES python3)
endif()

add_test(NAME cli_bad_input
         COMMAND ${MEMEST_PYTHON} ${PROJECT_SOURCE_DIR}/tests/cli/bad_input_test.py $<TARGET_FILE:memest>)
set_tests_properties(cli_bad_input PROPERTIES TIMEOUT 300)

add_test(NAME cli_params_exact
         COMMAND ${MEMEST_PYTHON} ${PROJECT_SOURCE_DIR}/tests/cli/params_test.py $<TARGET_FILE:memest>
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli_params_exact PROPERTIES TIMEOUT 300)

add_test(NAME cli_exports
         COMMAND ${MEMEST_PYTHON} ${PROJECT_SOURCE_DIR}/tests/cli/exports_test.py $<TARGET_FILE:memest>
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli_exports PROPERTIES TIMEOUT 300)

if(EXISTS ${PROJECT_SOURCE_DIR}/tests/cli/golden_test.py)
  add_test(NAME cli_golden
           COMMAND ${MEMEST_PYTHON} ${PROJECT_SOURCE_DIR}/tests/cli/golden_test.py $<TARGET_FILE:memest>
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endif()

# newcomer: issue 23's findings replayed; examples: every command line in --help and README.md.
foreach(name timeline advise newcomer examples)
  add_test(NAME cli_${name}
           COMMAND ${MEMEST_PYTHON} ${PROJECT_SOURCE_DIR}/tests/cli/${name}_test.py $<TARGET_FILE:memest>
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(cli_${name} PROPERTIES TIMEOUT 300)
endforeach()

if(EXISTS ${PROJECT_SOURCE_DIR}/validate/results/h200-torch2.11.jsonl)
  add_test(NAME accuracy_regression
           COMMAND ${MEMEST_PYTHON} -m validate compare validate/results/h200-torch2.11.jsonl
                   --memest $<TARGET_FILE:memest> --enforce
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(accuracy_regression PROPERTIES TIMEOUT 600)
endif()
if(EXISTS ${PROJECT_SOURCE_DIR}/validate/results/holdout-h200-torch2.11.jsonl)
  add_test(NAME accuracy_holdout
           COMMAND ${MEMEST_PYTHON} -m validate compare validate/results/holdout-h200-torch2.11.jsonl
                   --memest $<TARGET_FILE:memest> --enforce
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(accuracy_holdout PROPERTIES TIMEOUT 600)
endif()
if(EXISTS ${PROJECT_SOURCE_DIR}/validate/results/checkpoint-h200-torch2.11.jsonl)
  add_test(NAME accuracy_checkpoint
           COMMAND ${MEMEST_PYTHON} -m validate compare validate/results/checkpoint-h200-torch2.11.jsonl
                   --include-checkpoint --memest $<TARGET_FILE:memest> --enforce
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(accuracy_checkpoint PROPERTIES TIMEOUT 600)
endif()
# The same measurements against the dynamo exports of the same models (models/dynamo/
# README.md): torch 2.11's default exporter drops BatchNorms and spells ops its own way.
if(EXISTS ${PROJECT_SOURCE_DIR}/models/dynamo/resnet18.onnx)
  add_test(NAME accuracy_dynamo
           COMMAND ${MEMEST_PYTHON} -m validate compare validate/results/h200-torch2.11.jsonl
                   --models-dir models/dynamo --memest $<TARGET_FILE:memest> --enforce
                   --models gpt_mini,bert_mini,transformer_encoder,bert_hf,vit_b_16,resnet18,mobilenet_v2,unet,resnet50,convnext_tiny,efficientnet_b0,densenet121,mlp,conv_autoencoder,vgg11_bn,mobilenet_v3_small
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(accuracy_dynamo PROPERTIES TIMEOUT 600)
  add_test(NAME accuracy_dynamo_holdout
           COMMAND ${MEMEST_PYTHON} -m validate compare validate/results/holdout-h200-torch2.11.jsonl
                   --models-dir models/dynamo --memest $<TARGET_FILE:memest> --enforce
                   --models distilbert_hf,googlenet,shufflenet_v2_x1_0,squeezenet1_1,mnasnet1_0
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(accuracy_dynamo_holdout PROPERTIES TIMEOUT 600)
  add_test(NAME accuracy_dynamo_blind
           COMMAND ${MEMEST_PYTHON} -m validate compare validate/results/blind-h200-torch2.11.jsonl
                   --models-dir models/dynamo --memest $<TARGET_FILE:memest> --enforce
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(accuracy_dynamo_blind PROPERTIES TIMEOUT 600)
endif()
# The largest batch: the GPU searches, with every later probe of a batch counted (the
# largest batch that ran is the measured one; each probe also tests the fit rule), from
# the zoo's files and from their dynamo exports.
set(MEMEST_PROBES validate/results/maxbatch-probes-h200-torch2.11.jsonl
    validate/results/maxbatch-probes2-h200-torch2.11.jsonl validate/results/maxbatch-answers-h200-torch2.11.jsonl
    validate/results/maxbatch-answers2-h200-torch2.11.jsonl validate/results/maxbatch-answers3-h200-torch2.11.jsonl)
foreach(dir models models/dynamo)
  string(REPLACE "/" "_" tag ${dir})
  add_test(NAME accuracy_maxbatch_${tag}
           COMMAND ${MEMEST_PYTHON} -m validate compare validate/results/maxbatch-h200-torch2.11.jsonl
                   --models-dir ${dir} --probes ${MEMEST_PROBES} --memest $<TARGET_FILE:memest> --enforce
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(accuracy_maxbatch_${tag} PROPERTIES TIMEOUT 600)
endforeach()
foreach(dir models models/dynamo)
  string(REPLACE "/" "_" tag ${dir})
  add_test(NAME accuracy_blind-maxbatch_${tag}
           COMMAND ${MEMEST_PYTHON} -m validate compare validate/results/blind-maxbatch-h200-torch2.11.jsonl
                   --models-dir ${dir} --probes ${MEMEST_PROBES} --memest $<TARGET_FILE:memest> --enforce
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(accuracy_blind-maxbatch_${tag} PROPERTIES TIMEOUT 600)
endforeach()
# The blind set and the probes alone: each a test of its own, same regression rule.
foreach(name maxbatch-probes blind)
  if(EXISTS ${PROJECT_SOURCE_DIR}/validate/results/${name}-h200-torch2.11.jsonl)
    add_test(NAME accuracy_${name}
             COMMAND ${MEMEST_PYTHON} -m validate compare validate/results/${name}-h200-torch2.11.jsonl
                     --memest $<TARGET_FILE:memest> --enforce
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties(accuracy_${name} PROPERTIES TIMEOUT 600)
  endif()
endforeach()
# validate/'s own tests (no GPU, no torch): compare, the cuDNN table's fit, the stripper.
add_test(NAME validate_unit COMMAND ${MEMEST_PYTHON} -m unittest validate.test_validate
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(validate_unit PROPERTIES TIMEOUT 300)

# The export matrix (issue 17) and the corpus and random models measured on it (issue
# 18): the committed archive is unpacked once into the build folder, then every file
# must load with torch's parameter bytes, and each measured set must not get worse than
# thresholds.json says (the accuracy when it was committed).
if(EXISTS ${PROJECT_SOURCE_DIR}/models/matrix-h200-torch2.11.tar.xz)
  set(MEMEST_MATRIX ${CMAKE_BINARY_DIR}/matrix)
  add_test(NAME matrix_unpack
           COMMAND ${MEMEST_PYTHON} -m validate matrix-check unpack models/matrix-h200-torch2.11.tar.xz ${MEMEST_MATRIX}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(matrix_unpack PROPERTIES FIXTURES_SETUP matrix)
  add_test(NAME matrix_loads
           COMMAND ${MEMEST_PYTHON} -m validate matrix-check loads ${MEMEST_MATRIX} --memest $<TARGET_FILE:memest>
                   --enforce
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(matrix_loads PROPERTIES FIXTURES_REQUIRED matrix TIMEOUT 900)
  foreach(set corpus random random12-remeasure)
    foreach(variant dynamo-train-dyn legacy-train-dyn)
      add_test(NAME accuracy_${set}_${variant}
               COMMAND ${MEMEST_PYTHON} -m validate compare validate/results/${set}-h200-torch2.11.jsonl
                       --memest $<TARGET_FILE:memest> --models-dir ${MEMEST_MATRIX}/${variant} --skip-missing
                       --key ${set}-h200-torch2.11.jsonl@${variant} --enforce
               WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
      set_tests_properties(accuracy_${set}_${variant} PROPERTIES FIXTURES_REQUIRED matrix TIMEOUT 900)
    endforeach()
  endforeach()
endif()

# Session 9's blind sample (sample seed 8, random seeds 3 and 4), compared once and
# committed before any change was made for it (validate/results/blind2-compare-*.txt), is
# training data from then on: its own archive, the same regression rule.
if(EXISTS ${PROJECT_SOURCE_DIR}/models/matrix-blind2-h200-torch2.11.tar.xz)
  set(MEMEST_MATRIX2 ${CMAKE_BINARY_DIR}/matrix-blind2)
  add_test(NAME matrix_blind2_unpack
           COMMAND ${MEMEST_PYTHON} -m validate matrix-check unpack models/matrix-blind2-h200-torch2.11.tar.xz
                   ${MEMEST_MATRIX2}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(matrix_blind2_unpack PROPERTIES FIXTURES_SETUP matrix_blind2)
  foreach(set sample8 random34)
    foreach(variant dynamo-train-dyn legacy-train-dyn)
      add_test(NAME accuracy_${set}_${variant}
               COMMAND ${MEMEST_PYTHON} -m validate compare validate/results/${set}-h200-torch2.11.jsonl
                       --memest $<TARGET_FILE:memest> --models-dir ${MEMEST_MATRIX2}/${variant} --skip-missing
                       --key ${set}-h200-torch2.11.jsonl@${variant} --enforce
               WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
      set_tests_properties(accuracy_${set}_${variant} PROPERTIES FIXTURES_REQUIRED matrix_blind2 TIMEOUT 900)
    endforeach()
  endforeach()
endif()
