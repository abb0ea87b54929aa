#!/usr/bin/env bash
# Session 42's first device call (issue 18): blind38 (sample seed 45, random seed 46;
# session 41's device refused its closing call), drawn with the new pools (bare
# transformers models on token ids or pixels beside the task pools blind37 drew from),
# committed unread, compared once at the session start's binary. Beside it, GPU
# sequences of blind37's four worst random unders (training data).
#   bash validate/gpu_session42.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-320} L=/tmp/logs42
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
rm -rf /tmp/res /tmp/matrix  # a warm machine keeps the last call's files
source validate/gpu_lib.sh
blind_sample 45 46
# A decoder LM's eager step near its largest batch (session 41 dropped transformers' traced
# masks and the decoders' largest batches went 10-21% over the GPU's: which block of the
# mask's size and lifetime the GPU allocates), beside the vivit case that wants them gone.
seqtrace o2 sh_llama_lm/bs1200-fp16-adam,sh_vivit_vid/b1-bf16-adamw 60GiB &
# A two-tower model whose reserved bytes memest puts 8% under the GPU's at batch 4096 and 9%
# over at 5120 (blind37's largest-batch misses, 6-8% low): which segments differ.
# And LongT5, whose reserved bytes memest puts 4.5% under from batch 256 to 896 (allocated exact).
seqtrace o3 sh_metaclip_2_zsi/bs4096-fp16-adam,sh_metaclip_2_zsi/bs5120-fp16-adam,sh_longt5_s2s/bs512-fp16-adam 60GiB &
seqtrace o1 rnd45_172/b1-fp16-adam,rnd45_166/b1-fp16-adam,rnd45_16/b1-fp16-adam,rnd45_157/b1-fp16-adam 60GiB &
finish
collect_blind 45 46 38
cat /tmp/res/seq-o*.jsonl 2>/dev/null | xz > $OUT/seqtrace-session42-$tag.jsonl.xz
tar -cJf $OUT/logs-session42.tar.xz -C /tmp logs42
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
