#!/usr/bin/env bash
# Session 10's GPU call (issues 18 and 17), measured now and compared once at the end of
# the session, after its changes (nobody looks at it before):
#  - the end-of-session blind sample: 30 architectures drawn with seed 10 from timm and
#    transformers, excluding every name a set or an earlier draw holds (b1-fp32-adam,
#    b1-bf16-adamw), and 200 random modules (seed 6: 120 at b1-fp16-adam, seed 7: 80 at
#    b2-bf16-adamw), exported through both exporters;
#  - the largest batch under 24 GiB for ten drawn architectures (five decoders, five timm);
#  - allocator traces of the underestimates left on session 9's blind sample (random
#    convolution nets with up-sampling and transposed or 3-D convolutions), and of three
#    real architectures off by more than 2% under bf16.
#   bash validate/gpu_session10.sh SECONDS   (the deadline for starting new work)
set -u
export PYTHONUNBUFFERED=1
budget=${1:-420}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs10; mkdir -p $L /tmp/res /tmp/matrix
m() { python3 -m validate measure --deadline $dl "$@"; }
m --set random:6:120 --configs b1-fp16-adam --out /tmp/res/r6.jsonl > $L/m-r6.log 2>&1 &
m --set random:7:80 --configs b2-bf16-adamw --out /tmp/res/r7.jsonl > $L/m-r7.log 2>&1 &
( python3 -m validate matrix --set random:6:120 --out /tmp/matrix --jobs 3 --deadline $dl \
      --variants legacy-train-dyn,dynamo-train-dyn
  python3 -m validate matrix --set random:7:80 --out /tmp/matrix --jobs 3 --deadline $dl \
      --variants legacy-train-dyn,dynamo-train-dyn ) > $L/x-random.log 2>&1 &
tr5=rnd5_14,rnd5_27,rnd5_47,rnd5_50,rnd5_39,rnd5_58,rnd5_20
m --set random:5:60 --models $tr5 --configs b1-fp16-adam \
    --trace $(echo $tr5 | tr ',' '\n' | sed 's|$|/b1-fp16-adam|' | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-r5.jsonl > $L/tr-r5.log 2>&1 &
tr9=st_nextvit_base,st_tf_efficientnet_lite0,sh_openai-gpt_cls
m --set sample:9:24 --models $tr9 --configs b1-bf16-adamw \
    --trace $(echo $tr9 | tr ',' '\n' | sed 's|$|/b1-bf16-adamw|' | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-s9.jsonl > $L/tr-s9.log 2>&1 &
names=$(python3 -c "from validate import sample; print(','.join(sample.draw(10, 30)))" 2>$L/draw.log)
echo "drawn: $names"
h1=$(echo "$names" | tr ',' '\n' | awk 'NR%2==1' | paste -sd,)
h2=$(echo "$names" | tr ',' '\n' | awk 'NR%2==0' | paste -sd,)
mb1=$(echo "$names" | tr ',' '\n' | sed -n '1,5p' | paste -sd,)
mb2=$(echo "$names" | tr ',' '\n' | sed -n '11,15p' | paste -sd,)
m --set sample:10:30 --models "$h1" --configs b1-fp32-adam,b1-bf16-adamw --out /tmp/res/s1.jsonl > $L/m-s1.log 2>&1 &
m --set sample:10:30 --models "$h2" --configs b1-fp32-adam,b1-bf16-adamw --out /tmp/res/s2.jsonl > $L/m-s2.log 2>&1 &
for part in mb1 mb2; do
  python3 -m validate maxbatch --set sample:10:30 --models "${!part}" --configs fp16-adam --budget 24GiB \
      --deadline $dl --out /tmp/res/$part.jsonl > $L/$part.log 2>&1 &
done
python3 -m validate matrix --set sample:10:30 --models "$names" --out /tmp/matrix --jobs 4 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-sample.log 2>&1 &
# Whatever still runs 100 s after the deadline is stopped, so that the files come back.
( sleep $((dl + 100 - $(date +%s))); pkill -f "validate (measure|matrix|maxbatch|export)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/s1.jsonl /tmp/res/s2.jsonl > $OUT/sample10-$tag.jsonl
cat /tmp/res/r6.jsonl /tmp/res/r7.jsonl > $OUT/random67-$tag.jsonl
cat /tmp/res/mb1.jsonl /tmp/res/mb2.jsonl > $OUT/sample10-maxbatch-$tag.jsonl
cat /tmp/res/tr-r5.jsonl /tmp/res/tr-s9.jsonl > $OUT/traces13-$tag.jsonl
tar -cJf $OUT/matrix-blind4.tar.xz -C /tmp/matrix .
tar -cJf $OUT/logs-session10.tar.xz -C /tmp logs10
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
