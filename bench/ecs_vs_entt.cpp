// The ECS core against EnTT 3.16, side by side in one process (issue 15): every row runs the
// same operation on an entt::registry and on an ecsnet World, in the same repetition, the
// library that goes first alternating from one repetition to the next, and reports the median
// ns per entity of each, their min and max over the repetitions, and the ratio ecsnet / EnTT
// of the medians (< 1: ecsnet is faster). Only the operation's loop is timed (steady_clock);
// building registries and worlds, shuffling and checking are not. Random orders come from one
// vector shuffled with a fixed seed, the same for both libraries. Each side also computes a
// checksum of what it did (sums of component values, counts); the two must agree, or the
// program fails, so that neither side can skip work the other does. The last column is the
// minor page faults each side took inside its timed loop: creating into fresh memory is paid
// in faults (about 1.3 us each on this project's VMs), and the "recycled" row times the same
// creation in memory both sides already own.
//
// Built only when CMake is given EnTT's headers (they are not part of ecsnet):
//   cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DECSNET_BUILD_TESTS=OFF
//         -DECSNET_ENTT_DIR=$PWD/../shared/third_party/entt-3.16.0/src      (one line)
//   cmake --build build/release --target ecs_vs_entt
//   taskset -c 1 build/release/bin/ecs_vs_entt [--entities N] [--repetitions R]
//                                              [--filter SUBSTRING] [--json] [--entt-entity 64]
// Figures only mean something from a Release build on a quiet machine: the program prints the
// build type, the CPUs it may run on and the load average before and after the run.
//
// ecsnet's world tracks changes by default (replication needs it) and so does every row here
// unless its name says "untracked"; writes happen in a tick after the entities were created
// (writes to entities created in the same tick take a shortcut). The writing rows run one
// untimed pass first, on both sides, and time the second: a server writes every tick, and the
// first tick's allocations (write marks, the recorders' vectors) are not what a tick costs.
// So do destroy (of entities created again after a round of destroying them) and
// emplace+erase/remove; the ecsnet side keeps its change set across ticks, as the server does.
// A row is a pair of functions in `rows` below: adding one is writing that pair.
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <entt/entt.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "ecsnet/ecs/world.hpp"

#ifndef ECSNET_BUILD_TYPE
#define ECSNET_BUILD_TYPE "unknown"
#endif

namespace {

using clock_type = std::chrono::steady_clock;
using ecsnet::ecs::World;
using ecsnet_entity = ecsnet::ecs::Entity;

// Plain aggregates, the same for both libraries.
struct position {
    float x;
    float y;
};
struct velocity {
    float x;
    float y;
};
struct health {
    int value;
};

// What one side of a row produced in one repetition: the time of its loop, the number of
// entities that time is divided by, and a checksum the other side must match. Checksums are
// sums of small integers held in floats and doubles, exact whatever the order of iteration.
struct sample {
    double ns = 0;
    std::size_t units = 0;
    double check = 0;
};

struct context {
    std::size_t n = 0;
    std::vector<std::size_t> order;  // a permutation of 0..n-1, shuffled with a fixed seed
};

// Keeps a value (and every store before it) alive. Loops sum into a local and keep() the result
// once: with "r,m" on a sum captured by reference, g++ kept the double in a general-purpose
// register and moved it to and from an SSE register on every iteration, for one library or
// the other depending on inlining (2.3x on "iterate 2 read" one way, 1.6x the other).
template <typename T>
void keep(const T& value) {
    __asm__ __volatile__("" : : "m"(value) : "memory");
}

// Minor page faults (first touches of fresh memory) of the process so far.
long minor_faults() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_minflt;
}

long timed_faults = 0;  // summed by timed_ns, read and reset by run_row

template <typename Fn>
double timed_ns(Fn&& fn) {
    const long faults_before = minor_faults();  // outside the clock reads
    const auto start = clock_type::now();
    fn();
    const auto stop = clock_type::now();
    timed_faults += minor_faults() - faults_before;
    return std::chrono::duration<double, std::nano>(stop - start).count();
}

void require(bool ok, const std::string& what) {
    if (!ok) {
        throw std::runtime_error(what);
    }
}

// entities[order[i]] for every i: the random order as a vector walked in sequence, so that
// the loops time the lookups and not the indirection.
template <typename E>
std::vector<E> shuffled(const std::vector<E>& entities, const context& c) {
    std::vector<E> out(c.n);
    for (std::size_t i = 0; i < c.n; ++i) {
        out[i] = entities[c.order[i]];
    }
    return out;
}

// ---- EnTT ----------------------------------------------------------------------------------

// Each EnTT row runs on a Registry: entt::registry (a 32-bit entity: 20-bit index, 12-bit
// version), or with --entt-entity 64 one over a 64-bit entity (32-bit index and version, as
// ecsnet's Entity): the like-for-like comparison, the same bytes per id on both sides.
enum class entity64 : std::uint64_t {};
using registry64 = entt::basic_registry<entity64>;

// n entities with position {i, 0} and velocity {1, 2}, in creation order.
template <typename Registry>
std::vector<typename Registry::entity_type> entt_populate(Registry& reg, std::size_t n) {
    std::vector<typename Registry::entity_type> out(n);
    for (std::size_t i = 0; i < n; ++i) {
        out[i] = reg.create();
        reg.template emplace<position>(out[i], static_cast<float>(i), 0.0F);
        reg.template emplace<velocity>(out[i], 1.0F, 2.0F);
    }
    return out;
}

template <typename Registry>
double entt_sum_x(Registry& reg) {
    double sum = 0;
    reg.template view<const position>().each([&](const position& p) { sum += p.x; });
    return sum;
}

// What a listener-based change tracker on EnTT records.
template <typename Registry>
struct entt_recorder {
    std::vector<typename Registry::entity_type> seen;
    void on(Registry&, typename Registry::entity_type e) { seen.push_back(e); }
};

template <typename Registry>
sample entt_create(const context& c) {
    Registry reg;
    std::vector<typename Registry::entity_type> out(c.n);
    const double ns = timed_ns([&] {
        for (std::size_t i = 0; i < c.n; ++i) {
            out[i] = reg.create();
        }
        keep(out.data());
    });
    const auto alive = std::count_if(out.begin(), out.end(), [&](auto e) { return reg.valid(e); });
    return {ns, c.n, static_cast<double>(alive)};
}

template <typename Registry>
sample entt_destroy(const context& c) {
    Registry reg;
    std::vector<typename Registry::entity_type> out(c.n);
    for (int round = 0; round < 2; ++round) {  // the first round is the tick before
        if (round == 1) {
            for (const auto e : out) {
                reg.destroy(e);
            }
        }
        for (auto& e : out) {
            e = reg.create();
        }
    }
    const double ns = timed_ns([&] {
        for (const auto e : out) {
            reg.destroy(e);
        }
    });
    const auto gone = std::count_if(out.begin(), out.end(), [&](auto e) { return !reg.valid(e); });
    return {ns, c.n, static_cast<double>(gone)};
}

// Times creating n entities with a position and a velocity each in `reg`.
template <typename Registry>
sample entt_time_create_emplace2(Registry& reg, const context& c) {
    std::vector<typename Registry::entity_type> out(c.n);
    const double ns = timed_ns([&] {
        for (std::size_t i = 0; i < c.n; ++i) {
            out[i] = reg.create();
            reg.template emplace<position>(out[i], static_cast<float>(i), 0.0F);
            reg.template emplace<velocity>(out[i], 1.0F, 2.0F);
        }
        keep(out.data());
    });
    return {ns, c.n, entt_sum_x(reg) + static_cast<double>(reg.template view<velocity>().size())};
}

template <typename Registry>
sample entt_create_emplace2(const context& c) {
    Registry reg;
    return entt_time_create_emplace2(reg, c);
}

// The same on a registry whose n entities were all destroyed the tick before: recycled ids,
// storages at their size, no fresh memory (a server's entities come and go).
template <typename Registry>
sample entt_create_emplace2_recycled(const context& c) {
    Registry reg;
    for (const auto e : entt_populate(reg, c.n)) {
        reg.destroy(e);
    }
    return entt_time_create_emplace2(reg, c);
}

template <typename Registry, bool Strict>
sample entt_emplace_remove(const context& c) {
    Registry reg;
    const auto entities = entt_populate(reg, c.n);
    reg.template storage<health>();  // registered outside the timed loop, as ecsnet's is below
    std::int64_t sum = 0;
    const auto pass = [&] {
        for (std::size_t i = 0; i < c.n; ++i) {
            sum += reg.template emplace<health>(entities[i], static_cast<int>(i)).value;
            if constexpr (Strict) {
                reg.template erase<health>(entities[i]);
            } else {
                reg.template remove<health>(entities[i]);
            }
        }
        keep(sum);
    };
    pass();  // steady state: the tick before, untimed (as on the ecsnet side)
    sum = 0;
    const double ns = timed_ns(pass);
    return {ns, c.n, static_cast<double>(sum) + static_cast<double>(reg.template storage<health>().size())};
}

template <typename Registry>
sample entt_get_world(const context& c) {
    Registry reg;
    const auto order = shuffled(entt_populate(reg, c.n), c);
    double sum = 0;
    const double ns = timed_ns([&] {
        double local = 0;  // a register for the loop, whatever keep() needs
        for (const auto e : order) {
            local += reg.template get<position>(e).x;
        }
        sum = local;
        keep(sum);
    });
    return {ns, c.n, sum};
}

template <typename Registry>
sample entt_try_get_world(const context& c) {
    Registry reg;
    const auto order = shuffled(entt_populate(reg, c.n), c);
    double sum = 0;
    const double ns = timed_ns([&] {
        double local = 0;  // a register for the loop, whatever keep() needs
        for (const auto e : order) {
            if (const auto* p = reg.template try_get<position>(e)) {
                local += p->x;
            }
        }
        sum = local;
        keep(sum);
    });
    return {ns, c.n, sum};
}

template <typename Registry>
sample entt_get_storage(const context& c) {
    Registry reg;
    const auto order = shuffled(entt_populate(reg, c.n), c);
    double sum = 0;
    const double ns = timed_ns([&] {
        double local = 0;  // a register for the loop, whatever keep() needs
        const auto& storage = reg.template storage<position>();
        for (const auto e : order) {
            local += storage.get(e).x;
        }
        sum = local;
        keep(sum);
    });
    return {ns, c.n, sum};
}

template <typename Registry>
sample entt_get_view(const context& c) {
    Registry reg;
    const auto order = shuffled(entt_populate(reg, c.n), c);
    const auto view = reg.template view<position, velocity>();
    double sum = 0;
    const double ns = timed_ns([&] {
        double local = 0;  // a register for the loop, whatever keep() needs
        for (const auto e : order) {
            local += view.template get<position>(e).x;
        }
        sum = local;
        keep(sum);
    });
    return {ns, c.n, sum};
}

template <typename Registry>
sample entt_iterate1(const context& c) {
    Registry reg;
    entt_populate(reg, c.n);
    double sum = 0;
    const double ns = timed_ns([&] {
        double local = 0;  // a register for the loop, whatever keep() needs
        reg.template view<position>().each([&](const position& p) { local += p.x; });
        sum = local;
        keep(sum);
    });
    return {ns, c.n, sum};
}

template <typename Registry>
sample entt_iterate2(const context& c) {
    Registry reg;
    entt_populate(reg, c.n);
    double sum = 0;
    const double ns = timed_ns([&] {
        double local = 0;  // a register for the loop, whatever keep() needs
        reg.template view<position, velocity>().each(
            [&](const position& p, const velocity& v) { local += p.x + v.x; });
        sum = local;
        keep(sum);
    });
    return {ns, c.n, sum};
}

template <typename Registry>
sample entt_write(const context& c) {
    Registry reg;
    entt_populate(reg, c.n);
    const auto pass = [&] {
        reg.template view<position, velocity>().each([](position& p, const velocity& v) {
            p.x += v.x;
            p.y += v.y;
        });
    };
    pass();  // steady state: the tick before, untimed (as on the ecsnet side)
    const double ns = timed_ns(pass);
    return {ns, c.n, entt_sum_x(reg)};
}

// Change tracking on EnTT: patch through the registry, an on_update listener records. The
// recorder's vector is reserved (a tracker reuses it from tick to tick).
template <typename Registry>
sample entt_write_patch_listener(const context& c) {
    Registry reg;
    entt_populate(reg, c.n);
    entt_recorder<Registry> recorder;
    recorder.seen.reserve(c.n);
    reg.template on_update<position>().template connect<&entt_recorder<Registry>::on>(recorder);
    const auto pass = [&] {
        reg.template view<position, velocity>().each([&](typename Registry::entity_type e, position&, const velocity& v) {
            reg.template patch<position>(e, [&v](position& p) {
                p.x += v.x;
                p.y += v.y;
            });
        });
    };
    pass();
    recorder.seen.clear();
    const double ns = timed_ns(pass);
    return {ns, c.n, entt_sum_x(reg) + static_cast<double>(recorder.seen.size())};
}

template <typename Registry>
sample entt_patch_listener(const context& c) {
    Registry reg;
    const auto entities = entt_populate(reg, c.n);
    entt_recorder<Registry> recorder;
    recorder.seen.reserve(c.n);
    reg.template on_update<position>().template connect<&entt_recorder<Registry>::on>(recorder);
    const auto pass = [&] {
        for (const auto e : entities) {
            reg.template patch<position>(e, [](position& p) {
                p.x += 1.0F;
                p.y += 2.0F;
            });
        }
    };
    pass();
    recorder.seen.clear();
    const double ns = timed_ns(pass);
    return {ns, c.n, entt_sum_x(reg) + static_cast<double>(recorder.seen.size())};
}

template <typename Registry>
sample entt_destroy_half_iterate2(const context& c) {
    Registry reg;
    const auto entities = entt_populate(reg, c.n);
    for (std::size_t i = 0; i < c.n / 2; ++i) {
        reg.destroy(entities[c.order[i]]);
    }
    double sum = 0;
    const double ns = timed_ns([&] {
        double local = 0;  // a register for the loop, whatever keep() needs
        reg.template view<position, velocity>().each(
            [&](const position& p, const velocity& v) { local += p.x + v.x; });
        sum = local;
        keep(sum);
    });
    return {ns, c.n - c.n / 2, sum};
}

// ---- ecsnet --------------------------------------------------------------------------------

std::shared_ptr<World> ecsnet_world(bool track_changes = true) {
    ecsnet::ecs::world_options options;
    options.track_changes = track_changes;
    return World::make(options);
}

// n entities with position {i, 0} and velocity {1, 2}, in creation order; then a new tick.
std::vector<ecsnet_entity> ecsnet_populate(World& w, std::size_t n) {
    std::vector<ecsnet_entity> out(n);
    for (std::size_t i = 0; i < n; ++i) {
        out[i] = w.create();
        w.emplace<position>(out[i], static_cast<float>(i), 0.0F);
        w.emplace<velocity>(out[i], 1.0F, 2.0F);
    }
    w.discard_changes();
    return out;
}

double ecsnet_sum_x(World& w) {
    double sum = 0;
    w.view<const position>().each([&](const position& p) { sum += p.x; });
    return sum;
}

template <bool Tracked = true>
sample ecsnet_create(const context& c) {
    const auto w = ecsnet_world(Tracked);
    std::vector<ecsnet_entity> out(c.n);
    const double ns = timed_ns([&] {
        for (std::size_t i = 0; i < c.n; ++i) {
            out[i] = w->create();
        }
        keep(out.data());
    });
    const auto alive = std::count_if(out.begin(), out.end(), [&](auto e) { return w->valid(e); });
    return {ns, c.n, static_cast<double>(alive)};
}

template <bool Tracked = true>
sample ecsnet_destroy(const context& c) {
    const auto w = ecsnet_world(Tracked);
    std::vector<ecsnet_entity> out(c.n);
    World::change_set_type changes;            // kept across ticks, as a server keeps it
    for (int round = 0; round < 2; ++round) {  // the first round is the tick before
        if (round == 1) {
            for (const auto e : out) {
                w->destroy(e);
            }
            w->take_changes(changes);
        }
        for (auto& e : out) {
            e = w->create();
        }
        w->take_changes(changes);
    }
    const double ns = timed_ns([&] {
        for (const auto e : out) {
            w->destroy(e);
        }
    });
    const auto gone = std::count_if(out.begin(), out.end(), [&](auto e) { return !w->valid(e); });
    return {ns, c.n, static_cast<double>(gone)};
}

// Times creating n entities with a position and a velocity each in `w`.
sample ecsnet_time_create_emplace2(World& w, const context& c) {
    std::vector<ecsnet_entity> out(c.n);
    const double ns = timed_ns([&] {
        for (std::size_t i = 0; i < c.n; ++i) {
            out[i] = w.create();
            w.emplace<position>(out[i], static_cast<float>(i), 0.0F);
            w.emplace<velocity>(out[i], 1.0F, 2.0F);
        }
        keep(out.data());
    });
    return {ns, c.n, ecsnet_sum_x(w) + static_cast<double>(w.storage<velocity>().size())};
}

template <bool Tracked = true>
sample ecsnet_create_emplace2(const context& c) {
    const auto w = ecsnet_world(Tracked);
    return ecsnet_time_create_emplace2(*w, c);
}

sample ecsnet_create_emplace2_recycled(const context& c) {
    const auto w = ecsnet_world();
    for (const auto e : ecsnet_populate(*w, c.n)) {
        w->destroy(e);
    }
    w->discard_changes();  // the destroying tick ends
    return ecsnet_time_create_emplace2(*w, c);
}

// Strict: erase<health> throws when absent; tolerant: remove<health> (EnTT's names).
template <bool Strict, bool Tracked = true>
sample ecsnet_emplace_remove(const context& c) {
    const auto w = ecsnet_world(Tracked);
    const auto entities = ecsnet_populate(*w, c.n);
    w->register_component<health>();
    std::int64_t sum = 0;
    World::change_set_type changes;
    const auto pass = [&] {
        for (std::size_t i = 0; i < c.n; ++i) {
            sum += w->emplace<health>(entities[i], static_cast<int>(i)).value;
            if constexpr (Strict) {
                w->erase<health>(entities[i]);
            } else {
                w->remove<health>(entities[i]);
            }
        }
        keep(sum);
    };
    pass();  // steady state: the tick before, untimed
    w->take_changes(changes);
    sum = 0;
    const double ns = timed_ns(pass);
    w->take_changes(changes);
    return {ns, c.n, static_cast<double>(sum) + static_cast<double>(w->storage<health>().size())};
}

template <bool Checked>
sample ecsnet_get_world(const context& c) {
    const auto w = ecsnet_world();
    const auto order = shuffled(ecsnet_populate(*w, c.n), c);
    double sum = 0;
    const double ns = timed_ns([&] {
        double local = 0;  // a register for the loop, whatever keep() needs
        for (const auto e : order) {
            if constexpr (Checked) {
                local += w->get<position>(e).x;
            } else {
                local += w->get_unchecked<position>(e).x;
            }
        }
        sum = local;
        keep(sum);
    });
    return {ns, c.n, sum};
}

sample ecsnet_try_get_world(const context& c) {
    const auto w = ecsnet_world();
    const auto order = shuffled(ecsnet_populate(*w, c.n), c);
    double sum = 0;
    const double ns = timed_ns([&] {
        double local = 0;  // a register for the loop, whatever keep() needs
        for (const auto e : order) {
            if (const auto* p = w->try_get<position>(e)) {
                local += p->x;
            }
        }
        sum = local;
        keep(sum);
    });
    return {ns, c.n, sum};
}

sample ecsnet_get_storage(const context& c) {
    const auto w = ecsnet_world();
    const auto order = shuffled(ecsnet_populate(*w, c.n), c);
    double sum = 0;
    const double ns = timed_ns([&] {
        double local = 0;  // a register for the loop, whatever keep() needs
        const auto& storage = w->storage<position>();
        for (const auto e : order) {
            local += storage.get(e).x;
        }
        sum = local;
        keep(sum);
    });
    return {ns, c.n, sum};
}

template <bool Checked>
sample ecsnet_get_view(const context& c) {
    const auto w = ecsnet_world();
    const auto order = shuffled(ecsnet_populate(*w, c.n), c);
    const auto view = w->view<const position, const velocity>();
    double sum = 0;
    const double ns = timed_ns([&] {
        double local = 0;  // a register for the loop, whatever keep() needs
        for (const auto e : order) {
            if constexpr (Checked) {
                local += view.get<const position>(e).x;
            } else {
                local += view.get_unchecked<const position>(e).x;
            }
        }
        sum = local;
        keep(sum);
    });
    return {ns, c.n, sum};
}

sample ecsnet_iterate1(const context& c) {
    const auto w = ecsnet_world();
    ecsnet_populate(*w, c.n);
    double sum = 0;
    const double ns = timed_ns([&] {
        double local = 0;  // a register for the loop, whatever keep() needs
        w->view<const position>().each([&](const position& p) { local += p.x; });
        sum = local;
        keep(sum);
    });
    return {ns, c.n, sum};
}

sample ecsnet_iterate2(const context& c) {
    const auto w = ecsnet_world();
    ecsnet_populate(*w, c.n);
    double sum = 0;
    const double ns = timed_ns([&] {
        double local = 0;  // a register for the loop, whatever keep() needs
        w->view<const position, const velocity>().each(
            [&](const position& p, const velocity& v) { local += p.x + v.x; });
        sum = local;
        keep(sum);
    });
    return {ns, c.n, sum};
}

// A writing view; on a tracked world every entity it visits is recorded as updated, and the
// change set is taken (outside the timed loop) and checked. With_recorded adds the number of
// recorded entities to the checksum, to compare with EnTT's listener.
sample ecsnet_write(const context& c, bool track_changes, bool with_recorded) {
    const auto w = ecsnet_world(track_changes);
    ecsnet_populate(*w, c.n);
    const auto pass = [&] {
        w->view<position, const velocity>().each([](position& p, const velocity& v) {
            p.x += v.x;
            p.y += v.y;
        });
    };
    // Steady state: a server writes every tick; the first tick's write marks allocate.
    pass();
    w->discard_changes();
    const double ns = timed_ns(pass);
    std::size_t recorded = 0;
    if (track_changes) {
        const auto changes = w->take_changes();
        const auto* updated = changes.find<position>();
        recorded = updated == nullptr ? 0 : updated->updated.size();
        require(recorded == c.n, "ecsnet's tracked world recorded " + std::to_string(recorded) +
                                     " position updates for " + std::to_string(c.n) + " writes");
    }
    return {ns, c.n, ecsnet_sum_x(*w) + (with_recorded ? static_cast<double>(recorded) : 0.0)};
}

sample ecsnet_write_untracked(const context& c) {
    return ecsnet_write(c, false, false);
}
sample ecsnet_write_tracked(const context& c) {
    return ecsnet_write(c, true, false);
}
sample ecsnet_write_tracked_recorded(const context& c) {
    return ecsnet_write(c, true, true);
}

// Patches every entity's position once per tick. With_listener: an on_update listener records
// each patched entity, as EnTT's side does (on a tracked world ecsnet then records twice).
// Without: ecsnet's own recording alone, its change set taken (outside the timed loop) and
// checked; the number of recorded entities goes into the checksum either way.
template <bool Tracked, bool With_listener>
sample ecsnet_patch(const context& c) {
    static_assert(Tracked || With_listener, "untracked and unheard, nothing would be recorded");
    const auto w = ecsnet_world(Tracked);
    const auto entities = ecsnet_populate(*w, c.n);
    std::vector<ecsnet_entity> seen;
    if constexpr (With_listener) {
        seen.reserve(c.n);
        w->on_update<position>().connect([&seen](World&, ecsnet_entity e) { seen.push_back(e); });
    }
    const auto pass = [&] {
        for (const auto e : entities) {
            w->patch<position>(e, [](position& p) {
                p.x += 1.0F;
                p.y += 2.0F;
            });
        }
    };
    pass();
    seen.clear();
    w->discard_changes();
    const double ns = timed_ns(pass);
    std::size_t recorded = seen.size();
    if constexpr (With_listener) {
        w->discard_changes();
    } else {
        const auto changes = w->take_changes();
        const auto* updates = changes.find<position>();
        recorded = updates == nullptr ? 0 : updates->updated.size();
        require(recorded == c.n, "ecsnet's tracked world recorded " + std::to_string(recorded) +
                                     " position updates for " + std::to_string(c.n) + " patches");
    }
    return {ns, c.n, ecsnet_sum_x(*w) + static_cast<double>(recorded)};
}

sample ecsnet_destroy_half_iterate2(const context& c) {
    const auto w = ecsnet_world();
    const auto entities = ecsnet_populate(*w, c.n);
    for (std::size_t i = 0; i < c.n / 2; ++i) {
        w->destroy(entities[c.order[i]]);
    }
    w->discard_changes();
    double sum = 0;
    const double ns = timed_ns([&] {
        double local = 0;  // a register for the loop, whatever keep() needs
        w->view<const position, const velocity>().each(
            [&](const position& p, const velocity& v) { local += p.x + v.x; });
        sum = local;
        keep(sum);
    });
    return {ns, c.n - c.n / 2, sum};
}

// ---- the rows ------------------------------------------------------------------------------

using row_fn = sample (*)(const context&);

struct row {
    const char* name;
    row_fn entt;
    row_fn ecsnet;
};

// The rows, over `Registry` on EnTT's side (--entt-entity).
template <typename Registry>
const std::vector<row>& rows() {
    static const std::vector<row> table{
    // "untracked": ecsnet with world_options{.track_changes = false}, to show what recording
    // the change set (which EnTT does not do) costs on the row above.
    {"create", entt_create<Registry>, ecsnet_create<>},
    {"create untracked", entt_create<Registry>, ecsnet_create<false>},
    {"destroy", entt_destroy<Registry>, ecsnet_destroy<>},
    {"destroy untracked", entt_destroy<Registry>, ecsnet_destroy<false>},
    {"create+emplace2", entt_create_emplace2<Registry>, ecsnet_create_emplace2<>},
    {"create+emplace2 untracked", entt_create_emplace2<Registry>, ecsnet_create_emplace2<false>},
    {"create+emplace2 recycled", entt_create_emplace2_recycled<Registry>, ecsnet_create_emplace2_recycled},
    {"emplace+erase", entt_emplace_remove<Registry, true>, ecsnet_emplace_remove<true>},
    {"emplace+erase untracked", entt_emplace_remove<Registry, true>, ecsnet_emplace_remove<true, false>},
    {"emplace+remove", entt_emplace_remove<Registry, false>, ecsnet_emplace_remove<false>},
    // get and view.get are checked in ecsnet (a stale id throws), not in EnTT; the
    // get_unchecked rows are EnTT's contract on both sides.
    {"get (world)", entt_get_world<Registry>, ecsnet_get_world<true>},
    {"get_unchecked (world)", entt_get_world<Registry>, ecsnet_get_world<false>},
    {"try_get (world)", entt_try_get_world<Registry>, ecsnet_try_get_world},
    {"get (storage)", entt_get_storage<Registry>, ecsnet_get_storage},
    {"get (view)", entt_get_view<Registry>, ecsnet_get_view<true>},
    {"get_unchecked (view)", entt_get_view<Registry>, ecsnet_get_view<false>},
    {"iterate 1 read", entt_iterate1<Registry>, ecsnet_iterate1},
    {"iterate 2 read", entt_iterate2<Registry>, ecsnet_iterate2},
    {"pos+=vel untracked", entt_write<Registry>, ecsnet_write_untracked},
    {"pos+=vel tracked", entt_write<Registry>, ecsnet_write_tracked},
    {"pos+=vel tracked vs patch+listener", entt_write_patch_listener<Registry>,
     ecsnet_write_tracked_recorded},
    {"patch+listener", entt_patch_listener<Registry>, ecsnet_patch<true, true>},
    {"patch+listener untracked", entt_patch_listener<Registry>, ecsnet_patch<false, true>},
    {"patch tracked vs patch+listener", entt_patch_listener<Registry>, ecsnet_patch<true, false>},
    {"destroy half+iterate 2", entt_destroy_half_iterate2<Registry>, ecsnet_destroy_half_iterate2},
};
    return table;
}

// ---- running and reporting -----------------------------------------------------------------

struct spread {
    double median = 0;
    double min = 0;
    double max = 0;
};

// Of ns per unit.
spread summarize(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const std::size_t mid = values.size() / 2;
    const double median =
        values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
    return {median, values.front(), values.back()};
}

struct result {
    const char* name;
    std::size_t units;
    spread entt;
    spread ecsnet;
    double entt_faults;  // median minor page faults per 1,000 entities in the timed loop
    double ecsnet_faults;
    bool checks_match;
    double entt_check;
    double ecsnet_check;
};

result run_row(const row& r, const context& c, std::size_t repetitions) {
    std::vector<double> entt_ns;
    std::vector<double> ecsnet_ns;
    std::vector<double> entt_faults;
    std::vector<double> ecsnet_faults;
    result out{r.name, 0, {}, {}, 0, 0, true, 0, 0};
    const auto side = [&c](auto fn, std::vector<double>& faults) {
        timed_faults = 0;
        sample s = fn(c);
        faults.push_back(static_cast<double>(timed_faults) * 1000.0 /
                         static_cast<double>(std::max<std::size_t>(s.units, 1)));
        return s;
    };
    for (std::size_t rep = 0; rep < repetitions; ++rep) {
        sample a;
        sample b;
        if (rep % 2 == 0) {
            a = side(r.entt, entt_faults);
            b = side(r.ecsnet, ecsnet_faults);
        } else {
            b = side(r.ecsnet, ecsnet_faults);
            a = side(r.entt, entt_faults);
        }
        require(a.units == b.units && a.units > 0,
                std::string{r.name} + ": the two sides time different numbers of entities");
        out.units = a.units;
        entt_ns.push_back(a.ns / static_cast<double>(a.units));
        ecsnet_ns.push_back(b.ns / static_cast<double>(b.units));
        if (a.check != b.check) {
            out.checks_match = false;
        }
        out.entt_check = a.check;
        out.ecsnet_check = b.check;
    }
    out.entt = summarize(entt_ns);
    out.ecsnet = summarize(ecsnet_ns);
    out.entt_faults = summarize(entt_faults).median;
    out.ecsnet_faults = summarize(ecsnet_faults).median;
    return out;
}

std::string loadavg() {
    std::ifstream in{"/proc/loadavg"};
    std::string line;
    std::getline(in, line);
    return line.empty() ? "(unavailable)" : line;
}

int allowed_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
        return -1;
    }
    return CPU_COUNT(&set);
}

std::string compiler() {
#if defined(__clang__)
    return std::string{"clang "} + __clang_version__;
#elif defined(__GNUC__)
    return std::string{"g++ "} + __VERSION__;
#else
    return "unknown";
#endif
}

void print_header(std::ostream& os, const context& c, std::size_t repetitions,
                  int entt_entity_bits) {
    os << "ecs_vs_entt: EnTT " << ENTT_VERSION << " and ecsnet's ECS, side by side\n"
       << "EnTT's entity: " << entt_entity_bits
       << (entt_entity_bits == 64 ? "-bit (32-bit index and version, as ecsnet's: like for like)\n"
                                  : "-bit (entt::entity: 20-bit index, 12-bit version)\n");
#ifdef NDEBUG
    os << "build: " << ECSNET_BUILD_TYPE << " (NDEBUG)\n";
#else
    os << "build: " << ECSNET_BUILD_TYPE << "\n"
       << "WARNING: not a release build (NDEBUG is not defined): figures are meaningless\n";
#endif
    os << "compiler: " << compiler() << "\n"
       << "entities: " << c.n << ", repetitions: " << repetitions
       << " (interleaved, the first library alternating)\n"
       << "CPUs this process may run on: " << allowed_cpus() << " of "
       << sysconf(_SC_NPROCESSORS_ONLN) << " online\n"
       << "load average at start: " << loadavg() << "\n";
}

void print_table_head() {
    std::printf(
        "\nns per entity, median [min-max] over the repetitions; ratio = ecsnet / EnTT; faults:\n"
        "median minor page faults per 1,000 entities inside the timed loop, EnTT / ecsnet\n\n");
    std::printf("%-36s %27s %27s %7s %13s\n", "operation", "EnTT", "ecsnet", "ratio", "faults");
}

void print_row(const result& r) {
    const auto cell = [](const spread& s) {
        char text[64];
        std::snprintf(text, sizeof(text), "%8.2f [%7.2f-%7.2f]", s.median, s.min, s.max);
        return std::string{text};
    };
    std::printf("%-36s %27s %27s %7.2f %6.1f/%-6.1f%s\n", r.name, cell(r.entt).c_str(),
                cell(r.ecsnet).c_str(), r.ecsnet.median / r.entt.median, r.entt_faults,
                r.ecsnet_faults, r.checks_match ? "" : "  CHECKSUMS DIFFER");
    std::fflush(stdout);
}

nlohmann::json spread_json(const spread& s) {
    return {{"median", s.median}, {"min", s.min}, {"max", s.max}};
}

void print_json(const result& r, const context& c, std::size_t repetitions,
                int entt_entity_bits) {
    const nlohmann::json row{
        {"row", r.name},
        {"entt_entity_bits", entt_entity_bits},
        {"entities", c.n},
        {"units", r.units},
        {"repetitions", repetitions},
        {"entt", spread_json(r.entt)},
        {"ecsnet", spread_json(r.ecsnet)},
        {"ratio", r.ecsnet.median / r.entt.median},
        {"minor_faults_per_1000", {{"entt", r.entt_faults}, {"ecsnet", r.ecsnet_faults}}},
        {"checks_match", r.checks_match},
        {"entt_check", r.entt_check},
        {"ecsnet_check", r.ecsnet_check}};
    std::cout << row.dump() << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
    std::size_t entities = 1'000'000;
    std::size_t repetitions = 7;
    std::string filter;
    bool json = false;
    CLI::App app{"EnTT and ecsnet's ECS, the same operations side by side in one process"};
    app.add_option("--entities", entities, "Entities per row")->check(CLI::PositiveNumber);
    app.add_option("--repetitions", repetitions, "Repetitions per row (interleaved)")
        ->check(CLI::PositiveNumber);
    app.add_option("--filter", filter, "Run only the rows whose name contains this");
    app.add_flag("--json", json, "One JSON object per row on stdout instead of the table");
    int entt_entity_bits = 32;
    app.add_option("--entt-entity", entt_entity_bits,
                   "EnTT's entity: 32 (entt::entity, 20-bit index and 12-bit version) or 64 "
                   "(32-bit index and version, as ecsnet's Entity: like for like)")
        ->check(CLI::IsMember({32, 64}))
        ->capture_default_str();
    CLI11_PARSE(app, argc, argv);

    const std::vector<row>& table = entt_entity_bits == 64 ? rows<registry64>() : rows<entt::registry>();
    std::vector<const row*> selected;
    for (const row& r : table) {
        if (std::string{r.name}.find(filter) != std::string::npos) {
            selected.push_back(&r);
        }
    }
    if (selected.empty()) {
        std::cerr << "ecs_vs_entt: no row matches --filter '" << filter << "'; rows:";
        for (const row& r : table) {
            std::cerr << " '" << r.name << "'";
        }
        std::cerr << "\n";
        return 2;
    }

    context c;
    c.n = entities;
    c.order.resize(entities);
    for (std::size_t i = 0; i < entities; ++i) {
        c.order[i] = i;
    }
    std::mt19937_64 rng{0x5eed'ec5e'0015ULL};  // fixed: the same order in every run
    std::shuffle(c.order.begin(), c.order.end(), rng);

    // The table goes to stdout; with --json stdout holds only the rows.
    std::ostream& info = json ? std::cerr : std::cout;
    print_header(info, c, repetitions, entt_entity_bits);
    if (!json) {
        print_table_head();
    }
    bool all_match = true;
    try {
        for (const row* r : selected) {
            const result res = run_row(*r, c, repetitions);
            all_match = all_match && res.checks_match;
            if (json) {
                print_json(res, c, repetitions, entt_entity_bits);
            } else {
                print_row(res);
            }
        }
    } catch (const std::exception& e) {
        std::cerr << "ecs_vs_entt: " << e.what() << "\n";
        return 1;
    }
    info << "\nload average at end: " << loadavg() << "\n";
    if (!all_match) {
        std::cerr << "ecs_vs_entt: the two libraries' checksums differ on some row (see above): "
                     "one side does not do the same work\n";
        return 1;
    }
    return 0;
}
