#!/usr/bin/env bash
# Session 18's GPU call (issue 18):
#  - probes on random grids (validate convprobe): transposed 3-D convolutions (family
#    tconv3d, seed 31), which the 3-D weight-gradient bound leaves out, and dilated 1-D/2-D
#    ones (family dilated, seed 32); a second seed of each (33, 34) is the disjoint check;
#  - allocator traces (traces25) of blind12's misses, training data now: rnd20_81 (-22.9%),
#    rnd20_92, rnd20_127, rnd20_148, rnd20_172, rnd20_37, rnd20_13, and
#    st_vit_small_patch16_rope_mixed_224 b2-fp32-adam (-7.9%);
#  - the end-of-session blind sample (blind13): 30 architectures drawn with seed 19 from timm
#    and transformers, excluding every name a set or an earlier draw holds (b1-bf16-adamw and
#    b2-fp32-adam), the largest batch under 24 GiB for ten of them (fp16-adam), and 200
#    random modules (seed 21, b1-fp16-adam), all exported through both exporters. Measured
#    here, compared once at the end of session 18, never looked at before.
#   bash validate/gpu_session18.sh SECONDS   (the deadline for starting new work)
set -u
export PYTHONUNBUFFERED=1
budget=${1:-440}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs18; mkdir -p $L /tmp/res /tmp/matrix
m() { python3 -m validate measure --deadline $dl "$@"; }
probe() {  # FAMILY SEED
  python3 -m validate convprobe --family $1 --seed $2 --n 400 --deadline $((t0 + budget / 2)) \
      --out /tmp/res/cp-$1-$2.jsonl > $L/cp-$1-$2.log 2>&1
  python3 -m validate convprobe --family $1 --seed $(($2 + 2)) --n 400 --deadline $dl \
      --out /tmp/res/cp-$1-$(($2 + 2)).jsonl > $L/cp-$1-$(($2 + 2)).log 2>&1
}
trace() {  # SET OUTNAME CONFIG MODELS
  m --set $1 --models $4 --configs $3 \
    --trace $(echo $4 | tr ',' '\n' | sed "s|\$|/$3|" | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-$2.jsonl > $L/tr-$2.log 2>&1
}
probe tconv3d 31 &
probe dilated 32 &
trace random:20:200 r20a b1-fp16-adam rnd20_81,rnd20_92 &
trace random:20:200 r20b b1-fp16-adam rnd20_127,rnd20_148,rnd20_172 &
trace random:20:200 r20c b1-fp16-adam rnd20_37,rnd20_13 &
trace sample:18:30 s18 b2-fp32-adam st_vit_small_patch16_rope_mixed_224 &
m --set random:21:200 --configs b1-fp16-adam --out /tmp/res/r21.jsonl > $L/m-r21.log 2>&1 &
python3 -m validate matrix --set random:21:200 --out /tmp/matrix --jobs 6 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-r21.log 2>&1 &
names=$(python3 -c "from validate import sample; print(','.join(sample.draw(19, 30)))" 2>$L/draw.log)
echo "drawn: $names"
h1=$(echo "$names" | tr ',' '\n' | awk 'NR%2==1' | paste -sd,)
h2=$(echo "$names" | tr ',' '\n' | awk 'NR%2==0' | paste -sd,)
mb1=$(echo "$names" | tr ',' '\n' | sed -n '2,6p' | paste -sd,)
mb2=$(echo "$names" | tr ',' '\n' | sed -n '17,21p' | paste -sd,)
m --set sample:19:30 --models "$h1" --configs b1-bf16-adamw,b2-fp32-adam --out /tmp/res/s1.jsonl > $L/m-s1.log 2>&1 &
m --set sample:19:30 --models "$h2" --configs b1-bf16-adamw,b2-fp32-adam --out /tmp/res/s2.jsonl > $L/m-s2.log 2>&1 &
for part in mb1 mb2; do
  python3 -m validate maxbatch --set sample:19:30 --models "${!part}" --configs fp16-adam --budget 24GiB \
      --deadline $dl --out /tmp/res/$part.jsonl > $L/$part.log 2>&1 &
done
python3 -m validate matrix --set sample:19:30 --models "$names" --out /tmp/matrix --jobs 6 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-sample.log 2>&1 &
# Whatever still runs 90 s after the deadline is stopped, so that the files come back.
( sleep $((dl + 90 - $(date +%s))); pkill -f "validate (measure|matrix|maxbatch|export|convprobe)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/s1.jsonl /tmp/res/s2.jsonl > $OUT/sample19-$tag.jsonl
cp /tmp/res/r21.jsonl $OUT/random21-$tag.jsonl
cat /tmp/res/mb1.jsonl /tmp/res/mb2.jsonl > $OUT/sample19-maxbatch-$tag.jsonl
cat /tmp/res/tr-*.jsonl > $OUT/traces25-$tag.jsonl
cat /tmp/res/cp-*.jsonl | xz > $OUT/convprobe-s18-$tag.jsonl.xz
tar -cJf $OUT/matrix-blind13.tar.xz -C /tmp/matrix .
tar -cJf $OUT/logs-session18.tar.xz -C /tmp logs18
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
