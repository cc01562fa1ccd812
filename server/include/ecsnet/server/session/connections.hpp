#pragma once

// Every connection of a server, from accept to the end of its flush: the sessions by id (in
// connection order), what keeps the world's context running while one still flushes, and the
// seats: joined players and observers, and the observers' own bound (--max-observers) and
// owners. World thread only.

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ecsnet/server/operations/metrics.hpp"
#include "ecsnet/server/transport/stream.hpp"

namespace ecsnet::server {

class session;
class session_host;

class connections {
public:
    using map = std::map<std::uint64_t, std::shared_ptr<session>>;

    // `world_context`: its run() does not return while a session has not finished.
    explicit connections(boost::asio::io_context& world_context) : world_context_{world_context} {}
    connections(const connections&) = delete;
    connections& operator=(const connections&) = delete;

    // A new session over `stream` (bound to `io`, an I/O thread's context), under the next id.
    // An observer's counts toward --max-observers at once (observers_open()).
    std::shared_ptr<session> open(std::shared_ptr<boost::asio::io_context> io,
                                  std::unique_ptr<byte_stream> stream, session_host& host,
                                  bool observer = false);
    // It closed (session_host::closed): out of the map, its seat and its observer slot freed.
    void closed(session& s);
    // It has flushed and closed its socket (session_host::finished).
    void finished();

    [[nodiscard]] const map& sessions() const noexcept { return sessions_; }
    [[nodiscard]] session* find(std::uint64_t id) const;
    [[nodiscard]] bool anyone_joined() const;
    [[nodiscard]] std::vector<std::uint64_t> joined() const;

    // A joined session takes a seat: a player's (players(), --max-clients) or an observer's.
    void seat(session& s);
    // Its seat is free (closed, or taken over by a newer connection of the same player).
    void unseat(session& s);
    [[nodiscard]] std::size_t players() const noexcept { return players_; }
    [[nodiscard]] std::size_t observers() const noexcept { return observers_; }
    // The joined players of `owner`, oldest first; the joined players from `address`.
    [[nodiscard]] std::vector<session*> seated(std::uint32_t owner) const;
    [[nodiscard]] std::size_t joined_from(const std::string& address) const;

    struct seat_limits {
        std::size_t players{0};     // --max-clients
        std::size_t per_player{0};  // --max-connections-per-player (identity by tokens)
        std::size_t per_address{0};  // --max-clients-per-address (development owners)
        bool by_player{false};       // identity by connect tokens: owners are players
    };
    struct seating {
        // The player's oldest connections, which give their seats to the new one.
        std::vector<session*> taken_over;
        std::optional<refusal_reason> refused;  // full, or too many from the address
        std::string why;
    };
    // Where a new connection of `owner` from `address` sits. A player (token identity) has at
    // most `per_player` joined connections, the oldest giving its seat to the newest;
    // development owners are not players (a developer's shell and watch share a key): at most
    // `per_address` of them join from one address instead.
    [[nodiscard]] seating find_seat(std::uint32_t owner, const std::string& address,
                                    const seat_limits& limits) const;

    // Observers connected, joined or not (--max-observers).
    [[nodiscard]] std::size_t observers_open() const noexcept { return observers_open_; }
    // An observer acts for `owner` (--inspector-writes): its connection is not a player's.
    void observer_acts_for(std::uint32_t owner) { ++observers_acting_for_[owner]; }
    [[nodiscard]] std::size_t observers_acting_for(std::uint32_t owner) const;

private:
    boost::asio::io_context& world_context_;
    map sessions_;
    // Until every session has closed its socket, the world context's run() must not return:
    // sessions flush on the I/O threads after closed(), and post finished() at the very end.
    std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
    std::size_t unfinished_{0};
    std::uint64_t next_id_{1};  // connection numbers, for logs; 64 bits never wrap
    std::size_t players_{0};    // joined
    std::size_t observers_{0};  // joined
    std::size_t observers_open_{0};
    std::unordered_map<std::uint32_t, std::size_t> observers_acting_for_;
};

}  // namespace ecsnet::server
