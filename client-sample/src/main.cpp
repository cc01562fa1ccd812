// ecsnet-client: parse the command line, connect and join, run one command or the shell.
#include <openssl/sha.h>

#include <array>
#include <exception>
#include <string>

#include "cli.hpp"
#include "commands.hpp"
#include "identity_store.hpp"
#include "ecsnet/client/connection.hpp"
#include "interrupt.hpp"
#include "output.hpp"
#include "shell.hpp"

namespace {

// The name a resume key is kept under. With a connect token, the token's digest joins the
// name: a reconnect with the same (used) token finds the key Welcome gave, and another
// player's token never resumes this one's owner.
std::string key_name(const std::string& client_name, const std::string& connect_token) {
    if (connect_token.empty()) {
        return client_name;
    }
    std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
    SHA256(reinterpret_cast<const unsigned char*>(connect_token.data()), connect_token.size(),
           digest.data());
    static constexpr char hex[] = "0123456789abcdef";
    std::string out = client_name + "#token-";
    for (std::size_t i = 0; i < 8; ++i) {
        out += hex[digest[i] >> 4];
        out += hex[digest[i] & 15];
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace ecsnet::client_cli;
    const program_line parsed = parse_program(argc, argv);
    if (!parsed.run) {
        return parsed.exit_code;
    }
    const global_options& g = parsed.options;
    printer out{g.json};
    try {
        // The key this server gave this user under this name (and connect token) before: a
        // reconnect needs no new token.
        const auto store = identity_store::from_environment();
        const std::string stored_as = key_name(g.client_name, g.connect_token);
        const std::vector<std::uint8_t> known_key =
            store ? store->load(g.host, g.port, stored_as) : std::vector<std::uint8_t>{};
        ecsnet::client::connection conn{ecsnet::client::connect_options{
            .host = g.host,
            .port = g.port,
            .name = g.client_name,
            .token = g.token,
            .connect_token = g.connect_token,
            .resume_key = known_key,
            .timeout = g.timeout,
            .tls = g.tls || !g.ca_file.empty(),
            .ca_file = g.ca_file,
            .websocket = g.websocket,
            .expected_types = {},  // none: every type is read from the server's schema
        }};
        if (store && !conn.welcome().resume_key.empty() && conn.welcome().resume_key != known_key) {
            try {
                store->save(g.host, g.port, stored_as, conn.welcome().resume_key);
            } catch (const std::exception& e) {
                out.note(std::string{"cannot keep this identity for the next run: "} + e.what());
            }
        }
        catch_interrupts();
        context ctx{conn, out, g.host + ":" + std::to_string(g.port), g.timeout, g.client_name};
        return parsed.run->what == command::shell ? run_shell(ctx) : run_command(ctx, *parsed.run);
    } catch (const ecsnet::client::client_error& e) {
        out.failure(e.what());  // "cannot connect to 127.0.0.1:7777: connection refused"
    } catch (const std::exception& e) {
        out.failure(std::string{"error: "} + e.what());
    }
    return exit_failure;
}
