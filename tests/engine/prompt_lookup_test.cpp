// tests/engine/prompt_lookup_test.cpp — the n-gram proposer and the adaptive draft length, on token lists
// small enough to check by eye.
#include "engine/prompt_lookup.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

namespace graphrun {
namespace {

using graph::DraftLength;
using graph::prompt_lookup_continuation;
using graph::PromptLookup;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Ids = std::vector<int32_t>;

TEST(PromptLookup, ProposesWhatFollowedTheLastTokensEarlier) {
    const Ids h = {1, 2, 3, 4, 1, 2};  // [4 1 2] never occurred before; [1 2] did, at 0
    EXPECT_THAT(prompt_lookup_continuation(h, 3, 8), ElementsAre(3, 4, 1, 2));
    EXPECT_THAT(prompt_lookup_continuation(h, 3, 2), ElementsAre(3, 4));
}

TEST(PromptLookup, TheLongestMatchingSuffixWins) {
    // The last three tokens [5 6 7] occur at 0; the last one alone, 7, occurs later, at 5, followed by 1.
    const Ids h = {5, 6, 7, 8, 9, 7, 1, 5, 6, 7};
    EXPECT_THAT(prompt_lookup_continuation(h, 3, 3), ElementsAre(8, 9, 7));
    // With n capped at 1, the most recent 7 (at 5) wins instead.
    EXPECT_THAT(prompt_lookup_continuation(h, 1, 3), ElementsAre(1, 5, 6));
}

TEST(PromptLookup, TheMostRecentMatchWithAFullDraftElseTheLongestContinuation) {
    const Ids h = {1, 2, 10, 1, 2, 11, 1, 2};  // [1 2] at 0 (followed by 6 tokens) and at 3 (by 3)
    EXPECT_THAT(prompt_lookup_continuation(h, 2, 2), ElementsAre(11, 1));  // the recent one is full
    EXPECT_THAT(prompt_lookup_continuation(h, 2, 8),
                ElementsAre(10, 1, 2, 11, 1, 2));  // the earlier is longer
}

TEST(PromptLookup, NothingWithoutAMatchOrRoom) {
    EXPECT_THAT(prompt_lookup_continuation(Ids{1, 2, 3, 4}, 3, 8), IsEmpty());
    EXPECT_THAT(prompt_lookup_continuation(Ids{7}, 3, 8), IsEmpty());
    EXPECT_THAT(prompt_lookup_continuation(Ids{}, 3, 8), IsEmpty());
    EXPECT_THAT(prompt_lookup_continuation(Ids{7, 7}, 3, 0), IsEmpty());
    // A match may overlap the pattern: [7 7] at 0 is followed by the last 7.
    EXPECT_THAT(prompt_lookup_continuation(Ids{7, 7, 7}, 2, 8), ElementsAre(7));
}

TEST(PromptLookup, ProposerKeepsToDraftMinAndMaxAndTheRoomGiven) {
    const Ids h = {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2};
    std::vector<int32_t> draft = {99};
    PromptLookup lookup({.ngram = 2, .draft_min = 1, .draft_max = 4});
    lookup.propose(h, 100, draft);
    EXPECT_THAT(draft, ElementsAre(3, 4, 5, 6));
    lookup.propose(h, 2, draft);
    EXPECT_THAT(draft, ElementsAre(3, 4));

    PromptLookup picky({.ngram = 2, .draft_min = 3, .draft_max = 4});
    picky.propose(h, 2, draft);  // room for 2, fewer than draft_min: nothing
    EXPECT_THAT(draft, IsEmpty());
    picky.propose(Ids{1, 2, 3, 1, 2}, 8, draft);  // 3 1 2 follow the match: enough
    EXPECT_THAT(draft, ElementsAre(3, 1, 2));
    picky.propose(Ids{5, 1, 2, 7, 2}, 8, draft);  // [7 2] not seen; 2 at 2 is followed by 7 2 only: too few
    EXPECT_THAT(draft, IsEmpty());
}

TEST(PromptLookup, RefusesBadOptionsNamingThem) {
    EXPECT_THROW(PromptLookup({.ngram = 0}), std::invalid_argument);
    EXPECT_THROW(PromptLookup({.ngram = graph::kMaxLookupNgram + 1}), std::invalid_argument);
    try {
        PromptLookup({.ngram = 2, .draft_min = 5, .draft_max = 4});
        FAIL() << "draft_min > draft_max was taken";
    } catch (const std::invalid_argument& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr("--draft-min"));
    }
    EXPECT_THROW(PromptLookup({.draft_max = graph::kMaxDraftTokens + 1}), std::invalid_argument);
    EXPECT_THROW(PromptLookup({.draft_min = 0}), std::invalid_argument);
}

TEST(DraftLength, FollowsTheAcceptanceRateBetweenMinAndMax) {
    DraftLength length(2, 8);
    EXPECT_EQ(length.next(), 8);  // optimistic at first
    length.observe(8, 0);
    EXPECT_EQ(length.next(), 6);  // rate 0.7
    for (int i = 0; i < 20; ++i) length.observe(length.next(), 0);
    EXPECT_EQ(length.next(), 2);  // never below draft_min
    int64_t last = length.next();
    for (int i = 0; i < 20; ++i) {
        length.observe(length.next(), length.next());
        EXPECT_GE(length.next(), last);  // fully accepted drafts only grow it
        last = length.next();
    }
    EXPECT_EQ(length.next(), 8);
    length.observe(0, 0);  // nothing proposed: nothing learnt
    EXPECT_EQ(length.next(), 8);
    length.observe(8, 4);
    EXPECT_EQ(length.next(), 7);  // rate 0.85 of 8 is 6.8
}

}  // namespace
}  // namespace graphrun
