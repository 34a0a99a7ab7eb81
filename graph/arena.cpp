// graph/arena.cpp — arena offsets from tensor lifetimes, and the verifier that checks them.
//
// Every intermediate value lives from the step that writes it to the last step that reads it.
// An in-place output takes over its input's bytes, so the two form one buffer whose lifetime is
// the union of theirs.
//
// Placement sweeps the steps in order, as an allocator that knows the future would: at each step
// the buffers whose last reader has run give their bytes back (merged with free neighbours), then
// the buffers first written at this step take, largest first, the smallest free gap that holds
// them (best fit), or the top of the arena. Free gaps are kept by offset and by size, so a plan of
// n tensors is placed in O(n log n), whatever the graph (a graph file is untrusted: 100,000 nodes
// must plan in well under a second, and the earlier all-pairs placement took 21 s).
// The verifier sweeps the same way over the tensors' real offsets and checks each new live tensor
// only against its neighbours by offset among the live ones, O(n log n) as well.
#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <queue>
#include <set>

#include "graph/plan.h"
#include "runtime/checked_math.h"

namespace graphrun::graph {

namespace {

int64_t align_up(int64_t n) { return checked_align_up(n, kArenaAlignment, "[plan] arena offset"); }

bool in_arena(const PlanTensor& t) {
    return t.kind != PlanTensor::Kind::Weight && t.kind != PlanTensor::Kind::State;
}

struct Buffer {
    int64_t bytes = 0;  // aligned
    int first = 0, last = 0;
    int64_t offset = -1;
};

// Free gaps of [0, top): by offset (to merge neighbours) and by (size, offset) (to find the best fit).
class FreeGaps {
  public:
    int64_t take(int64_t bytes) {
        if (bytes == 0) return 0;
        const auto fit = by_size_.lower_bound({bytes, INT64_MIN});
        if (fit == by_size_.end()) {
            const int64_t at = top_;
            top_ = checked_add(top_, bytes, "[plan] arena bytes");
            peak_ = std::max(peak_, top_);
            return at;
        }
        const auto [size, at] = *fit;
        erase(at, size);
        if (size > bytes) insert(at + bytes, size - bytes);
        return at;
    }

    void give_back(int64_t at, int64_t bytes) {
        if (bytes == 0) return;
        int64_t start = at, end = at + bytes;
        if (auto next = by_offset_.find(end); next != by_offset_.end()) {
            end += next->second;
            erase(next->first, next->second);
        }
        if (auto next = by_offset_.lower_bound(start); next != by_offset_.begin()) {
            const auto prev = std::prev(next);
            if (prev->first + prev->second == start) {
                start = prev->first;
                erase(prev->first, prev->second);
            }
        }
        if (end == top_)
            top_ = start;  // the free space at the top is the top
        else
            insert(start, end - start);
    }

    int64_t peak() const { return peak_; }

  private:
    void insert(int64_t at, int64_t size) {
        by_offset_.emplace(at, size);
        by_size_.emplace(size, at);
    }
    void erase(int64_t at, int64_t size) {
        by_offset_.erase(at);
        by_size_.erase({size, at});
    }
    std::map<int64_t, int64_t> by_offset_;
    std::set<std::pair<int64_t, int64_t>> by_size_;
    int64_t top_ = 0, peak_ = 0;
};

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
            b.bytes = std::max(b.bytes, align_up(t.bytes));
            b.first = std::min(b.first, t.first_step);
            b.last = std::max(b.last, t.last_step);
        } else {
            buffer_of[i] = int(buffers.size());
            buffers.push_back({align_up(t.bytes), t.first_step, t.last_step});
        }
    }

    // Birth order: by first step, and within a step the largest first.
    std::vector<int> order(buffers.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
        if (buffers[a].first != buffers[b].first) return buffers[a].first < buffers[b].first;
        if (buffers[a].bytes != buffers[b].bytes) return buffers[a].bytes > buffers[b].bytes;
        return a < b;
    });
    FreeGaps gaps;
    using Ending = std::pair<int, int>;  // (last step, buffer): the earliest-ending live buffer on top
    std::priority_queue<Ending, std::vector<Ending>, std::greater<>> live;
    for (int id : order) {
        Buffer& buffer = buffers[id];
        while (!live.empty() && live.top().first < buffer.first) {
            const Buffer& done = buffers[live.top().second];
            gaps.give_back(done.offset, done.bytes);
            live.pop();
        }
        buffer.offset = gaps.take(buffer.bytes);
        live.push({buffer.last, id});
    }

    for (int i = 0; i < n; ++i)
        if (buffer_of[i] >= 0) plan.tensors[i].offset = buffers[buffer_of[i]].offset;
    plan.arena_bytes = gaps.peak();
}

void verify_plan(const Plan& plan) {
    auto describe = [&](const PlanTensor& t) {
        return "'" + t.name + "' (steps " + std::to_string(t.first_step) + ".." + std::to_string(t.last_step) +
               ", bytes " + std::to_string(t.offset) + ".." + std::to_string(t.offset + t.bytes) + ")";
    };
    const int n = int(plan.tensors.size());
    std::vector<int> order;
    for (int i = 0; i < n; ++i) {
        const PlanTensor& t = plan.tensors[i];
        if (!in_arena(t)) continue;
        if (t.offset < 0 || t.offset % kArenaAlignment != 0 || t.bytes < 0 || t.offset > plan.arena_bytes ||
            t.bytes > plan.arena_bytes - t.offset)
            throw ops::PlanError("[plan] tensor " + describe(t) + " is not aligned inside the arena of " +
                                 std::to_string(plan.arena_bytes) + " bytes");
        if (t.bytes > 0) order.push_back(i);
    }
    std::sort(order.begin(), order.end(), [&](int a, int b) {
        return plan.tensors[a].first_step != plan.tensors[b].first_step
                   ? plan.tensors[a].first_step < plan.tensors[b].first_step
                   : a < b;
    });

    // The live tensors never share a byte, so a new one can only collide with its neighbours by offset.
    std::map<int64_t, int> live_by_offset;
    using Ending = std::pair<int, int>;  // (last step, tensor)
    std::priority_queue<Ending, std::vector<Ending>, std::greater<>> live;
    auto clash = [&](int a, int b) {
        throw ops::PlanError("[plan] tensors " + describe(plan.tensors[a]) + " and " + describe(plan.tensors[b]) +
                             " are alive at the same time and share bytes");
    };
    for (int i : order) {
        const PlanTensor& t = plan.tensors[i];
        while (!live.empty() && live.top().first < t.first_step) {
            const int done = live.top().second;
            live.pop();
            const auto it = live_by_offset.find(plan.tensors[done].offset);
            if (it != live_by_offset.end() && it->second == done) live_by_offset.erase(it);  // else handed off
        }
        // The one allowed overlap: t takes over its input's bytes at the step that input is read for the last time.
        if (t.reuses >= 0) {
            const auto it = live_by_offset.find(t.offset);
            const PlanTensor& from = plan.tensors[t.reuses];
            if (it != live_by_offset.end() && it->second == t.reuses && from.last_step == t.first_step)
                live_by_offset.erase(it);
        }
        auto next = live_by_offset.lower_bound(t.offset);
        if (next != live_by_offset.end() && next->first < t.offset + t.bytes) clash(next->second, i);
        if (next != live_by_offset.begin()) {
            const int prev = std::prev(next)->second;
            if (plan.tensors[prev].offset + plan.tensors[prev].bytes > t.offset) clash(prev, i);
        }
        live_by_offset.emplace(t.offset, i);
        live.push({t.last_step, i});
    }
}

}  // namespace graphrun::graph
