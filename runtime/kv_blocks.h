// runtime/kv_blocks.h — the paged KV cache's bookkeeping: a pool of fixed-size blocks of positions,
// their reference counts, and the prefix cache that lets sequences with the same first tokens share
// blocks.
//
// The KV cache's storage is planned state (graph/plan.h): per layer, K and V tensors of
// (n_blocks * kKvBlockSize, n_head_kv * head_dim) f16, row b * kKvBlockSize + i holding position i of
// whatever sequence owns block b. A sequence has a block table (block ids, in position order), so its
// position p lives in row table[p / kKvBlockSize] * kKvBlockSize + p % kKvBlockSize. This class hands
// out the block ids; it never touches the storage.
//
// Every block is in one of three states:
//   in use   refcount > 0: one or more sequences' tables hold it (more than one: shared, read-only)
//   cached   refcount 0 but registered under its prefix: kept for a later sequence that starts with the
//            same tokens, evicted least recently used when a block is needed and none is free
//   free     refcount 0, holding nothing anyone can find
// A registered block is full (all kKvBlockSize positions written) and immutable; it is keyed by
// (parent block, its tokens), the parent being the registered block of the previous positions, so a
// lookup walks a trie from the root and compares tokens exactly (no hash is trusted). Only leaves (no
// registered children) are evicted, so a cached chain stays reachable from the root.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <vector>

namespace graphrun {

// Positions per KV block. 16 keeps the waste of a sequence's last, partly used block small (at most 15
// positions) and the block tables short (2048 positions: 128 entries). Attention scores positions in
// runs of 8 (ops/attention_paths.cpp), which must divide it.
constexpr int64_t kKvBlockSize = 16;

class KvBlockPool {
  public:
    explicit KvBlockPool(int32_t n_blocks = 0);

    int32_t n_blocks() const { return int32_t(blocks_.size()); }
    int32_t n_in_use() const { return n_in_use_; }
    int32_t n_cached() const { return n_cached_; }
    int32_t n_free() const { return int32_t(free_.size()); }
    // Blocks allocate() can still hand out: the free ones and the cached ones it may evict.
    int32_t n_available() const { return n_free() + n_cached(); }
    int64_t evictions() const { return evictions_; }

    // A block of its own for the caller (refcount 1, unregistered): a free one, else the least recently
    // used cached leaf (evicted: it can no longer be found). -1 when every block is in use.
    int32_t allocate();
    // One more holder (a sequence sharing or forking). A cached block becomes in use again.
    void retain(int32_t block);
    // One holder less. At refcount 0 a registered block stays cached (most recently used); any other
    // goes back to the free list.
    void release(int32_t block);

    int32_t refcount(int32_t block) const { return blocks_.at(size_t(block)).refcount; }
    bool registered(int32_t block) const { return blocks_.at(size_t(block)).registered; }
    // A sequence may write into a block only when it is the sole holder and the block is not registered
    // (registered blocks are shared by lookup and must not change); otherwise it copies first.
    bool writable(int32_t block) const { return refcount(block) == 1 && !registered(block); }

    // The registered block under `parent` (-1: the root, i.e. positions 0 .. kKvBlockSize-1) holding
    // exactly `tokens` (kKvBlockSize of them), or -1. Does not retain it.
    int32_t find(int32_t parent, std::span<const int32_t> tokens) const;
    // Registers a full, in-use block under `parent` (-1 or a registered block) with its tokens. Returns
    // false, registering nothing, when that key already has a block (the caller may share that one).
    bool register_block(int32_t block, int32_t parent, std::span<const int32_t> tokens);

  private:
    struct Block {
        int32_t refcount = 0;
        bool registered = false;
        int32_t parent = -1;
        int32_t children = 0;    // registered blocks whose parent this is
        uint64_t last_used = 0;  // tick of its last release to refcount 0
        std::vector<int32_t> tokens;
    };
    using Key = std::pair<int32_t, std::vector<int32_t>>;  // (parent, tokens)

    bool evictable(const Block& b) const { return b.registered && b.refcount == 0 && b.children == 0; }
    void update_evictable(int32_t block, bool was_evictable);
    void unregister(int32_t block);

    std::vector<Block> blocks_;
    std::vector<int32_t> free_;                         // a stack: the most recently freed first
    std::map<Key, int32_t> index_;                      // registered blocks by (parent, tokens)
    std::set<std::pair<uint64_t, int32_t>> evictable_;  // (last_used, block): cached leaves, LRU first
    int32_t n_in_use_ = 0, n_cached_ = 0;
    uint64_t tick_ = 0;
    int64_t evictions_ = 0;
};

}  // namespace graphrun
