#!/usr/bin/env bash
# Session 15's fourth GPU call (issues 18, 17):
#  - a second, fresh blind sample, measured now, left unread, and compared once at the end
#    of the session (the first, gpu_session15.sh/15b.sh, was compared at 9963920 and is
#    training data since): 30 architectures drawn with seed 16 from timm and transformers,
#    excluding every name a set or an earlier draw holds (b1-fp16-adam, b1-fp32-adamw), the
#    largest batch under 24 GiB for ten of them, and 120 random modules (seed 18,
#    b2-bf16-adamw), all exported through both exporters;
#  - training data: depthwise convolutions, three in four channels-last, with the CUDA
#    kernels of each backward call (`convprobe --family depthwise --kernels`, seed 33 to fit,
#    seed 34 to check).
#   bash validate/gpu_session15d.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-400}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs15d; mkdir -p $L /tmp/res /tmp/matrix
m() { python3 -m validate measure --deadline $dl "$@"; }
m --set random:18:120 --configs b2-bf16-adamw --out /tmp/res/r18.jsonl > $L/m-r18.log 2>&1 &
python3 -m validate matrix --set random:18:120 --out /tmp/matrix --jobs 6 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-r18.log 2>&1 &
for seed in 33 34; do
  python3 -m validate convprobe --family depthwise --kernels --seed $seed --n 300 --deadline $dl \
      --out /tmp/res/cp-dw-$seed.jsonl > $L/cp-dw-$seed.log 2>&1 &
done
names=$(python3 -c "from validate import sample; print(','.join(sample.draw(16, 30)))" 2>$L/draw.log)
echo "drawn: $names"
h1=$(echo "$names" | tr ',' '\n' | awk 'NR%2==1' | paste -sd,)
h2=$(echo "$names" | tr ',' '\n' | awk 'NR%2==0' | paste -sd,)
mb1=$(echo "$names" | tr ',' '\n' | sed -n '2,6p' | paste -sd,)
mb2=$(echo "$names" | tr ',' '\n' | sed -n '17,21p' | paste -sd,)
m --set sample:16:30 --models "$h1" --configs b1-fp16-adam,b1-fp32-adamw --out /tmp/res/s1.jsonl > $L/m-s1.log 2>&1 &
m --set sample:16:30 --models "$h2" --configs b1-fp16-adam,b1-fp32-adamw --out /tmp/res/s2.jsonl > $L/m-s2.log 2>&1 &
for part in mb1 mb2; do
  python3 -m validate maxbatch --set sample:16:30 --models "${!part}" --configs bf16-adamw --budget 24GiB \
      --deadline $dl --out /tmp/res/$part.jsonl > $L/$part.log 2>&1 &
done
python3 -m validate matrix --set sample:16:30 --models "$names" --out /tmp/matrix --jobs 6 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-sample.log 2>&1 &
# Whatever still runs 100 s after the deadline is stopped, so that the files come back.
( sleep $((dl + 100 - $(date +%s))); pkill -f "validate (measure|matrix|maxbatch|export|convprobe)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/s1.jsonl /tmp/res/s2.jsonl > $OUT/sample16-$tag.jsonl
cp /tmp/res/r18.jsonl $OUT/random18-$tag.jsonl
cat /tmp/res/mb1.jsonl /tmp/res/mb2.jsonl > $OUT/sample16-maxbatch-$tag.jsonl
tar -cJf $OUT/matrix-blind10.tar.xz -C /tmp/matrix .
cat /tmp/res/cp-dw-33.jsonl /tmp/res/cp-dw-34.jsonl | xz -c > $OUT/convprobe-depthwise-$tag.jsonl.xz
tar -cJf $OUT/logs-session15d.tar.xz -C /tmp logs15d
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
