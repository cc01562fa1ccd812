#include "ecsnet/server/session/connections.hpp"

#include <algorithm>

#include "ecsnet/server/session/session.hpp"

namespace ecsnet::server {

std::shared_ptr<session> connections::open(std::shared_ptr<boost::asio::io_context> io,
                                           std::unique_ptr<byte_stream> stream,
                                           session_host& host, bool observer) {
    const std::uint64_t id = next_id_++;
    auto s = std::make_shared<session>(std::move(io), std::move(stream), host, id, observer);
    if (unfinished_++ == 0) {
        work_.emplace(world_context_.get_executor());
    }
    sessions_.emplace(id, s);
    if (observer) {
        // Counted from the upgrade, joined or not: the bound holds for connections that never
        // send Hello too (the Hello deadline closes those).
        ++observers_open_;
    }
    return s;
}

void connections::closed(session& s) {
    unseat(s);
    if (s.observer()) {
        --observers_open_;
        if (const auto it = observers_acting_for_.find(s.owner_id());
            it != observers_acting_for_.end() && --it->second == 0) {
            observers_acting_for_.erase(it);
        }
    }
    sessions_.erase(s.id());
}

void connections::finished() {
    if (--unfinished_ == 0) {
        work_.reset();
    }
}

session* connections::find(std::uint64_t id) const {
    const auto it = sessions_.find(id);
    return it == sessions_.end() ? nullptr : it->second.get();
}

bool connections::anyone_joined() const {
    return std::any_of(sessions_.begin(), sessions_.end(),
                       [](const auto& entry) { return entry.second->joined(); });
}

std::vector<std::uint64_t> connections::joined() const {
    std::vector<std::uint64_t> out;
    for (const auto& [id, s] : sessions_) {
        if (s->joined()) {
            out.push_back(id);
        }
    }
    return out;
}

void connections::seat(session& s) {
    ++(s.observer() ? observers_ : players_);
    s.set_counted(true);
}

void connections::unseat(session& s) {
    if (s.counted()) {
        s.set_counted(false);
        --(s.observer() ? observers_ : players_);
    }
}

std::vector<session*> connections::seated(std::uint32_t owner) const {
    std::vector<session*> out;
    for (const auto& [id, s] : sessions_) {
        if (s->joined() && !s->observer() && s->owner_id() == owner) {
            out.push_back(s.get());  // by connection id: oldest first
        }
    }
    return out;
}

std::size_t connections::joined_from(const std::string& address) const {
    return static_cast<std::size_t>(std::count_if(sessions_.begin(), sessions_.end(), [&](const auto& entry) {
        return entry.second->joined() && !entry.second->observer() &&
               entry.second->remote_address() == address;
    }));
}

connections::seating connections::find_seat(std::uint32_t owner, const std::string& address,
                                            const seat_limits& limits) const {
    seating out;
    std::vector<session*> seated = limits.by_player ? this->seated(owner) : std::vector<session*>{};
    const std::size_t freed =
        seated.size() >= limits.per_player ? seated.size() - limits.per_player + 1 : 0;
    seated.resize(freed);
    if (!limits.by_player) {
        std::size_t freed_here = 0;
        for (const session* s : seated) {
            freed_here += s->remote_address() == address ? 1 : 0;
        }
        if (joined_from(address) - freed_here >= limits.per_address) {
            out.refused = refusal_reason::address;
            out.why = "too many clients from your address (" + std::to_string(limits.per_address) +
                      " joined at most)";
            return out;
        }
    }
    if (players_ - freed >= limits.players) {
        out.refused = refusal_reason::full;
        out.why = "server full (" + std::to_string(limits.players) + " clients)";
        return out;
    }
    out.taken_over = std::move(seated);
    return out;
}

std::size_t connections::observers_acting_for(std::uint32_t owner) const {
    const auto it = observers_acting_for_.find(owner);
    return it == observers_acting_for_.end() ? 0 : it->second;
}

}  // namespace ecsnet::server
