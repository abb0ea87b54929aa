"""Compact memory traces: which live blocks make up the peak, and who allocated them.

Recording uses torch.cuda.memory._record_memory_history (Python stacks only, so that
taking the snapshot stays fast); the snapshot's event list is replayed (alloc adds,
free_requested subtracts: that is when the allocator's `allocated` counter drops) to
find the moment of the peak and the blocks live at it. Allocations made on the
autograd engine's thread carry no Python frames; they are labelled by the phase in
which they happened (from the event timestamps and the loop's phase boundaries).
"""
import re

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


def reduce_snapshot(snapshot, phase_rows, measured_peak, top_n=60, device=0, since_us=None):
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

    def describe(e):
        fr = _frames(e)
        return {"size": e["size"], "requested": e["requested"], "phase": _phase_of(t_of(e), bounds),
                "frames": fr if fr else ["(no Python frame: autograd engine thread or C++)"]}

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

    return {
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
    }
