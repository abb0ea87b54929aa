#!/usr/bin/env bash
# Session 37's first device call (issue 18): a fresh blind sample (blind33: sample seed 40,
# random seed 41), measured and committed unread, compared once before any change of the
# session; beside it, training data, not blind: whole allocation sequences of blind32's
# cases left open (st_cpubone_b3 one past its largest batch under 24 GiB, where memest's
# search came out 2.5% over; st_hgnetv2_b2 bf16 +5.5%; rnd40_140, rnd40_87 and rnd40_36,
# random modules with strided *and* dilated layers, under by 4-8%); and grouped layers
# with wide weights on small maps (convprobe --family grouped-small-map, seeds 93 to fit
# and 94 to check), CPUBone's weight-gradient workspace class.
#   bash validate/gpu_session37.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-320} L=/tmp/logs37
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
blind_sample 40 41
# The training data only when the deadline leaves room (the device refused this session's
# first 14 calls; the blind sample comes first).
if [ "$budget" -ge 200 ]; then
  seqtrace t1 st_cpubone_b3/bs365-fp16-adam,st_hgnetv2_b2/b1-bf16-adamw &
  seqtrace t2 rnd40_140/b1-fp16-adam,rnd40_87/b1-fp16-adam,rnd40_36/b1-fp16-adam &
  ( for s in 93 94; do
      python3 -m validate convprobe --family grouped-small-map --seed $s --n 200 --kernels --deadline $dl \
        --out /tmp/res/cp-$s.jsonl > $L/cp-$s.log 2>&1
    done ) &
fi
finish
collect_blind 40 41 33
cat /tmp/res/cp-*.jsonl 2>/dev/null | xz > $OUT/convprobe-grouped-small-map-$tag.jsonl.xz
cat /tmp/res/seq-t*.jsonl 2>/dev/null | xz > $OUT/seqtrace-session37-$tag.jsonl.xz
tar -cJf $OUT/logs-session37.tar.xz -C /tmp logs37
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
