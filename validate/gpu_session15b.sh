#!/usr/bin/env bash
# Session 15's second GPU call:
#  - the end-of-session blind sample, part 2: 80 random modules (seed 17, b1-fp16-adamw),
#    measured and exported through both exporters; compared once at the end of the session;
#  - training data: convolutions on channels-last inputs (`convprobe --family
#    channels-last`, seed 31 to fit, seed 32 to check), reductions over channels-last maps
#    (`reduceprobe`, seeds 1 and 2), and allocator traces (traces22) of earlier samples'
#    misses: st_eca_vovnet39b fp16 (sample seed 14), rnd14_8, rnd14_43 (seed 14), rnd15_23
#    (seed 15).
#   bash validate/gpu_session15b.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-240}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs15b; mkdir -p $L /tmp/res /tmp/matrix17
m() { python3 -m validate measure --deadline $dl "$@"; }
m --set random:17:80 --configs b1-fp16-adamw --out /tmp/res/r17.jsonl > $L/m-r17.log 2>&1 &
python3 -m validate matrix --set random:17:80 --out /tmp/matrix17 --jobs 10 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-r17.log 2>&1 &
for seed in 31 32; do
  python3 -m validate convprobe --family channels-last --seed $seed --n 400 --deadline $dl \
      --out /tmp/res/cp-cl-$seed.jsonl > $L/cp-cl-$seed.log 2>&1 &
done
for seed in 1 2; do
  python3 -m validate reduceprobe --seed $seed --n 300 --deadline $dl --out /tmp/res/rp-$seed.jsonl > $L/rp-$seed.log 2>&1 &
done
trace() {  # SET OUTNAME CONFIG MODELS
  m --set $1 --models $4 --configs $3 \
    --trace $(echo $4 | tr ',' '\n' | sed "s|\$|/$3|" | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-$2.jsonl > $L/tr-$2.log 2>&1
}
trace sample:14:30 s14 b1-fp16-adam st_eca_vovnet39b &
trace random:14:120 r14 b2-fp32-adam rnd14_8,rnd14_43 &
trace random:15:80 r15 b1-fp16-adamw rnd15_23 &
( sleep $((dl + 80 - $(date +%s))); pkill -f "validate (measure|matrix|convprobe|reduceprobe)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cp /tmp/res/r17.jsonl $OUT/random17-$tag.jsonl
tar -cJf $OUT/matrix-blind9b.tar.xz -C /tmp/matrix17 .
cat /tmp/res/cp-cl-31.jsonl /tmp/res/cp-cl-32.jsonl | xz -c > $OUT/convprobe-cl-$tag.jsonl.xz
cat /tmp/res/rp-1.jsonl /tmp/res/rp-2.jsonl | xz -c > $OUT/reduceprobe-$tag.jsonl.xz
cat /tmp/res/tr-*.jsonl > $OUT/traces22-$tag.jsonl
tar -cJf $OUT/logs-session15b.tar.xz -C /tmp logs15b
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
