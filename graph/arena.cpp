// graph/arena.cpp — arena offsets from tensor lifetimes, and the verifier that checks them.
//
// Every intermediate value lives from the step that writes it to the last step that reads it.
// Values are placed largest first, each into the smallest aligned gap among the values already
// placed whose lifetimes intersect its own (XNNPACK's approach). An in-place output takes over its
// input's bytes, so the two form one buffer whose lifetime is the union of theirs.
#include <algorithm>
#include <numeric>

#include "graph/plan.h"
#include "runtime/checked_math.h"

namespace graphrun::graph {

namespace {

int64_t align_up(int64_t n) { return checked_align_up(n, kArenaAlignment, "[plan] arena offset"); }

bool in_arena(const PlanTensor& t) { return t.kind != PlanTensor::Kind::Weight; }

struct Buffer {
    int64_t bytes = 0;
    int first = 0, last = 0;
    int64_t offset = -1;
    bool overlaps_in_time(const Buffer& other) const { return first <= other.last && other.first <= last; }
};

// Smallest gap among `placed` (sorted by offset) that fits `bytes`; past the end if none does.
int64_t best_offset(const std::vector<const Buffer*>& placed, int64_t bytes) {
    int64_t cursor = 0, best = -1, best_gap = 0;
    for (const Buffer* b : placed) {
        const int64_t gap = b->offset - cursor;
        if (gap >= bytes && (best < 0 || gap < best_gap)) {
            best = cursor;
            best_gap = gap;
        }
        cursor = std::max(cursor, align_up(checked_add(b->offset, b->bytes, "[plan] arena offset")));
    }
    return best >= 0 ? best : cursor;
}

}  // namespace

void assign_arena_offsets(Plan& plan) {
    // One buffer per chain of in-place hand-offs: follow `reuses` back to the chain's first tensor.
    const int n = int(plan.tensors.size());
    std::vector<int> buffer_of(n, -1);
    std::vector<Buffer> buffers;
    for (int i = 0; i < n; ++i) {
        const PlanTensor& t = plan.tensors[i];
        if (!in_arena(t)) continue;
        if (t.reuses >= 0) {
            buffer_of[i] = buffer_of[t.reuses];
            Buffer& b = buffers[buffer_of[i]];
            b.bytes = std::max(b.bytes, t.bytes);
            b.first = std::min(b.first, t.first_step);
            b.last = std::max(b.last, t.last_step);
        } else {
            buffer_of[i] = int(buffers.size());
            buffers.push_back({t.bytes, t.first_step, t.last_step});
        }
    }

    std::vector<int> order(buffers.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return buffers[a].bytes > buffers[b].bytes; });

    int64_t arena = 0;
    std::vector<const Buffer*> placed;
    for (int id : order) {
        Buffer& buffer = buffers[id];
        std::vector<const Buffer*> live;
        for (const Buffer* other : placed)
            if (other->overlaps_in_time(buffer)) live.push_back(other);
        std::sort(live.begin(), live.end(), [](const Buffer* a, const Buffer* b) { return a->offset < b->offset; });
        buffer.offset = best_offset(live, buffer.bytes);
        arena = std::max(arena, align_up(checked_add(buffer.offset, buffer.bytes, "[plan] arena offset")));
        placed.push_back(&buffer);
    }

    for (int i = 0; i < n; ++i)
        if (buffer_of[i] >= 0) plan.tensors[i].offset = buffers[buffer_of[i]].offset;
    plan.arena_bytes = arena;
}

void verify_plan(const Plan& plan) {
    auto describe = [&](const PlanTensor& t) {
        return "'" + t.name + "' (steps " + std::to_string(t.first_step) + ".." + std::to_string(t.last_step) +
               ", bytes " + std::to_string(t.offset) + ".." + std::to_string(t.offset + t.bytes) + ")";
    };
    const int n = int(plan.tensors.size());
    for (const PlanTensor& t : plan.tensors) {
        if (!in_arena(t)) continue;
        if (t.offset < 0 || t.offset % kArenaAlignment != 0 || t.bytes < 0 || t.offset + t.bytes > plan.arena_bytes)
            throw ops::PlanError("[plan] tensor " + describe(t) + " is not aligned inside the arena of " +
                                 std::to_string(plan.arena_bytes) + " bytes");
    }
    for (int i = 0; i < n; ++i) {
        const PlanTensor& a = plan.tensors[i];
        if (!in_arena(a)) continue;
        for (int j = i + 1; j < n; ++j) {
            const PlanTensor& b = plan.tensors[j];
            if (!in_arena(b)) continue;
            const bool same_time = a.first_step <= b.last_step && b.first_step <= a.last_step;
            const bool same_bytes = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
            if (!same_time || !same_bytes || a.bytes == 0 || b.bytes == 0) continue;
            // The one allowed overlap: b takes over a's bytes at the step where a is read for the last time.
            const bool hand_off = b.reuses == i && a.last_step == b.first_step && a.offset == b.offset;
            if (!hand_off)
                throw ops::PlanError("[plan] tensors " + describe(a) + " and " + describe(b) +
                                     " are alive at the same time and share bytes");
        }
    }
}

}  // namespace graphrun::graph
