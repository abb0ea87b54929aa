#!/usr/bin/env bash
# Session 32's second device call: training data, not blind. Whole allocation event
# sequences (seqtrace32b) of blind28's cases farthest off, compared once at the session's
# start: over (st_convnext_zepto_rms fp32 +12.4% / bf16 +7.9%, st_test_efficientnet_evos
# bf16 +7.0% dynamo / +14.7% legacy, st_xception41 bf16 +3.7%, sv_squeezenet1_0 fp32 +3.2%,
# sv_mnasnet1_3 fp32 +2.9%), under (sv_deeplabv3_resnet50 fp32 -3.9%, sh_upernet_seg bf16
# -3.8%), and two largest-batch answers at the measured batch under the 24 GiB cap
# (st_dla46_c: memest 2.3% over; the audio spectrogram transformer 9.0% under).
#   bash validate/gpu_session32b.sh SECONDS
set -u
budget=${1:-300} L=/tmp/logs32b
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
seqtrace t1 st_convnext_zepto_rms/b2-fp32-adam,st_convnext_zepto_rms/b1-bf16-adamw,st_test_efficientnet_evos/b1-bf16-adamw,sv_squeezenet1_0/b2-fp32-adam &
seqtrace t2 sv_deeplabv3_resnet50/b2-fp32-adam,st_xception41/b1-bf16-adamw,sv_mnasnet1_3/b2-fp32-adam,sh_upernet_seg/b1-bf16-adamw &
seqtrace t3 st_dla46_c/bs1149-fp16-adam,sh_audio-spectrogram-transformer_aud/bs815-fp16-adam 24GiB &
finish
cat /tmp/res/seq-*.jsonl > $OUT/seqtrace32b-$tag.jsonl
for f in $L/*.log; do echo "== $f"; tail -n 4 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
