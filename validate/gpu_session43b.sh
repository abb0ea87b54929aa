#!/usr/bin/env bash
# Session 43's second device call (issue 18): blind41 (sample seed 48, random seed 49),
# measured now and committed unread, compared once at the session's last estimate (the
# GPU's numbers do not depend on memest). Its draw is the first with timm's models up to
# 300 M parameters. Beside it, GPU sequences of blind40's misses: SAM-HQ's vision encoder
# bf16 (+7.9%), the random conv nets rnd48_151 (-6.5%, forward) and rnd48_162 (-22.4%,
# forward), and the three cases session 43's first call lost to one process's leftovers.
#   bash validate/gpu_session43b.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-320} L=/tmp/logs43b
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
rm -rf /tmp/res /tmp/matrix  # a warm machine keeps the last call's files
source validate/gpu_lib.sh
blind_sample 48 49
seqtrace o1 sh_sam_hq_vision_model_pix/b1-bf16-adamw,rnd48_151/b1-fp16-adam,rnd48_162/b1-fp16-adam 60GiB &
seqtrace o2 sh_sam3_lite_text_text_model_txt/b1-bf16-adamw,sh_mgp-str_pix/b1-bf16-adamw,sh_mlcd_vision_model_pix/b2-fp32-adam 60GiB &
finish
collect_blind 48 49 41
cat /tmp/res/seq-o*.jsonl 2>/dev/null | xz > $OUT/seqtrace-session43b-$tag.jsonl.xz
tar -cJf $OUT/logs-session43b.tar.xz -C /tmp logs43b
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
