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

# memest's request sequences against whole-case GPU traces, each at or above its floor.
add_test(NAME cli_sequence
         COMMAND ${MEMEST_PYTHON} ${PROJECT_SOURCE_DIR}/tests/cli/sequence_test.py $<TARGET_FILE:memest>
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli_sequence PROPERTIES TIMEOUT 300)

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
# memest_matrix(ARCHIVE SETS SET... [VARIANTS VARIANT...]): unpack models/ARCHIVE.tar.xz
# once into the build folder, check that its files load (thresholds.json "matrix" ->
# ARCHIVE), and compare each validate/results/SET-h200-torch2.11.jsonl measured on its
# models, per exporter variant (default: dynamo-train-dyn and legacy-train-dyn).
function(memest_matrix archive)
  cmake_parse_arguments(M "" "TAG" "SETS;VARIANTS" ${ARGN})
  if(NOT M_VARIANTS)
    set(M_VARIANTS dynamo-train-dyn legacy-train-dyn)
  endif()
  # The card and torch the sets were measured on (their file names): h200-torch2.11
  # unless the device lent another card.
  if(NOT M_TAG)
    set(M_TAG h200-torch2.11)
  endif()
  if(NOT EXISTS ${PROJECT_SOURCE_DIR}/models/${archive}.tar.xz)
    return()
  endif()
  set(dest ${CMAKE_BINARY_DIR}/${archive})
  add_test(NAME ${archive}_unpack
           COMMAND ${MEMEST_PYTHON} -m validate matrix-check unpack models/${archive}.tar.xz ${dest}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(${archive}_unpack PROPERTIES FIXTURES_SETUP ${archive})
  add_test(NAME ${archive}_loads
           COMMAND ${MEMEST_PYTHON} -m validate matrix-check loads ${dest} --memest $<TARGET_FILE:memest>
                   --key ${archive} --enforce
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(${archive}_loads PROPERTIES FIXTURES_REQUIRED ${archive} TIMEOUT 900)
  foreach(set ${M_SETS})
    # Larger sets are committed xz-compressed; compare reads either.
    set(results validate/results/${set}-${M_TAG}.jsonl)
    if(NOT EXISTS ${PROJECT_SOURCE_DIR}/${results})
      set(results ${results}.xz)
    endif()
    foreach(variant ${M_VARIANTS})
      # Two sets of one name measured on different cards (random34: session 9's seeds 3 and 4
      # on the H200, session 30's seed 34 on an H100) get the card's tag.
      set(name accuracy_${set}_${variant})
      if(TEST ${name})
        set(name accuracy_${set}_${M_TAG}_${variant})
      endif()
      add_test(NAME ${name}
               COMMAND ${MEMEST_PYTHON} -m validate compare ${results}
                       --memest $<TARGET_FILE:memest> --models-dir ${dest}/${variant} --skip-missing
                       --key ${set}-${M_TAG}.jsonl@${variant} --enforce
               WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
      set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED ${archive} TIMEOUT 900)
    endforeach()
  endforeach()
endfunction()
# Session 8's corpus and random seeds 1-2 (measured twice: random-* lost most cases to
# the cuDNN dropout state, random12-remeasure-* is session 9's full run).
memest_matrix(matrix-h200-torch2.11 SETS corpus random random12-remeasure)
# Session 9's blind sample (sample seed 8, random seeds 3-4), compared once blind
# (validate/results/blind2-compare-h200-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind2-h200-torch2.11 SETS sample8 random34)
# Session 10's first blind sample (sample seed 9, random seed 5), compared once blind
# (validate/results/blind3-compare-h200-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind3-h200-torch2.11 SETS sample9 random5)
# Its end-of-session blind sample (sample seed 10, random seeds 6-7; seed 7 was not
# exported), compared once (blind4-compare-h200-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind4-h200-torch2.11 SETS sample10 random67)
# Session 11's end-of-session blind sample (sample seed 11 and random seed 8; random seed 9
# in a second archive), compared once (blind5-compare-h200-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind5-h200-torch2.11 SETS sample11 random8)
memest_matrix(matrix-blind5b-h200-torch2.11 SETS random9)
memest_matrix(matrix-blind6-h200-torch2.11 SETS sample12 random10)
memest_matrix(matrix-blind6b-h200-torch2.11 SETS random11)
# Session 13's blind sample (sample seed 13 and random seed 12; random seed 13 in a second
# archive), compared once (blind7-compare-h200-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind7-h200-torch2.11 SETS sample13 random12)
memest_matrix(matrix-blind7b-h200-torch2.11 SETS random13)
# Session 14's (sample seed 14 and random seed 14; random seed 15 in a second archive),
# compared once (blind8-compare-h200-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind8-h200-torch2.11 SETS sample14 random14)
memest_matrix(matrix-blind8b-h200-torch2.11 SETS random15)
# Session 15's blind sample (gpu_session15.sh: sample seed 15, random seed 16;
# gpu_session15b.sh: random seed 17), measured first thing in the session, compared once
# (blind9-compare-h200-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind9-h200-torch2.11 SETS sample15 random16)
memest_matrix(matrix-blind9b-h200-torch2.11 SETS random17)
# Session 15's second fresh sample (gpu_session15d.sh: sample seed 16, random seed 18),
# measured mid-session, left unread, compared once at the session's last change
# (blind10-compare-h200-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind10-h200-torch2.11 SETS sample16 random18)
# Session 16's sample (gpu_session16.sh: sample seed 17, random seed 19), measured in
# session 16, left unread, compared once at session 17's last change
# (blind11-compare-h200-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind11-h200-torch2.11 SETS sample17 random19)
# Session 17's sample (gpu_session17.sh: sample seed 18, random seed 20), measured after
# the session's last change to the estimate, compared once
# (blind12-compare-h200-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind12-h200-torch2.11 SETS sample18 random20)
# Session 18's sample (gpu_session18.sh: sample seed 19, random seed 21), measured at the
# session's start, left unread, compared once after its last change to the estimate
# (blind13-compare-h200-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind13-h200-torch2.11 SETS sample19 random21)
# Session 18's second sample (gpu_session18d.sh: sample seed 20, random seed 22), measured
# after the session's last change to the estimate, compared once
# (blind14-compare-h200-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind14-h200-torch2.11 SETS sample20 random22)
# Session 19's sample (gpu_session19.sh: sample seed 21, random seed 23), measured in the
# session's first GPU call, left unread, compared once after its last change to the
# estimate (blind15-compare-h200-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind15-h200-torch2.11 SETS sample21 random23)
# Session 20's sample (gpu_session20.sh: sample seed 22, random seed 24), measured in the
# session's first GPU call, left unread, compared once after its last change to the
# estimate (blind16-compare-h200-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind16-h200-torch2.11 SETS sample22 random24)
# Session 21's sample (gpu_session21.sh: sample seed 23, random seed 25), measured in the
# session's first GPU call, left unread, compared once after its last change to the
# estimate (blind17-compare-h200-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind17-h200-torch2.11 SETS sample23 random25)
# Session 22's sample (gpu_session22.sh: sample seed 24, random seed 26), measured in the
# session's first GPU call, left unread, compared once after its last change to the
# estimate (blind18-compare-h200-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind18-h200-torch2.11 SETS sample24 random26)
# Session 22's second sample (gpu_session22d.sh: sample seed 25, random seed 27), measured
# after the session's last change to the estimate, compared once
# (blind19-compare-h200-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind19-h200-torch2.11 SETS sample25 random27)
# Session 23's prepared sample (gpu_session23.sh: sample seed 26, random seed 28),
# measured at the start of session 25, compared once before any change to the estimate
# (blind20-compare-h200-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind20-h200-torch2.11 SETS sample26 random28)
# Session 25's second sample (gpu_session25.sh: sample seed 27, random seed 29), measured
# that session and compared once at its estimate (blind21-compare-h200-torch2.11.txt),
# now a regression set.
memest_matrix(matrix-blind21-h200-torch2.11 SETS sample27 random29)
# Session 26's sample (gpu_session26.sh: sample seed 28, random seed 30), measured that
# session, compared once at the start of session 27 (blind22-compare-h200-torch2.11.txt),
# now a regression set.
memest_matrix(matrix-blind22-h200-torch2.11 SETS sample28 random30)
# Session 27's (gpu_session27.sh: sample seed 29, random seed 31), measured on an H100,
# compared once (blind23-compare-h100-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind23-h100-torch2.11 SETS sample29 random31 TAG h100-torch2.11)
# Session 28's fresh sample (sample seed 30, random seed 32; blind24), also measured on an H100,
# compared once (blind24-compare-h100-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind24-h100-torch2.11 SETS sample30 random32 TAG h100-torch2.11)
# Session 29's fresh sample (sample seed 31, random seed 33; blind25), measured on the
# H200, compared once (blind25-compare-h200-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind25-h200-torch2.11 SETS sample31 random33)
# Session 30's fresh sample (sample seed 32, random seed 34; blind26), measured on an
# H100, compared once (blind26-compare-h100-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind26-h100-torch2.11 SETS sample32 random34 TAG h100-torch2.11)
# Session 31's fresh sample (sample seeds 33 and 36, random seed 35; blind27: the draw
# found only timm architectures, 20 a seed), measured on an H100, compared once
# (blind27-compare-h100-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind27-h100-torch2.11 SETS sample33 random35 TAG h100-torch2.11)
memest_matrix(matrix-blind27b-h100-torch2.11 SETS sample36 TAG h100-torch2.11)
# Session 32's fresh sample (sample seed 34, random seed 36; blind28: the draw's new audio,
# segmentation and torchvision pools), measured on an H100, compared once
# (blind28-compare-h100-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind28-h100-torch2.11 SETS sample34 random36 TAG h100-torch2.11)
# Session 33's fresh sample (sample seed 35, random seed 37; blind29), measured on an H100,
# compared once (blind29-compare-h100-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind29-h100-torch2.11 SETS sample35 random37 TAG h100-torch2.11)
# Session 34's fresh sample (sample seed 37, random seed 38; blind30), measured on an H100,
# compared once (blind30-compare-h100-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind30-h100-torch2.11 SETS sample37 random38 TAG h100-torch2.11)
# Session 35's fresh sample (sample seed 38, random seed 39; blind31), measured on an H100,
# compared once (blind31-compare-h100-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind31-h100-torch2.11 SETS sample38 random39 TAG h100-torch2.11)
# Session 36's fresh sample (sample seed 39, random seed 40; blind32), measured on an H200,
# compared once (blind32-compare-h200-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind32-h200-torch2.11 SETS sample39 random40)
# Session 39's fresh sample (sample seed 40, random seed 41; blind33), measured on an H100,
# compared once (blind33-compare-h100-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind33-h100-torch2.11 SETS sample40 random41 TAG h100-torch2.11)
# Session 39's closing sample (sample seed 41, random seed 42; blind34), measured on an H100
# after the session's changes, compared once (blind34-compare-h100-torch2.11.txt), now a
# regression set.
memest_matrix(matrix-blind34-h100-torch2.11 SETS sample41 random42 TAG h100-torch2.11)
# Session 39's last sample (sample seed 42, random seed 43; blind35), measured on an H100
# after the session's last change, compared once (blind35-compare-h100-torch2.11.txt), now
# a regression set.
memest_matrix(matrix-blind35-h100-torch2.11 SETS sample42 random43 TAG h100-torch2.11)
# Session 40's first sample (sample seed 43, random seed 44; blind36), measured on an H100,
# compared once at the session start's estimate (blind36-compare-h100-torch2.11.txt), now
# a regression set.
memest_matrix(matrix-blind36-h100-torch2.11 SETS sample43 random44 TAG h100-torch2.11)
# Session 41's sample (sample seed 44, random seed 45; blind37: the draw's first from the
# new transformers pools), measured on an H100, compared once at the session start's
# estimate (blind37-compare-h100-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind37-h100-torch2.11 SETS sample44 random45 TAG h100-torch2.11)
# Session 42's sample (sample seed 45, random seed 46; blind38: 13 of its 30 architectures
# multimodal models run on token ids, whose towers the file holds in no form), measured on
# an H100, compared once at the session start's estimate
# (blind38-compare-h100-torch2.11.txt), now a regression set.
memest_matrix(matrix-blind38-h100-torch2.11 SETS sample45 random46 TAG h100-torch2.11)
# Session 42's closing sample (sample seed 46, random seed 47; blind39, on an H200),
# compared once at the session's last estimate (blind39-compare-h200-torch2.11.txt).
memest_matrix(matrix-blind39-h200-torch2.11 SETS sample46 random47 TAG h200-torch2.11)
# Session 43's sample (sample seed 47, random seed 48; blind40: the draw found only 8 new
# architectures, timm's pool under 60 M parameters empty), measured on an H100, compared
# once at the session start's estimate (blind40-compare-h100-torch2.11.txt).
memest_matrix(matrix-blind40-h100-torch2.11 SETS sample47 random48 TAG h100-torch2.11)
# Session 43's closing sample (sample seed 48, random seed 49; blind41: 30 timm models, the
# first draw with timm up to 300 M parameters), measured on an H100 over two calls,
# compared once at the session's last estimate (blind41-compare-h100-torch2.11.txt).
memest_matrix(matrix-blind41-h100-torch2.11 SETS sample48 random49 TAG h100-torch2.11)
# Session 44's sample (sample seed 49, random seed 50; blind42: 9 timm models and 100 random
# modules measured in a 200 s deadline, the device's starts refused four times first),
# compared once at the session's last estimate (blind42-compare-h100-torch2.11.txt).
memest_matrix(matrix-blind42-h100-torch2.11 SETS sample49 random50 TAG h100-torch2.11)
# Its three decoder classifiers, measured again once they had a pad token; two exported.
memest_matrix(matrix-s8cls-h200-torch2.11 SETS sample8-cls VARIANTS dynamo-train-dyn)

# The fine-tuning set (issue 19): the files it was measured on, then the comparison.
if(EXISTS ${PROJECT_SOURCE_DIR}/models/finetune-h200-torch2.11.tar.xz)
  set(MEMEST_FT ${CMAKE_BINARY_DIR}/finetune-models)
  add_test(NAME finetune_unpack
           COMMAND ${MEMEST_PYTHON} -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])"
                   models/finetune-h200-torch2.11.tar.xz ${MEMEST_FT}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(finetune_unpack PROPERTIES FIXTURES_SETUP finetune_models)
  # Legacy-first graphs (validate export's default order) and the dynamo exporter's.
  foreach(variant legacy dynamo)
    set(dir ${MEMEST_FT})
    if(variant STREQUAL dynamo)
      set(dir ${MEMEST_FT}/dynamo)
    endif()
    add_test(NAME accuracy_finetune_${variant}
             COMMAND ${MEMEST_PYTHON} -m validate compare validate/results/finetune-h200-torch2.11.jsonl
                     validate/results/finetune2-h200-torch2.11.jsonl
                     --memest $<TARGET_FILE:memest> --models-dir ${dir} --skip-missing
                     --key finetune-h200-torch2.11.jsonl@${variant} --enforce
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties(accuracy_finetune_${variant} PROPERTIES FIXTURES_REQUIRED finetune_models TIMEOUT 600)
  endforeach()
endif()

# Data parallelism on one rank (issue 20): DDP in both bucket modes and FSDP2 against the
# unwrapped loop, on the zoo's files (the helper's smoke run on the H200).
if(EXISTS ${PROJECT_SOURCE_DIR}/validate/results/parallel-smoke-h200-torch2.11.jsonl)
  add_test(NAME accuracy_parallel_smoke
           COMMAND ${MEMEST_PYTHON} -m validate compare validate/results/parallel-smoke-h200-torch2.11.jsonl
                   --memest $<TARGET_FILE:memest> --key parallel-smoke-h200-torch2.11.jsonl --enforce
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(accuracy_parallel_smoke PROPERTIES TIMEOUT 300)
endif()
# The full run (validate/gpu_parallel.sh): four zoo models, and the 1.1B Llama of the
# fine-tuning set (its file comes with the fine-tuning archive).
if(EXISTS ${PROJECT_SOURCE_DIR}/validate/results/parallel-h200-torch2.11.jsonl)
  add_test(NAME accuracy_parallel
           COMMAND ${MEMEST_PYTHON} -m validate compare validate/results/parallel-h200-torch2.11.jsonl
                   --memest $<TARGET_FILE:memest> --models resnet50,bert_hf,gpt2_hf,llama_hf
                   --key parallel-h200-torch2.11.jsonl --enforce
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(accuracy_parallel PROPERTIES TIMEOUT 300)
  if(EXISTS ${PROJECT_SOURCE_DIR}/models/finetune-h200-torch2.11.tar.xz)
    add_test(NAME accuracy_parallel_llama1b
             COMMAND ${MEMEST_PYTHON} -m validate compare validate/results/parallel-h200-torch2.11.jsonl
                     --memest $<TARGET_FILE:memest> --models llama1b --models-dir ${MEMEST_FT}
                     --key parallel-h200-torch2.11.jsonl@llama1b --enforce
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties(accuracy_parallel_llama1b PROPERTIES FIXTURES_REQUIRED finetune_models TIMEOUT 300)
  endif()
endif()
