#!/usr/bin/env bash
# Session 22's fourth GPU call (issue 18): a second fresh blind sample (blind19),
# measured after the session's last change to the estimate and compared once: 30
# architectures drawn with seed 25 from timm and transformers, excluding every name a set
# or an earlier draw holds (b1-bf16-adamw and b2-fp32-adam), the largest batch under 24 GiB
# for twelve of them (fp16-adam, three workers so that one device-side assert loses at most
# four), and 200 random modules (seed 27, b1-fp16-adam), all exported through both
# exporters. Beside it, allocator traces (traces39) of earlier sets' misses and of cases an
# estimate change moved (training data, not blind).
#   bash validate/gpu_session22d.sh SECONDS   (the deadline for starting new work)
set -u
export PYTHONUNBUFFERED=1
budget=${1:-440}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs22d; mkdir -p $L /tmp/res /tmp/matrix
m() { python3 -m validate measure --deadline $dl "$@"; }
trace() {  # SET OUTNAME CONFIG MODELS
  m --set $1 --models $4 --configs $3 \
    --trace $(echo $4 | tr ',' '\n' | sed "s|\$|/$3|" | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-$2.jsonl > $L/tr-$2.log 2>&1
}
m --set random:27:200 --configs b1-fp16-adam --out /tmp/res/r27.jsonl > $L/m-r27.log 2>&1 &
python3 -m validate matrix --set random:27:200 --out /tmp/matrix --jobs 7 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-r27.log 2>&1 &
names=$(python3 -c "from validate import sample; print(','.join(sample.draw(25, 30)))" 2>$L/draw.log)
echo "drawn: $names"
h1=$(echo "$names" | tr ',' '\n' | awk 'NR%2==1' | paste -sd,)
h2=$(echo "$names" | tr ',' '\n' | awk 'NR%2==0' | paste -sd,)
mb1=$(echo "$names" | tr ',' '\n' | sed -n '2,5p' | paste -sd,)
mb2=$(echo "$names" | tr ',' '\n' | sed -n '12,15p' | paste -sd,)
mb3=$(echo "$names" | tr ',' '\n' | sed -n '22,25p' | paste -sd,)
m --set sample:25:30 --models "$h1" --configs b1-bf16-adamw,b2-fp32-adam --out /tmp/res/s1.jsonl > $L/m-s1.log 2>&1 &
m --set sample:25:30 --models "$h2" --configs b1-bf16-adamw,b2-fp32-adam --out /tmp/res/s2.jsonl > $L/m-s2.log 2>&1 &
for part in mb1 mb2 mb3; do
  python3 -m validate maxbatch --set sample:25:30 --models "${!part}" --configs fp16-adam --budget 24GiB \
      --deadline $dl --out /tmp/res/$part.jsonl > $L/$part.log 2>&1 &
done
python3 -m validate matrix --set sample:25:30 --models "$names" --out /tmp/matrix --jobs 5 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-sample.log 2>&1 &
# traces39: blind18's misses, training data for the next session (compared once at
# 5f21055): random26's 3-D unders rnd26_185 (-79.5%), rnd26_103 (-55.6%), its 1-D under
# rnd26_27 (-6.1%), and sample24's st_test_mambaout fp32 (-4.65%).
trace random:26:200 t1 b1-fp16-adam rnd26_185,rnd26_103,rnd26_27 &
trace sample:24:30 t2 b2-fp32-adam st_test_mambaout &
# Whatever still runs 90 s after the deadline is stopped, so that the files come back.
( sleep $((dl + 90 - $(date +%s))); pkill -f "validate (measure|matrix|maxbatch|export)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/s1.jsonl /tmp/res/s2.jsonl > $OUT/sample25-$tag.jsonl
cp /tmp/res/r27.jsonl $OUT/random27-$tag.jsonl
cat /tmp/res/mb1.jsonl /tmp/res/mb2.jsonl /tmp/res/mb3.jsonl > $OUT/sample25-maxbatch-$tag.jsonl
cat /tmp/res/tr-*.jsonl > $OUT/traces39-$tag.jsonl
tar -cJf $OUT/matrix-blind19.tar.xz -C /tmp/matrix .
tar -cJf $OUT/logs-session22d.tar.xz -C /tmp logs22d
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
