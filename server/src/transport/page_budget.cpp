#include "ecsnet/server/transport/page_budget.hpp"

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace ecsnet::server {

struct page_budget::state {
    explicit state(page_limits l) : limits{l} {}

    const page_limits limits;
    mutable std::mutex mutex;
    page_stats stats;
    std::unordered_map<std::string, std::size_t> per_address;
};

page_budget::page_budget(page_limits limits) : state_{std::make_shared<state>(limits)} {}

std::variant<page_budget::lease, page_budget::refusal> page_budget::admit(
    const std::string& address, std::size_t memory, std::size_t buffer_bytes) const {
    buffer_bytes = std::min(buffer_bytes, state_->limits.chunk_bytes);
    memory = std::max(memory, buffer_bytes);
    {
        const std::lock_guard lock{state_->mutex};
        page_stats& s = state_->stats;
        auto& from_address = state_->per_address[address];
        if (from_address >= state_->limits.per_address) {
            ++s.refused_address;
            return refusal::per_address;
        }
        if (s.buffered_bytes + memory > state_->limits.memory_bytes) {
            if (from_address == 0) {
                state_->per_address.erase(address);
            }
            ++s.refused_memory;
            return refusal::memory;
        }
        ++from_address;
        ++s.connections;
        s.buffered_bytes += memory;
        s.peak_buffered_bytes = std::max(s.peak_buffered_bytes, s.buffered_bytes);
    }
    return lease{state_, address, memory, buffer_bytes};
}

const page_limits& page_budget::limits() const noexcept { return state_->limits; }

page_stats page_budget::stats() const {
    const std::lock_guard lock{state_->mutex};
    return state_->stats;
}

page_budget::lease::lease(std::shared_ptr<state> s, std::string address, std::size_t memory,
                          std::size_t buffer_bytes)
    : state_{std::move(s)},
      address_{std::move(address)},
      memory_{memory},
      // Allocated once admitted, so the bound counts it before it exists.
      buffer_{buffer_bytes > 0 ? std::make_unique_for_overwrite<char[]>(buffer_bytes) : nullptr},
      buffer_bytes_{buffer_bytes} {}

page_budget::lease::~lease() {
    if (!state_) {
        return;  // moved from
    }
    buffer_.reset();
    const std::lock_guard lock{state_->mutex};
    --state_->stats.connections;
    state_->stats.buffered_bytes -= memory_;
    const auto it = state_->per_address.find(address_);
    if (it != state_->per_address.end() && --it->second == 0) {
        state_->per_address.erase(it);
    }
}

std::span<char> page_budget::lease::buffer() const noexcept { return {buffer_.get(), buffer_bytes_}; }

const page_limits& page_budget::lease::limits() const noexcept { return state_->limits; }

void page_budget::lease::read_from_file(std::size_t bytes) noexcept {
    const std::lock_guard lock{state_->mutex};
    state_->stats.file_bytes_read += bytes;
}

void page_budget::lease::served() noexcept {
    const std::lock_guard lock{state_->mutex};
    ++state_->stats.served;
}

void page_budget::lease::stalled() noexcept {
    const std::lock_guard lock{state_->mutex};
    ++state_->stats.stalled;
}

}  // namespace ecsnet::server
