#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

namespace ecsnet::server {

namespace detail {

// nth_element by urgency, most urgent first: [first, nth) the most urgent, none of [nth, last)
// more urgent than them. A quickselect whose partition moves every element and advances by the
// comparison's result instead of branching on it: half of nth_element's comparisons of random
// urgencies were mispredicted branches, the most of select_by_urgency's time. Many equal
// urgencies can make its rounds shrink the range by little: after a dozen, nth_element ends it.
template <typename It>
void most_urgent_first(It first, It nth, It last) {
    const auto more_urgent = [](const auto& a, const auto& b) {
        return a.accumulated > b.accumulated;
    };
    for (int round = 0; last - first > 16 && first < nth && nth < last; ++round) {
        if (round == 12) {
            std::nth_element(first, nth, last, more_urgent);
            return;
        }
        // The median of three as the pivot, moved to the end.
        const It mid = first + (last - first) / 2;
        It lo = first;
        It hi = last - 1;
        if (more_urgent(*mid, *lo)) {
            std::iter_swap(mid, lo);
        }
        if (more_urgent(*hi, *lo)) {
            std::iter_swap(hi, lo);
        }
        if (more_urgent(*hi, *mid)) {
            std::iter_swap(hi, mid);
        }
        std::iter_swap(mid, hi);  // lo >= pivot >= the old hi, the pivot now last
        const auto pivot = hi->accumulated;
        It store = first;
        for (It it = first; it != hi; ++it) {
            const bool above = it->accumulated > pivot;
            std::iter_swap(store, it);
            store += above;
        }
        std::iter_swap(store, hi);  // the pivot at its place: [first, store) more urgent
        if (store == nth) {
            return;
        }
        if (store < nth) {
            first = store + 1;
        } else {
            last = store;
        }
    }
    if (first < nth && nth < last) {
        std::sort(first, last, more_urgent);
    }
}

}  // namespace detail

// What a tick's budget lets through: greedy in order of urgency (a candidate's `accumulated`,
// larger is more urgent), each candidate goes if its `cost` fits in what is left of `room`, and
// the most urgent goes even when it alone exceeds the room (if there is any), so that an entity
// larger than a tick's budget is not starved (its debt is paid later). Calls pick(c) for those
// that go and defer(c) for the others, each candidate once, in no particular order; reorders
// `candidates`. `total` is the sum of their costs.
//
// The choices are those of sorting every candidate and walking them, without sorting them all
// (one client's sort was the largest part of plan(), a thousand times a tick): the `fit` most
// urgent, fit estimated from the average cost, are found first, and all go when their costs add
// up within the room (the usual case); only the rest is sorted, and only if one of them could
// still fit.
template <typename Candidate, typename Pick, typename Defer>
void select_by_urgency(std::span<Candidate> candidates, double room, std::size_t total, Pick&& pick,
                       Defer&& defer) {
    if (candidates.empty()) {
        return;
    }
    const auto more_urgent = [](const Candidate& a, const Candidate& b) {
        return a.accumulated > b.accumulated;
    };
    const auto bytes_of = [](auto from, auto to) {
        std::size_t bytes = 0;
        for (auto it = from; it != to; ++it) {
            bytes += it->cost;
        }
        return bytes;
    };
    bool any = false;
    const auto take_all = [&](auto from, auto to) {
        for (auto it = from; it != to; ++it) {
            pick(*it);
        }
        room -= static_cast<double>(bytes_of(from, to));
        any = any || from != to;
    };
    const auto greedy = [&](auto from, auto to) {
        std::sort(from, to, more_urgent);
        for (auto it = from; it != to; ++it) {
            if (static_cast<double>(it->cost) <= room || (!any && room > 0.0)) {
                room -= static_cast<double>(it->cost);
                any = true;
                pick(*it);
            } else {
                defer(*it);
            }
        }
    };

    const auto first = candidates.begin();
    const auto last = candidates.end();
    const double average = static_cast<double>(total) / static_cast<double>(candidates.size());
    const auto fit = std::min(
        candidates.size(), static_cast<std::size_t>(std::max(room, 0.0) / std::max(average, 1.0)));
    const auto middle = first + static_cast<std::ptrdiff_t>(fit);
    detail::most_urgent_first(first, middle, last);
    const std::size_t head_bytes = bytes_of(first, middle);
    if (static_cast<double>(head_bytes) <= room) {
        take_all(first, middle);
    } else {
        greedy(first, middle);
    }
    std::uint32_t smallest_rest = std::numeric_limits<std::uint32_t>::max();
    for (auto it = middle; it != last; ++it) {
        smallest_rest = std::min(smallest_rest, it->cost);
    }
    if (middle != last && (static_cast<double>(smallest_rest) <= room || (!any && room > 0.0))) {
        greedy(middle, last);
    } else {
        for (auto it = middle; it != last; ++it) {
            defer(*it);
        }
    }
}

}  // namespace ecsnet::server
