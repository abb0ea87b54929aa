#!/usr/bin/env bash
# Session 11's third GPU call, training data (nothing here is blind): allocator traces of
# the corpus's standing underestimates, none traced before (cspresnet50 with in-place
# LeakyReLU, wav2letter, deeplabv3_mobilenet_v3_large, gpt_bigcode, dcgan_g, falcon, t5), and
# cuDNN RNNs on a random grid (validate kernels --parts rnngrid: two directions, input apart
# from hidden; stacked bidirectional calls were found short).
#   bash validate/gpu_session11c.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-200}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs11c; mkdir -p $L /tmp/res
trace() {  # SET OUTNAME CONFIG MODELS
  python3 -m validate measure --deadline $dl --set $1 --models $4 --configs $3 \
    --trace $(echo $4 | tr ',' '\n' | sed "s|\$|/$3|" | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-$2.jsonl > $L/tr-$2.log 2>&1
}
trace corpus c1 b1-fp32-adam cspresnet50,deeplabv3_mobilenet_v3_large,t5 &
trace corpus c2 b2-fp32-sgdm wav2letter,gpt_bigcode &
trace corpus c3 b1-bf16-adamw dcgan_g &
trace corpus c4 b1-fp16-adam falcon &
python3 -m validate kernels --parts rnngrid --deadline $dl --out /tmp/res/rnngrid.jsonl > $L/rnngrid.log 2>&1 &
( sleep $((dl + 60 - $(date +%s))); pkill -f "validate (measure|kernels)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/tr-*.jsonl > $OUT/traces16-$tag.jsonl
cp /tmp/res/rnngrid.jsonl $OUT/kernels-rnngrid-$tag.jsonl
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
