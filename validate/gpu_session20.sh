#!/usr/bin/env bash
# Session 20's first GPU call (issue 18): the session's fresh blind sample (blind16),
# measured first and left unread until the session's last change to the estimate: 30
# architectures drawn with seed 22 from timm and transformers, excluding every name a set
# or an earlier draw holds (b1-bf16-adamw and b2-fp32-adam), the largest batch under 24 GiB
# for twelve of them (fp16-adam, three workers so that one device-side assert loses at most
# four), and 200 random modules (seed 24, b1-fp16-adam), all exported through both
# exporters. Beside it, allocator traces (traces30) of earlier sets' misses and of cases an
# estimate change moved (training data, not blind).
#   bash validate/gpu_session20.sh SECONDS   (the deadline for starting new work)
set -u
export PYTHONUNBUFFERED=1
budget=${1:-440}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs20; mkdir -p $L /tmp/res /tmp/matrix
m() { python3 -m validate measure --deadline $dl "$@"; }
trace() {  # SET OUTNAME CONFIG MODELS
  m --set $1 --models $4 --configs $3 \
    --trace $(echo $4 | tr ',' '\n' | sed "s|\$|/$3|" | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-$2.jsonl > $L/tr-$2.log 2>&1
}
m --set random:24:200 --configs b1-fp16-adam --out /tmp/res/r24.jsonl > $L/m-r24.log 2>&1 &
python3 -m validate matrix --set random:24:200 --out /tmp/matrix --jobs 5 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-r24.log 2>&1 &
names=$(python3 -c "from validate import sample; print(','.join(sample.draw(22, 30)))" 2>$L/draw.log)
echo "drawn: $names"
h1=$(echo "$names" | tr ',' '\n' | awk 'NR%2==1' | paste -sd,)
h2=$(echo "$names" | tr ',' '\n' | awk 'NR%2==0' | paste -sd,)
mb1=$(echo "$names" | tr ',' '\n' | sed -n '2,5p' | paste -sd,)
mb2=$(echo "$names" | tr ',' '\n' | sed -n '12,15p' | paste -sd,)
mb3=$(echo "$names" | tr ',' '\n' | sed -n '22,25p' | paste -sd,)
m --set sample:22:30 --models "$h1" --configs b1-bf16-adamw,b2-fp32-adam --out /tmp/res/s1.jsonl > $L/m-s1.log 2>&1 &
m --set sample:22:30 --models "$h2" --configs b1-bf16-adamw,b2-fp32-adam --out /tmp/res/s2.jsonl > $L/m-s2.log 2>&1 &
for part in mb1 mb2 mb3; do
  python3 -m validate maxbatch --set sample:22:30 --models "${!part}" --configs fp16-adam --budget 24GiB \
      --deadline $dl --out /tmp/res/$part.jsonl > $L/$part.log 2>&1 &
done
python3 -m validate matrix --set sample:22:30 --models "$names" --out /tmp/matrix --jobs 5 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-sample.log 2>&1 &
# traces30: blind15's misses, now training data: random23's unders (rnd23_70 -29%,
# rnd23_132 -15%, rnd23_139, rnd23_50), its worst over (rnd23_175), st_resnet14t fp32 under,
# sh_bloom_cls fp32 (ALiBi, +32%) and st_levit_conv_128 fp32 (+16%) overs.
trace random:23:200 t1 b1-fp16-adam rnd23_70,rnd23_132 &
trace random:23:200 t2 b1-fp16-adam rnd23_139,rnd23_50,rnd23_175 &
trace sample:21:30 t3 b2-fp32-adam st_resnet14t,st_levit_conv_128 &
trace sample:21:30 t4 b2-fp32-adam sh_bloom_cls &
# Whatever still runs 90 s after the deadline is stopped, so that the files come back.
( sleep $((dl + 90 - $(date +%s))); pkill -f "validate (measure|matrix|maxbatch|export)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/s1.jsonl /tmp/res/s2.jsonl > $OUT/sample22-$tag.jsonl
cp /tmp/res/r24.jsonl $OUT/random24-$tag.jsonl
cat /tmp/res/mb1.jsonl /tmp/res/mb2.jsonl /tmp/res/mb3.jsonl > $OUT/sample22-maxbatch-$tag.jsonl
cat /tmp/res/tr-*.jsonl > $OUT/traces30-$tag.jsonl
tar -cJf $OUT/matrix-blind16.tar.xz -C /tmp/matrix .
tar -cJf $OUT/logs-session20.tar.xz -C /tmp logs20
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
