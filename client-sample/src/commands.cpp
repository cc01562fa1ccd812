#include "commands.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "component_arg.hpp"
#include "interrupt.hpp"

namespace ecsnet::client_cli {

namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;
using client::client_error;
using protocol::command_result;

// At most this many commands unanswered at a time: enough to fill a tick, few enough that a
// rate-limited burst costs little.
constexpr std::size_t pipeline_window = 16;
// After a RateLimited answer, sending pauses this long (doubling up to the maximum while the
// server keeps refusing) and the refused commands are sent again.
constexpr auto first_backoff = 100ms;
constexpr auto max_backoff = 2000ms;
// Polling slice of the long-running loops: how soon Ctrl-C is noticed.
constexpr auto slice = 100ms;
// watch --move tells the server where the focus is this often: smooth enough for a view that
// moves a few units per tick, well inside the command rate limit.
constexpr auto focus_period = 100ms;

struct pipeline_outcome {
    std::size_t answered = 0;  // commands whose final result was reported
    bool interrupted = false;
};

std::string closed_message(const client::connection& conn, const std::string& endpoint) {
    return "connection to " + endpoint +
           " closed: " + conn.closed_reason().value_or("closed by the client");
}

// Sends `count` commands, keeping at most pipeline_window unanswered; commands the server
// answers RateLimited are sent again after a pause, so none is lost to the rate limit.
// on_result(i, result) sees the final results in the order of i; returning false stops
// sending (commands already sent are still reported). Throws client_error when the
// connection ends or no answer arrives within `timeout`.
pipeline_outcome run_pipeline(
    client::connection& conn, const std::string& endpoint, std::size_t count,
    const std::function<protocol::client_message(std::size_t, std::uint32_t)>& make,
    const std::function<bool(std::size_t, const command_result&)>& on_result,
    std::chrono::milliseconds timeout) {
    pipeline_outcome outcome;
    std::map<std::uint32_t, std::size_t> in_flight;  // request id -> command
    std::set<std::size_t> retry;
    std::map<std::size_t, command_result> finished;  // not reported yet
    std::vector<std::pair<std::size_t, command_result>> arrived;
    std::size_t next = 0;
    std::size_t next_report = 0;
    bool stop = false;
    auto backoff = first_backoff;
    auto resume = clock::now();
    auto last_answer = clock::now();

    const auto report_in_order = [&] {
        for (auto it = finished.begin(); it != finished.end() && it->first == next_report;
             it = finished.erase(it), ++next_report) {
            ++outcome.answered;
            if (!on_result(it->first, it->second)) {
                stop = true;
            }
        }
    };
    const auto take_answers = [&] {
        for (auto it = in_flight.begin(); it != in_flight.end();) {
            if (auto result = conn.take_result(it->first)) {
                arrived.emplace_back(it->second, std::move(*result));
                it = in_flight.erase(it);
            } else {
                ++it;
            }
        }
        return !arrived.empty();
    };

    for (;;) {
        if (interrupted() && !stop) {
            stop = true;
            outcome.interrupted = true;
        }
        auto now = clock::now();
        while (!stop && in_flight.size() < pipeline_window && now >= resume &&
               (!retry.empty() || next < count)) {
            std::size_t i = next;
            if (!retry.empty()) {
                i = *retry.begin();
                retry.erase(retry.begin());
            } else {
                ++next;
            }
            const std::uint32_t id = conn.next_request_id();
            conn.send(make(i, id));
            if (in_flight.empty()) {
                last_answer = now;  // the answer timeout runs from the first unanswered one
            }
            in_flight.emplace(id, i);
        }
        if (in_flight.empty()) {
            if (stop || (retry.empty() && next >= count)) {
                break;
            }
            conn.poll_for(
                std::min(std::chrono::duration_cast<std::chrono::milliseconds>(resume - now + 1ms),
                         std::chrono::milliseconds{slice}));
            if (!conn.is_open()) {
                throw client_error(closed_message(conn, endpoint));
            }
            continue;
        }
        (void)conn.poll_until(take_answers, slice);
        now = clock::now();
        if (arrived.empty()) {
            if (!conn.is_open()) {
                report_in_order();
                throw client_error(closed_message(conn, endpoint) + " (" +
                                   std::to_string(in_flight.size()) +
                                   " commands sent without an answer)");
            }
            if (now - last_answer > timeout) {
                report_in_order();
                throw client_error("no answer from " + endpoint + " within " +
                                   std::to_string(timeout.count()) + " ms (" +
                                   std::to_string(in_flight.size()) +
                                   " commands sent without an answer)");
            }
            continue;
        }
        last_answer = now;
        for (auto& [i, result] : arrived) {
            if (!result.ok && result.code == wire::ErrorCode::RateLimited) {
                retry.insert(i);
                resume = now + backoff;
                backoff = std::min(backoff * 2, max_backoff);
            } else {
                finished.emplace(i, std::move(result));
                backoff = first_backoff;
            }
        }
        arrived.clear();
        report_in_order();
    }
    // After a stop some commands were never sent: report the later ones that were.
    while (!finished.empty()) {
        next_report = finished.begin()->first;
        report_in_order();
    }
    return outcome;
}

// Stays connected until Ctrl-C or the server closes the connection.
int hold(context& ctx, std::size_t entities) {
    ctx.out.note("holding " + std::to_string(entities) + (entities == 1 ? " entity" : " entities") +
                 " on " + ctx.endpoint + "; Ctrl-C disconnects");
    while (!interrupted()) {
        ctx.conn.poll_for(slice);
        if (!ctx.conn.is_open()) {
            ctx.out.failure(closed_message(ctx.conn, ctx.endpoint));
            return exit_failure;
        }
    }
    return exit_ok;
}

}  // namespace

bool catch_up(client::connection& conn, std::chrono::milliseconds timeout) {
    const auto& m = conn.mirror();
    const std::uint64_t tick = m.tick();
    return conn.poll_until([&] { return m.ready() && m.tick() > tick; }, timeout);
}

int run_spawn(context& ctx, const spawn_args& args) {
    // The client was not compiled with the game: the server's schema says what the
    // components are, and nothing is sent unless all of them fit it.
    const protocol::schema& types = ctx.conn.mirror().types();
    std::vector<protocol::component_value> values;
    for (const component_arg& arg : args.components) {
        std::string why;
        auto value = resolve_component(types, arg, args.count, &why);
        if (!value) {
            ctx.out.usage_error("error: " + why);
            return exit_usage;
        }
        values.push_back(std::move(*value));
    }
    // Entities appear somewhere: at 0,0 when the game has positions and none was given.
    const auto given = [&](std::string_view name) {
        return std::any_of(values.begin(), values.end(),
                           [&](const protocol::component_value& v) { return v.name == name; });
    };
    if (const auto* position = types.find("position"); position != nullptr && !given("position")) {
        if (auto origin = zero_value(*position)) {
            values.push_back(std::move(*origin));
        }
    }

    std::size_t spawned = 0;
    bool refused = false;
    const auto outcome = run_pipeline(
        ctx.conn, ctx.endpoint, args.count,
        [&](std::size_t i, std::uint32_t request_id) -> protocol::client_message {
            protocol::spawn command{request_id, {}};
            for (const auto& value : values) {
                if (value.text.find("{n}") == std::string::npos) {
                    command.components.set(value);
                } else {
                    protocol::component_value numbered = value;
                    numbered.text = substitute_number(value.text, i + 1);
                    command.components.set(std::move(numbered));
                }
            }
            return command;
        },
        [&](std::size_t, const command_result& result) {
            if (result.ok) {
                ctx.out.spawned(result.entity);
                ++spawned;
                return true;
            }
            ctx.out.refused("spawn", result);
            refused = true;
            return false;  // the next ones would be refused too (quota, world full, value)
        },
        ctx.timeout);
    const std::size_t unsent = args.count - outcome.answered;
    if (unsent > 0) {
        ctx.out.not_attempted("spawn", unsent,
                              outcome.interrupted ? "interrupted" : "stopped at the first refusal");
    }
    (void)catch_up(ctx.conn, ctx.timeout);  // the new entities are in the mirror
    const int code = refused || unsent > 0 ? exit_failure : exit_ok;
    if (ctx.in_shell || spawned == 0) {
        return code;
    }
    if (args.hold) {
        const int held = hold(ctx, spawned);
        return held != exit_ok ? held : code;
    }
    ctx.out.note("the server despawns these when this owner has no connection left for its "
                 "--reconnect-grace (30 s by default), unless it runs with "
                 "--keep-entities-on-disconnect (spawn --hold stays connected)");
    return code;
}

int run_destroy(context& ctx, const destroy_args& args) {
    bool refused = false;
    const auto outcome = run_pipeline(
        ctx.conn, ctx.endpoint, args.entities.size(),
        [&](std::size_t i, std::uint32_t request_id) -> protocol::client_message {
            return protocol::destroy{request_id, args.entities[i]};
        },
        [&](std::size_t i, const command_result& result) {
            if (result.ok) {
                ctx.out.destroyed(args.entities[i]);
            } else {
                command_result named = result;
                if (named.entity.is_null()) {
                    named.entity = args.entities[i];
                }
                ctx.out.refused("destroy", named);
                refused = true;
            }
            return true;  // each destroy stands alone
        },
        ctx.timeout);
    const std::size_t unsent = args.entities.size() - outcome.answered;
    if (unsent > 0) {
        ctx.out.not_attempted("destroy", unsent, "interrupted");
    }
    (void)catch_up(ctx.conn, ctx.timeout);  // the destroys are in the mirror
    return refused || unsent > 0 ? exit_failure : exit_ok;
}

namespace {

// One command on one entity (set, remove): sent (again after a RateLimited answer), its
// answer printed as `done` or as destroy prints a refusal.
int run_entity_command(context& ctx, std::string_view name, ecs::Entity entity,
                       const std::function<protocol::client_message(std::uint32_t)>& make,
                       const std::function<void()>& done) {
    bool refused = false;
    const auto outcome = run_pipeline(
        ctx.conn, ctx.endpoint, 1,
        [&](std::size_t, std::uint32_t request_id) { return make(request_id); },
        [&](std::size_t, const command_result& result) {
            if (result.ok) {
                done();
            } else {
                command_result named = result;
                if (named.entity.is_null()) {
                    named.entity = entity;
                }
                ctx.out.refused(name, named);
                refused = true;
            }
            return true;
        },
        ctx.timeout);
    if (outcome.answered == 0) {
        ctx.out.not_attempted(name, 1, "interrupted");
    }
    (void)catch_up(ctx.conn, ctx.timeout);  // the change is in the mirror
    return refused || outcome.answered == 0 ? exit_failure : exit_ok;
}

}  // namespace

int run_set(context& ctx, const set_args& args) {
    const protocol::schema& types = ctx.conn.mirror().types();
    protocol::component_set values;
    std::vector<std::string> names;
    for (const component_arg& arg : args.components) {
        std::string why;
        auto value = resolve_component(types, arg, 1, &why);
        // spawn's "{n}" is not numbered here: the text goes as written, and must fit as such.
        if (const auto* type = value ? types.find(value->name) : nullptr;
            type != nullptr && type->is_string && value->text.size() > type->max_bytes) {
            why = "'" + value->text + "' is " + std::to_string(value->text.size()) +
                  " bytes long; a " + type->name + " holds at most " +
                  std::to_string(type->max_bytes);
            value.reset();
        }
        if (!value) {
            ctx.out.usage_error("error: " + why);
            return exit_usage;
        }
        names.push_back(value->name);
        values.set(std::move(*value));
    }
    return run_entity_command(
        ctx, "set", args.entity,
        [&](std::uint32_t request_id) {
            return protocol::set_components{request_id, args.entity, values};
        },
        [&] { ctx.out.set_done(args.entity, names); });
}

int run_remove(context& ctx, const remove_args& args) {
    const protocol::schema& types = ctx.conn.mirror().types();
    for (const std::string& name : args.types) {
        std::string why;
        if (resolve_type(types, name, &why) == nullptr) {
            ctx.out.usage_error("error: " + why);
            return exit_usage;
        }
    }
    return run_entity_command(
        ctx, "remove", args.entity,
        [&](std::uint32_t request_id) {
            return protocol::remove_components{request_id, args.entity, args.types};
        },
        [&] { ctx.out.removed(args.entity, args.types); });
}

int run_list(context& ctx) {
    ctx.out.entity_list(ctx.conn.mirror(), ctx.conn.welcome().client_id);
    return exit_ok;
}

// Interest management: the server sends what is near the focus (and the client's own and
// global entities); the focus given is sent now (and again by the caller as it moves).
std::optional<xy> send_first_focus(context& ctx, const watch_args& args, bool interest) {
    if (!args.focus && !args.move) {
        return std::nullopt;
    }
    if (!interest) {
        const std::string given = args.focus && args.move ? "--focus and --move have"
                                  : args.focus            ? "--focus has"
                                                          : "--move has";
        ctx.out.warning("this server sends the whole world (no interest management): " + given +
                        " no effect");
        return std::nullopt;
    }
    const xy focus = args.focus.value_or(xy{});
    ctx.conn.send(protocol::focus{focus.x, focus.y});
    return focus;
}

// Adds one interval's counts to the whole watch's.
void add_interval(watch_summary& total, const watch_summary& interval) {
    total.bytes += interval.bytes;
    total.spawned += interval.spawned;
    total.destroyed += interval.destroyed;
    total.snapshots += interval.snapshots;
    total.removed += interval.removed;
    total.entered += interval.entered;
    total.left += interval.left;
    for (std::size_t id = 0; id < total.updates.size(); ++id) {
        total.updates[id] += interval.updates[id];
    }
    total.checksums_matched += interval.checksums_matched;
    total.checksums_mismatched += interval.checksums_mismatched;
    total.checksum = interval.checksum;
    total.checksum_tick = interval.checksum_tick;
    if (!interval.problem.empty()) {
        total.problem = interval.problem;
    }
}

// The next interval starts with the latest checksum state, and counts from zero.
watch_summary next_interval(const watch_summary& interval) {
    watch_summary next;
    next.checksum = interval.checksum;
    next.checksum_tick = interval.checksum_tick;
    next.interest = interval.interest;
    next.client_budget = interval.client_budget;
    return next;
}

int run_watch(context& ctx, const watch_args& args) {
    auto& conn = ctx.conn;
    auto& m = conn.mirror();
    const auto start = clock::now();
    const auto deadline = args.seconds ? start + std::chrono::duration_cast<clock::duration>(
                                                     std::chrono::duration<double>(*args.seconds))
                                       : clock::time_point::max();

    const bool interest = conn.welcome().interest_radius > 0.0F;
    std::optional<xy> focus = send_first_focus(ctx, args, interest);

    watch_summary interval;
    interval.interest = interest;
    interval.client_budget = conn.welcome().client_budget;
    watch_summary total = interval;
    bool desync = false;
    std::uint64_t inconsistencies = m.statistics().inconsistencies;

    // The callbacks live as long as this call: reset them however it ends.
    struct restore {
        client::connection& conn;
        ~restore() {
            conn.mirror().events() = {};
            conn.on_message = nullptr;
        }
    } restore_callbacks{conn};
    auto& events = m.events();
    events.on_spawn = [&](ecs::Entity e) {
        ++interval.spawned;
        ctx.out.watch_spawned(m, e);
    };
    events.on_destroy = [&](ecs::Entity e) {
        ++interval.destroyed;
        ctx.out.watch_destroyed(m, e);
    };
    events.on_update = [&](ecs::Entity e, std::uint32_t wire_id) {
        if (wire_id < interval.updates.size()) {
            ++interval.updates[wire_id];
        }
        if (args.every_update) {
            ctx.out.watch_update(m, e, wire_id);
        }
    };
    // Removals change what an entity is, like spawns and destroys: always printed.
    events.on_remove = [&](ecs::Entity e, std::uint32_t wire_id) {
        ++interval.removed;
        ctx.out.watch_removed(m, e, wire_id);
    };
    events.on_snapshot = [&](std::uint64_t tick, std::size_t entities) {
        ++interval.snapshots;
        ctx.out.watch_snapshot(tick, entities);
    };
    events.on_checksum = [&](std::uint64_t tick, bool matched) {
        interval.checksum = matched ? checksum_state::ok : checksum_state::desync;
        interval.checksum_tick = tick;
        ++(matched ? interval.checksums_matched : interval.checksums_mismatched);
    };
    // Right after the mirror applied a message, error() says why it was inconsistent.
    conn.on_message = [&](const wire::ServerMessage&) {
        if (m.statistics().inconsistencies != inconsistencies) {
            inconsistencies = m.statistics().inconsistencies;
            desync = true;
            interval.problem = m.error();
            ctx.out.watch_desync(m.error() + "; asked the server for a fresh snapshot");
        }
    };

    ctx.out.watch_started(ctx.endpoint, conn.welcome().client_id, m, conn.welcome(), args);
    auto interval_start = start;
    std::uint64_t bytes_at_start = conn.bytes_received();
    std::uint64_t entered_at_start = m.statistics().entered;
    std::uint64_t left_at_start = m.statistics().left;
    const auto summarize = [&](clock::time_point now) {
        interval.elapsed_s = std::chrono::duration<double>(now - start).count();
        interval.interval_s = std::chrono::duration<double>(now - interval_start).count();
        interval.entities = m.size();
        interval.tick = m.tick();
        interval.bytes = conn.bytes_received() - bytes_at_start;
        interval.entered = m.statistics().entered - entered_at_start;
        interval.left = m.statistics().left - left_at_start;
        ctx.out.watch_summary_line(m.types(), interval, false);
        add_interval(total, interval);
        interval = next_interval(interval);
        interval_start = now;
        bytes_at_start = conn.bytes_received();
        entered_at_start = m.statistics().entered;
        left_at_start = m.statistics().left;
    };

    // Moves the focus by the time that passed since it last moved, and sends it.
    auto focus_moved = start;
    auto next_focus = focus && args.move ? start + focus_period : clock::time_point::max();
    const auto move_focus = [&](clock::time_point now) {
        const auto dt =
            static_cast<float>(std::chrono::duration<double>(now - focus_moved).count());
        focus_moved = now;
        next_focus = std::max(next_focus + focus_period, now + focus_period / 2);
        const xy moved{focus->x + args.move->x * dt, focus->y + args.move->y * dt};
        if (!std::isfinite(moved.x) || !std::isfinite(moved.y)) {
            next_focus = clock::time_point::max();  // the server refuses what is not finite
            return;
        }
        focus = moved;
        conn.send(protocol::focus{moved.x, moved.y});
    };

    auto next_summary = start + 1s;
    bool closed = false;
    for (;;) {
        auto now = clock::now();
        if (now >= next_summary) {
            summarize(now);
            next_summary = std::max(next_summary + 1s, now + 100ms);
        }
        if (now >= deadline || interrupted()) {
            break;
        }
        if (now >= next_focus) {
            move_focus(now);
        }
        const auto wait = std::min({next_summary, deadline, next_focus, now + slice}) - now;
        conn.poll_for(std::chrono::ceil<std::chrono::milliseconds>(wait));
        if (!conn.is_open()) {
            closed = true;
            break;
        }
    }
    const auto end = clock::now();
    if (std::chrono::duration<double>(end - interval_start).count() >= 0.05) {
        summarize(end);  // the last, partial interval
    }
    total.elapsed_s = std::chrono::duration<double>(end - start).count();
    total.interval_s = total.elapsed_s;
    total.entities = m.size();
    total.tick = m.tick();
    ctx.out.watch_summary_line(m.types(), total, true);

    if (closed) {
        ctx.out.failure(closed_message(conn, ctx.endpoint));
        return exit_failure;
    }
    return desync ? exit_failure : exit_ok;
}

int run_command(context& ctx, const invocation& inv) {
    switch (inv.what) {
        case command::spawn:
            return run_spawn(ctx, inv.spawn);
        case command::destroy:
            return run_destroy(ctx, inv.destroy);
        case command::set:
            return run_set(ctx, inv.set);
        case command::remove:
            return run_remove(ctx, inv.remove);
        case command::list:
            return run_list(ctx);
        case command::watch:
            return run_watch(ctx, inv.watch);
        case command::shell:
        case command::help:
        case command::quit:
            break;
    }
    return exit_usage;  // not a command run on a connection
}

}  // namespace ecsnet::client_cli
