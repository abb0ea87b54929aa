# Shared by the gpu_sessionNN.sh scripts (source it after setting budget, tag and L):
# the measuring helpers, a blind sample, the deadline watchdog and the collection.
#   budget=440 tag=h200-torch2.11 L=/tmp/logsNN; source validate/gpu_lib.sh
export PYTHONUNBUFFERED=1
# Nothing outside the GPU machine can be reached: a library asking the hub for a config
# (timm repvit in the draw of session 42) must fail at once, not retry for minutes.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
t0=$(date +%s)
dl=$((t0 + budget))
mkdir -p $L /tmp/res /tmp/matrix
m() { python3 -m validate measure --deadline $dl "$@"; }
trace() {  # SET OUTNAME CONFIG MODELS: live-at-peak allocator traces
  m --set $1 --models $4 --configs $3 \
    --trace $(echo $4 | tr ',' '\n' | sed "s|\$|/$3|" | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-$2.jsonl > $L/tr-$2.log 2>&1
}
seqtrace() {  # OUTNAME CASES [BUDGET]: whole allocation event sequences of MODEL/CONFIG cases
  # One process a case: what one case leaves behind (session 43: 2,569 bytes after SAM 2's
  # vision encoder) refused every case after it in the same process.
  local c
  for c in $(echo "$2" | tr ',' ' '); do
    python3 -m validate kernels --parts cases --deadline $dl ${3:+--budget $3} --out /tmp/res/seq-$1.jsonl \
      --cases $c >> $L/seq-$1.log 2>&1
  done
}
# blind_sample SAMPLE_SEED RANDOM_SEED: up to 30 architectures drawn from timm and
# transformers (none a set or an earlier draw holds; blind_architectures below), 200 random
# modules (b1-fp16-adam), all exported through both exporters into /tmp/matrix. Runs in the
# background.
mb_part() {  # SAMPLE_SEED NAMES FROM,TO: the largest batch of those drawn models under 24 GiB
  python3 -m validate maxbatch --set sample:$1:30 --configs fp16-adam --budget 24GiB --deadline $dl \
      --models "$(echo "$2" | tr ',' '\n' | sed -n "$3p" | paste -sd,)" \
      --out /tmp/res/mb-${3/,/-}.jsonl > $L/mb-${3/,/-}.log 2>&1
}
# blind_architectures SAMPLE_SEED: the drawn architectures measured (b1-bf16-adamw and
# b2-fp32-adam, two workers), three largest-batch searches of four names each, spread over
# however many the draw found (the transformers pool ran out in session 31: 20 timm names,
# where the fixed parts 2-5, 12-15, 22-25 left the third empty), and their exports.
blind_architectures() {
  local s=$1 names h1 h2 count a b c
  names=$(python3 -c "from validate import sample; print(','.join(sample.draw($s, 30)))" 2>$L/draw-$s.log | tail -n 1)  # a library may print to stdout
  echo "drawn: $names"
  h1=$(echo "$names" | tr ',' '\n' | awk 'NR%2==1' | paste -sd,)
  h2=$(echo "$names" | tr ',' '\n' | awk 'NR%2==0' | paste -sd,)
  m --set sample:$s:30 --models "$h1" --configs b1-bf16-adamw,b2-fp32-adam --out /tmp/res/s1.jsonl > $L/m-s1.log 2>&1 &
  m --set sample:$s:30 --models "$h2" --configs b1-bf16-adamw,b2-fp32-adam --out /tmp/res/s2.jsonl > $L/m-s2.log 2>&1 &
  count=$(echo "$names" | tr ',' '\n' | grep -c .)
  a=2 b=$((count / 3 + 2)) c=$((2 * count / 3 + 2))
  # Three searches under a 24 GiB cap at once fill an 80 GB card with the measuring
  # beside them (session 27's H100: two searches ran out of memory with the card full,
  # at 1.1 and 19.7 GiB of their own); below 120 GiB the third waits for the first.
  local total_mib
  total_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
  if [ "${total_mib:-0}" -ge 122880 ]; then
    for part in $a,$((a + 3)) $b,$((b + 3)) $c,$((c + 3)); do mb_part $s "$names" $part & done
  else
    (mb_part $s "$names" $a,$((a + 3)); mb_part $s "$names" $c,$((c + 3))) &
    mb_part $s "$names" $b,$((b + 3)) &
  fi
  # Since session 43 the draw holds timm models up to 300 M parameters, slower to export:
  # blind41 exported 29 of 60 files with 5 jobs; the random exports get 6 (16 cores).
  python3 -m validate matrix --set sample:$s:30 --models "$names" --out /tmp/matrix --jobs 8 --deadline $dl \
      --variants legacy-train-dyn,dynamo-train-dyn > $L/x-sample.log 2>&1 &
}
blind_sample() {
  local s=$1 r=$2
  m --set random:$r:200 --configs b1-fp16-adam --out /tmp/res/r$r.jsonl > $L/m-r$r.log 2>&1 &
  python3 -m validate matrix --set random:$r:200 --out /tmp/matrix --jobs 6 --deadline $dl \
      --variants legacy-train-dyn,dynamo-train-dyn > $L/x-r$r.log 2>&1 &
  blind_architectures $s
}
# finish: stop whatever still runs 90 s after the deadline (so the files come back), wait.
finish() {
  ( sleep $((dl + 90 - $(date +%s))); pkill -f "validate (measure|matrix|maxbatch|export|convprobe|kernels)" ) &
  local dog=$!
  wait $(jobs -p | grep -v "^$dog$")
  kill $dog 2>/dev/null
}
# collect_blind SAMPLE_SEED RANDOM_SEED BLIND_N: the blind sample's files into $OUT.
collect_blind() {
  cat /tmp/res/s1.jsonl /tmp/res/s2.jsonl > $OUT/sample$1-$tag.jsonl
  cp /tmp/res/r$2.jsonl $OUT/random$2-$tag.jsonl
  cat /tmp/res/mb-*.jsonl > $OUT/sample$1-maxbatch-$tag.jsonl
  tar -cJf $OUT/matrix-blind$3.tar.xz -C /tmp/matrix .
}
