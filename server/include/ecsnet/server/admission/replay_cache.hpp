#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

// The connect tokens a server has admitted, remembered until they expire, so that each admits
// once (docs/SERVER.md, "Identity"). Bounded: at most `capacity` unexpired tokens. When full, a
// new token is refused rather than an unexpired one forgotten (forgetting would reopen its
// replay); the operator sees the reason and raises --max-token-ids or shortens token TTLs.
// Keyed by player and jti, so two players' backends may reuse a jti scheme.
namespace ecsnet::server {

class replay_cache {
public:
    using time_point = std::chrono::system_clock::time_point;
    enum class verdict { fresh, replayed, full };

    explicit replay_cache(std::size_t capacity) : capacity_{capacity} {}

    // Whether a token (player, jti) may be admitted now. Forgets the expired ones first.
    [[nodiscard]] verdict check(const std::string& player, const std::string& jti, time_point now);
    // Remembers an admitted token until `expires`. Call after check() said fresh.
    void remember(const std::string& player, const std::string& jti, time_point expires);

    // What a checkpoint keeps (--state-dir), so that a restart does not admit a token again.
    struct entry {
        std::string player;
        std::string jti;
        time_point expires;
    };
    [[nodiscard]] std::vector<entry> save() const;
    // Remembers a saved token unless it has expired by `now`; past the capacity too (it was
    // admitted: forgetting it would reopen its replay).
    void restore(const entry& token, time_point now);

    [[nodiscard]] std::size_t size() const noexcept { return by_id_.size(); }
    [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

private:
    [[nodiscard]] static std::string key_of(const std::string& player, const std::string& jti);
    void forget_expired(time_point now);

    std::size_t capacity_;
    struct remembered {
        std::string player;
        std::string jti;
        time_point expires;
    };
    std::unordered_map<std::string, remembered> by_id_;
    std::multimap<time_point, std::string> by_expiry_;
};

}  // namespace ecsnet::server
