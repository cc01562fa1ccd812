// The admission part's command-line options (docs/SERVER.md lists them all).
#include "../command_line.hpp"

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

#include "ecsnet/server/admission/connect_token.hpp"

namespace ecsnet::server::detail {

void add_admission_options(command_line& cl) {
    server_config& c = cl.config;
    CLI::Option_group* g = cl.group("Admission", "Who may join and as whom: seats, connect tokens, resume keys");
    double& grace_s = cl.real(std::chrono::duration<double>(c.reconnect_grace).count());
    env(g->add_option("--max-clients", c.max_clients, "Connected clients at most; the next gets Disconnect \"server full\"")
            ->check(CLI::Range(1, 1'000'000)),
        "ECSNET_MAX_CLIENTS");
    env(g->add_option("--auth-token", c.auth_token, "Shared secret every Hello must carry (empty: none)"),
        "ECSNET_AUTH_TOKEN");
    env(g->add_option("--token-secret", c.token_secret,
                       "HS256 secret shared with the backend that issues connect tokens (JWTs); "
                       "when set, every client needs a valid token or a resume key, and owners "
                       "are its player ids (at least 16 bytes; empty: development identity by "
                       "resume keys)"),
        "ECSNET_TOKEN_SECRET");
    env(g->add_option("--token-public-key", c.token_public_key,
                       "ES256 public key (PEM file) of the backend that issues connect tokens: "
                       "this server verifies tokens but cannot mint them (instead of "
                       "--token-secret)")
            ->check(CLI::ExistingFile),
        "ECSNET_TOKEN_PUBLIC_KEY");
    env(g->add_option("--world-id", c.world_id, "This server's world id: connect tokens' \"aud\" must name it")
            ->check([](const std::string& v) {
                return v.size() <= 64 ? std::string{} : std::string{"at most 64 bytes"};
            }),
        "ECSNET_WORLD_ID");
    env(g->add_option("--max-connections-per-player", c.max_connections_per_player,
                       "With connect tokens, joined connections per player at most; a newer one "
                       "takes the oldest's seat, which gets Disconnect \"signed in elsewhere\"")
            ->check(CLI::Range(1, 1024)),
        "ECSNET_MAX_CONNECTIONS_PER_PLAYER");
    env(g->add_option("--max-clients-per-address", c.max_clients_per_address,
                       "Joined connections from one address at most, without connect tokens "
                       "(with tokens, seats are per player)")
            ->check(CLI::Range(1, 1'000'000)),
        "ECSNET_MAX_CLIENTS_PER_ADDRESS");
    env(g->add_option("--max-remembered-tokens", c.max_remembered_tokens,
                       "Admitted, unexpired connect tokens remembered so each admits once; when "
                       "full, new tokens are refused until some expire")
            ->check(CLI::Range(1, 100'000'000)),
        "ECSNET_MAX_REMEMBERED_TOKENS");
    env(g->add_flag("--keep-entities-on-disconnect", c.keep_entities_on_disconnect,
                     "Keep a client's entities for ever when it disconnects (default: despawn "
                     "them after --reconnect-grace)"),
        "ECSNET_KEEP_ENTITIES_ON_DISCONNECT");
    env(g->add_option("--reconnect-grace", grace_s,
                       "Seconds an owner's entities outlive its last connection: a reconnect "
                       "with its resume key (or a token of the same player) within them finds "
                       "them again; 0 despawns them at the next tick")
            ->check(CLI::Range(0.0, 86400.0)),
        "ECSNET_RECONNECT_GRACE");
    cl.after_parse([&c, &grace_s] {
        if (!c.token_secret.empty() && !c.token_public_key.empty()) {
            throw CLI::ValidationError("--token-secret/--token-public-key",
                                       "give one: a secret (HS256) or a public key (ES256)");
        }
        if (!c.token_public_key.empty()) {
            try {
                (void)es256_verifier(read_key_file(c.token_public_key));
            } catch (const std::invalid_argument& e) {
                throw CLI::ValidationError("--token-public-key", e.what());
            }
        }
        if (!c.token_secret.empty() && c.token_secret.size() < min_token_secret_bytes) {
            throw CLI::ValidationError("--token-secret", "must be at least " +
                                                             std::to_string(min_token_secret_bytes) +
                                                             " bytes (for example: openssl rand -hex 32)");
        }
        c.reconnect_grace = std::chrono::milliseconds{std::llround(grace_s * 1000.0)};
    });
}

}  // namespace ecsnet::server::detail
