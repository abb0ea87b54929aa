"""The training loop of protocol.md, instrumented per phase.

Allocation behaviour is exactly the protocol's: the only additions are host-side
reads of the allocator's counters and reset_peak_memory_stats() at phase
boundaries, which allocate nothing. The overall peak is the maximum of the phase
peaks, i.e. what max_memory_allocated() reads at the end of an un-instrumented run.
On a machine without CUDA the loop also runs on the CPU (device="cpu") so that
everything but the numbers can be tested.
"""
import copy
import gc
import time

import torch
import torch.nn.functional as F

_DTYPES = {"float32": torch.float32, "int64": torch.int64, "float16": torch.float16}
_AMP = {"fp16": torch.float16, "bf16": torch.bfloat16}


class AllocatorNotEmpty(RuntimeError):
    pass


def is_cuda(device):
    return str(device).startswith("cuda")


def clean_allocator(device, require_empty=True):
    """Free everything the previous case left so that the next starts from zero."""
    gc.collect()
    if not is_cuda(device):
        return 0
    torch.cuda.synchronize()
    # The cuBLAS workspace lives in the caching allocator and survives empty_cache().
    if hasattr(torch._C, "_cuda_clearCublasWorkspaces"):
        torch._C._cuda_clearCublasWorkspaces()
    torch.cuda.empty_cache()
    left = torch.cuda.memory_allocated()
    if left and require_empty:
        gc.collect()
        torch.cuda.empty_cache()
        left = torch.cuda.memory_allocated()
        if left:
            raise AllocatorNotEmpty("allocator not empty before the case: %d bytes still allocated" % left)
    return left


class Phases:
    """Per-phase peak and end-of-phase allocation, read at each boundary.

    plain=True reads nothing until the final mark (protocol.md's loop verbatim: one
    max_memory_allocated() at the end); used to check that instrumenting changes nothing.
    """

    def __init__(self, device, plain=False):
        self.cuda = is_cuda(device)
        self.plain = plain
        self.rows = []
        self.t0 = time.time()

    def start(self):
        if self.cuda:
            torch.cuda.reset_peak_memory_stats()
        self.t0 = time.time()

    def mark(self, it, phase, final=False, micro=None):
        row = {"it": it, "phase": phase}
        if micro is not None:
            row["micro"] = micro  # --grad-accum: which micro-step of the iteration
        if self.plain and not final:
            return
        if self.cuda:
            row.update(peak=torch.cuda.max_memory_allocated(), allocated=torch.cuda.memory_allocated(),
                       peak_reserved=torch.cuda.max_memory_reserved(), reserved=torch.cuda.memory_reserved())
            torch.cuda.reset_peak_memory_stats()
        else:
            row.update(peak=0, allocated=0, peak_reserved=0, reserved=0)
        row["t_us"] = int(time.time() * 1e6)
        self.rows.append(row)

    def after(self, phase):
        for r in self.rows:
            if r["it"] == -1 and r["phase"] == phase:
                return r["allocated"]
        return None

    def peak(self):
        if not self.rows:
            return 0, 0, None
        top = max(self.rows, key=lambda r: r["peak"])
        return top["peak"], max(r["peak_reserved"] for r in self.rows), {"it": top["it"], "phase": top["phase"]}


def make_inputs(entry, batch, device):
    xs = []
    for spec in entry.inputs:
        shape = (batch,) + entry.sample_shape(spec.shape)
        if spec.dtype == "int64":
            xs.append(torch.randint(0, max(spec.high, 1), shape, dtype=torch.int64, device=device))
        else:
            xs.append(torch.randn(shape, dtype=_DTYPES[spec.dtype], device=device))
    return xs


def make_target(entry, batch, device, out_meta):
    if entry.loss == "sum":
        return None
    if entry.loss == "mse":
        shape, dtype = out_meta
        return torch.randn((batch,) + tuple(shape[1:]), dtype=getattr(torch, dtype), device=device)
    t = entry.target
    return torch.randint(0, t.high, (batch,) + entry.sample_shape(t.shape), dtype=torch.int64, device=device)


def loss_fn(kind, out, y):
    if kind == "ce":
        if out.dim() == 3:  # language model [B, T, V]
            return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        return F.cross_entropy(out, y)
    if kind == "mse":
        return F.mse_loss(out, y)
    if kind == "sum":
        return out.float().sum()
    raise ValueError("unknown loss %r" % kind)


def make_optimizer(cfg, params):
    if cfg.optim == "sgd":
        if cfg.momentum:
            return torch.optim.SGD(params, lr=0.01, momentum=cfg.momentum)
        return torch.optim.SGD(params, lr=0.01)
    if cfg.optim == "adam":
        return torch.optim.Adam(params, lr=1e-3)
    if cfg.optim == "adamw":
        return torch.optim.AdamW(params, lr=1e-3)
    raise ValueError("unknown optimizer %r" % cfg.optim)


def make_scaler(device):
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        try:
            return torch.amp.GradScaler("cuda" if is_cuda(device) else "cpu", enabled=is_cuda(device))
        except TypeError:
            pass
    return torch.cuda.amp.GradScaler(enabled=is_cuda(device))


def autocast(device, amp):
    if amp == "fp32":
        return torch.autocast("cuda" if is_cuda(device) else "cpu", enabled=False)
    if is_cuda(device):
        return torch.autocast("cuda", dtype=_AMP[amp])
    return torch.autocast("cpu", dtype=torch.bfloat16)  # CPU dry runs only


def fresh_model(entry, cpu_model):
    """A fresh copy of the randomly initialised model, on the CPU (build() in protocol.md)."""
    if cpu_model is not None:
        try:
            return copy.deepcopy(cpu_model)
        except Exception:
            pass
    torch.manual_seed(0)
    return entry.build()


def probe_output(entry, cpu_model, amp, device):
    """Output shape and dtype at batch 1 (mse targets follow the output); cleaned afterwards."""
    model = fresh_model(entry, cpu_model).to(device).train()
    xs = make_inputs(entry, 1, device)
    with torch.no_grad(), autocast(device, amp):
        out = model(*xs)
    meta = (list(out.shape), str(out.dtype).replace("torch.", ""))
    del model, xs, out
    clean_allocator(device, require_empty=False)
    return meta


def set_trainable(entry, model, info):
    """protocol.md's fine-tuning: requires_grad from --train / --freeze (every parameter when neither)."""
    from validate.zoo import trainable
    train, freeze = getattr(entry, "train", ()), getattr(entry, "freeze", ())
    if not train and not freeze:
        return
    n = 0
    for name, p in model.named_parameters():
        p.requires_grad_(trainable(name, train, freeze))
        n += int(p.requires_grad)
    if n == 0:
        raise ValueError("--train/--freeze leave no parameter trainable")


def tensor_bytes(t):
    return t.numel() * t.element_size()


def run_case(entry, cfg, phases, device="cuda", cpu_model=None, iters=3, checkpoint=False, out_meta=None,
             info=None, hooks=None, wrap=None):
    """One case of protocol.md. Fills `phases` and `info` as it goes (kept on failure).

    hooks (traces only): an object with attach(model), before_backward(loss), detach()
    (trace.Annotator); its hooks allocate nothing.
    wrap (validate/parallel.py): model -> model, applied after model.to(device) and before
    the optimizer is made: DistributedDataParallel(model) or fully_shard, as protocol.md's
    "Data-parallel training, per rank" writes them."""
    info = {} if info is None else info
    clean_allocator(device)
    phases.start()  # allocator empty, peak reset: before the model is built
    model = fresh_model(entry, cpu_model)
    set_trainable(entry, model, info)
    if checkpoint:
        from validate.zoo import apply_checkpoint
        info["checkpoint_wrap"] = apply_checkpoint(entry, model)
    model = model.to(device).train()
    if wrap is not None:
        model = wrap(model)
    if hooks is not None:
        hooks.attach(model)
    phases.mark(-1, "model")
    opt = make_optimizer(cfg, [p for p in model.parameters() if p.requires_grad])
    phases.mark(-1, "optimizer")
    xs = make_inputs(entry, cfg.batch, device)
    y = make_target(entry, cfg.batch, device, out_meta)
    phases.mark(-1, "inputs")
    scaler = make_scaler(device) if cfg.amp == "fp16" else None
    accum = getattr(entry, "accum", 1)
    info["param_bytes"] = sum(tensor_bytes(p) for p in model.parameters())
    info["param_count"] = sum(p.numel() for p in model.parameters())
    info["trainable_param_bytes"] = sum(tensor_bytes(p) for p in model.parameters() if p.requires_grad)
    info["trainable_param_count"] = sum(p.numel() for p in model.parameters() if p.requires_grad)
    if accum != 1:
        info["grad_accum"] = accum
    info["buffer_bytes"] = sum(tensor_bytes(b) for b in model.buffers())
    info["x_bytes"] = sum(tensor_bytes(x) for x in xs)
    info["y_bytes"] = tensor_bytes(y) if y is not None else 0
    out = loss = None
    scales = []
    for it in range(iters):
        opt.zero_grad(set_to_none=True)
        phases.mark(it, "zero_grad")
        for micro in range(accum):  # --grad-accum K: K forward/backward passes per optimizer step
            with autocast(device, cfg.amp):
                out = model(*xs)
                loss = loss_fn(entry.loss, out, y)
                if accum != 1:
                    loss = loss / accum
            phases.mark(it, "forward", micro=micro if accum != 1 else None)
            if hooks is not None:
                hooks.before_backward(loss)
            if scaler is not None:
                scaler.scale(loss).backward()
            else:
                loss.backward()
            phases.mark(it, "backward", micro=micro if accum != 1 else None)
        if scaler is not None:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        phases.mark(it, "step", final=(it == iters - 1))
        if scaler is not None and scaler.is_enabled():
            scales.append(float(scaler.get_scale()))  # a host copy: allocates nothing on the GPU
    if scales:
        # GradScaler halves its scale after skipping a step (inf/nan gradients); the default
        # initial scale is 65536. A skipped first step means no optimizer state yet.
        init = 65536.0
        prev = [init] + scales[:-1]
        info["scaler_scales"] = scales
        info["steps_skipped"] = [int(s < p) for s, p in zip(scales, prev)]
    info["out_shape"] = list(out.shape)
    info["out_dtype"] = str(out.dtype).replace("torch.", "")
    info["loss_value"] = float(loss.detach().float().item())
    info["grad_bytes"] = sum(tensor_bytes(p.grad) for p in model.parameters() if p.grad is not None)
    state_bytes = 0
    for st in opt.state.values():
        for v in st.values():
            if torch.is_tensor(v) and v.device.type == torch.device(device).type:
                state_bytes += tensor_bytes(v)
    info["optimizer_state_bytes"] = state_bytes
    if is_cuda(device):
        torch.cuda.synchronize()
        info["final_allocated"] = torch.cuda.memory_allocated()
        info["final_reserved"] = torch.cuda.memory_reserved()
    attn = getattr(getattr(getattr(model, "model", None), "config", None), "_attn_implementation", None)
    if attn:
        info["attn_implementation"] = attn
    if hooks is not None:
        hooks.detach()
    del model, opt, xs, y, scaler, out, loss
    return info
