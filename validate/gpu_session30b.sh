#!/usr/bin/env bash
# Session 30's second device call: the whole allocation event sequences (seqtrace30b) of
# blind26's misses, for the next session (training data, not blind): random34's
# convolution nets memest puts low (rnd34_182 -44.9%, rnd34_20 -30.7%, rnd34_142 -16.5%,
# rnd34_73 -15.0%, rnd34_152 -15.0%, rnd34_171 -10.9%) and high (rnd34_25 +53.1%);
# st_levit_conv_128s b2-fp32-adam (+13.0%, both exporters); sh_mobilenet_v1_img at batch
# 792 (the dynamo export's largest batch came out 2.1% over).
#   bash validate/gpu_session30b.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-200} L=/tmp/logs30b
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
seqtrace t1 rnd34_182/b1-fp16-adam,rnd34_20/b1-fp16-adam,rnd34_142/b1-fp16-adam,rnd34_25/b1-fp16-adam &
seqtrace t2 rnd34_73/b1-fp16-adam,rnd34_152/b1-fp16-adam,rnd34_171/b1-fp16-adam,st_levit_conv_128s/b2-fp32-adam &
seqtrace t3 sh_mobilenet_v1_img/bs792-fp16-adam &
finish
cat /tmp/res/seq-*.jsonl > $OUT/seqtrace30b-$tag.jsonl
for f in $L/*.log; do echo "== $f"; tail -n 3 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
