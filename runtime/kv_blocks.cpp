// runtime/kv_blocks.cpp — the KV block pool: reference counts, the free list, the prefix trie and its
// least-recently-used eviction.
#include "runtime/kv_blocks.h"

#include <cassert>
#include <stdexcept>
#include <string>

namespace graphrun {

KvBlockPool::KvBlockPool(int32_t n_blocks) {
    if (n_blocks < 0) throw std::invalid_argument("KV block pool: negative block count");
    blocks_.resize(size_t(n_blocks));
    free_.reserve(size_t(n_blocks));
    for (int32_t b = n_blocks - 1; b >= 0; --b) free_.push_back(b);  // block 0 is handed out first
}

void KvBlockPool::update_evictable(int32_t block, bool was_evictable) {
    const Block& b = blocks_[size_t(block)];
    const bool now = evictable(b);
    if (was_evictable == now) return;
    if (now)
        evictable_.insert({b.last_used, block});
    else
        evictable_.erase({b.last_used, block});
}

void KvBlockPool::unregister(int32_t block) {
    Block& b = blocks_[size_t(block)];
    assert(b.registered && b.children == 0);
    index_.erase(Key{b.parent, b.tokens});
    b.registered = false;
    b.tokens.clear();
    if (b.parent >= 0) {
        Block& parent = blocks_[size_t(b.parent)];
        const bool was = evictable(parent);
        --parent.children;
        update_evictable(b.parent, was);
    }
    b.parent = -1;
}

int32_t KvBlockPool::allocate() {
    int32_t block = -1;
    if (!free_.empty()) {
        block = free_.back();
        free_.pop_back();
    } else if (!evictable_.empty()) {
        // Every cached block's descendants are cached too (a sequence holding a block holds the blocks
        // of all its earlier positions), so while anything is cached some leaf of it is evictable.
        block = evictable_.begin()->second;
        evictable_.erase(evictable_.begin());
        unregister(block);
        --n_cached_;
        ++evictions_;
    } else {
        assert(n_cached_ == 0);
        return -1;
    }
    Block& b = blocks_[size_t(block)];
    b.refcount = 1;
    ++n_in_use_;
    return block;
}

void KvBlockPool::retain(int32_t block) {
    Block& b = blocks_.at(size_t(block));
    if (b.refcount == 0) {
        if (!b.registered)
            throw std::logic_error("KV block pool: retain of free block " + std::to_string(block));
        const bool was = evictable(b);
        ++b.refcount;
        update_evictable(block, was);
        --n_cached_;
        ++n_in_use_;
        return;
    }
    ++b.refcount;
}

void KvBlockPool::release(int32_t block) {
    Block& b = blocks_.at(size_t(block));
    if (b.refcount <= 0)
        throw std::logic_error("KV block pool: release of unused block " + std::to_string(block));
    if (--b.refcount > 0) return;
    --n_in_use_;
    if (!b.registered) {
        free_.push_back(block);
        return;
    }
    b.last_used = ++tick_;
    ++n_cached_;
    update_evictable(block, false);
}

int32_t KvBlockPool::find(int32_t parent, std::span<const int32_t> tokens) const {
    if (int64_t(tokens.size()) != kKvBlockSize) return -1;
    const auto it = index_.find(Key{parent, std::vector<int32_t>(tokens.begin(), tokens.end())});
    return it == index_.end() ? -1 : it->second;
}

bool KvBlockPool::register_block(int32_t block, int32_t parent, std::span<const int32_t> tokens) {
    Block& b = blocks_.at(size_t(block));
    if (int64_t(tokens.size()) != kKvBlockSize)
        throw std::logic_error("KV block pool: a registered block holds exactly " +
                               std::to_string(kKvBlockSize) + " positions");
    if (b.refcount <= 0 || b.registered)
        throw std::logic_error("KV block pool: register_block needs an in-use, unregistered block");
    if (parent >= 0 && !blocks_.at(size_t(parent)).registered)
        throw std::logic_error("KV block pool: a registered block's parent must be registered");
    Key key{parent, std::vector<int32_t>(tokens.begin(), tokens.end())};
    if (index_.count(key)) return false;
    b.registered = true;
    b.parent = parent;
    b.tokens = key.second;
    index_.emplace(std::move(key), block);
    if (parent >= 0) {
        Block& p = blocks_[size_t(parent)];
        const bool was = evictable(p);
        ++p.children;
        update_evictable(parent, was);
    }
    return true;
}

}  // namespace graphrun
