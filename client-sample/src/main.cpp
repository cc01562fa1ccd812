// ecsnet-client: parse the command line, connect and join, run one command or the shell.
#include <exception>
#include <string>

#include "cli.hpp"
#include "commands.hpp"
#include "identity_store.hpp"
#include "ecsnet/client/connection.hpp"
#include "interrupt.hpp"
#include "output.hpp"
#include "shell.hpp"

int main(int argc, char** argv) {
    using namespace ecsnet::client_cli;
    const program_line parsed = parse_program(argc, argv);
    if (!parsed.run) {
        return parsed.exit_code;
    }
    const global_options& g = parsed.options;
    printer out{g.json};
    try {
        // Development identity: the key this server gave this user under this name before.
        const auto store = g.connect_token.empty() ? identity_store::from_environment()
                                                   : std::nullopt;
        const std::vector<std::uint8_t> known_key =
            store ? store->load(g.host, g.port, g.client_name) : std::vector<std::uint8_t>{};
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
            .expected_types = {},  // none: every type is read from the server's schema
        }};
        if (store && !conn.welcome().resume_key.empty() && conn.welcome().resume_key != known_key) {
            try {
                store->save(g.host, g.port, g.client_name, conn.welcome().resume_key);
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
