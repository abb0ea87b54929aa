# `python3 validate/attn_bwd_stacks.py` (GPU): which aten ops allocate in the backward of
# att = dropout(softmax(masked_fill(q @ k^T * s))); y = att @ v, with C++ stacks
# (torch.cuda.memory._record_memory_history(stacks="all")). Writes $OUT/attn_bwd.txt:
# one line per allocation or free of 1 MiB or more, with the ops on its stack.
import torch, torch.nn.functional as F, math, pickle, sys, os
torch.manual_seed(0)
dev = "cuda"
B, H, T, D = 8, 8, 256, 64
q = torch.randn(B, H, T, D, device=dev, requires_grad=True)
k = torch.randn(B, H, T, D, device=dev, requires_grad=True)
v = torch.randn(B, H, T, D, device=dev, requires_grad=True)
mask = torch.tril(torch.ones(T, T, dtype=torch.bool, device=dev)).view(1, 1, T, T)
drop = torch.nn.Dropout(0.1).train()
def f():
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
    att = att.masked_fill(~mask, float("-inf"))
    att = drop(F.softmax(att, dim=-1))
    return (att @ v)
y = f(); y.sum().backward()  # warm up
torch.cuda.synchronize()
y = f()
torch.cuda.memory._record_memory_history(max_entries=100000, stacks="all", context="all")
y.sum().backward()
torch.cuda.synchronize()
snap = torch.cuda.memory._snapshot()
torch.cuda.memory._record_memory_history(enabled=None)
att_bytes = B * H * T * T * 4
out = open(os.path.join(os.environ.get("OUT", "/tmp"), "attn_bwd.txt"), "w")
for e in snap["device_traces"][0]:
    if e["action"] not in ("alloc", "free_requested"): continue
    sz = e["size"]
    if sz < 1 << 20: continue
    names = [fr.get("name", "") for fr in e.get("frames", [])]
    keep = [n for n in names if ("at::_ops::" in n and "redispatch" not in n) or "Backward" in n or "native::" in n and "empty" not in n][:5]
    out.write("%s %.2f MiB (att=%s) %s\n" % (e["action"], sz / 2**20, sz == att_bytes, " | ".join(k[:110] for k in keep)))
out.close()
print(open(os.path.join(os.environ.get("OUT", "/tmp"), "attn_bwd.txt")).read()[:6000])
