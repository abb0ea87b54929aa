#!/usr/bin/env bash
# Session 11's first GPU call (issues 18 and 17), measured now and compared once at the end
# of the session, after its changes (nobody looks at the blind part before):
#  - the end-of-session blind sample, part 1: 30 architectures drawn with seed 11 from timm
#    and transformers, excluding every name a set or an earlier draw holds (b1-fp32-adam,
#    b1-bf16-adamw), the largest batch under 24 GiB for ten of them, and 120 random modules
#    (seed 8, b1-fp16-adam), all exported through both exporters (random seed 9 follows in
#    the second call so that its exports finish inside the deadline);
#  - training data (not blind): allocator traces of session 10's blind misses that no trace
#    holds yet (a conv net of up-sampling and pooling only, reflect/replicate/circular
#    padded convolutions, a dilated Conv1d, and three timm nets off by 15-26% over).
#   bash validate/gpu_session11.sh SECONDS   (the deadline for starting new work)
set -u
export PYTHONUNBUFFERED=1
budget=${1:-420}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs11; mkdir -p $L /tmp/res /tmp/matrix
m() { python3 -m validate measure --deadline $dl "$@"; }
trace() {  # SET OUTNAME CONFIG MODELS
  m --set $1 --models $4 --configs $3 \
    --trace $(echo $4 | tr ',' '\n' | sed "s|\$|/$3|" | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-$2.jsonl > $L/tr-$2.log 2>&1
}
m --set random:8:120 --configs b1-fp16-adam --out /tmp/res/r8.jsonl > $L/m-r8.log 2>&1 &
python3 -m validate matrix --set random:8:120 --out /tmp/matrix --jobs 4 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-r8.log 2>&1 &
( trace random:7:80 r7 b2-bf16-adamw rnd7_11,rnd7_22,rnd7_41
  trace random:6:120 r6 b1-fp16-adam rnd6_5,rnd6_49
  trace sample:10:30 s10a b1-fp32-adam st_cspdarknet53,sh_jetmoe_lm
  trace sample:10:30 s10b b1-bf16-adamw st_resnetv2_50d_evos ) &
names=$(python3 -c "from validate import sample; print(','.join(sample.draw(11, 30)))" 2>$L/draw.log)
echo "drawn: $names"
h1=$(echo "$names" | tr ',' '\n' | awk 'NR%2==1' | paste -sd,)
h2=$(echo "$names" | tr ',' '\n' | awk 'NR%2==0' | paste -sd,)
mb1=$(echo "$names" | tr ',' '\n' | sed -n '1,5p' | paste -sd,)
mb2=$(echo "$names" | tr ',' '\n' | sed -n '11,15p' | paste -sd,)
m --set sample:11:30 --models "$h1" --configs b1-fp32-adam,b1-bf16-adamw --out /tmp/res/s1.jsonl > $L/m-s1.log 2>&1 &
m --set sample:11:30 --models "$h2" --configs b1-fp32-adam,b1-bf16-adamw --out /tmp/res/s2.jsonl > $L/m-s2.log 2>&1 &
for part in mb1 mb2; do
  python3 -m validate maxbatch --set sample:11:30 --models "${!part}" --configs fp16-adam --budget 24GiB \
      --deadline $dl --out /tmp/res/$part.jsonl > $L/$part.log 2>&1 &
done
python3 -m validate matrix --set sample:11:30 --models "$names" --out /tmp/matrix --jobs 4 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-sample.log 2>&1 &
# Whatever still runs 100 s after the deadline is stopped, so that the files come back.
( sleep $((dl + 100 - $(date +%s))); pkill -f "validate (measure|matrix|maxbatch|export)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/s1.jsonl /tmp/res/s2.jsonl > $OUT/sample11-$tag.jsonl
cp /tmp/res/r8.jsonl $OUT/random8-$tag.jsonl
cat /tmp/res/mb1.jsonl /tmp/res/mb2.jsonl > $OUT/sample11-maxbatch-$tag.jsonl
cat /tmp/res/tr-*.jsonl > $OUT/traces15-$tag.jsonl
tar -cJf $OUT/matrix-blind5.tar.xz -C /tmp/matrix .
tar -cJf $OUT/logs-session11.tar.xz -C /tmp logs11
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
