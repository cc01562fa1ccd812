// spatial_grid: the hashed uniform grid behind interest management. Queries are checked against
// a brute force over the same points: exactly the entities of the cells the square overlaps.
#include "ecsnet/server/replication/spatial_grid.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <vector>

namespace spatial_grid_test {

using ecsnet::ecs::Entity;
using ecsnet::server::point;
using ecsnet::server::spatial_grid;

std::vector<Entity> query(const spatial_grid& grid, point centre, float radius) {
    std::vector<Entity> out;
    grid.query(centre, radius, [&](Entity e) { out.push_back(e); });
    std::sort(out.begin(), out.end());
    return out;
}

// What query() must return: every entity whose cell lies between the cells of the square's
// corners, computed here from the cells' definition, floor(coordinate / cell size).
std::vector<Entity> brute_force(const std::map<Entity, point>& placed, float cell, point centre,
                                float radius) {
    const auto c = [&](float v) { return static_cast<std::int64_t>(std::floor(double{v} / cell)); };
    std::vector<Entity> out;
    for (const auto& [e, p] : placed) {
        if (c(p.x) >= c(centre.x - radius) && c(p.x) <= c(centre.x + radius) &&
            c(p.y) >= c(centre.y - radius) && c(p.y) <= c(centre.y + radius)) {
            out.push_back(e);
        }
    }
    return out;  // the map is ordered by entity
}

TEST(SpatialGrid, PlaceMoveErase) {
    spatial_grid grid{10.0F};
    const Entity a{1, 1};
    const Entity b{2, 1};
    grid.place(a, {5, 5});
    grid.place(b, {5, 6});
    EXPECT_TRUE(grid.placed(a));
    EXPECT_EQ(grid.size(), 2U);
    EXPECT_EQ(grid.occupied_cells(), 1U);
    EXPECT_EQ(query(grid, {5, 5}, 1), (std::vector<Entity>{a, b}));

    grid.place(a, {105, 5});  // another cell: leaves the first
    EXPECT_EQ(grid.size(), 2U);
    EXPECT_EQ(grid.occupied_cells(), 2U);
    EXPECT_EQ(query(grid, {5, 5}, 1), (std::vector<Entity>{b}));
    EXPECT_EQ(query(grid, {105, 5}, 1), (std::vector<Entity>{a}));

    grid.place(a, {106, 7});  // the same cell
    EXPECT_EQ(grid.occupied_cells(), 2U);
    EXPECT_EQ(query(grid, {105, 5}, 1), (std::vector<Entity>{a}));

    grid.erase(b);
    EXPECT_FALSE(grid.placed(b));
    EXPECT_EQ(grid.size(), 1U);
    EXPECT_EQ(grid.occupied_cells(), 1U) << "an emptied cell costs nothing";
    EXPECT_TRUE(query(grid, {5, 5}, 1).empty());
    grid.erase(b);  // not placed: nothing
    grid.erase(Entity{99, 1});
    EXPECT_EQ(grid.size(), 1U);
    grid.erase(a);
    EXPECT_EQ(grid.size(), 0U);
    EXPECT_EQ(grid.occupied_cells(), 0U);
}

TEST(SpatialGrid, CellsAreFloorOfCoordinateOverSize) {
    const spatial_grid grid{10.0F};
    EXPECT_EQ(grid.cell_of({0, 0}), (spatial_grid::cell{0, 0}));
    EXPECT_EQ(grid.cell_of({9.999F, 10.0F}), (spatial_grid::cell{0, 1}));
    EXPECT_EQ(grid.cell_of({-0.001F, -10.0F}), (spatial_grid::cell{-1, -1}));
    EXPECT_EQ(grid.cell_of({-10.001F, 25.0F}), (spatial_grid::cell{-2, 2}));
}

TEST(SpatialGrid, QueryOnCellBoundaries) {
    spatial_grid grid{10.0F};
    const Entity on_edge{1, 1};   // x = 10: first point of cell 1
    const Entity below{2, 1};     // x just under 10: cell 0
    const Entity negative{3, 1};  // x = -10: first point of cell -1
    grid.place(on_edge, {10, 0});
    grid.place(below, {9.99F, 0});
    grid.place(negative, {-10, 0});
    // A square ending exactly on x = 10 reaches into cell 1.
    EXPECT_EQ(query(grid, {5, 0}, 5), (std::vector<Entity>{on_edge, below}));
    // A square from x = 0 to 9.5: cell 0 only.
    EXPECT_EQ(query(grid, {4.75F, 0}, 4.75F), (std::vector<Entity>{below}));
    // A square starting exactly on x = -10 includes cell -1.
    EXPECT_EQ(query(grid, {-5, 0}, 5), (std::vector<Entity>{below, negative}));
    EXPECT_EQ(query(grid, {-15, 0}, 5), (std::vector<Entity>{negative}));
    EXPECT_TRUE(query(grid, {-15, 0}, 4).empty()) << "x = -10 is in cell -1, not -2";
    // Radius 0: the centre's cell.
    EXPECT_EQ(query(grid, {10, 0}, 0), (std::vector<Entity>{on_edge}));
    // A negative radius covers nothing.
    EXPECT_TRUE(query(grid, {10, 0}, -50).empty());
}

TEST(SpatialGrid, QueryMatchesBruteForceOnRandomPoints) {
    std::mt19937 rng{1234};
    for (const float cell : {1.0F, 7.5F, 64.0F}) {
        spatial_grid grid{cell};
        std::map<Entity, point> placed;
        std::uniform_real_distribution<float> coordinate{-500.0F, 500.0F};
        std::uniform_real_distribution<float> radius{0.0F, 120.0F};
        std::uniform_int_distribution<std::uint32_t> index{0, 399};
        for (int step = 0; step < 3000; ++step) {
            const Entity e{index(rng), 1};
            if (rng() % 5 == 0) {
                grid.erase(e);
                placed.erase(e);
            } else {
                // Some points exactly on cell boundaries.
                point p{coordinate(rng), coordinate(rng)};
                if (rng() % 4 == 0) {
                    p.x = std::floor(p.x / cell) * cell;
                }
                grid.place(e, p);
                placed[e] = p;
            }
            ASSERT_EQ(grid.size(), placed.size());
            if (step % 10 == 0) {
                const point centre{coordinate(rng), coordinate(rng)};
                const float r = step % 20 == 0 ? radius(rng) : radius(rng) * 10.0F;
                const std::vector<Entity> expected = brute_force(placed, cell, centre, r);
                ASSERT_EQ(query(grid, centre, r), expected)
                    << "cell " << cell << ", centre " << centre.x << "," << centre.y << ", radius "
                    << r << ", step " << step;
                // in_query() agrees with query(), for placed entities and for others.
                for (std::uint32_t i = 0; i < 400; i += 7) {
                    for (const Entity probe : {Entity{i, 1}, Entity{i, 2}}) {
                        ASSERT_EQ(grid.in_query(probe, centre, r),
                                  std::binary_search(expected.begin(), expected.end(), probe))
                            << "entity " << i << " version " << probe.version() << ", step " << step;
                    }
                }
                // A negative radius too (what query() visits then, possibly one cell).
                const std::vector<Entity> inverted = query(grid, centre, -r);
                for (const auto& [e, p] : placed) {
                    ASSERT_EQ(grid.in_query(e, centre, -r),
                              std::binary_search(inverted.begin(), inverted.end(), e));
                }
            }
        }
        for (const auto& [e, p] : placed) {
            EXPECT_TRUE(grid.placed(e));
            EXPECT_EQ(*grid.position(e), p) << "position() is where it was placed last";
        }
        EXPECT_EQ(grid.position(Entity{400, 1}), nullptr);
    }
}

// query() finds its cells in batches before reading their lists: a square of 13 x 13 occupied
// cells takes several batches, and every entity still comes once.
TEST(SpatialGrid, QueryOverMoreCellsThanOneBatchListsEachEntityOnce) {
    spatial_grid grid{1.0F};
    std::map<Entity, point> placed;
    std::uint32_t index = 0;
    for (int y = 0; y < 20; ++y) {
        for (int x = 0; x < 20; ++x) {
            for (int k = 0; k < 2; ++k) {  // two entities in every cell
                const Entity e{index++, 1};
                const point p{static_cast<float>(x) + 0.25F * static_cast<float>(k + 1),
                              static_cast<float>(y) + 0.5F};
                grid.place(e, p);
                placed[e] = p;
            }
        }
    }
    for (const float r : {6.0F, 9.5F, 15.0F}) {
        const point centre{10.0F, 10.0F};
        const std::vector<Entity> found = query(grid, centre, r);
        EXPECT_EQ(found, brute_force(placed, 1.0F, centre, r)) << "radius " << r;
        EXPECT_EQ(std::adjacent_find(found.begin(), found.end()), found.end()) << "radius " << r;
    }
    EXPECT_EQ(query(grid, {10.0F, 10.0F}, 6.0F).size(), std::size_t{13 * 13 * 2});
}

// Entities walking in small steps, many of them onto cell boundaries and a float's step either
// side (cell sizes whose inverse is inexact included): after every move the grid files each in
// cell_of()'s cell, whether place() saw it stay in its cell or leave it.
TEST(SpatialGrid, AnEntityMovingWithinOrAcrossCellsIsFiledWhereCellOfSays) {
    std::mt19937 rng{4321};
    for (const float cell : {10.0F, 0.1F, 7.5F, 128.0F}) {
        spatial_grid grid{cell};
        std::vector<point> at(16, point{0, 0});
        std::uniform_int_distribution<int> pick(0, static_cast<int>(at.size()) - 1);
        std::uniform_int_distribution<int> how(0, 3);
        std::uniform_int_distribution<int> boundary(-3, 3);
        std::uniform_real_distribution<float> step(-0.3F * cell, 0.3F * cell);
        std::size_t stayed = 0;
        std::size_t left = 0;
        for (int round = 0; round < 20'000; ++round) {
            const auto i = static_cast<std::uint32_t>(pick(rng));
            const Entity e{i, 1};
            point next = at[i];
            switch (how(rng)) {
                case 0:  // onto a boundary, exactly or a float's step either side
                    next.x = static_cast<float>(boundary(rng)) * cell;
                    next.x = std::nextafter(next.x, next.x + static_cast<float>(how(rng) - 1));
                    next.y += step(rng);
                    break;
                case 1:
                    next.y = static_cast<float>(boundary(rng)) * cell;
                    break;
                default:
                    next.x += step(rng);
                    next.y += step(rng);
            }
            const bool was_placed = grid.placed(e);
            (was_placed && grid.cell_of(at[i]) == grid.cell_of(next) ? stayed : left) += 1;
            grid.place(e, next);
            at[i] = next;
            ASSERT_TRUE(grid.in_query(e, next, 0.0F))
                << "cell " << cell << ", entity " << i << " at (" << next.x << ", " << next.y
                << "): not filed in cell (" << grid.cell_of(next).x << ", " << grid.cell_of(next).y
                << ")";
            ASSERT_EQ(*grid.position(e), next);
        }
        EXPECT_GT(stayed, 5'000U) << cell;
        EXPECT_GT(left, 2'000U) << cell;
        EXPECT_EQ(grid.size(), at.size());
        for (std::uint32_t i = 0; i < at.size(); ++i) {
            const auto found = query(grid, at[i], 0.0F);
            EXPECT_EQ(std::count(found.begin(), found.end(), Entity{i, 1}), 1) << cell << " " << i;
        }
    }
}

TEST(SpatialGrid, ANewVersionAtTheSameIndexReplacesTheOld) {
    spatial_grid grid{10.0F};
    const Entity old_one{4, 1};
    const Entity new_one{4, 2};
    grid.place(old_one, {1, 1});
    grid.place(new_one, {2, 2});  // same cell
    EXPECT_FALSE(grid.placed(old_one));
    EXPECT_TRUE(grid.placed(new_one));
    EXPECT_EQ(grid.size(), 1U);
    EXPECT_EQ(query(grid, {1, 1}, 1), (std::vector<Entity>{new_one}));

    const Entity newer{4, 3};
    grid.place(newer, {55, 55});  // another cell
    EXPECT_EQ(grid.size(), 1U);
    EXPECT_TRUE(query(grid, {1, 1}, 1).empty());
    EXPECT_EQ(query(grid, {55, 55}, 1), (std::vector<Entity>{newer}));

    grid.erase(old_one);  // any version at the index
    EXPECT_FALSE(grid.placed(newer));
    EXPECT_EQ(grid.size(), 0U);
}

TEST(SpatialGrid, NonFiniteAndHugeCoordinatesDoNotCrash) {
    spatial_grid grid{10.0F};
    constexpr float inf = std::numeric_limits<float>::infinity();
    constexpr float nan = std::numeric_limits<float>::quiet_NaN();
    constexpr float huge = std::numeric_limits<float>::max();
    const std::vector<point> points{{nan, 0},     {0, nan},       {inf, -inf},     {-inf, inf},
                                    {huge, huge}, {-huge, 1e30F}, {1e30F, -1e30F}, {0, 0}};
    for (std::uint32_t i = 0; i < points.size(); ++i) {
        grid.place(Entity{i, 1}, points[i]);
    }
    EXPECT_EQ(grid.size(), points.size());
    // Outermost cells: a query of the far corner finds what lies there, and the loop over
    // cells ends there (no overflow past the last cell).
    for (const point centre : points) {
        for (const float radius : {0.0F, 1.0F, 1e6F, huge, inf, nan}) {
            std::size_t n = 0;
            grid.query(centre, radius, [&](Entity) { ++n; });
            EXPECT_LE(n, points.size());
        }
    }
    EXPECT_EQ(query(grid, {huge, huge}, 1), (std::vector<Entity>{Entity{4, 1}}));
    EXPECT_EQ(query(grid, {inf, -inf}, 1), (std::vector<Entity>{Entity{2, 1}, Entity{6, 1}}));
    // A radius covering everything finds everything, once each.
    EXPECT_EQ(query(grid, {0, 0}, inf).size(), points.size());
    EXPECT_EQ(query(grid, {0, 0}, huge).size(), points.size());
    for (std::uint32_t i = 0; i < points.size(); ++i) {
        grid.erase(Entity{i, 1});
    }
    EXPECT_EQ(grid.size(), 0U);
    EXPECT_EQ(grid.occupied_cells(), 0U);
}

TEST(SpatialGrid, BadCellSizeThrows) {
    for (const float size :
         {0.0F, -1.0F, std::numeric_limits<float>::quiet_NaN(),
          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()}) {
        EXPECT_THROW(spatial_grid{size}, std::invalid_argument) << size;
    }
    EXPECT_NO_THROW(spatial_grid{0.001F});
}

}  // namespace spatial_grid_test
