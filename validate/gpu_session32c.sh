#!/usr/bin/env bash
# Session 32's third device call: training data. Whole allocation event sequences
# (seqtrace32c) to settle two mechanisms: (1) torch.var in EvoNorm's group_std, which
# fused reads right in bf16 and 13% low in fp32 (st_test_efficientnet_evos,
# sample10's st_resnetv2_50d_evos); (2) whether the attention masks the exporters traced
# from shapes alone are made at run time (the audio spectrogram transformer's GPU run made
# none; dropping them everywhere lost sh_granite_lm's measured reserved memory).
#   bash validate/gpu_session32c.sh SECONDS
set -u
budget=${1:-240} L=/tmp/logs32c
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
seqtrace t1 st_test_efficientnet_evos/b2-fp32-adam,st_resnetv2_50d_evos/b1-fp32-adam,st_resnetv2_50d_evos/b1-bf16-adamw &
seqtrace t2 sh_granite_lm/bs1346-fp16-adam,sh_audio-spectrogram-transformer_aud/b1-bf16-adamw &
seqtrace t3 sh_roberta-prelayernorm_lm/bs1600-bf16-adamw,sh_opt_cls/b1-bf16-adamw &
finish
cat /tmp/res/seq-*.jsonl > $OUT/seqtrace32c-$tag.jsonl
for f in $L/*.log; do echo "== $f"; tail -n 4 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
