#include "ecsnet/server/admission/replay_cache.hpp"

namespace ecsnet::server {

std::string replay_cache::key_of(const std::string& player, const std::string& jti) {
    // Length-prefixed: no two (player, jti) pairs share a key.
    return std::to_string(player.size()) + ':' + player + jti;
}

void replay_cache::forget_expired(time_point now) {
    while (!by_expiry_.empty() && by_expiry_.begin()->first <= now) {
        by_id_.erase(by_expiry_.begin()->second);
        by_expiry_.erase(by_expiry_.begin());
    }
}

replay_cache::verdict replay_cache::check(const std::string& player, const std::string& jti,
                                          time_point now) {
    forget_expired(now);
    if (by_id_.contains(key_of(player, jti))) {
        return verdict::replayed;
    }
    return by_id_.size() >= capacity_ ? verdict::full : verdict::fresh;
}

void replay_cache::remember(const std::string& player, const std::string& jti,
                            time_point expires) {
    auto key = key_of(player, jti);
    if (by_id_.emplace(key, remembered{player, jti, expires}).second) {
        by_expiry_.emplace(expires, std::move(key));
    }
}

std::vector<replay_cache::entry> replay_cache::save() const {
    std::vector<entry> out;
    out.reserve(by_expiry_.size());
    for (const auto& [expires, key] : by_expiry_) {
        const remembered& r = by_id_.at(key);
        out.push_back(entry{r.player, r.jti, r.expires});
    }
    return out;
}

void replay_cache::restore(const entry& token, time_point now) {
    if (token.expires > now) {
        remember(token.player, token.jti, token.expires);
    }
}

}  // namespace ecsnet::server
