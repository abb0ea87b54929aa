#!/usr/bin/env bash
# Session 22's first GPU call (issue 18): the session's fresh blind sample (blind18),
# measured first and left unread until the session's last change to the estimate: 30
# architectures drawn with seed 24 from timm and transformers, excluding every name a set
# or an earlier draw holds (b1-bf16-adamw and b2-fp32-adam), the largest batch under 24 GiB
# for twelve of them (fp16-adam, three workers so that one device-side assert loses at most
# four), and 200 random modules (seed 26, b1-fp16-adam), all exported through both
# exporters. Beside it, allocator traces (traces36) of earlier sets' misses and of cases an
# estimate change moved (training data, not blind).
#   bash validate/gpu_session22.sh SECONDS   (the deadline for starting new work)
set -u
export PYTHONUNBUFFERED=1
budget=${1:-440}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs22; mkdir -p $L /tmp/res /tmp/matrix
m() { python3 -m validate measure --deadline $dl "$@"; }
trace() {  # SET OUTNAME CONFIG MODELS
  m --set $1 --models $4 --configs $3 \
    --trace $(echo $4 | tr ',' '\n' | sed "s|\$|/$3|" | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-$2.jsonl > $L/tr-$2.log 2>&1
}
m --set random:26:200 --configs b1-fp16-adam --out /tmp/res/r26.jsonl > $L/m-r26.log 2>&1 &
python3 -m validate matrix --set random:26:200 --out /tmp/matrix --jobs 7 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-r26.log 2>&1 &
names=$(python3 -c "from validate import sample; print(','.join(sample.draw(24, 30)))" 2>$L/draw.log)
echo "drawn: $names"
h1=$(echo "$names" | tr ',' '\n' | awk 'NR%2==1' | paste -sd,)
h2=$(echo "$names" | tr ',' '\n' | awk 'NR%2==0' | paste -sd,)
mb1=$(echo "$names" | tr ',' '\n' | sed -n '2,5p' | paste -sd,)
mb2=$(echo "$names" | tr ',' '\n' | sed -n '12,15p' | paste -sd,)
mb3=$(echo "$names" | tr ',' '\n' | sed -n '22,25p' | paste -sd,)
m --set sample:24:30 --models "$h1" --configs b1-bf16-adamw,b2-fp32-adam --out /tmp/res/s1.jsonl > $L/m-s1.log 2>&1 &
m --set sample:24:30 --models "$h2" --configs b1-bf16-adamw,b2-fp32-adam --out /tmp/res/s2.jsonl > $L/m-s2.log 2>&1 &
for part in mb1 mb2 mb3; do
  python3 -m validate maxbatch --set sample:24:30 --models "${!part}" --configs fp16-adam --budget 24GiB \
      --deadline $dl --out /tmp/res/$part.jsonl > $L/$part.log 2>&1 &
done
python3 -m validate matrix --set sample:24:30 --models "$names" --out /tmp/matrix --jobs 5 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-sample.log 2>&1 &
# traces36: blind17's misses, now training data (compared once at e1c0776): random25's
# unders rnd25_53 (3-D transposed, -6.9%), rnd25_86 (2-D dilated depthwise, -6.3%),
# rnd25_48 (3-D dilated reflect, -2.2%) and overs rnd25_1 (1-D, +15.2%), rnd25_31 (grouped
# 7x7 SAME reflect, +14.3%), rnd25_28 (bidirectional LSTM, +15.2% legacy).
trace random:25:200 t1 b1-fp16-adam rnd25_53,rnd25_86,rnd25_48 &
trace random:25:200 t2 b1-fp16-adam rnd25_1,rnd25_31,rnd25_28 &
# Whatever still runs 90 s after the deadline is stopped, so that the files come back.
( sleep $((dl + 90 - $(date +%s))); pkill -f "validate (measure|matrix|maxbatch|export)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/s1.jsonl /tmp/res/s2.jsonl > $OUT/sample24-$tag.jsonl
cp /tmp/res/r26.jsonl $OUT/random26-$tag.jsonl
cat /tmp/res/mb1.jsonl /tmp/res/mb2.jsonl /tmp/res/mb3.jsonl > $OUT/sample24-maxbatch-$tag.jsonl
cat /tmp/res/tr-*.jsonl > $OUT/traces36-$tag.jsonl
tar -cJf $OUT/matrix-blind18.tar.xz -C /tmp/matrix .
tar -cJf $OUT/logs-session22.tar.xz -C /tmp logs22
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
