#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace ecsnet::ecs {

// Identifies a component type within one world: 0, 1, 2... in registration order. It is the
// bit position in signatures.
using component_id = std::uint32_t;

// The set of component types an entity has (seed 002's "DNA" of an entity), without a
// compile-time cap on the number of types.
class signature {
public:
    signature() = default;
    explicit signature(std::span<const std::uint64_t> words) : words_(words.begin(), words.end()) {
        trim();
    }

    [[nodiscard]] bool test(component_id id) const noexcept {
        const std::size_t word = id / 64;
        return word < words_.size() && ((words_[word] >> (id % 64)) & 1U) != 0;
    }

    signature& set(component_id id) {
        const std::size_t word = id / 64;
        if (word >= words_.size()) {
            words_.resize(word + 1, 0);
        }
        words_[word] |= std::uint64_t{1} << (id % 64);
        return *this;
    }

    signature& reset(component_id id) noexcept {
        const std::size_t word = id / 64;
        if (word < words_.size()) {
            words_[word] &= ~(std::uint64_t{1} << (id % 64));
            trim();
        }
        return *this;
    }

    [[nodiscard]] std::size_t count() const noexcept {
        std::size_t n = 0;
        for (const auto w : words_) {
            n += static_cast<std::size_t>(std::popcount(w));
        }
        return n;
    }

    [[nodiscard]] bool none() const noexcept { return words_.empty(); }
    [[nodiscard]] bool any() const noexcept { return !words_.empty(); }

    // True when every type in `other` is also in this signature.
    [[nodiscard]] bool includes(const signature& other) const noexcept {
        if (other.words_.size() > words_.size()) {
            return false;
        }
        for (std::size_t i = 0; i < other.words_.size(); ++i) {
            if ((other.words_[i] & ~words_[i]) != 0) {
                return false;
            }
        }
        return true;
    }

    template <typename Fn>
    void each(Fn&& fn) const {
        for_each_bit(words_, fn);
    }

    // Bits as text, lowest type first: "0110" means types 1 and 2.
    [[nodiscard]] std::string to_string() const {
        std::string out;
        for (std::size_t i = 0; i < words_.size() * 64; ++i) {
            out.push_back(test(static_cast<component_id>(i)) ? '1' : '0');
        }
        const auto last = out.find_last_of('1');
        out.resize(last == std::string::npos ? 0 : last + 1);
        return out;
    }

    friend bool operator==(const signature&, const signature&) = default;

    template <typename Fn>
    static void for_each_bit(std::span<const std::uint64_t> words, Fn&& fn) {
        for (std::size_t w = 0; w < words.size(); ++w) {
            std::uint64_t bits = words[w];
            while (bits != 0) {
                const auto bit = static_cast<component_id>(std::countr_zero(bits));
                fn(static_cast<component_id>(w * 64 + bit));
                bits &= bits - 1;
            }
        }
    }

    // Whether pred(id) holds for some set bit; stops at the first.
    template <typename Pred>
    [[nodiscard]] static bool any_bit(std::span<const std::uint64_t> words, Pred&& pred) {
        for (std::size_t w = 0; w < words.size(); ++w) {
            for (std::uint64_t bits = words[w]; bits != 0; bits &= bits - 1) {
                if (pred(static_cast<component_id>(w * 64 + std::countr_zero(bits)))) {
                    return true;
                }
            }
        }
        return false;
    }

private:
    // Trailing zero words are dropped so that equal sets compare equal.
    void trim() noexcept {
        while (!words_.empty() && words_.back() == 0) {
            words_.pop_back();
        }
    }

    std::vector<std::uint64_t> words_;
};

namespace detail {

// Every entity's signature, `stride` words per entity index, in pages of rows allocated on
// demand: growing never copies rows, and entities that never get a component cost nothing.
// Registering a 65th, 129th... type widens the stride once (O(allocated rows)); everything
// else is O(1).
class signature_table {
public:
    static constexpr std::size_t rows_per_page = 4096;

    // All zeros when the row's page was never allocated.
    [[nodiscard]] std::span<const std::uint64_t> row(std::size_t index) const noexcept {
        const std::uint64_t* page = page_of(index);
        return {page == nullptr ? zeros_.data() : page + (index % rows_per_page) * stride_,
                stride_};
    }

    // Precondition: the row exists (ensure_row or ensure_rows).
    void set(std::size_t index, component_id id) noexcept {
        word(index, id) |= std::uint64_t{1} << (id % 64);
    }
    void reset(std::size_t index, component_id id) noexcept {
        if (page_of(index) != nullptr) {
            word(index, id) &= ~(std::uint64_t{1} << (id % 64));
        }
    }
    [[nodiscard]] bool test(std::size_t index, component_id id) const noexcept {
        const std::uint64_t* page = page_of(index);
        return page != nullptr &&
               ((page[(index % rows_per_page) * stride_ + id / 64] >> (id % 64)) & 1U) != 0;
    }
    void clear(std::size_t index) noexcept {
        if (std::uint64_t* page = page_of(index)) {
            std::fill_n(page + (index % rows_per_page) * stride_, stride_, std::uint64_t{0});
        }
    }

    // Makes room for the row of entity `index`.
    void ensure_row(std::size_t index) {
        if (page_of(index) == nullptr) [[unlikely]] {
            allocate(index / rows_per_page);
        }
    }

    // Makes room for entity indices below `count`.
    void ensure_rows(std::size_t count) {
        for (std::size_t page = 0; page * rows_per_page < count; ++page) {
            if (page >= pages_.size() || !pages_[page]) {
                allocate(page);
            }
        }
    }

    // Makes room for component ids below `count`.
    void ensure_bits(std::size_t count) {
        const std::size_t needed = (count + 63) / 64;
        if (needed <= stride_) {
            return;
        }
        std::vector<std::unique_ptr<std::uint64_t[]>> wider(pages_.size());
        for (std::size_t p = 0; p < pages_.size(); ++p) {
            if (!pages_[p]) {
                continue;
            }
            wider[p] = std::make_unique<std::uint64_t[]>(rows_per_page * needed);
            for (std::size_t r = 0; r < rows_per_page; ++r) {
                std::copy_n(pages_[p].get() + r * stride_, stride_, wider[p].get() + r * needed);
            }
        }
        zeros_.resize(needed, 0);
        pages_ = std::move(wider);
        stride_ = needed;
    }

    [[nodiscard]] std::size_t stride() const noexcept { return stride_; }

private:
    [[nodiscard]] std::uint64_t* page_of(std::size_t index) const noexcept {
        const std::size_t page = index / rows_per_page;
        return page < pages_.size() ? pages_[page].get() : nullptr;
    }

    std::uint64_t& word(std::size_t index, component_id id) const noexcept {
        return pages_[index / rows_per_page][(index % rows_per_page) * stride_ + id / 64];
    }

    void allocate(std::size_t page) {
        if (page >= pages_.size()) {
            pages_.resize(page + 1);
        }
        pages_[page] = std::make_unique<std::uint64_t[]>(rows_per_page * stride_);
    }

    std::size_t stride_{1};
    std::vector<std::unique_ptr<std::uint64_t[]>> pages_;
    std::vector<std::uint64_t> zeros_ = std::vector<std::uint64_t>(1, 0);  // a row of stride_
};

}  // namespace detail

}  // namespace ecsnet::ecs
