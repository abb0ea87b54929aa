"""Compact memory traces: which live blocks make up the peak, and who allocated them.

Recording uses torch.cuda.memory._record_memory_history (Python stacks only, so that
taking the snapshot stays fast); the snapshot's event list is replayed (alloc adds,
free_requested subtracts: that is when the allocator's `allocated` counter drops) to
find the moment of the peak and the blocks live at it. Allocations made on the
autograd engine's thread carry no Python frames; they are labelled by the phase in
which they happened (from the event timestamps and the loop's phase boundaries).
"""
import bisect
import re
import time

_SKIP = re.compile(r"(torch/nn/modules/module\.py|torch/utils/_contextlib\.py|torch/autograd/grad_mode\.py|"
                   r"torch/_tensor\.py|torch/amp/autocast_mode\.py|torch/optim/optimizer\.py:\d+:wrapper|"
                   r"torch/optim/optimizer\.py:\d+:_use_grad|torch/_compile\.py|torch/_dynamo/)")


def start_recording(max_entries=2_000_000):
    import torch
    rec = torch.cuda.memory._record_memory_history
    for kw in (dict(enabled="all", context="alloc", stacks="python", max_entries=max_entries, clear_history=True),
               dict(enabled="all", context="alloc", stacks="python", max_entries=max_entries)):
        try:
            rec(**kw)
            return
        except TypeError:
            continue
    try:
        rec(True, max_entries=max_entries)  # torch 2.0 signature
    except TypeError:
        rec(True, trace_alloc_max_entries=max_entries, trace_alloc_record_context=True)  # torch 1.13


def stop_recording():
    import torch
    try:
        torch.cuda.memory._record_memory_history(enabled=None)
    except TypeError:
        torch.cuda.memory._record_memory_history(False)


def take_snapshot():
    import torch
    return torch.cuda.memory._snapshot()


def _short(fn):
    for key in ("site-packages/", "dist-packages/", "/validate/"):
        i = fn.rfind(key)
        if i >= 0:
            return ("validate/" if key == "/validate/" else "") + fn[i + len(key):]
    return fn


class Annotator:
    """Which module (forward) or autograd node (backward) was running, by wall-clock time.

    Passed to loop.run_case as `hooks`. Forward: a pre and a post hook on every module
    record entering and leaving it; the post hook also tags the grad_fn of the module's
    output tensors with the module's name (innermost module wins). Backward: before each
    backward, every node of the graph gets a prehook that records the node's name and
    module tag when the engine is about to run it. The hooks return None and keep no
    tensors, so they change no allocation; they only cost Python time. The replay
    attaches to each block the last label at or before its allocation time (the
    allocator's timestamps and time.time() are both unix time, to about a microsecond).
    """

    def __init__(self):
        self.fwd = []  # (t_us, +1 enter / -1 leave, module name)
        self.bwd = []  # (t_us, node name, module tag or "")
        self.handles = []
        self.nodes_hooked = 0

    def attach(self, model):
        for name, m in model.named_modules():
            nm = name or "<root>"
            self.handles.append(m.register_forward_pre_hook(self._pre(nm)))
            self.handles.append(m.register_forward_hook(self._post(nm)))

    def detach(self):
        for h in self.handles:
            h.remove()
        self.handles = []

    def _pre(self, nm):
        fwd = self.fwd

        def hook(mod, inp):
            fwd.append((time.time() * 1e6, 1, nm))
        return hook

    def _post(self, nm):
        fwd = self.fwd

        def hook(mod, inp, out):
            fwd.append((time.time() * 1e6, -1, nm))
            for t in _tensors(out):
                g = getattr(t, "grad_fn", None)
                if g is None:
                    continue
                try:
                    md = g.metadata
                    if "memest_module" not in md:
                        md["memest_module"] = nm
                except Exception:
                    pass
        return hook

    def before_backward(self, loss):
        bwd = self.bwd

        def make(name, mod):
            def hook(grad_outputs):
                bwd.append((time.time() * 1e6, name, mod))
            return hook

        root = getattr(loss, "grad_fn", None)
        seen = {}  # id -> node: keeps the Python wrappers alive during the walk, so ids stay unique
        stack = [root] if root is not None else []
        while stack:
            n = stack.pop()
            if id(n) in seen:
                continue
            seen[id(n)] = n
            try:
                md = n.metadata
            except Exception:
                md = {}
            if not md.get("memest_hooked"):  # AccumulateGrad nodes outlive one graph
                try:
                    n.register_prehook(make(n.name(), md.get("memest_module", "")))
                    md["memest_hooked"] = True
                    self.nodes_hooked += 1
                except Exception:
                    pass
            for nxt, _ in n.next_functions:
                if nxt is not None and id(nxt) not in seen:
                    stack.append(nxt)
        seen.clear()


def _tensors(out):
    import torch
    if torch.is_tensor(out):
        return [out]
    if isinstance(out, (list, tuple)):
        r = []
        for o in out:
            r += _tensors(o)
        return r
    if isinstance(out, dict):
        return _tensors(list(out.values()))
    return []


def _labellers(annot, phase_of):
    """Functions t_us -> labels, from the annotator's forward and backward records."""
    f_t, f_mod = [], []
    st = []
    for t, d, nm in annot.fwd:
        if d > 0:
            st.append(nm)
        else:
            while st:
                if st.pop() == nm:
                    break
        f_t.append(t)
        f_mod.append(st[-1] if st else "")
    b_t, b_node, b_mod = [], [], []
    cur = ""
    last_phase = None
    for t, node, mod in annot.bwd:
        ph = phase_of(t)
        if ph != last_phase:
            cur, last_phase = "", ph
        if mod:
            cur = mod
        b_t.append(t)
        b_node.append(node)
        b_mod.append(cur)

    def fwd_module(t):
        i = bisect.bisect_right(f_t, t) - 1
        return f_mod[i] if i >= 0 else ""

    def bwd_node(t, phase):
        i = bisect.bisect_right(b_t, t) - 1
        if i < 0 or phase_of(b_t[i]) != phase:
            return None
        return b_node[i], b_mod[i], int(round(t - b_t[i]))
    return fwd_module, bwd_node


def _frames(ev, n=3):
    out = []
    for fr in ev.get("frames") or []:
        fn = fr.get("filename", "")
        if fn.startswith("??") or fn.endswith((".cpp", ".h", ".cc")) or not fn.endswith(".py"):
            continue
        s = "%s:%s:%s" % (_short(fn), fr.get("line", "?"), fr.get("name", "?"))
        if _SKIP.search(s):
            continue
        out.append(s)
        if len(out) == n:
            break
    return out


def _phase_of(t_us, bounds):
    """bounds: list of (t_us_end, label) in order; an event belongs to the first phase ending after it."""
    if t_us is None:
        return "?"
    for end, label in bounds:
        if t_us <= end:
            return label
    return "after"


def reduce_snapshot(snapshot, phase_rows, measured_peak, top_n=60, device=0, since_us=None, annot=None,
                    full=False, n_frames=3):
    """full: also every live block at the peak (`live_at_peak_all`, frames deduplicated into
    `stack_table`, up to n_frames each). annot: an Annotator; blocks get module / autograd
    node labels."""
    traces = snapshot.get("device_traces") or []
    events = traces[device] if len(traces) > device else []
    evs = [e for e in events if e.get("action") in ("alloc", "free_requested")]
    if since_us is not None and evs and evs[0].get("time_us") and evs[0]["time_us"] < 1e17:
        # A history left by an earlier case (if disabling did not clear it) is dropped.
        evs = [e for e in evs if e["time_us"] >= since_us]
    # time units: the allocator writes microseconds since the epoch; guard against ns.
    tkey = "time_us"
    scale = 1.0
    sample = next((e.get(tkey) for e in evs if e.get(tkey)), None)
    if sample and sample > 1e17:
        scale = 1e-3
    bounds = [(r["t_us"], "setup/%s" % r["phase"] if r["it"] < 0 else "it%d/%s" % (r["it"], r["phase"]))
              for r in phase_rows]

    def t_of(e):
        v = e.get(tkey)
        return None if v is None else v * scale

    # The trace holds requested sizes; the allocator counts blocks, rounded up to 512 bytes
    # (a cached block handed out unsplit can be larger still, so the replay may stay a bit low).
    for e in evs:
        e["requested"] = e["size"]
        e["size"] = max(512, (e["size"] + 511) // 512 * 512)
    cur = peak = 0
    peak_i = -1
    for i, e in enumerate(evs):
        cur += e["size"] if e["action"] == "alloc" else -e["size"]
        if cur > peak:
            peak, peak_i = cur, i
    final_replay = cur
    cur = peak_req = 0
    for e in evs:
        cur += e["requested"] if e["action"] == "alloc" else -e["requested"]
        peak_req = max(peak_req, cur)
    live = {}
    alloc_i = {}
    for i, e in enumerate(evs[:peak_i + 1]):
        if e["action"] == "alloc":
            live[e["addr"]] = e
            alloc_i[e["addr"]] = i
        else:
            live.pop(e["addr"], None)
    blocks = sorted(live.values(), key=lambda e: -e["size"])
    peak_event = evs[peak_i] if peak_i >= 0 else {}
    peak_phase = _phase_of(t_of(peak_event), bounds) if peak_event else "?"

    fwd_module = bwd_node = None
    if annot is not None:
        fwd_module, bwd_node = _labellers(annot, lambda t: _phase_of(t, bounds))

    def labels(e, phase):
        out = {}
        t = t_of(e)
        if annot is None or t is None:
            return out
        if phase.endswith("/forward"):
            out["module"] = fwd_module(t)
        elif phase.endswith("/backward"):
            b = bwd_node(t, phase)
            if b is not None:
                out["bw_node"], out["bw_module"], out["bw_dt_us"] = b
        return out

    def describe(e):
        fr = _frames(e)
        ph = _phase_of(t_of(e), bounds)
        d = {"size": e["size"], "requested": e["requested"], "phase": ph,
             "frames": fr if fr else ["(no Python frame: autograd engine thread or C++)"]}
        d.update(labels(e, ph))
        return d

    groups = {}
    for e in blocks:
        d = describe(e)
        key = (d["phase"], d["frames"][0])
        g = groups.setdefault(key, {"phase": key[0], "site": key[1], "count": 0, "bytes": 0})
        g["count"] += 1
        g["bytes"] += e["size"]
    summary = sorted(groups.values(), key=lambda g: -g["bytes"])[:40]

    # Largest short-lived allocations of the peak's phase (workspaces, temporaries).
    transients = []
    freed_at = {}
    open_ = {}
    for i, e in enumerate(evs):
        if e["action"] == "alloc":
            open_[e["addr"]] = (i, e)
        else:
            st = open_.pop(e["addr"], None)
            if st is not None:
                freed_at[st[0]] = i
    for i, e in enumerate(evs):
        if e["action"] != "alloc" or i not in freed_at:
            continue
        ph = _phase_of(t_of(e), bounds)
        if ph == peak_phase and _phase_of(t_of(evs[freed_at[i]]), bounds) == ph:
            d = describe(e)
            d["live_events"] = freed_at[i] - i
            transients.append(d)
    transients.sort(key=lambda d: -d["size"])

    # Check that the timestamps put the boundaries where the loop's counters say they are.
    mismatches = 0
    cur = 0
    j = 0
    for r in phase_rows:
        while j < len(evs) and t_of(evs[j]) is not None and t_of(evs[j]) <= r["t_us"]:
            cur += evs[j]["size"] if evs[j]["action"] == "alloc" else -evs[j]["size"]
            j += 1
        if cur != r["allocated"]:
            mismatches += 1

    extra = {}
    if full:
        stacks = {}
        rows = []
        by_node = {}
        for e in blocks:
            fr = tuple(_frames(e, n_frames))
            sid = stacks.setdefault(fr, len(stacks))
            ph = _phase_of(t_of(e), bounds)
            lab = labels(e, ph)
            rows.append([e["size"], e["requested"], ph, sid, lab.get("module", ""), lab.get("bw_node", ""),
                         lab.get("bw_module", ""), lab.get("bw_dt_us"), alloc_i.get(e["addr"])])
            if not fr:
                key = (ph, lab.get("bw_node", "?"), lab.get("bw_module", ""))
                g = by_node.setdefault(key, {"phase": ph, "bw_node": key[1], "bw_module": key[2], "count": 0,
                                             "bytes": 0})
                g["count"] += 1
                g["bytes"] += e["size"]
        extra["live_at_peak_all_columns"] = ["size", "requested", "phase", "stack", "module", "bw_node", "bw_module",
                                             "bw_dt_us", "alloc_index"]
        extra["live_at_peak_all"] = rows
        extra["stack_table"] = [list(k) for k, _ in sorted(stacks.items(), key=lambda kv: kv[1])]
        extra["live_at_peak_no_frame_by_node"] = sorted(by_node.values(), key=lambda g: -g["bytes"])
    if annot is not None:
        extra["annotations"] = {"forward_events": len(annot.fwd), "backward_events": len(annot.bwd),
                                "nodes_hooked": annot.nodes_hooked}
    return dict({
        "n_events": len(evs),
        "replay_peak": peak,
        "replay_peak_requested": peak_req,
        "measured_peak": measured_peak,
        "replay_matches": peak == measured_peak,
        "replay_final": final_replay,
        "peak_event_index": peak_i,
        "peak_phase": peak_phase,
        "peak_event": describe(peak_event) if peak_event else None,
        "live_at_peak_count": len(blocks),
        "live_at_peak_bytes": sum(e["size"] for e in blocks),
        "live_at_peak": [describe(e) for e in blocks[:top_n]],
        "live_at_peak_by_site": summary,
        "transients_in_peak_phase": transients[:15],
        "phase_boundary_mismatches": mismatches,
        "samples": [[("setup/" if r["it"] < 0 else "it%d/" % r["it"]) + r["phase"], r["allocated"], r["peak"]]
                    for r in phase_rows],
    }, **extra)
