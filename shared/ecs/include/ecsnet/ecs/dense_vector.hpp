#pragma once

#include <cassert>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace ecsnet::ecs::detail {

// A vector of trivially copyable values that grows with std::realloc. Why not std::vector:
// glibc grows a large mmap-ed block by remapping its pages, so doubling a storage of a million
// components neither copies it nor faults in a fresh copy of the pages already written
// (creating entities with components into fresh memory is bound by page faults:
// docs/BENCHMARKS.md).
template <typename T>
class realloc_vector {
    static_assert(std::is_trivially_copyable_v<T>, "realloc moves values bitwise");
    static_assert(alignof(T) <= alignof(std::max_align_t), "realloc aligns to max_align_t only");

public:
    using value_type = T;
    using size_type = std::size_t;
    using iterator = T*;
    using const_iterator = const T*;

    realloc_vector() noexcept = default;
    realloc_vector(const realloc_vector& other) { *this = other; }
    realloc_vector(realloc_vector&& other) noexcept
        : data_{std::exchange(other.data_, nullptr)},
          size_{std::exchange(other.size_, 0)},
          capacity_{std::exchange(other.capacity_, 0)} {}
    realloc_vector& operator=(const realloc_vector& other) {
        if (this != &other) {
            reserve(other.size_);
            if (other.size_ != 0) {
                std::memcpy(data_, other.data_, other.size_ * sizeof(T));
            }
            size_ = other.size_;
        }
        return *this;
    }
    realloc_vector& operator=(realloc_vector&& other) noexcept {
        if (this != &other) {
            std::free(data_);
            data_ = std::exchange(other.data_, nullptr);
            size_ = std::exchange(other.size_, 0);
            capacity_ = std::exchange(other.capacity_, 0);
        }
        return *this;
    }
    ~realloc_vector() { std::free(data_); }

    [[nodiscard]] size_type size() const noexcept { return size_; }
    [[nodiscard]] size_type capacity() const noexcept { return capacity_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    [[nodiscard]] T* data() noexcept { return data_; }
    [[nodiscard]] const T* data() const noexcept { return data_; }
    [[nodiscard]] iterator begin() noexcept { return data_; }
    [[nodiscard]] iterator end() noexcept { return data_ + size_; }
    [[nodiscard]] const_iterator begin() const noexcept { return data_; }
    [[nodiscard]] const_iterator end() const noexcept { return data_ + size_; }

    [[nodiscard]] T& operator[](size_type i) noexcept {
        assert(i < size_ && "realloc_vector index out of range");
        return data_[i];
    }
    [[nodiscard]] const T& operator[](size_type i) const noexcept {
        assert(i < size_ && "realloc_vector index out of range");
        return data_[i];
    }
    [[nodiscard]] T& back() noexcept {
        assert(size_ != 0 && "back() of an empty realloc_vector");
        return data_[size_ - 1];
    }

    void push_back(const T& value) {
        if (size_ == capacity_) [[unlikely]] {
            // A copy first: `value` may live in the block that grow() moves.
            const T copy = value;
            grow(capacity_ == 0 ? min_capacity : capacity_ * 2);
            data_[size_++] = copy;
            return;
        }
        data_[size_++] = value;
    }
    template <typename... Args>
    T& emplace_back(Args&&... args) {
        push_back(T(std::forward<Args>(args)...));
        return back();
    }
    void pop_back() noexcept {
        assert(size_ != 0 && "pop_back() of an empty realloc_vector");
        --size_;
    }
    void clear() noexcept { size_ = 0; }
    void reserve(size_type capacity) {
        if (capacity > capacity_) {
            grow(capacity);
        }
    }

private:
    static constexpr size_type min_capacity = 16;

    // Out of line: push_back is on every insertion, a growth once per doubling.
    [[gnu::noinline]] void grow(size_type capacity) {
        if (capacity > std::numeric_limits<size_type>::max() / sizeof(T)) {
            throw std::length_error("realloc_vector: capacity overflow");
        }
        void* block = std::realloc(data_, capacity * sizeof(T));
        if (block == nullptr) {
            throw std::bad_alloc{};  // data_ is still valid and unchanged
        }
        data_ = static_cast<T*>(block);
        capacity_ = capacity;
    }

    T* data_{nullptr};
    size_type size_{0};
    size_type capacity_{0};
};

// The packed arrays of the storages: realloc_vector where realloc can move the values,
// std::vector for the rest (owning types, over-aligned types).
template <typename T>
using dense_vector =
    std::conditional_t<std::is_trivially_copyable_v<T> && alignof(T) <= alignof(std::max_align_t),
                       realloc_vector<T>, std::vector<T>>;

}  // namespace ecsnet::ecs::detail
