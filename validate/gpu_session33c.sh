#!/usr/bin/env bash
# Session 33's third device call: training data for the next session (seqtrace33c). The
# container hold (docs/accuracy.md, session 33, tried and reverted): a frozen ResNet-50
# (resnet50_fc, --train fc), where memest with the hold went -0.0% -> +4.7%, and
# nf_resnet26 b2-fp32-sgdm (-4.8% -> -1.7% with it); and torchvision's resnet50 trained
# whole, for the same frames with autograd saving.
#   bash validate/gpu_session33c.sh SECONDS
set -u
budget=${1:-200} L=/tmp/logs33c
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
seqtrace t1 resnet50_fc/b1-fp32-adam,nf_resnet26/b2-fp32-sgdm &
finish
cat /tmp/res/seq-*.jsonl | xz -9 > $OUT/seqtrace33c-$tag.jsonl.xz
for f in $L/*.log; do echo "== $f"; tail -n 4 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
