#!/usr/bin/env bash
# Session 18's last GPU call (issue 18): a second fresh blind sample (blind14), measured
# after the session's last change to the estimate (fd8fdf7) and compared once: 30
# architectures drawn with seed 20 from timm and transformers, excluding every name a set
# or an earlier draw holds (b1-bf16-adamw and b2-fp32-adam), the largest batch under 24 GiB
# for ten of them (fp16-adam), and 200 random modules (seed 22, b1-fp16-adam), all exported
# through both exporters.
#   bash validate/gpu_session18d.sh SECONDS   (the deadline for starting new work)
set -u
export PYTHONUNBUFFERED=1
budget=${1:-440}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs18d; mkdir -p $L /tmp/res /tmp/matrix
m() { python3 -m validate measure --deadline $dl "$@"; }
m --set random:22:200 --configs b1-fp16-adam --out /tmp/res/r22.jsonl > $L/m-r22.log 2>&1 &
python3 -m validate matrix --set random:22:200 --out /tmp/matrix --jobs 6 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-r22.log 2>&1 &
names=$(python3 -c "from validate import sample; print(','.join(sample.draw(20, 30)))" 2>$L/draw.log)
echo "drawn: $names"
h1=$(echo "$names" | tr ',' '\n' | awk 'NR%2==1' | paste -sd,)
h2=$(echo "$names" | tr ',' '\n' | awk 'NR%2==0' | paste -sd,)
mb1=$(echo "$names" | tr ',' '\n' | sed -n '2,6p' | paste -sd,)
mb2=$(echo "$names" | tr ',' '\n' | sed -n '17,21p' | paste -sd,)
m --set sample:20:30 --models "$h1" --configs b1-bf16-adamw,b2-fp32-adam --out /tmp/res/s1.jsonl > $L/m-s1.log 2>&1 &
m --set sample:20:30 --models "$h2" --configs b1-bf16-adamw,b2-fp32-adam --out /tmp/res/s2.jsonl > $L/m-s2.log 2>&1 &
for part in mb1 mb2; do
  python3 -m validate maxbatch --set sample:20:30 --models "${!part}" --configs fp16-adam --budget 24GiB \
      --deadline $dl --out /tmp/res/$part.jsonl > $L/$part.log 2>&1 &
done
python3 -m validate matrix --set sample:20:30 --models "$names" --out /tmp/matrix --jobs 6 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-sample.log 2>&1 &
# Whatever still runs 90 s after the deadline is stopped, so that the files come back.
( sleep $((dl + 90 - $(date +%s))); pkill -f "validate (measure|matrix|maxbatch|export)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/s1.jsonl /tmp/res/s2.jsonl > $OUT/sample20-$tag.jsonl
cp /tmp/res/r22.jsonl $OUT/random22-$tag.jsonl
cat /tmp/res/mb1.jsonl /tmp/res/mb2.jsonl > $OUT/sample20-maxbatch-$tag.jsonl
tar -cJf $OUT/matrix-blind14.tar.xz -C /tmp/matrix .
tar -cJf $OUT/logs-session18d.tar.xz -C /tmp logs18d
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
