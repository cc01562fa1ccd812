#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "ecsnet/ecs/entity.hpp"

// Lists of entities put in ascending index order, for code that reads arrays by index or
// writes runs of indices: a pass over buckets when the indices are dense, a radix sort when
// they are spread (a comparison sort's mispredicted branches were a tenth of a server tick
// with 1,000 clients, each sorting its ~150 entities spread over 100,000 indices).
namespace ecsnet::ecs {

class index_order {
public:
    // `entities` in ascending index order, each index once (the first listed is kept): the
    // list itself when it is so already, else a copy held here, valid until the next call.
    [[nodiscard]] std::span<const Entity> sort(std::span<const Entity> entities) {
        const auto not_ascending = [](Entity a, Entity b) { return a.index() >= b.index(); };
        if (std::adjacent_find(entities.begin(), entities.end(), not_ascending) ==
            entities.end()) {
            return entities;
        }
        std::uint32_t low = entities.front().index();
        std::uint32_t high = low;
        for (const Entity e : entities) {
            low = std::min(low, e.index());
            high = std::max(high, e.index());
        }
        const std::size_t range = std::size_t{high} - low + 1;
        sorted_.clear();
        if (range <= entities.size() * 4) {
            bucket_.assign(range, Entity{});
            for (const Entity e : entities) {
                Entity& at = bucket_[e.index() - low];
                if (at.is_null()) {
                    at = e;
                }
            }
            for (const Entity e : bucket_) {
                if (!e.is_null()) {
                    sorted_.push_back(e);
                }
            }
            return sorted_;
        }
        keys_.resize(entities.size());
        for (std::size_t i = 0; i < entities.size(); ++i) {
            keys_[i] = (std::uint64_t{entities[i].index() - low} << 32U) | entities[i].version();
        }
        sort_high(static_cast<unsigned>(std::bit_width(high - low)));
        for (std::size_t i = 0; i < keys_.size(); ++i) {
            const auto index = static_cast<std::uint32_t>(keys_[i] >> 32U) + low;
            if (sorted_.empty() || sorted_.back().index() != index) {
                sorted_.emplace_back(index, static_cast<std::uint32_t>(keys_[i]));
            }
        }
        return sorted_;
    }

private:
    static_assert(sizeof(Entity::index_type) == 4 && sizeof(Entity::version_type) == 4,
                  "the keys pack an index and a version in 64 bits");

    // Sorts keys_ by their high 32 bits, of which only the low `bits` are used, stable (the
    // first of an index stays first).
    void sort_high(unsigned bits) {
        scratch_.resize(keys_.size());
        const auto n = static_cast<unsigned>(keys_.size());
        if (n <= small) {
            // One pass on the top digit, with about as many buckets as keys, leaves so few
            // keys per bucket that an insertion sort finishes with a compare or two per key.
            const unsigned digit = std::min(bits, static_cast<unsigned>(std::bit_width(n)));
            pass(32 + bits - digit, digit);
            // Bounded: keys crowded into a few buckets fall through to the full passes (the
            // moves so far kept equal keys in order, so the result stays stable).
            std::size_t moves = 0;
            std::size_t i = 1;
            for (; i < keys_.size() && moves <= std::size_t{8} * n; ++i) {
                const std::uint64_t k = keys_[i];
                std::size_t at = i;
                for (; at > 0 && (keys_[at - 1] >> 32U) > (k >> 32U); --at) {
                    keys_[at] = keys_[at - 1];
                }
                keys_[at] = k;
                moves += i - at;
            }
            if (i == keys_.size()) {
                return;
            }
        }
        // Digits of at most 11 bits, as few passes as that allows.
        const unsigned passes = (bits + 10) / 11;
        const unsigned digit = passes == 0 ? 0 : (bits + passes - 1) / passes;
        for (unsigned p = 0; p < passes; ++p) {
            pass(32 + p * digit, digit);
        }
    }
    // One stable counting pass on the `digit` bits from `shift`.
    void pass(unsigned shift, unsigned digit) {
        const std::uint64_t mask = (std::uint64_t{1} << digit) - 1;
        counts_.assign(std::size_t{1} << digit, 0);
        for (const std::uint64_t k : keys_) {
            ++counts_[(k >> shift) & mask];
        }
        std::uint32_t sum = 0;
        for (std::uint32_t& c : counts_) {
            sum += std::exchange(c, sum);
        }
        for (const std::uint64_t k : keys_) {
            scratch_[counts_[(k >> shift) & mask]++] = k;
        }
        keys_.swap(scratch_);
    }

    static constexpr unsigned small = 1024;

    std::vector<Entity> sorted_;
    std::vector<Entity> bucket_;
    std::vector<std::uint64_t> keys_;
    std::vector<std::uint64_t> scratch_;
    std::vector<std::uint32_t> counts_;
};

}  // namespace ecsnet::ecs
