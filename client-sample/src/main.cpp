// ecsnet-client: parse the command line, connect and join, run one command or the shell.
#include <exception>
#include <string>

#include "cli.hpp"
#include "commands.hpp"
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
        ecsnet::client::connection conn{ecsnet::client::connect_options{
            .host = g.host,
            .port = g.port,
            .name = g.client_name,
            .token = g.token,
            .timeout = g.timeout,
        }};
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
