#!/usr/bin/env bash
# Issue 20's GPU call: protocol.md's loop under DistributedDataParallel (both bucket modes)
# and FSDP2, one rank (world size 1, NCCL), on a CNN, an encoder, two decoder LMs and a
# 1.1B decoder, with the unwrapped loop in the same process setup as the baseline.
# Each case is a process of its own (validate/parallel.py). The 1.1B decoder's cases run
# first, one at a time (about 45 GiB each; their reading of the memory NCCL takes outside
# the allocator is clean), then the other models' cases, eight at once (about 20 s each
# alone: start, imports, NCCL init, build, three iterations).
#   bash validate/gpu_parallel.sh SECONDS   (the deadline for starting new cases)
# Writes $OUT/parallel-h200-torch2.11.jsonl and $OUT/logs-parallel.tar.xz.
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
budget=${1:-400}
t0=$(date +%s)
dl=$((t0 + budget - 30))  # the last cases need about 30 s to finish
tag=h200-torch2.11
L=/tmp/logs-parallel; mkdir -p $L /tmp/res
res=/tmp/res/parallel-$tag.jsonl
rm -f $res
python3 -m validate parallel --models llama1b --jobs 1 --timeout 150 --threads 8 --deadline $((t0 + budget * 45 / 100)) \
    --out $res --logs $L/cases > $L/parallel-llama1b.log 2>&1
python3 -m validate parallel --models resnet50,bert_hf,gpt2_hf,llama_hf --jobs 8 --alone-first 0 --timeout 120 --threads 2 \
    --deadline $dl --out $res --logs $L/cases > $L/parallel-rest.log 2>&1
cp $res $OUT/parallel-$tag.jsonl
tar -cJf $OUT/logs-parallel.tar.xz -C /tmp logs-parallel
for f in $L/*.log; do echo "== $f"; tail -n 3 "$f"; done
python3 - $res <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ok = [r for r in rows if r.get("status") == "ok"]
print("%d rows, %d ok" % (len(rows), len(ok)))
for r in rows:
    print("%-40s %-10s %8.3f GiB  outside %s" % (r["case"], r.get("status", "")[:10], r.get("peak_allocated", 0) / 2**30,
                                                 r.get("outside_allocator_at_end")))
PY
echo "total $(( $(date +%s) - t0 ))s"
