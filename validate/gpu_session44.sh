#!/usr/bin/env bash
# Session 44's first device call (issue 18): blind42 (sample seed 49, random seed 50),
# committed unread, compared once at the session start's binary. The draw holds timm's
# models up to 300 M parameters (session 43): slower to measure and export, so the
# deadline for new work is longer than before (blind41 at 330 s left 8 architectures
# unmeasured and 14 unexported; gpu_session43c.sh finished them).
# After it, on the emptied card, GPU sequences under the 24 GiB cap of blind40's largest
# batches that memest misjudges under the cap: CLIP's text encoder (memest's capped replay
# says 5841-6208 do not fit and 6216 does; the GPU ran 6144-6216, never probed 6000),
# Kimi K2.5 (GPU ran 2194, memest answers 2048) and SAM-HQ fp16 (GPU failed 97, memest
# legacy answers 100); and blind41's NASNet-A large, 17-26% under (far below the cap).
#   bash validate/gpu_session44.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-400} L=/tmp/logs44
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
rm -rf /tmp/res /tmp/matrix  # a warm machine keeps the last call's files
source validate/gpu_lib.sh
blind_sample 49 50
finish
collect_blind 49 50 42
dl=$(( $(date +%s) + 70 ))
seqtrace cap sh_clip_text_model_txt/bs6000-fp16-adam,sh_clip_text_model_txt/bs6144-fp16-adam,sh_kimi_k25_txt/bs2194-fp16-adam,sh_sam_hq_vision_model_pix/bs97-fp16-adam,st_nasnetalarge/b1-bf16-adamw,st_nasnetalarge/b2-fp32-adam 24GiB
xz -c /tmp/res/seq-cap.jsonl > $OUT/seqtrace-session44-cap-$tag.jsonl.xz
tar -cJf $OUT/logs-session44.tar.xz -C /tmp logs44
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
