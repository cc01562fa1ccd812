// A steady command load for bench/persistence/measure.sh: --clients connections to a demo
// server, each spawning --entities-per-client entities, then setting their health at
// --rate commands per second in all (paced, pipelined) for --seconds. Prints one JSON line:
// commands sent and acknowledged, the rate reached, and the time from send to CommandResult
// (what a client waits for an acknowledgement: with --journal it includes the fdatasync).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ecsnet/client/connection.hpp"
#include "ecsnet/demo/components.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;
namespace protocol = ecsnet::protocol;

struct loader {
    std::unique_ptr<ecsnet::client::connection> link;
    std::vector<ecsnet::ecs::Entity> entities;
    std::map<std::uint32_t, clock_type::time_point> pending;  // request id -> sent at
    clock_type::time_point next_send;
    std::int32_t next_health = 1;
    std::size_t next_target = 0;
};

double percentile(std::vector<double> v, double p) {
    if (v.empty()) {
        return 0.0;
    }
    std::sort(v.begin(), v.end());
    const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size())));
    return v[std::max<std::size_t>(rank, 1) - 1];
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"ecsnet persistence bench: a steady rate of SetComponent commands"};
    std::uint16_t port = 0;
    std::size_t clients = 4;
    std::size_t per_client = 50;
    double rate = 200.0;
    double seconds = 10.0;
    app.add_option("--port", port, "ecsnet-server's port")->required();
    app.add_option("--clients", clients, "Connections")->capture_default_str()->check(CLI::Range(1, 256));
    app.add_option("--entities-per-client", per_client, "Entities each spawns first")
        ->capture_default_str()
        ->check(CLI::Range(1, 10000));
    app.add_option("--rate", rate, "Commands per second, all clients together")
        ->capture_default_str()
        ->check(CLI::Range(1.0, 1e6));
    app.add_option("--seconds", seconds, "How long")->capture_default_str()->check(CLI::Range(0.5, 3600.0));
    double ready_pause = 0.0;
    app.add_option("--ready-pause", ready_pause,
                   "Once the spawns are answered, print \"ready\" on stderr and wait this many "
                   "seconds before the window (for a scrape that excludes the spawns)")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 60.0));
    CLI11_PARSE(app, argc, argv);

    try {
        std::vector<loader> loaders(clients);
        for (std::size_t i = 0; i < clients; ++i) {
            ecsnet::client::connect_options options;
            options.port = port;
            options.name = "persistence-load-" + std::to_string(i);
            options.timeout = 30s;
            loaders[i].link = std::make_unique<ecsnet::client::connection>(options);
            for (std::size_t k = 0; k < per_client; ++k) {
                const std::uint32_t id = loaders[i].link->next_request_id();
                const auto r = loaders[i].link->request(
                    protocol::spawn{id, protocol::component_set{}
                                            .set(ecsnet::demo::Position{static_cast<float>(k), 0.0F})
                                            .set(ecsnet::demo::Health{0})},
                    id, 10s);
                if (!r.ok) {
                    throw std::runtime_error("spawn refused: " + r.message);
                }
                loaders[i].entities.push_back(r.entity);
            }
        }
        if (ready_pause > 0.0) {
            std::cerr << "ready" << std::endl;
            const auto resume = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                                        std::chrono::duration<double>(ready_pause));
            for (loader& l : loaders) {  // keep reading: the server's deltas do not pile up
                l.link->poll_for(std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::max(clock_type::duration::zero(), resume - clock_type::now()) /
                    static_cast<long>(loaders.size())));
            }
        }
        const auto interval = std::chrono::duration_cast<clock_type::duration>(
            std::chrono::duration<double>(static_cast<double>(clients) / rate));
        const auto start = clock_type::now();
        const auto end = start + std::chrono::duration_cast<clock_type::duration>(
                                     std::chrono::duration<double>(seconds));
        for (std::size_t i = 0; i < clients; ++i) {
            loaders[i].next_send = start + interval * static_cast<long>(i) / static_cast<long>(clients);
        }
        std::vector<double> latency_ms;
        std::size_t sent = 0;
        std::size_t refused = 0;
        const auto collect = [&](loader& l) {
            for (auto it = l.pending.begin(); it != l.pending.end();) {
                if (const auto r = l.link->take_result(it->first)) {
                    latency_ms.push_back(
                        std::chrono::duration<double, std::milli>(clock_type::now() - it->second).count());
                    refused += r->ok ? 0 : 1;
                    it = l.pending.erase(it);
                } else {
                    ++it;
                }
            }
        };
        while (clock_type::now() < end) {
            for (loader& l : loaders) {
                const auto now = clock_type::now();
                for (int burst = 0; burst < 64 && l.next_send <= now; ++burst) {
                    const std::uint32_t id = l.link->next_request_id();
                    const auto target = l.entities[l.next_target++ % l.entities.size()];
                    l.link->send(protocol::set_components{
                        id, target, protocol::component_set{}.set(ecsnet::demo::Health{l.next_health++})});
                    l.pending.emplace(id, clock_type::now());
                    l.next_send += interval;
                    ++sent;
                }
                l.link->poll_for(std::chrono::milliseconds{1});
                collect(l);
                if (!l.link->is_open()) {
                    throw std::runtime_error("connection closed: " + *l.link->closed_reason());
                }
            }
        }
        const double elapsed = std::chrono::duration<double>(clock_type::now() - start).count();
        for (loader& l : loaders) {  // the last answers
            (void)l.link->poll_until(
                [&] {
                    collect(l);
                    return l.pending.empty();
                },
                10s);
        }
        nlohmann::json out{{"clients", clients},
                           {"rate_asked", rate},
                           {"sent", sent},
                           {"answered", latency_ms.size()},
                           {"refused", refused},
                           {"rate", static_cast<double>(sent) / elapsed},
                           {"ack_ms",
                            {{"p50", percentile(latency_ms, 0.50)},
                             {"p99", percentile(latency_ms, 0.99)},
                             {"max", percentile(latency_ms, 1.0)}}}};
        std::cout << out.dump() << std::endl;
        return refused == 0 && latency_ms.size() == sent ? 0 : 1;
    } catch (const std::exception& e) {
        std::cerr << "persistence-load: " << e.what() << "\n";
        return 1;
    }
}
