#!/usr/bin/env bash
# Session 15's first GPU call (issues 18, 17), measured now; the blind part is compared
# once at the end of the session, after its changes (nobody looks at it before):
#  - the end-of-session blind sample, part 1: 30 architectures drawn with seed 15 from timm
#    and transformers, excluding every name a set or an earlier draw holds (b1-fp16-adam and
#    b1-fp32-adamw), the largest batch under 24 GiB for ten of them, and 120 random modules
#    (seed 16, b2-fp32-adam), all exported through both exporters (random seed 17 follows in
#    the second call);
#   bash validate/gpu_session15.sh SECONDS   (the deadline for starting new work)
set -u
export PYTHONUNBUFFERED=1
budget=${1:-420}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs15; mkdir -p $L /tmp/res /tmp/matrix
m() { python3 -m validate measure --deadline $dl "$@"; }
m --set random:16:120 --configs b2-fp32-adam --out /tmp/res/r16.jsonl > $L/m-r16.log 2>&1 &
python3 -m validate matrix --set random:16:120 --out /tmp/matrix --jobs 6 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-r16.log 2>&1 &
names=$(python3 -c "from validate import sample; print(','.join(sample.draw(15, 30)))" 2>$L/draw.log)
echo "drawn: $names"
h1=$(echo "$names" | tr ',' '\n' | awk 'NR%2==1' | paste -sd,)
h2=$(echo "$names" | tr ',' '\n' | awk 'NR%2==0' | paste -sd,)
mb1=$(echo "$names" | tr ',' '\n' | sed -n '2,6p' | paste -sd,)
mb2=$(echo "$names" | tr ',' '\n' | sed -n '17,21p' | paste -sd,)
m --set sample:15:30 --models "$h1" --configs b1-fp16-adam,b1-fp32-adamw --out /tmp/res/s1.jsonl > $L/m-s1.log 2>&1 &
m --set sample:15:30 --models "$h2" --configs b1-fp16-adam,b1-fp32-adamw --out /tmp/res/s2.jsonl > $L/m-s2.log 2>&1 &
for part in mb1 mb2; do
  python3 -m validate maxbatch --set sample:15:30 --models "${!part}" --configs bf16-adamw --budget 24GiB \
      --deadline $dl --out /tmp/res/$part.jsonl > $L/$part.log 2>&1 &
done
python3 -m validate matrix --set sample:15:30 --models "$names" --out /tmp/matrix --jobs 6 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-sample.log 2>&1 &
# Whatever still runs 100 s after the deadline is stopped, so that the files come back.
( sleep $((dl + 100 - $(date +%s))); pkill -f "validate (measure|matrix|maxbatch|export)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/s1.jsonl /tmp/res/s2.jsonl > $OUT/sample15-$tag.jsonl
cp /tmp/res/r16.jsonl $OUT/random16-$tag.jsonl
cat /tmp/res/mb1.jsonl /tmp/res/mb2.jsonl > $OUT/sample15-maxbatch-$tag.jsonl
tar -cJf $OUT/matrix-blind9.tar.xz -C /tmp/matrix .
tar -cJf $OUT/logs-session15.tar.xz -C /tmp logs15
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
