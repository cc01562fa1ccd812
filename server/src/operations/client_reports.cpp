#include "ecsnet/server/operations/client_reports.hpp"

#include <string>
#include <utility>

#include "ecsnet/server/session/session.hpp"

namespace ecsnet::server {

std::optional<client_reports::report> client_reports::make(const sources& from, std::uint64_t tick,
                                                           std::size_t entities,
                                                           const server_stats& totals, bool now) {
    const auto at = clock::now();
    const double seconds = std::chrono::duration<double>(at - reported_at_).count();
    if (!now && seconds < 1.0) {
        return std::nullopt;
    }
    const auto per_second = [&](std::uint64_t bytes, std::uint64_t& before) {
        const double rate = now ? 0.0 : static_cast<double>(bytes - before) / seconds;
        before = bytes;
        return rate;
    };
    report out;
    out.clients.tick = tick;
    for (const auto& [id, s] : from.sessions.sessions()) {
        if (!s->joined()) {
            continue;
        }
        const session::traffic& t = s->counters();
        client_report c;
        c.session = id;
        c.owner = s->owner_id();
        c.player = c.owner == 0 ? std::string{} : from.owners.player_of(c.owner);
        c.name = s->client_name();
        c.transport = std::string{s->transport()};
        c.address = s->remote();
        c.observer = s->observer();
        c.joined_tick = s->joined_tick();
        c.bytes_out = t.bytes_out.load(std::memory_order_relaxed);
        c.bytes_in = t.bytes_in.load(std::memory_order_relaxed);
        session::report_marks& marks = s->reported();
        c.bytes_out_per_s = per_second(c.bytes_out, marks.bytes_out);
        marks.bytes_in = c.bytes_in;
        c.dropped_frames = t.dropped_frames.load(std::memory_order_relaxed);
        c.resyncs = t.resyncs.load(std::memory_order_relaxed);
        c.view_entities = entities;
        if (const client_view* v = from.replication.view(id)) {
            const player_interest& p = from.interest.player(c.owner);
            c.budget_bytes_per_s = from.interest.budget_of(p);
            if (p.focus) {
                c.interest = client_report::area{p.focus->x, p.focus->y, p.radius};
            }
            if (!v->whole_world()) {
                c.view_entities = v->held();
            }
        }
        out.clients.clients.push_back(std::move(c));
    }
    out.bytes_out_per_s = per_second(totals.bytes_out, bytes_out_);
    out.bytes_in_per_s = per_second(totals.bytes_in, bytes_in_);
    reported_at_ = at;
    return out;
}

void client_reports::measure_budgets(const sources& from, double tick_rate,
                                     server_metrics& metrics) {
    ratios_.clear();
    for (const auto& [id, s] : from.sessions.sessions()) {
        const client_view* v = s->joined() ? from.replication.view(id) : nullptr;
        if (v == nullptr) {
            continue;
        }
        const double budget = from.interest.budget_of(from.interest.player(s->owner_id())) / tick_rate;
        session::report_marks& marks = s->reported();
        const std::uint64_t bytes = v->stats().bytes;
        if (budget > 0.0) {
            ratios_.push_back(static_cast<double>(bytes - marks.view_bytes) / budget);
        }
        marks.view_bytes = bytes;
    }
    metrics.budget_used(ratios_);
}

}  // namespace ecsnet::server
