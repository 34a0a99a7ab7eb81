// tests/runtime/kv_blocks_test.cpp — the KV block pool: reference counts, the free list, the prefix trie
// (exact token match under the right parent), eviction of the least recently used cached leaf, and the
// misuses it refuses.
#include "runtime/kv_blocks.h"

#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>

namespace graphrun {
namespace {

std::vector<int32_t> block_tokens(int32_t first) {
    std::vector<int32_t> t(static_cast<size_t>(kKvBlockSize));
    std::iota(t.begin(), t.end(), first);
    return t;
}

TEST(KvBlockPool, AllocatesUntilEmptyAndTakesBlocksBack) {
    KvBlockPool pool(3);
    const int32_t a = pool.allocate(), b = pool.allocate(), c = pool.allocate();
    EXPECT_EQ(a, 0);
    EXPECT_NE(a, b);
    EXPECT_NE(b, c);
    EXPECT_EQ(pool.allocate(), -1);
    EXPECT_EQ(pool.n_in_use(), 3);
    pool.retain(b);
    EXPECT_EQ(pool.refcount(b), 2);
    EXPECT_FALSE(pool.writable(b));
    pool.release(b);
    EXPECT_TRUE(pool.writable(b));
    pool.release(b);
    EXPECT_EQ(pool.n_free(), 1);
    EXPECT_EQ(pool.allocate(), b);
    EXPECT_THROW(KvBlockPool(2).release(0), std::logic_error);
    EXPECT_THROW(KvBlockPool(2).retain(1), std::logic_error);  // a free block cannot be shared
}

TEST(KvBlockPool, RegisteredBlocksAreFoundByParentAndExactTokens) {
    KvBlockPool pool(4);
    const int32_t root = pool.allocate(), child = pool.allocate();
    ASSERT_TRUE(pool.register_block(root, -1, block_tokens(0)));
    ASSERT_TRUE(pool.register_block(child, root, block_tokens(100)));
    EXPECT_FALSE(pool.writable(root));  // registered blocks never change
    EXPECT_EQ(pool.find(-1, block_tokens(0)), root);
    EXPECT_EQ(pool.find(root, block_tokens(100)), child);
    EXPECT_EQ(pool.find(-1, block_tokens(100)), -1);  // the same tokens under another parent
    std::vector<int32_t> one_off = block_tokens(100);
    one_off.back() += 1;
    EXPECT_EQ(pool.find(root, one_off), -1);
    // A second block with the same key is not registered; a block without a registered parent cannot be.
    const int32_t twin = pool.allocate();
    EXPECT_FALSE(pool.register_block(twin, -1, block_tokens(0)));
    EXPECT_THROW(pool.register_block(twin, twin, block_tokens(0)), std::logic_error);
    EXPECT_THROW(pool.register_block(twin, -1, std::vector<int32_t>(3, 1)), std::logic_error);
}

TEST(KvBlockPool, CachedBlocksAreEvictedLeastRecentlyUsedLeavesFirst) {
    KvBlockPool pool(4);
    // Chain r -> c1 (released first) and a lone block s (released last), then one free block.
    const int32_t r = pool.allocate(), c1 = pool.allocate(), s = pool.allocate();
    pool.register_block(r, -1, block_tokens(0));
    pool.register_block(c1, r, block_tokens(16));
    pool.register_block(s, -1, block_tokens(500));
    pool.release(c1);
    pool.release(r);
    pool.release(s);
    EXPECT_EQ(pool.n_cached(), 3);
    EXPECT_EQ(pool.n_available(), 4);
    // The free block goes first, then the oldest leaf (c1, not its parent r, although r was released
    // after it), then r (a leaf now), then s.
    const int32_t f = pool.allocate();
    EXPECT_NE(f, r);
    EXPECT_NE(f, c1);
    EXPECT_NE(f, s);
    EXPECT_EQ(pool.allocate(), c1);
    EXPECT_EQ(pool.find(r, block_tokens(16)), -1);
    EXPECT_EQ(pool.find(-1, block_tokens(0)), r);
    EXPECT_EQ(pool.allocate(), r);
    EXPECT_EQ(pool.find(-1, block_tokens(500)), s);
    EXPECT_EQ(pool.evictions(), 2);
    // Sharing a cached block takes it out of the eviction order.
    pool.retain(s);
    EXPECT_EQ(pool.allocate(), -1);
    pool.release(s);
    EXPECT_EQ(pool.allocate(), s);
}

}  // namespace
}  // namespace graphrun
