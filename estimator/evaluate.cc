// Evaluating a symbolic program for concrete dims: block sizes, the peak and what is
// alive at it, per phase.
#include <optional>
#include <algorithm>
#include <cstdint>
#include <vector>

#include "estimator/error.h"
#include "estimator/simulate.h"

namespace memest {

std::vector<int> live_blocks(const Program& p, size_t event) {
  std::vector<bool> live(p.blocks.size(), false);
  for (size_t e = 0; e <= event && e < p.events.size(); ++e) live[p.events[e].block] = p.events[e].kind == Event::Alloc;
  std::vector<int> out;
  for (size_t b = 0; b < live.size(); ++b) {
    if (live[b]) out.push_back(static_cast<int>(b));
  }
  return out;
}

namespace {

// Evaluated bytes under a launch heuristic's bound (none: nullptr), rounded as the
// allocator rounds. A size switch (a library's choice of algorithm) comes first.
int64_t bounded_size(int64_t bytes, const SizeBound* sb, const Bindings& b, int64_t round) {
  if (sb) {
    if (sb->reduce) bytes = reduce_buffer_bytes(bytes, sb->reduce_inputs.eval(b), *sb->reduce);
    if (sb->switch_above > 0 && bytes > sb->switch_above) bytes = sb->above.eval(b);
  }
  return bytes == 0 ? 0 : round_alloc(bytes, round);
}

// Each block's bytes, evaluated once per distinct expression: blocks share a few
// interned expressions (a generated 10k-node program: 69,470 requests of 13 sizes), and
// evaluating every block's was a sixth of a sweep, which sizes the program at each batch
// it tries. A direct-mapped cache by the interned expression's address; a collision
// evaluates again, never answers wrong.
class EvalCache {
 public:
  /// Rounded as the allocator rounds when `round` > 0, else as evaluated.
  EvalCache(const Bindings& b, int64_t round) : b_(b), round_(round) {}
  int64_t operator()(const ExprRef& e) {
    const Expr* key = &*e;
    Slot& s = slots_[(reinterpret_cast<uintptr_t>(key) >> 4) & (kSlots - 1)];
    if (s.key != key) {
      const int64_t v = e.eval(b_);
      s = {key, round_ > 0 && v != 0 ? round_alloc(v, round_) : v};
    }
    return s.value;
  }

 private:
  static constexpr size_t kSlots = 1024;
  struct Slot {
    const Expr* key = nullptr;
    int64_t value = 0;
  };
  const Bindings& b_;
  int64_t round_;
  std::vector<Slot> slots_ = std::vector<Slot>(kSlots);
};

// Bounded blocks' sizes by what decides them, the block's expression and its bound: a
// reduction's buffer repeats with its layer (the generated 10k-node program's 4,600
// bounded blocks were each evaluated, reduce_buffer_bytes() a fifth of sizing it).
// Direct-mapped by the expression's address; a slot answers only for the same
// expression and an equal bound, so a collision evaluates again, never answers wrong.
class BoundedCache {
 public:
  BoundedCache(const Bindings& b, int64_t round) : b_(b), round_(round) {}
  int64_t operator()(const ExprRef& bytes, const SizeBound& sb, EvalCache& bytes_of) {
    const Expr* key = &*bytes;
    Slot& s = slots_[(reinterpret_cast<uintptr_t>(key) >> 4 ^ reinterpret_cast<uintptr_t>(&*sb.reduce_inputs) >> 2) &
                     (kSlots - 1)];
    if (s.key != key || !(s.bound == sb)) s = {key, sb, bounded_size(bytes_of(bytes), &sb, b_, round_)};
    return s.value;
  }

 private:
  static constexpr size_t kSlots = 256;
  struct Slot {
    const Expr* key = nullptr;
    SizeBound bound;
    int64_t value = 0;
  };
  const Bindings& b_;
  int64_t round_;
  std::vector<Slot> slots_ = std::vector<Slot>(kSlots);
};

}  // namespace

const SizeBound& Program::bound_of(int b) const {
  const auto at = std::lower_bound(bounds.begin(), bounds.end(), b,
                                   [](const std::pair<int, SizeBound>& x, int id) { return x.first < id; });
  if (at == bounds.end() || at->first != b) throw Error("internal: block " + std::to_string(b) + " has no bound");
  return at->second;
}

int64_t block_size(const Program& p, size_t block, const Bindings& b, int64_t round) {
  const Block& blk = p.blocks[block];
  return bounded_size(blk.bytes.eval(b), blk.bounded ? &p.bound_of(static_cast<int>(block)) : nullptr, b, round);
}

std::vector<int64_t> block_sizes(const Program& p, const Bindings& b, int64_t round) {
  // Filled in order, not zeroed first: zeroing the array cost as much as a sixth of the
  // loop (memset counts a byte an instruction).
  std::vector<int64_t> out;
  out.reserve(p.blocks.size());
  EvalCache bytes_of(b, 0), rounded_of(b, round);
  BoundedCache bounded_of(b, round);
  auto next = p.bounds.begin();  // the bounded blocks' bounds, in block order: no search
  for (size_t i = 0; i < p.blocks.size(); ++i) {
    const Block& blk = p.blocks[i];
    const SizeBound* sb = nullptr;
    if (blk.bounded) {
      const bool in_order = next != p.bounds.end() && next->first == static_cast<int>(i);
      sb = in_order ? &(next++)->second : &p.bound_of(static_cast<int>(i));
    }
    out.push_back(sb ? bounded_of(blk.bytes, *sb, bytes_of) : rounded_of(blk.bytes));
  }
  return out;
}

void PeakTracker::at(size_t e) {
  const Event& ev = p_.events[e];
  if (ev.iter != cur_.iter || ev.phase != cur_.phase) {
    cur_.end = total_;
    r_.phases.push_back(cur_);
    cur_ = {ev.iter, ev.phase, total_, total_};
  }
}

void PeakTracker::alloc(size_t e, int64_t bytes) {
  const Event& ev = p_.events[e];
  const Block& blk = p_.blocks[ev.block];
  total_ = checked_add(total_, bytes);
  live_[static_cast<size_t>(blk.category)] += bytes;
  if (total_ > r_.peak_bytes) {
    r_.peak_bytes = total_;
    r_.phase = ev.phase;
    r_.iter = ev.iter;
    r_.node = blk.node;
    r_.event = e;
    r_.components = live_;
  }
  cur_.peak = std::max(cur_.peak, total_);
}

void PeakTracker::free(size_t e, int64_t bytes) {
  total_ -= bytes;
  live_[static_cast<size_t>(p_.blocks[p_.events[e].block].category)] -= bytes;
}

PeakResult PeakTracker::finish() {
  cur_.end = total_;
  r_.phases.push_back(cur_);
  return std::move(r_);
}

PeakResult evaluate(const Program& p, const Bindings& b, int64_t round) {
  const std::vector<int64_t> size = block_sizes(p, b, round);
  PeakTracker peak(p);
  for (size_t e = 0; e < p.events.size(); ++e) {
    peak.at(e);
    const Event& ev = p.events[e];
    if (ev.kind == Event::Alloc) {
      peak.alloc(e, size[ev.block]);
    } else {
      peak.free(e, size[ev.block]);
    }
  }
  return peak.finish();
}

int64_t committed_peak(const Program& p, const Bindings& b, int64_t round) {
  return committed_peak(p, block_sizes(p, b, round));
}

namespace {

// The peak of the requests a cap cannot refuse (may_fail workspaces left out), and the
// event it is first reached at (none without such a request).
struct CommittedPeak {
  int64_t bytes = 0;
  std::optional<size_t> at;
};

CommittedPeak committed_peak_at(const Program& p, const std::vector<int64_t>& size) {
  CommittedPeak r;
  int64_t total = 0;
  for (size_t e = 0; e < p.events.size(); ++e) {
    const Event& ev = p.events[e];
    if (p.blocks[ev.block].may_fail) continue;
    if (ev.kind == Event::Alloc) {
      total = checked_add(total, size[ev.block]);
      if (total > r.bytes || !r.at) r.at = e;
      r.bytes = std::max(r.bytes, total);
    } else {
      total -= size[ev.block];
    }
  }
  return r;
}

}  // namespace

int64_t committed_peak(const Program& p, const std::vector<int64_t>& size) { return committed_peak_at(p, size).bytes; }

std::vector<int> committed_peak_blocks(const Program& p, const std::vector<int64_t>& size) {
  const CommittedPeak peak = committed_peak_at(p, size);
  std::vector<int> out;
  if (!peak.at) return out;
  for (int b : live_blocks(p, *peak.at)) {
    if (!p.blocks[static_cast<size_t>(b)].may_fail) out.push_back(b);
  }
  return out;
}

int64_t blocks_bytes(const Program& p, const std::vector<int>& blocks, const Bindings& b, int64_t round) {
  EvalCache bytes_of(b, 0), rounded_of(b, round);
  BoundedCache bounded_of(b, round);
  int64_t total = 0;
  for (int i : blocks) {
    const Block& blk = p.blocks[static_cast<size_t>(i)];
    const int64_t v = blk.bounded ? bounded_of(blk.bytes, p.bound_of(i), bytes_of) : rounded_of(blk.bytes);
    total = checked_add(total, v);
  }
  return total;
}

}  // namespace memest
