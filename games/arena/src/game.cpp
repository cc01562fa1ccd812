#include "ecsnet/arena/game.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numbers>
#include <vector>

#include "ecsnet/arena/flight.hpp"
#include "ecsnet/server/server.hpp"

namespace ecsnet::arena {

namespace {

using protocol::Owner;

constexpr float largest_radius = rules::asteroid_radius(3);

// Writes `value` into e's T only when it differs: an unchanged value costs nothing on the wire.
template <typename T>
void store(ecs::World& world, ecs::Entity e, const T& value) {
    if (!(world.get<T>(e) == value)) {
        world.write<T>(e) = value;
    }
}

[[nodiscard]] float half_size(const state& game) noexcept { return game.config.size / 2.0F; }

// ---- the collision grid ---------------------------------------------------------------------

void reset(state::grid& grid, float size) {
    grid.origin = -size / 2.0F;
    grid.side = static_cast<std::size_t>(std::ceil(size / grid.cell)) + 1;
    grid.cells.resize(grid.side * grid.side);
    for (auto& cell : grid.cells) {
        cell.clear();
    }
}

[[nodiscard]] std::size_t column(const state::grid& grid, float at) noexcept {
    const float c = std::floor((at - grid.origin) / grid.cell);
    return static_cast<std::size_t>(std::clamp(c, 0.0F, static_cast<float>(grid.side - 1)));
}

void insert(state::grid& grid, const state::body& b) {
    grid.cells[column(grid, b.y) * grid.side + column(grid, b.x)].push_back(b);
}

// fn(body) for the bodies in the cells that overlap the square of half side `reach` at (x, y).
template <typename Fn>
void near(const state::grid& grid, float x, float y, float reach, Fn&& fn) {
    if (grid.side == 0) {
        return;
    }
    for (std::size_t row = column(grid, y - reach); row <= column(grid, y + reach); ++row) {
        for (std::size_t col = column(grid, x - reach); col <= column(grid, x + reach); ++col) {
            for (const state::body& b : grid.cells[row * grid.side + col]) {
                fn(b);
            }
        }
    }
}

// Squared distance from (px, py) to the segment a-b: a bullet's path over one tick.
[[nodiscard]] float distance2_to_segment(float px, float py, float ax, float ay, float bx,
                                         float by) noexcept {
    const float dx = bx - ax;
    const float dy = by - ay;
    const float length2 = dx * dx + dy * dy;
    const float t =
        length2 > 0.0F ? std::clamp(((px - ax) * dx + (py - ay) * dy) / length2, 0.0F, 1.0F) : 0.0F;
    const float ex = ax + t * dx - px;
    const float ey = ay + t * dy - py;
    return ex * ex + ey * ey;
}

// A random point at least `clearance` from every ship and from the edge of every asteroid,
// as the grids last saw them; after 32 tries, the last one.
[[nodiscard]] Position free_spot(state& game, float clearance) {
    const float edge = half_size(game) - 2.0F * rules::ship_radius;
    std::uniform_real_distribution<float> where(-edge, edge);
    Position p{};
    for (int attempt = 0; attempt < 32; ++attempt) {
        p = Position{where(game.rng), where(game.rng)};
        bool clear = true;
        const auto check = [&](const state::body& b) {
            const float dx = b.x - p.x;
            const float dy = b.y - p.y;
            const float apart = clearance + b.radius;
            clear = clear && dx * dx + dy * dy >= apart * apart;
        };
        near(game.asteroids, p.x, p.y, clearance + largest_radius, check);
        near(game.ships, p.x, p.y, clearance + rules::ship_radius, check);
        if (clear) {
            break;
        }
    }
    return p;
}

// ---- the rules ------------------------------------------------------------------------------

// A large asteroid drifting from a free spot (away from ships) in a random direction.
void spawn_asteroid(ecs::World& world, state& game) {
    std::uniform_real_distribution<float> angle(0.0F, 2.0F * std::numbers::pi_v<float>);
    std::uniform_real_distribution<float> speed(15.0F, 50.0F);
    const Position p = free_spot(game, rules::free_spot_clearance);
    const float a = angle(game.rng);
    const float s = speed(game.rng);
    const ecs::Entity e = world.create();
    world.emplace<Position>(e, p);
    world.emplace<Velocity>(e, Velocity{s * std::cos(a), s * std::sin(a)});
    world.emplace<Asteroid>(e, Asteroid{3});
}

// A hit asteroid goes; one larger than small leaves two of the next size, veering apart.
void shatter(ecs::SystemContext& ctx, state& game, ecs::Entity asteroid) {
    const Asteroid rock = ctx.world.get<Asteroid>(asteroid);
    const Position p = ctx.world.get<Position>(asteroid);
    const Velocity v = ctx.world.get<Velocity>(asteroid);
    ctx.commands.destroy(asteroid);
    if (rock.size <= 1) {
        return;
    }
    std::uniform_real_distribution<float> veer(0.3F, 0.9F);
    const float child_radius = rules::asteroid_radius(static_cast<std::uint8_t>(rock.size - 1));
    for (const float side : {-1.0F, 1.0F}) {
        const float a = side * veer(game.rng);
        const float vx = 1.3F * (v.x * std::cos(a) - v.y * std::sin(a));
        const float vy = 1.3F * (v.x * std::sin(a) + v.y * std::cos(a));
        const float speed = std::max(std::hypot(vx, vy), 1.0F);
        const auto child = ctx.commands.create();
        ctx.commands.emplace<Position>(
            child, Position{p.x + vx / speed * child_radius, p.y + vy / speed * child_radius});
        ctx.commands.emplace<Velocity>(child, Velocity{vx, vy});
        ctx.commands.emplace<Asteroid>(child, Asteroid{static_cast<std::uint8_t>(rock.size - 1)});
    }
}

void credit(ecs::World& world, ecs::Entity ship, std::uint32_t points) {
    if (world.valid(ship) && world.has<Stats>(ship)) {
        Stats stats = world.get<Stats>(ship);
        stats.score += points;
        store(world, ship, stats);
    }
}

void wreck(ecs::World& world, ecs::Entity ship) {
    store(world, ship, Ship{static_cast<std::uint8_t>(ship_status::wrecked)});
    store(world, ship, Velocity{});
    ShipTimers timers = world.get<ShipTimers>(ship);
    timers.status = rules::respawn_delay;
    store(world, ship, timers);
    Stats stats = world.get<Stats>(ship);
    ++stats.deaths;
    store(world, ship, stats);
}

[[nodiscard]] bool flying(const ecs::World& world, ecs::Entity ship) {
    return world.get<Ship>(ship).state() == ship_status::flying;
}

// ---- the systems ----------------------------------------------------------------------------

// The laser, the tick's last system (after settle: the shooter fires from where its own
// client predicted it at this tick). The ships that can be hit are recorded first; a laser
// held and charged then fires from the muzzle along the heading, and hits the first ship its
// beam enters as the shooter's client drew them (the render tick of the Input applied this
// tick), or as they are now without lag compensation. A ship wrecked or shielded since the
// shooter's view is not hit again.
void laser(ecs::SystemContext& ctx, state& game) {
    ecs::World& world = ctx.world;
    const auto dt = static_cast<float>(ctx.dt);
    const std::uint64_t tick = game.server_tick ? game.server_tick() : ctx.tick + 1;
    std::vector<server::hit_shape> present;
    world.view<const Ship, const Position>().each(
        [&](ecs::Entity e, const Ship& ship, const Position& p) {
            if (ship.state() == ship_status::flying) {
                present.push_back(server::hit_shape{e, p.x, p.y, rules::ship_radius});
            }
        });
    const bool compensate = game.config.lag_compensation && game.view_of;
    if (compensate) {
        if (!game.history) {
            game.history.emplace(1.0 / ctx.dt, std::chrono::milliseconds{game.config.lag_window_ms});
        }
        if (tick > game.history->newest()) {
            game.history->record(tick, present);
        }
    }
    world.view<const Ship, const Pilot, const Position, const Heading>().each(
        [&](ecs::Entity e, const Ship& ship, const Pilot& pilot, const Position& p,
            const Heading& heading) {
            if (ship.state() == ship_status::wrecked) {
                return;
            }
            if (!world.has<LaserCharge>(e)) {  // a ship restored from a checkpoint
                ctx.commands.emplace<LaserCharge>(e);
                return;
            }
            LaserCharge charge{std::max(0.0F, world.get<LaserCharge>(e).cooldown - dt)};
            const bool fires = pilot.laser && charge.cooldown <= 0.0F;
            if (fires) {
                charge.cooldown = rules::laser_interval;
            }
            store(world, e, charge);
            if (!fires) {
                return;
            }
            const float norm = std::max(std::hypot(heading.x, heading.y), 1e-6F);
            const float dx = heading.x / norm;
            const float dy = heading.y / norm;
            const float x = p.x + dx * rules::muzzle;
            const float y = p.y + dy * rules::muzzle;
            std::optional<server::ray_hit> hit;
            const std::optional<double> view =
                compensate ? game.view_of(world.get<Owner>(e).client) : std::nullopt;
            if (view) {
                hit = game.history->raycast(*view, x, y, dx, dy, rules::laser_range, e);
            } else {
                hit = server::raycast(present, x, y, dx, dy, rules::laser_range, e);
            }
            Laser beam{static_cast<std::uint32_t>(tick), rules::laser_range, 0};
            if (hit && world.valid(hit->entity) && flying(world, hit->entity)) {
                beam.length = hit->distance;
                beam.target = hit->entity.index() + 1;
                wreck(world, hit->entity);
                credit(world, e, rules::ship_points);
            }
            if (world.has<Laser>(e)) {
                store(world, e, beam);
            } else {
                ctx.commands.emplace<Laser>(e, beam);
            }
            if (ship.state() == ship_status::shielded) {  // firing drops the shield
                ShipTimers timers = world.get<ShipTimers>(e);
                timers.status = 0.0F;
                store(world, e, timers);
                store(world, e, Ship{static_cast<std::uint8_t>(ship_status::flying)});
            }
        });
}

void collide(ecs::SystemContext& ctx, state& game) {
    ecs::World& world = ctx.world;
    const auto dt = static_cast<float>(ctx.dt);
    locate_bodies(world, game);
    std::vector<ecs::Entity> gone;  // destroyed this tick: a few at most
    const auto is_gone = [&](ecs::Entity e) {
        return std::find(gone.begin(), gone.end(), e) != gone.end();
    };

    // Bullets: along their path over the tick, against asteroids first, then ships.
    world.view<const BulletLife, const Position, const Velocity>().each(
        [&](ecs::Entity bullet, const BulletLife& life, const Position& p, const Velocity& v) {
            const float ax = p.x - v.x * dt;
            const float ay = p.y - v.y * dt;
            const float reach = std::hypot(v.x, v.y) * dt;
            const auto hits = [&](const state::body& b) {
                return distance2_to_segment(b.x, b.y, ax, ay, p.x, p.y) <= b.radius * b.radius;
            };
            ecs::Entity target;
            std::uint32_t points = 0;
            near(game.asteroids, p.x, p.y, reach + largest_radius, [&](const state::body& b) {
                if (target.is_null() && !is_gone(b.entity) && hits(b)) {
                    target = b.entity;
                    points = rules::asteroid_points(world.get<Asteroid>(b.entity).size);
                }
            });
            if (!target.is_null()) {
                gone.push_back(target);
                shatter(ctx, game, target);
            } else {
                near(game.ships, p.x, p.y, reach + rules::ship_radius, [&](const state::body& b) {
                    if (target.is_null() && b.entity != life.ship && flying(world, b.entity) &&
                        hits(b)) {
                        target = b.entity;
                        points = rules::ship_points;
                    }
                });
                if (target.is_null()) {
                    return;
                }
                wreck(world, target);
            }
            credit(world, life.ship, points);
            ctx.commands.destroy(bullet);
        });

    // Ships against asteroids: both break, nobody scores.
    world.view<const Ship, const Position>().each(
        [&](ecs::Entity ship, const Ship& status, const Position& p) {
            if (status.state() != ship_status::flying) {
                return;
            }
            ecs::Entity rock;
            near(game.asteroids, p.x, p.y, rules::ship_radius + largest_radius,
                 [&](const state::body& b) {
                     const float dx = b.x - p.x;
                     const float dy = b.y - p.y;
                     const float apart = b.radius + rules::ship_radius;
                     if (rock.is_null() && !is_gone(b.entity) && dx * dx + dy * dy < apart * apart) {
                         rock = b.entity;
                     }
                 });
            if (!rock.is_null()) {
                gone.push_back(rock);
                shatter(ctx, game, rock);
                wreck(world, ship);
            }
        });
}

void respawn(ecs::World& world, state& game, ecs::Entity ship) {
    store(world, ship, free_spot(game, rules::free_spot_clearance));
    store(world, ship, Velocity{});
    store(world, ship, Ship{static_cast<std::uint8_t>(ship_status::shielded)});
    Stats stats = world.get<Stats>(ship);
    stats.ammo = rules::max_ammo;
    store(world, ship, stats);
}

void lifecycle(ecs::SystemContext& ctx, state& game) {
    ecs::World& world = ctx.world;
    const auto dt = static_cast<float>(ctx.dt);
    world.view<BulletLife>().each([&](ecs::Entity bullet, BulletLife& life) {
        if ((life.left -= dt) <= 0.0F) {
            ctx.commands.destroy(bullet);
        }
    });

    world.view<const Ship, const ShipTimers>().each(
        [&](ecs::Entity ship, const Ship& status, const ShipTimers& current) {
            if (status.state() == ship_status::flying) {
                return;
            }
            ShipTimers timers = current;
            if ((timers.status -= dt) <= 0.0F) {
                if (status.state() == ship_status::wrecked) {
                    respawn(world, game, ship);
                    timers = ShipTimers{0.0F, rules::reload_interval, rules::shield_time};
                } else {
                    store(world, ship, Ship{static_cast<std::uint8_t>(ship_status::flying)});
                    timers.status = 0.0F;
                }
            }
            store(world, ship, timers);
        });

    // A player whose ship is gone (its client destroyed it) gets a new one.
    std::vector<std::uint32_t> shipless;
    for (const auto& entry : game.players) {
        if (!world.valid(entry.second)) {
            shipless.push_back(entry.first);
        }
    }
    std::sort(shipless.begin(), shipless.end());  // the map's order is not the game's
    for (const std::uint32_t owner : shipless) {
        (void)spawn_ship(world, game, owner);
    }

    // Clients own their ships and nothing else: whatever one spawned goes.
    world.view<const Owner>(ecs::exclude<Ship>).each([&](ecs::Entity stray, const Owner&) {
        ctx.commands.destroy(stray);
    });

    constexpr std::size_t asteroids_per_tick = 4;
    top_up_asteroids(world, game, asteroids_per_tick);
}

}  // namespace

void register_components(protocol::component_registry& types) {
    types.add<Position>();
    types.add<Velocity>();
    types.add<Heading>();
    types.add<Pilot>();
    types.add<Ship>();
    types.add<Asteroid>();
    types.add<Bullet>();
    types.add<Stats>();
    types.add<Laser>();
    types.persist<ShipTimers>();
}

void add_systems(ecs::Scheduler& scheduler, std::shared_ptr<state> game) {
    add_steer(scheduler);
    add_gun(scheduler);
    add_move(scheduler, game->config.size);
    scheduler.add("collide",
                  ecs::component_access{}
                      .reads<BulletLife, Bullet>()
                      .writes<Position, Velocity, Asteroid, Ship, ShipTimers, Stats>(),
                  [game](ecs::SystemContext& ctx) { collide(ctx, *game); });
    scheduler.add("lifecycle",
                  ecs::component_access{}.writes<BulletLife, Ship, ShipTimers, Stats, Position,
                                                 Velocity, Heading, Pilot, Asteroid, Owner,
                                                 LaserCharge, Laser>(),
                  [game](ecs::SystemContext& ctx) { lifecycle(ctx, *game); });
    add_settle(scheduler);
    scheduler.add("laser",
                  ecs::component_access{}
                      .reads<Pilot, Position, Heading, Owner>()
                      .writes<Ship, Velocity, ShipTimers, Stats, LaserCharge, Laser>(),
                  [game](ecs::SystemContext& ctx) { laser(ctx, *game); });
}

ecs::Entity spawn_ship(ecs::World& world, state& game, std::uint32_t owner) {
    const ecs::Entity e = world.create();
    world.emplace<Position>(e, free_spot(game, rules::free_spot_clearance));
    world.emplace<Velocity>(e);
    world.emplace<Heading>(e);
    world.emplace<Pilot>(e);
    world.emplace<Ship>(e, Ship{static_cast<std::uint8_t>(ship_status::shielded)});
    world.emplace<Stats>(e, Stats{0, rules::max_ammo, 0});
    world.emplace<ShipTimers>(e, ShipTimers{0.0F, rules::reload_interval, rules::shield_time});
    world.emplace<LaserCharge>(e);
    world.emplace<Laser>(e);
    world.emplace<Owner>(e, Owner{owner});
    game.players[owner] = e;
    if (game.on_new_ship) {
        game.on_new_ship(owner, e);
    }
    return e;
}

ecs::Entity find_ship(ecs::World& world, std::uint32_t owner) {
    ecs::Entity found;
    world.view<const Ship, const Owner>().each([&](ecs::Entity e, const Ship&, const Owner& o) {
        if (o.client == owner) {
            found = e;
        }
    });
    return found;
}

void top_up_asteroids(ecs::World& world, state& game, std::size_t at_most) {
    const std::size_t have = world.storage<Asteroid>().size();
    for (std::size_t i = have; i < game.config.asteroids && i - have < at_most; ++i) {
        spawn_asteroid(world, game);
    }
}

void locate_bodies(ecs::World& world, state& game) {
    reset(game.asteroids, game.config.size);
    reset(game.ships, game.config.size);
    world.view<const Asteroid, const Position>().each(
        [&](ecs::Entity e, const Asteroid& rock, const Position& p) {
            insert(game.asteroids, state::body{e, p.x, p.y, rules::asteroid_radius(rock.size)});
        });
    world.view<const Ship, const Position>().each(
        [&](ecs::Entity e, const Ship& ship, const Position& p) {
            if (ship.state() != ship_status::wrecked) {
                insert(game.ships, state::body{e, p.x, p.y, rules::ship_radius});
            }
        });
}

server::game game(settings defaults) {
    auto options = std::make_shared<settings>(defaults);
    server::game g;
    g.name = "arena";
    g.register_components = register_components;
    g.add_options = [options](CLI::App& app) {
        app.add_option("--arena-size", options->size, "Side of the square arena, in units")
            ->envname("ECSNET_ARENA_SIZE")
            ->capture_default_str()
            ->check(CLI::Range(200.0F, 2.0F * (max_half_size - 192.0F)));
        app.add_option("--asteroids", options->asteroids,
                       "Asteroids kept in the arena: destroyed ones are replaced by large ones")
            ->envname("ECSNET_ASTEROIDS")
            ->capture_default_str()
            ->check(CLI::Range(std::size_t{0}, std::size_t{100'000}));
        app.add_option("--arena-seed", options->seed,
                       "Seed of the arena's random generator: the same seed and the same inputs "
                       "play the same game")
            ->envname("ECSNET_ARENA_SEED")
            ->capture_default_str();
        app.add_flag("!--no-lag-compensation", options->lag_compensation,
                     "The laser hits where ships are at the server's tick, not where its "
                     "shooter saw them (docs/PREDICTION.md, \"Lag compensation\")")
            ->envname("ECSNET_LAG_COMPENSATION");
        app.add_option("--lag-window-ms", options->lag_window_ms,
                       "How far back the laser may rewind (a longer round trip is answered at "
                       "the window's oldest tick)")
            ->envname("ECSNET_LAG_WINDOW_MS")
            ->capture_default_str()
            ->check(CLI::Range(std::int64_t{1}, static_cast<std::int64_t>(
                                                    server::lag_history::max_window.count())));
    };
    g.setup = [options](server::server& service) {
        auto game = std::make_shared<state>(*options);
        const auto& config = service.config();
        const float radius = config.interest_radius > 0.0F ? config.interest_radius
                                                           : default_view_radius;
        const float cell = config.interest_cell > 0.0F ? config.interest_cell : radius / 2.0F;
        auto& interest = service.interest();
        interest.set_defaults(server::interest_manager::defaults{radius, config.client_budget});
        interest.use_grid<Position>(cell, [](const Position& p) { return server::point{p.x, p.y}; });
        interest.accept_client_focus(false);  // the view follows the ship, nothing else
        game->on_new_ship = [&service](std::uint32_t owner, ecs::Entity ship) {
            service.interest().follow(owner, ship);
        };
        game->server_tick = [&service] { return service.tick(); };
        game->view_of = [&service](std::uint32_t owner) { return service.input_view(owner); };
        game->history.emplace(service.config().tick_rate,
                              std::chrono::milliseconds{game->config.lag_window_ms});

        add_systems(service.scheduler(), game);
        if (service.restored()) {
            // Bullets are a fraction of a second of flight: a restored world starts without.
            std::vector<ecs::Entity> bullets;
            service.world().view<const Bullet>().each(
                [&](ecs::Entity e, const Bullet&) { bullets.push_back(e); });
            for (const ecs::Entity e : bullets) {
                service.world().destroy(e);
            }
        }
        top_up_asteroids(service.world(), *game, game->config.asteroids);
        locate_bodies(service.world(), *game);

        service.on_player_joined = [game, &service](std::uint32_t owner, bool resumed) {
            ecs::World& world = service.world();
            const ecs::Entity kept = resumed ? find_ship(world, owner) : ecs::Entity{};
            if (kept.is_null()) {
                (void)spawn_ship(world, *game, owner);
            } else {
                game->players[owner] = kept;
                service.interest().follow(owner, kept);
            }
        };
        // The ship stays for the reconnect grace, at rest: its last input no longer repeats.
        service.on_player_left = [game, &service](std::uint32_t owner) {
            const auto it = game->players.find(owner);
            if (it == game->players.end()) {
                return;
            }
            ecs::World& world = service.world();
            if (world.valid(it->second) && world.has<Pilot>(it->second)) {
                store(world, it->second, Pilot{});
            }
            game->players.erase(it);
        };
    };
    return g;
}

}  // namespace ecsnet::arena
