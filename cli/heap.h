// The process heap in 2 MiB pages: a cold process faults its memory in page by page,
// and on a virtual machine each fault is dear (a third of a 100k-node estimate).
#pragma once

#include <string>

namespace memest {

/// Grows the heap by a first pad and advises it for transparent huge pages; keeps
/// every allocation in that heap. Called once, first thing in main().
void huge_page_heap();
/// Before reading `model`: grows the heap to what a graph of that file's size takes
/// and advises that range too. A no-op for small files and when the file is absent.
void reserve_heap_for(const std::string& model);

}  // namespace memest
