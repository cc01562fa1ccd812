#include "output.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <type_traits>
#include <variant>
#include <vector>

namespace ecsnet::client_cli {

// Keys in insertion order: "event" first, as people read them.
using json = nlohmann::ordered_json;
using protocol::component_info;
using protocol::field_info;
using protocol::field_value;

namespace {

void print_json(const json& object) {
    // Names are valid UTF-8 (the protocol checks); replace rather than throw all the same.
    std::cout << object.dump(-1, ' ', false, json::error_handler_t::replace) << '\n' << std::flush;
}

void print_line(std::string_view text) {
    std::cout << text << '\n' << std::flush;
}

void print_error_line(std::string_view text) {
    std::cout << std::flush;  // keep the order of stdout and stderr lines on a terminal
    std::cerr << text << '\n' << std::flush;
}

std::string fixed2(double value) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.2f", value);
    return buffer;
}

// Control characters as \xNN so that a name cannot break a line or the terminal; with
// `quoted`, also \" and \\.
std::string printable(std::string_view text, bool quoted) {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) {
            char buffer[8];
            std::snprintf(buffer, sizeof buffer, "\\x%02x", u);
            out += buffer;
        } else if (quoted && (c == '"' || c == '\\')) {
            out += '\\';
            out += c;
        } else {
            out += c;
        }
    }
    return out;
}

// Columns are aligned by code points (names are UTF-8).
std::size_t display_width(std::string_view text) {
    return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
        return (static_cast<unsigned char>(c) & 0xC0U) != 0x80U;
    }));
}

// {"event": name, then the fields of `more`}.
json event(std::string_view name, const json& more = json::object()) {
    json out{{"event", name}};
    for (const auto& [key, value] : more.items()) {
        out[key] = value;
    }
    return out;
}

json entity_ref(ecs::Entity e) {
    return json{{"entity", ecs::to_string(e)}, {"index", e.index()}, {"version", e.version()}};
}

// The float's shortest decimal form (933.61139, not 933.6113891601563), read back exactly.
double json_float(float value) {
    char buffer[64];
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer - 1, value);
    if (ec != std::errc{}) {
        return static_cast<double>(value);
    }
    *end = '\0';
    return std::strtod(buffer, nullptr);
}

// A field for people: floats with two decimals, integers as they are.
std::string field_text(const field_value& value) {
    if (const auto* d = std::get_if<double>(&value)) {
        return fixed2(*d);
    }
    return protocol::to_string(value);
}

// A field in JSON: a float32 field in the float's shortest form (1.1, not the double
// 1.100000023841858), a float64 in the double's.
json field_json(const field_info& field, const field_value& value) {
    return std::visit(
        [&](const auto& v) -> json {
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, double>) {
                return field.type == protocol::field_type::float32
                           ? json(json_float(static_cast<float>(v)))
                           : json(v);
            } else {
                return json(v);
            }
        },
        value);
}

// One component of an entity, as text and as JSON.
struct shown {
    std::string text;  // "(1.00, 2.00)", "100", "ship" (or "\"ship\"" when quoted)
    json value;
};

// e's value of `type`, or null when e does not have it. `quoted`: a string in quotes, with
// \" and \\ escaped (watch lines); else as is (the table). Control characters never pass.
std::optional<shown> show(const protocol::mirror& m, ecs::Entity e, const component_info& type,
                          bool quoted) {
    if (type.is_string) {
        const std::string* text = m.text(e, type.id);
        if (text == nullptr) {
            return std::nullopt;
        }
        std::string out = quoted ? "\"" : "";
        out += printable(*text, quoted);
        out += quoted ? "\"" : "";
        return shown{std::move(out), json(*text)};
    }
    const auto bytes = m.value(e, type.id);
    if (bytes.empty() || bytes.size() < type.value_bytes()) {
        return std::nullopt;
    }
    if (type.fields.size() == 1) {
        const field_value v = protocol::read_field(type, bytes, 0);
        return shown{field_text(v), field_json(type.fields[0], v)};
    }
    shown out{"(", json::object()};
    for (std::size_t i = 0; i < type.fields.size(); ++i) {
        const field_value v = protocol::read_field(type, bytes, i);
        out.text += i == 0 ? "" : ", ";
        out.text += field_text(v);
        out.value[type.fields[i].name] = field_json(type.fields[i], v);
    }
    out.text += ')';
    return out;
}

constexpr std::string_view owner_type = "owner";  // the core's: who spawned an entity

// The client that owns e; null for the server's entities.
std::optional<std::uint64_t> owner_of(const protocol::mirror& m, ecs::Entity e) {
    const component_info* owner = m.types().find(owner_type);
    if (owner == nullptr || owner->is_string || owner->fields.empty()) {
        return std::nullopt;
    }
    const auto bytes = m.value(e, owner->id);
    if (bytes.empty() || bytes.size() < owner->value_bytes()) {
        return std::nullopt;
    }
    const field_value v = protocol::read_field(*owner, bytes, 0);
    if (const auto* u = std::get_if<std::uint64_t>(&v)) {
        return *u;
    }
    if (const auto* i = std::get_if<std::int64_t>(&v); i != nullptr && *i >= 0) {
        return static_cast<std::uint64_t>(*i);
    }
    return std::nullopt;
}

// The key of a component in an entity's object: its name, unless the object has that key.
std::string json_key(std::string_view name) {
    static constexpr std::array<std::string_view, 7> reserved{
        "event", "entity", "index", "version", "tick", "component", "value"};
    std::string key;
    if (std::find(reserved.begin(), reserved.end(), name) != reserved.end()) {
        key = "component:";
    }
    key += name;
    return key;
}

// Every component type of the schema, null when e lacks it (owner null: the server's entity).
json entity_json(const protocol::mirror& m, ecs::Entity e) {
    json out = entity_ref(e);
    for (const component_info& type : m.types().types()) {
        const auto value = show(m, e, type, false);
        out[json_key(type.name)] = value ? value->value : json(nullptr);
    }
    return out;
}

std::string owner_text(const protocol::mirror& m, ecs::Entity e) {
    const auto owner = owner_of(m, e);
    return owner ? "client " + std::to_string(*owner) : std::string{"server"};
}

// " owner=3 position=(1.00, 2.00) name="ship" ...": the components e has, in wire id order.
std::string describe(const protocol::mirror& m, ecs::Entity e) {
    std::string out = " owner=";
    const auto owner = owner_of(m, e);
    out += owner ? std::to_string(*owner) : std::string{"server"};
    for (const component_info& type : m.types().types()) {
        if (type.name == owner_type) {
            continue;
        }
        if (const auto value = show(m, e, type, true)) {
            out += ' ';
            out += type.name;
            out += '=';
            out += value->text;
        }
    }
    return out;
}

const char* checksum_text(checksum_state s) {
    switch (s) {
        case checksum_state::ok:
            return "ok";
        case checksum_state::desync:
            return "desync";
        case checksum_state::pending:
            break;
    }
    return "pending";
}

// A count over an interval as a rate, rounded.
std::uint64_t per_second(std::uint64_t count, double interval_s) {
    return interval_s > 0.0
               ? static_cast<std::uint64_t>(std::llround(static_cast<double>(count) / interval_s))
               : 0;
}

// Bytes per second received as a whole percentage of the budget; none when unlimited. It
// counts every byte of the connection, also frames the server's budget may leave out
// (answers to commands, checksums): a little over 100 % need not be a fault.
std::optional<std::uint64_t> budget_use(double bytes_per_second, std::uint32_t budget) {
    if (budget == 0) {
        return std::nullopt;
    }
    return static_cast<std::uint64_t>(
        std::llround(bytes_per_second * 100.0 / static_cast<double>(budget)));
}

std::uint64_t total_updates(const watch_summary& s) {
    std::uint64_t n = 0;
    for (const auto count : s.updates) {
        n += count;
    }
    return n;
}

}  // namespace

std::string_view component_name(const protocol::schema& types, std::uint32_t wire_id) {
    const component_info* type = types.find(wire_id);
    return type != nullptr ? std::string_view{type->name} : std::string_view{"unknown"};
}

void printer::spawned(ecs::Entity e) {
    if (json_) {
        json out = event("spawned", entity_ref(e));
        print_json(out);
    } else {
        print_line("spawned " + ecs::to_string(e));
    }
}

void printer::destroyed(ecs::Entity e) {
    if (json_) {
        json out = event("destroyed", entity_ref(e));
        print_json(out);
    } else {
        print_line("destroyed " + ecs::to_string(e));
    }
}

namespace {

void print_component_change(bool as_json, std::string_view what, ecs::Entity e,
                            const std::vector<std::string>& types) {
    if (as_json) {
        json out = event(what, entity_ref(e));
        out["components"] = types;
        print_json(out);
        return;
    }
    std::string line = std::string{what} + " " + ecs::to_string(e);
    for (const std::string& type : types) {
        line += " " + type;
    }
    print_line(line);
}

}  // namespace

void printer::set_done(ecs::Entity e, const std::vector<std::string>& types) {
    print_component_change(json_, "set", e, types);
}

void printer::removed(ecs::Entity e, const std::vector<std::string>& types) {
    print_component_change(json_, "removed", e, types);
}

void printer::entity_list(const protocol::mirror& m, std::uint32_t client_id) {
    std::size_t owned = 0;
    m.each([&](ecs::Entity e) { owned += owner_of(m, e) == client_id ? 1 : 0; });
    const std::string count_text = std::to_string(m.size()) +
                                   (m.size() == 1 ? " entity" : " entities") + " at tick " +
                                   std::to_string(m.tick()) + "; this client (" +
                                   std::to_string(client_id) + ") owns " + std::to_string(owned);
    if (json_) {
        m.each([&](ecs::Entity e) {  // in index order
            json out = event("entity", entity_json(m, e));
            print_json(out);
        });
        print_json(event("list", json{{"entities", m.size()},
                                      {"tick", m.tick()},
                                      {"client_id", client_id},
                                      {"owned", owned}}));
        return;
    }

    // ENTITY, OWNER, then a column per other type of the schema, in wire id order.
    std::vector<const component_info*> columns;
    std::vector<std::string> header{"ENTITY", "OWNER"};
    for (const component_info& type : m.types().types()) {
        if (type.name != owner_type) {
            columns.push_back(&type);
            std::string title = type.name;
            std::transform(title.begin(), title.end(), title.begin(), [](char c) {
                return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
            });
            header.push_back(std::move(title));
        }
    }
    using row = std::vector<std::string>;
    std::vector<row> rows;
    rows.reserve(m.size() + 1);
    rows.push_back(std::move(header));
    m.each([&](ecs::Entity e) {
        row r{ecs::to_string(e), owner_text(m, e)};
        for (const component_info* type : columns) {
            const auto value = show(m, e, *type, false);
            r.push_back(value ? value->text : std::string{"-"});
        }
        rows.push_back(std::move(r));
    });
    std::vector<std::size_t> width(rows.front().size(), 0);
    for (const auto& r : rows) {
        for (std::size_t c = 0; c < r.size(); ++c) {
            width[c] = std::max(width[c], display_width(r[c]));
        }
    }
    std::string text;
    for (const auto& r : rows) {
        std::string line;
        for (std::size_t c = 0; c < r.size(); ++c) {
            line += r[c];
            if (c + 1 < r.size()) {
                line.append(width[c] - display_width(r[c]) + 2, ' ');
            }
        }
        text += line + '\n';
    }
    std::cout << text << count_text << '\n' << std::flush;
}

void printer::refused(std::string_view command, const protocol::command_result& r) {
    if (json_) {
        json out = event("error", r.entity.is_null() ? json::object() : entity_ref(r.entity));
        out["command"] = command;
        out["code"] = protocol::to_string(r.code);
        out["message"] = r.message;
        print_json(out);
    } else {
        print_error_line("error: " + r.message);
    }
}

void printer::not_attempted(std::string_view command, std::size_t count, std::string_view why) {
    if (json_) {
        print_json(event("error", json{{"command", command},
                                       {"code", "NotAttempted"},
                                       {"not_attempted", count},
                                       {"message", why}}));
    } else {
        print_error_line("error: " + std::to_string(count) + " " + std::string{command} +
                         (count == 1 ? " command" : " commands") +
                         " not sent: " + std::string{why});
    }
}

void printer::failure(std::string_view message) {
    if (json_) {
        print_json(event("error", json{{"message", message}}));
    } else {
        print_error_line(message);
    }
}

void printer::usage_error(std::string_view text) {
    std::string message{text};
    while (!message.empty() && message.back() == '\n') {
        message.pop_back();
    }
    if (json_) {
        print_json(event("error", json{{"code", "Usage"}, {"message", message}}));
    } else {
        print_error_line(message);
    }
}

void printer::note(std::string_view message) {
    if (!json_) {
        print_error_line("note: " + std::string{message});
    }
}

void printer::warning(std::string_view message) {
    if (json_) {
        print_json(event("warning", json{{"message", message}}));
    } else {
        print_error_line("warning: " + std::string{message});
    }
}

void printer::watch_started(std::string_view endpoint, std::uint32_t client_id,
                            const protocol::mirror& m, const protocol::welcome& welcome,
                            const watch_args& args) {
    const bool interest = welcome.interest_radius > 0.0F;
    const auto& seconds = args.seconds;
    if (json_) {
        json out = event("watching", json{{"server", endpoint},
                                          {"client_id", client_id},
                                          {"entities", m.size()},
                                          {"tick", m.tick()},
                                          {"tick_rate", json_float(welcome.tick_rate)},
                                          {"checksum_interval", welcome.checksum_interval}});
        out["seconds"] = seconds ? json(*seconds) : json(nullptr);
        if (interest) {
            out["interest_radius"] = json_float(welcome.interest_radius);
            out["client_budget"] = welcome.client_budget;
            out["focus"] = args.focus ? json{{"x", json_float(args.focus->x)},
                                             {"y", json_float(args.focus->y)}}
                                      : json(nullptr);
            out["move"] =
                args.move ? json{{"x", json_float(args.move->x)}, {"y", json_float(args.move->y)}}
                          : json(nullptr);
        }
        print_json(out);
        return;
    }
    char rate[32];
    std::snprintf(rate, sizeof rate, "%g", static_cast<double>(welcome.tick_rate));
    char limit[48];
    if (seconds) {
        std::snprintf(limit, sizeof limit, "for %g s (Ctrl-C stops)", *seconds);
    } else {
        std::snprintf(limit, sizeof limit, "until Ctrl-C");
    }
    std::string view;
    if (interest) {
        char text[160];
        std::snprintf(text, sizeof text, ", interest radius %g, budget ",
                      static_cast<double>(welcome.interest_radius));
        view = text;
        view += welcome.client_budget == 0 ? std::string{"unlimited"}
                                           : std::to_string(welcome.client_budget) + " B/s";
        if (args.focus || args.move) {
            const xy at = args.focus.value_or(xy{});
            std::snprintf(text, sizeof text, ", focus (%g, %g)", static_cast<double>(at.x),
                          static_cast<double>(at.y));
            view += text;
        }
        if (args.move) {
            std::snprintf(text, sizeof text, " moving (%g, %g)/s",
                          static_cast<double>(args.move->x), static_cast<double>(args.move->y));
            view += text;
        }
    }
    print_line("watching " + std::string{endpoint} + " as client " + std::to_string(client_id) +
               ": " + std::to_string(m.size()) + " entities at tick " + std::to_string(m.tick()) +
               ", " + rate + " ticks/s, checksum every " +
               std::to_string(welcome.checksum_interval) + " ticks" + view + "; " + limit);
}

void printer::watch_spawned(const protocol::mirror& m, ecs::Entity e) {
    if (json_) {
        json out = event("spawned", entity_json(m, e));
        out["tick"] = m.event_tick();  // the Delta's or the Snapshot's being applied
        print_json(out);
    } else {
        print_line("spawned " + ecs::to_string(e) + describe(m, e));
    }
}

void printer::watch_destroyed(const protocol::mirror& m, ecs::Entity e) {
    if (json_) {
        json out =
            event("destroyed", entity_json(m, e));  // the last values, before the mirror drops them
        out["tick"] = m.event_tick();
        print_json(out);
    } else {
        print_line("destroyed " + ecs::to_string(e) + describe(m, e));
    }
}

void printer::watch_update(const protocol::mirror& m, ecs::Entity e, std::uint32_t wire_id) {
    const component_info* type = m.types().find(wire_id);
    const auto value = type != nullptr ? show(m, e, *type, true) : std::nullopt;
    if (!value) {
        return;  // the mirror reports a removal as watch_removed, never here
    }
    const std::string_view component = type->name;
    if (json_) {
        json out = event("updated", entity_ref(e));
        out["tick"] = m.event_tick();
        out["component"] = component;
        out["value"] = value->value;
        print_json(out);
    } else {
        print_line("updated " + ecs::to_string(e) + " " + std::string{component} + "=" +
                   value->text);
    }
}

void printer::watch_removed(const protocol::mirror& m, ecs::Entity e, std::uint32_t wire_id) {
    const std::string_view component = component_name(m.types(), wire_id);
    if (json_) {
        json out = event("removed", entity_ref(e));
        out["tick"] = m.event_tick();
        out["component"] = component;
        print_json(out);
    } else {
        print_line("removed " + ecs::to_string(e) + " " + std::string{component});
    }
}

void printer::watch_snapshot(std::uint64_t tick, std::size_t entities) {
    if (json_) {
        print_json(event("snapshot", json{{"tick", tick}, {"entities", entities}}));
    } else {
        print_line("snapshot at tick " + std::to_string(tick) + ": " + std::to_string(entities) +
                   " entities (the mirror was replaced)");
    }
}

void printer::watch_desync(std::string_view what) {
    if (json_) {
        print_json(event("desync", json{{"message", what}}));
    } else {
        print_line("DESYNC: " + std::string{what});
    }
}

void printer::watch_summary_line(const protocol::schema& types, const watch_summary& s,
                                 bool total) {
    const std::uint64_t updates = total_updates(s);
    const double rate =
        s.interval_s > 0.0 ? std::round(static_cast<double>(s.bytes) / s.interval_s) : 0.0;
    if (json_) {
        json by_component = json::object();
        for (std::uint32_t id = 0; id < s.updates.size(); ++id) {
            if (s.updates[id] != 0) {
                by_component[std::string{component_name(types, id)}] = s.updates[id];
            }
        }
        json out = event(total ? "total" : "summary",
                         json{{"elapsed_s", std::round(s.elapsed_s * 1000.0) / 1000.0},
                              {"interval_s", std::round(s.interval_s * 1000.0) / 1000.0},
                              {"entities", s.entities},
                              {"tick", s.tick},
                              {"bytes", s.bytes},
                              {"bytes_per_second", static_cast<std::uint64_t>(rate)},
                              {"spawned", s.spawned},
                              {"destroyed", s.destroyed},
                              {"snapshots", s.snapshots},
                              {"updates", updates},
                              {"updates_by_component", by_component},
                              {"removed", s.removed},
                              {"checksums_matched", s.checksums_matched},
                              {"checksums_mismatched", s.checksums_mismatched},
                              {"checksum", checksum_text(s.checksum)}});
        out["checksum_tick"] =
            s.checksum == checksum_state::pending ? json(nullptr) : json(s.checksum_tick);
        if (s.interest) {
            out["in_view"] = s.entities;
            out["entered"] = s.entered;
            out["left"] = s.left;
            out["entered_per_second"] = per_second(s.entered, s.interval_s);
            out["left_per_second"] = per_second(s.left, s.interval_s);
            out["client_budget"] = s.client_budget;
            const auto use = budget_use(rate, s.client_budget);
            out["budget_use_pct"] = use ? json(*use) : json(nullptr);
        }
        if (!s.problem.empty()) {
            out["problem"] = s.problem;
        }
        print_json(out);
        return;
    }
    char head[64];
    std::snprintf(head, sizeof head, total ? "total %.1fs:" : "[%5.1fs]", s.elapsed_s);
    std::string line = std::string{head} + (s.interest ? " entities in view " : " entities ") +
                       std::to_string(s.entities);
    if (s.interest) {
        line += ", entered " + std::to_string(per_second(s.entered, s.interval_s)) + "/s, left " +
                std::to_string(per_second(s.left, s.interval_s)) + "/s";
    }
    line += ", tick " + std::to_string(s.tick) + ", " +
            std::to_string(static_cast<std::uint64_t>(rate)) + " B/s";
    if (s.interest) {
        const auto use = budget_use(rate, s.client_budget);
        line += use ? " (budget " + std::to_string(*use) + "% of " +
                          std::to_string(s.client_budget) + " B/s)"
                    : std::string{" (budget unlimited)"};
    }
    line += ", spawned " + std::to_string(s.spawned) + ", destroyed " +
            std::to_string(s.destroyed) + ", updates " + std::to_string(updates);
    if (updates != 0) {
        std::string parts;
        for (std::uint32_t id = 0; id < s.updates.size(); ++id) {
            if (s.updates[id] != 0) {
                parts += (parts.empty() ? "" : ", ") + std::string{component_name(types, id)} +
                         " " + std::to_string(s.updates[id]);
            }
        }
        line += " (" + parts + ")";
    }
    if (s.removed != 0) {
        line += ", removed " + std::to_string(s.removed);
    }
    if (s.snapshots != 0) {
        line += ", snapshots " + std::to_string(s.snapshots);
    }
    if (total) {
        line += ", checksums " + std::to_string(s.checksums_matched) + " OK " +
                std::to_string(s.checksums_mismatched) + " DESYNC";
    } else {
        switch (s.checksum) {
            case checksum_state::pending:
                line += ", checksum pending";
                break;
            case checksum_state::ok:
                line += ", checksum OK (tick " + std::to_string(s.checksum_tick) + ")";
                break;
            case checksum_state::desync:
                line += ", checksum DESYNC (tick " + std::to_string(s.checksum_tick) + ")";
                break;
        }
    }
    if (!s.problem.empty()) {
        line += ", mirror: " + s.problem;
    }
    print_line(line);
}

}  // namespace ecsnet::client_cli
