// The process heap in transparent huge pages. A cold process faults its memory in
// page by page: at 10k nodes ~7,300 faults, a sixth of the process; at 100k nodes
// 32,000 faults, about a third of its CPU time (the kernel zeroing and mapping 4 KiB
// pages). Asked for transparent huge pages (MADV_HUGEPAGE, which "madvise" mode,
// Debian's default, honours) the kernel maps 2 MiB at a time. Where the kernel has no
// THP the advice is a no-op.
#include "cli/heap.h"

#include <malloc.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

namespace memest {
namespace {

constexpr uintptr_t kHuge = uintptr_t{2} << 20;

// Grows the heap by at least `bytes` now, and advises everything from the
// allocation's start up to the new break.
void grow_and_advise(size_t bytes) {
  void* p = malloc(bytes);  // more than the heap has: malloc grows it now, by `bytes` and the pad
  if (!p) return;
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  free(p);  // stays in the heap: nothing is trimmed
  const uintptr_t hi = reinterpret_cast<uintptr_t>(sbrk(0)) & ~(kHuge - 1);
  if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
}

}  // namespace

// The heap is grown once, by MEMEST_HEAP_PAD MiB, and that range is advised. Every
// allocation stays in the heap (no mmap, which would be 4 KiB pages again, and
// freed memory is kept for reuse rather than returned and faulted in again).
void huge_page_heap() {
  const char* pad = getenv("MEMEST_HEAP_PAD");
  const long mib = pad ? atol(pad) : 64;
  if (mib <= 0) return;
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);  // never trims
  mallopt(M_TOP_PAD, static_cast<int>(mib << 20));
  grow_and_advise(1 << 20);
}

// A graph takes about 13 bytes of heap per byte of a file without weights (the
// generated transformer stacks: 197 MiB for 15 MB, 1.9 GiB for 155 MB). A file with
// its weights inside takes far less (the reader steps over them), so this only
// reserves address space: pages cost nothing until touched, and a reservation that
// the system refuses leaves the heap to grow as it would.
void reserve_heap_for(const std::string& model) {
  static bool done = false;  // once: advise analyses the model more than once
  const char* pad = getenv("MEMEST_HEAP_PAD");
  if (done || (pad && atol(pad) <= 0)) return;
  done = true;
  struct stat st;
  if (stat(model.c_str(), &st) != 0 || st.st_size < (8 << 20)) return;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const uint64_t half_ram = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * page / 2 : uint64_t{4} << 30;
  grow_and_advise(std::min<uint64_t>(static_cast<uint64_t>(st.st_size) * 14, half_ram));
}

}  // namespace memest
