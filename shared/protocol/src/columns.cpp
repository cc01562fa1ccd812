#include "ecsnet/protocol/columns.hpp"

#include <limits>

namespace ecsnet::protocol {

void index_set_plan::build(std::span<const std::uint32_t> indices) {
    runs.clear();
    list.clear();
    order.clear();
    in_order = true;
    order.reserve(indices.size());
    // Two passes keep values in one output order: run members first, then the list.
    singles.clear();
    std::size_t start = 0;
    const auto flush = [&](std::size_t end) {
        const std::size_t length = end - start;
        if (length >= 3) {
            in_order = in_order && singles.empty();  // a run after a single moves before it
            runs.push_back(wire::IndexRun{indices[start], static_cast<std::uint32_t>(length)});
            for (std::size_t i = start; i < end; ++i) {
                order.push_back(static_cast<std::uint32_t>(i));
            }
        } else {
            for (std::size_t i = start; i < end; ++i) {
                singles.push_back(static_cast<std::uint32_t>(i));
            }
        }
        start = end;
    };
    for (std::size_t i = 1; i <= indices.size(); ++i) {
        // 0 does not follow the largest index: a run must not wrap (receivers refuse it).
        if (i == indices.size() || indices[i - 1] == std::numeric_limits<std::uint32_t>::max() ||
            indices[i] != indices[i - 1] + 1) {
            flush(i);
        }
    }
    list.reserve(singles.size());
    for (const std::uint32_t pos : singles) {
        list.push_back(indices[pos]);
        order.push_back(pos);
    }
}

flatbuffers::Offset<wire::IndexSet> index_set_plan::encode(
    flatbuffers::FlatBufferBuilder& fbb) const {
    const auto runs_offset = runs.empty() ? 0 : fbb.CreateVectorOfStructs(runs);
    const auto list_offset = list.empty() ? 0 : fbb.CreateVector(list);
    return wire::CreateIndexSet(fbb, runs_offset, list_offset);
}

std::size_t index_set_size(const wire::IndexSet* set, std::size_t limit) noexcept {
    if (set == nullptr) {
        return 0;
    }
    std::size_t total = set->list() != nullptr ? set->list()->size() : 0;
    if (const auto* runs = set->runs()) {
        for (const auto* run : *runs) {
            total += run->count();
            if (total > limit) {
                return limit + 1;
            }
        }
    }
    return total > limit ? limit + 1 : total;
}

bool expand_index_set(const wire::IndexSet* set, std::size_t limit,
                      std::vector<std::uint32_t>& out) {
    out.clear();
    if (set == nullptr) {
        return true;
    }
    const std::size_t total = index_set_size(set, limit);
    if (total > limit) {
        return false;
    }
    out.reserve(total);
    if (const auto* runs = set->runs()) {
        for (const auto* run : *runs) {
            const std::uint64_t last = std::uint64_t{run->first()} + run->count();
            if (last > std::uint64_t{std::numeric_limits<std::uint32_t>::max()} + 1) {
                return false;
            }
            for (std::uint32_t i = 0; i < run->count(); ++i) {
                out.push_back(run->first() + i);
            }
        }
    }
    if (const auto* list = set->list()) {
        out.insert(out.end(), list->begin(), list->end());
    }
    return true;
}

}  // namespace ecsnet::protocol
