#pragma once

// What /clients shows of each joined connection (published through health_publisher, at most
// once a second) and the budget metric (ecsnet_client_budget_use_ratio), read from the
// sessions' counters and their views. World thread.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "ecsnet/server/admission/owners.hpp"
#include "ecsnet/server/operations/health_publisher.hpp"
#include "ecsnet/server/operations/metrics.hpp"
#include "ecsnet/server/replication/interest.hpp"
#include "ecsnet/server/replication/replicator.hpp"
#include "ecsnet/server/session/connections.hpp"

namespace ecsnet::server {

class client_reports {
public:
    using clock = std::chrono::steady_clock;

    // What the reports read.
    struct sources {
        const connections& sessions;
        const owner_registry& owners;
        const replicator& replication;
        interest_manager& interest;
    };

    struct report {
        clients_report clients;
        double bytes_out_per_s{0.0};  // every connection's, since the previous report
        double bytes_in_per_s{0.0};
    };
    // Every joined connection with its bytes per second since the previous report; nothing
    // when a second has not passed since, unless `now` (then the rates are 0).
    [[nodiscard]] std::optional<report> make(const sources& from, std::uint64_t tick,
                                             std::size_t entities, const server_stats& totals,
                                             bool now);
    // Each budgeted client's bytes this tick against its budget, into `metrics`.
    void measure_budgets(const sources& from, double tick_rate, server_metrics& metrics);

private:
    clock::time_point reported_at_{};
    std::uint64_t bytes_out_{0};
    std::uint64_t bytes_in_{0};
    std::vector<double> ratios_;  // kept for their capacity
};

}  // namespace ecsnet::server
