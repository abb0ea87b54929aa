#!/usr/bin/env bash
# Session 31's second device call: the rest of blind27. The first call's draw (sample seed
# 33) found 20 architectures, all timm: every transformers model type the draw can build
# is in a set already. A second timm draw (sample seed 36, disjoint: sample33's names are
# committed and so known) brings the sample to 40 architectures, and its largest-batch
# searches (three parts of four names, spread over the 20) to at least ten. Committed
# unread, compared once.
#   bash validate/gpu_session31b.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-420} L=/tmp/logs31b
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
s=36
names=$(python3 -c "from validate import sample; print(','.join(sample.draw($s, 30)))" 2>$L/draw.log)
echo "drawn: $names"
h1=$(echo "$names" | tr ',' '\n' | awk 'NR%2==1' | paste -sd,)
h2=$(echo "$names" | tr ',' '\n' | awk 'NR%2==0' | paste -sd,)
m --set sample:$s:30 --models "$h1" --configs b1-bf16-adamw,b2-fp32-adam --out /tmp/res/s1.jsonl > $L/m-s1.log 2>&1 &
m --set sample:$s:30 --models "$h2" --configs b1-bf16-adamw,b2-fp32-adam --out /tmp/res/s2.jsonl > $L/m-s2.log 2>&1 &
(mb_part $s "$names" 2,5; mb_part $s "$names" 16,19) &
mb_part $s "$names" 9,12 &
python3 -m validate matrix --set sample:$s:30 --models "$names" --out /tmp/matrix --jobs 5 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-sample.log 2>&1 &
finish
cat /tmp/res/s1.jsonl /tmp/res/s2.jsonl > $OUT/sample$s-$tag.jsonl
cat /tmp/res/mb-*.jsonl > $OUT/sample$s-maxbatch-$tag.jsonl
tar -cJf $OUT/matrix-blind27b.tar.xz -C /tmp/matrix .
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
