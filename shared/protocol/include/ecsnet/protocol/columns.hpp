#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "ecsnet/wire/common_generated.h"

// Entity index sets, the part of every column that names entities.
namespace ecsnet::protocol {

// ---- index sets -----------------------------------------------------------------------------

// Splits indices (in the caller's order) into runs of >= 3 consecutive ones and a list of the
// rest; `order` receives positions into `indices` in the order the set lists them, which is
// the order values must follow.
struct index_set_plan {
    std::vector<wire::IndexRun> runs;
    std::vector<std::uint32_t> list;
    std::vector<std::uint32_t> order;
    bool in_order{true};  // order is 0, 1, 2, ...: values follow the caller's order
    // build()'s working list, kept for its memory: a plan is built per column per client per
    // tick, and a list of its own grew (allocated) several times each time.
    std::vector<std::uint32_t> singles;

    void build(std::span<const std::uint32_t> indices);
    [[nodiscard]] flatbuffers::Offset<wire::IndexSet> encode(
        flatbuffers::FlatBufferBuilder& fbb) const;
};

// Expands a verified IndexSet in order, refusing more than `limit` indices in all (a hostile
// peer could announce 2^32 of them in 8 bytes). Returns false when over the limit or when a
// run wraps past the largest index.
[[nodiscard]] bool expand_index_set(const wire::IndexSet* set, std::size_t limit,
                                    std::vector<std::uint32_t>& out);

// Number of indices the set announces, saturated at limit + 1.
[[nodiscard]] std::size_t index_set_size(const wire::IndexSet* set, std::size_t limit) noexcept;

}  // namespace ecsnet::protocol
