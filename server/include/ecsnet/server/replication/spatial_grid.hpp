#pragma once

#include <boost/unordered/unordered_flat_map.hpp>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ecsnet/ecs/entity.hpp"

// A uniform grid over the plane, hashed: only cells holding entities cost memory, so the world
// needs no bounds. Interest management asks it which entities lie near a point; it is kept up
// to date from each tick's changes, in O(changed).
namespace ecsnet::server {

struct point {
    float x{};
    float y{};
    friend bool operator==(const point&, const point&) = default;
};

class spatial_grid {
public:
    // A cell's coordinates: floor(x / cell_size), floor(y / cell_size).
    struct cell {
        std::int32_t x{};
        std::int32_t y{};
        friend bool operator==(const cell&, const cell&) = default;
    };

    explicit spatial_grid(float cell_size);

    [[nodiscard]] float cell_size() const noexcept { return cell_size_; }
    [[nodiscard]] cell cell_of(point p) const noexcept;

    // Puts e at p (moving it when it is placed already). Inline for the common case, an
    // entity moving within its cell: no floor to compute, no bounds to widen.
    void place(ecs::Entity e, point p) {
        if (e.index() < slots_.size()) {
            slot& s = slots_[e.index()];
            if (s.entity == e && contains(unpack(s.key), p)) {
                s.where = p;
                return;
            }
        }
        place_by_cell(e, p);
    }
    // Takes e (any version at its index) out; nothing when it is not placed.
    void erase(ecs::Entity e);
    [[nodiscard]] bool placed(ecs::Entity e) const noexcept;
    // Where e was placed; nullptr when it is not placed.
    [[nodiscard]] const point* position(ecs::Entity e) const noexcept {
        return e.index() < slots_.size() && slots_[e.index()].entity == e ? &slots_[e.index()].where
                                                                           : nullptr;
    }
    // Asks the CPU to load what position() of the entity at `index` will read.
    void prefetch(std::uint32_t index) const noexcept {
        if (index < slots_.size()) {
            __builtin_prefetch(&slots_[index]);
        }
    }
    [[nodiscard]] std::size_t size() const noexcept { return placed_; }
    [[nodiscard]] std::size_t occupied_cells() const noexcept { return cells_.size(); }
    // Whether query(centre, radius) reaches every cell ever occupied (so every entity).
    [[nodiscard]] bool covers_all(point centre, float radius) const noexcept {
        const cell low = cell_of(point{centre.x - radius, centre.y - radius});
        const cell high = cell_of(point{centre.x + radius, centre.y + radius});
        return !bounded_ || (low.x <= low_.x && low.y <= low_.y && high.x >= high_.x &&
                             high.y >= high_.y);
    }

    // Whether query(centre, radius) visits e.
    [[nodiscard]] bool in_query(ecs::Entity e, point centre, float radius) const noexcept {
        if (!placed(e)) {
            return false;
        }
        const cell low = cell_of(point{centre.x - radius, centre.y - radius});
        const cell high = cell_of(point{centre.x + radius, centre.y + radius});
        const cell c = unpack(slots_[e.index()].key);
        return c.x >= low.x && c.x <= high.x && c.y >= low.y && c.y <= high.y;
    }

    // fn(entity) for every entity in the cells that overlap the square of half side `radius`
    // around `centre`: a superset of the disc, cell-granular (what makes it cheap).
    template <typename Fn>
    void query(point centre, float radius, Fn&& fn) const {
        const cell low = cell_of(point{centre.x - radius, centre.y - radius});
        const cell high = cell_of(point{centre.x + radius, centre.y + radius});
        // 64-bit arithmetic throughout: the outermost cells are the int32 limits, where a
        // 32-bit loop counter would overflow and the full span (2^32 squared) too.
        const std::int64_t width = std::int64_t{high.x} - low.x + 1;
        const std::int64_t height = std::int64_t{high.y} - low.y + 1;
        if (width <= 0 || height <= 0) {
            return;  // a negative radius
        }
        // A radius spanning more cells than are occupied walks the occupied cells instead.
        const auto occupied = static_cast<std::int64_t>(cells_.size());
        if (width > occupied || height > occupied || width * height > occupied) {
            for (const auto& [key, entities] : cells_) {
                const cell c = unpack(key);
                if (c.x >= low.x && c.x <= high.x && c.y >= low.y && c.y <= high.y) {
                    for (const ecs::Entity e : entities) {
                        fn(e);
                    }
                }
            }
            return;
        }
        // In two passes over batches of cells: find each cell and ask the CPU for its list,
        // then read the lists. Each list is its own allocation, and reading it right after
        // finding its cell waited for one cache miss per cell in turn: two thirds of
        // grid_interest::collect() at 1,000 views of 25 cells.
        constexpr std::size_t batch = 32;
        std::array<const std::vector<ecs::Entity>*, batch> found{};
        std::size_t count = 0;
        const auto drain = [&] {
            for (std::size_t i = 0; i < count; ++i) {
                for (const ecs::Entity e : *found[i]) {
                    fn(e);
                }
            }
            count = 0;
        };
        for (std::int64_t y = low.y; y <= high.y; ++y) {
            for (std::int64_t x = low.x; x <= high.x; ++x) {
                const auto it = cells_.find(
                    pack(cell{static_cast<std::int32_t>(x), static_cast<std::int32_t>(y)}));
                if (it != cells_.end()) {
                    __builtin_prefetch(it->second.data());
                    found[count++] = &it->second;
                    if (count == batch) {
                        drain();
                    }
                }
            }
        }
        drain();
    }

private:
    // Aligned to its size so that no slot straddles two cache lines: prefetch() brings one.
    struct alignas(32) slot {
        std::uint64_t key{};
        ecs::Entity entity;  // null: not placed
        std::uint32_t at{};  // position in the cell's list
        point where;         // for position(): the priorities of interest read it
    };
    static_assert(sizeof(slot) == 32);

    [[nodiscard]] static std::uint64_t pack(cell c) noexcept {
        return (std::uint64_t{static_cast<std::uint32_t>(c.x)} << 32U) |
               static_cast<std::uint32_t>(c.y);
    }
    [[nodiscard]] static cell unpack(std::uint64_t key) noexcept {
        return cell{static_cast<std::int32_t>(static_cast<std::uint32_t>(key >> 32U)),
                    static_cast<std::int32_t>(static_cast<std::uint32_t>(key))};
    }
    // Whether p lies in c, by the very products with which cell_of() corrects its floor:
    // true exactly when cell_of(p) == c (never for NaN).
    [[nodiscard]] bool contains(cell c, point p) const noexcept {
        const auto size = static_cast<double>(cell_size_);
        const auto x = static_cast<double>(p.x);
        const auto y = static_cast<double>(p.y);
        const auto cx = static_cast<double>(c.x);
        const auto cy = static_cast<double>(c.y);
        return cx * size <= x && x < (cx + 1.0) * size && cy * size <= y && y < (cy + 1.0) * size;
    }
    void place_by_cell(ecs::Entity e, point p);
    void take_out(std::uint32_t index);

    float cell_size_;
    double inverse_;
    boost::unordered_flat_map<std::uint64_t, std::vector<ecs::Entity>> cells_;
    std::vector<slot> slots_;  // by entity index
    std::size_t placed_{0};
    // The cells ever occupied lie within [low_, high_]: grown, never shrunk (cheap, and only
    // ever errs towards "does not cover everything").
    bool bounded_{false};
    cell low_{};
    cell high_{};
};

}  // namespace ecsnet::server
