// graph/limits.cpp — the one limit that is asked of the system.
#include "graph/limits.h"

#include <unistd.h>

namespace graphrun::graph {

int64_t physical_memory_bytes() {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return 0;
    return int64_t(pages) * int64_t(page);
}

}  // namespace graphrun::graph
