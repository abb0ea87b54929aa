#!/usr/bin/env python3
"""Where the GPU's caching allocator and memest's part ways: both request sequences of one
traced case, each replayed through a small model of CUDACachingAllocator (best fit over
free blocks ordered by size then address, blocks split when more than 1 MiB would remain
(512 B in the small pool), merged with free neighbours on release, 2 MiB small segments,
20 MiB for requests under 10 MiB, larger ones rounded to 2 MiB; no cap). It prints each
side's peak reserved bytes and the segments each creates, side by side: the first row
whose sizes differ is where the placements began to differ.

    python3 tools/segment_diff.py TRACES.jsonl[.xz] CASE ONNX [--memest build/memest] [--min-mb 30]

TRACES holds `validate kernels --parts cases` sequences (validate/results/seqtrace*,
sequncap*, lmtrace*: uncapped ones, budget 0). Session 28 found with it that memest held
the attention output of transformers' decoder layers (`hidden_states, _ = ...`) until
the layer returned: on sh_llama_lm at batch 1024 both sides' replays reproduce their own
reserved peaks (GPU 21.81 GB, memest 17.78 GB), and their segments parted at layer 0's MLP.
"""
import argparse
import bisect

from sequence_diff import load_trace, memest_events

MiB = 1 << 20


def round_size(s):
    return max(512, (s + 511) // 512 * 512)


def segment_size(s):
    if s <= MiB:
        return 2 * MiB
    if s < 10 * MiB:
        return 20 * MiB
    return (s + 2 * MiB - 1) // (2 * MiB) * (2 * MiB)


class Allocator:
    def __init__(self):
        self.free = {True: [], False: []}  # small pool? -> sorted [(size, address)]
        self.blocks = {}  # address -> [size, is_free, segment base, small pool]
        self.next = 1 << 40
        self.reserved = self.peak_reserved = 0

    def alloc(self, request):
        s = round_size(request)
        small = s <= MiB
        pool = self.free[small]
        i = bisect.bisect_left(pool, (s, -1))
        made = None
        if i < len(pool):
            size, addr = pool.pop(i)
        else:
            size = segment_size(s)
            addr = self.next
            self.next += size + (1 << 30)
            self.blocks[addr] = [size, False, addr, small]
            self.reserved += size
            self.peak_reserved = max(self.peak_reserved, self.reserved)
            made = size
        b = self.blocks[addr]
        rest = size - s
        if (small and rest >= 512) or (not small and rest > MiB):
            self.blocks[addr + s] = [rest, True, b[2], small]
            bisect.insort(pool, (rest, addr + s))
            b[0] = s
        b[1] = False
        return addr, made

    def release(self, addr):
        b = self.blocks[addr]
        pool = self.free[b[3]]
        b[1] = True
        after = addr + b[0]
        if after in self.blocks and self.blocks[after][1] and self.blocks[after][2] == b[2]:
            pool.remove((self.blocks[after][0], after))
            b[0] += self.blocks.pop(after)[0]
        before = [a for a, x in self.blocks.items() if x[2] == b[2] and a < addr and a + x[0] == addr]
        if before and self.blocks[before[0]][1]:
            p = self.blocks[before[0]]
            pool.remove((p[0], before[0]))
            p[0] += self.blocks.pop(addr)[0]
            addr, b = before[0], p
        bisect.insort(pool, (b[0], addr))


def gpu_requests(path, case):
    r = load_trace(path, case, uncapped=True)
    out, ids, made = [], {}, 0
    for i, e in enumerate(r["events"]):
        kind, addr, size = e[0], e[1], e[2]
        if kind in ("a", "alloc"):
            ids[addr] = made
            made += 1
            out.append(("A", size, ids[addr], "event %d" % i))
        elif kind in ("f", "free_requested") and addr in ids:
            out.append(("F", size, ids.pop(addr), "event %d" % i))
    return r["memest_args"], out


def memest_requests(memest, onnx, args):
    return [(kind, int(size), int(block), "it%s %s %s %s" % (it, phase, category, node))
            for it, phase, kind, size, category, node, block in memest_events(memest, onnx, args)]


def segments(seq, min_bytes):
    a = Allocator()
    where, made = {}, []
    for kind, size, block, tag in seq:
        if kind == "A":
            where[block], new = a.alloc(size)
            if new and size >= min_bytes:
                made.append((new // MiB, tag))
        elif block in where:
            a.release(where.pop(block))
    return a.peak_reserved, made


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("traces")
    p.add_argument("case")
    p.add_argument("onnx")
    p.add_argument("--memest", default="build/memest")
    p.add_argument("--min-mb", type=float, default=30.0, help="segments made for requests below this many MB are left out")
    a = p.parse_args()
    args, gpu = gpu_requests(a.traces, a.case)
    mine = memest_requests(a.memest, a.onnx, args)
    min_bytes = a.min_mb * 1e6
    g_peak, g_made = segments(gpu, min_bytes)
    m_peak, m_made = segments(mine, min_bytes)
    print("%s: peak reserved, each side's requests replayed: GPU %.3f GiB, memest %.3f GiB" % (
        a.case, g_peak / 2**30, m_peak / 2**30))
    print("%4s  %-26s  %s" % ("", "GPU segment (MiB, event)", "memest segment (MiB, request)"))
    for i in range(max(len(g_made), len(m_made))):
        g = g_made[i] if i < len(g_made) else None
        m = m_made[i] if i < len(m_made) else None
        mark = "" if g and m and g[0] == m[0] else "  <<<"
        print("%4d  %-26s  %s%s" % (i, "%d MiB, %s" % g if g else "-", "%d MiB, %s" % m if m else "-", mark))


if __name__ == "__main__":
    main()
