#!/usr/bin/env bash
# Session 41's closing device call (issue 18): blind38 (sample seed 45, random seed 46),
# drawn with the new pools (bare transformers models on token ids or pixels beside the
# task pools blind37 drew from), committed unread, compared once at the session's last
# binary. Beside it, GPU sequences of blind37's four worst random unders (training data).
#   bash validate/gpu_session41c.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-320} L=/tmp/logs41c
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
rm -rf /tmp/res /tmp/matrix  # a warm machine keeps the last call's files
source validate/gpu_lib.sh
blind_sample 45 46
seqtrace o1 rnd45_172/b1-fp16-adam,rnd45_166/b1-fp16-adam,rnd45_16/b1-fp16-adam,rnd45_157/b1-fp16-adam 60GiB &
finish
collect_blind 45 46 38
cat /tmp/res/seq-o*.jsonl 2>/dev/null | xz > $OUT/seqtrace-session41c-$tag.jsonl.xz
tar -cJf $OUT/logs-session41c.tar.xz -C /tmp logs41c
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
