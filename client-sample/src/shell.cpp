#include "shell.hpp"

// readline.h needs stdio.h first.
#include <cstdio>
// clang-format off
#include <readline/readline.h>
#include <readline/history.h>
// clang-format on
#include <sys/select.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "interrupt.hpp"

namespace ecsnet::client_cli {

namespace {

using namespace std::chrono_literals;

// Input is checked this often while the connection is polled in between.
constexpr auto input_wait = 10ms;
constexpr auto poll_slice = 40ms;
constexpr int history_lines = 1000;

struct shell_state {
    context& ctx;
    bool failed = false;       // a command failed at run time
    bool usage_error = false;  // a line did not parse
    bool quit = false;
    bool lost = false;  // the connection ended

    [[nodiscard]] bool done() const noexcept { return quit || lost; }
};

// True when fd 0 has input (or EOF) within `wait`.
bool input_ready(std::chrono::milliseconds wait) {
    fd_set read_set;
    FD_ZERO(&read_set);
    FD_SET(STDIN_FILENO, &read_set);
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(wait.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((wait.count() % 1000) * 1000);
    return select(STDIN_FILENO + 1, &read_set, nullptr, nullptr, &tv) > 0;
}

// Polls the connection for a slice; false once it is closed.
bool keep_mirror_live(shell_state& st) {
    st.ctx.conn.poll_for(poll_slice);
    st.lost = !st.ctx.conn.is_open();
    return !st.lost;
}

void report_lost(shell_state& st) {
    st.ctx.out.failure("connection to " + st.ctx.endpoint +
                       " closed: " + st.ctx.conn.closed_reason().value_or("closed by the client"));
}

void execute_line(shell_state& st, const std::string& line) {
    const shell_line parsed = parse_shell_line(line);
    if (!parsed.run) {
        if (parsed.error) {
            st.usage_error = true;
            st.ctx.out.usage_error(parsed.text);
        } else if (!parsed.text.empty()) {
            std::cout << parsed.text << std::flush;  // a command's --help
        }
        return;
    }
    switch (parsed.run->what) {
        case command::help:
            std::cout << shell_help() << std::flush;
            return;
        case command::quit:
            st.quit = true;
            return;
        default:
            break;
    }
    try {
        // Let the mirror catch up: the command sees what happened before it was entered.
        (void)catch_up(st.ctx.conn, st.ctx.timeout);
        clear_interrupt();
        const int code = run_command(st.ctx, *parsed.run);
        st.failed = st.failed || code != exit_ok;
    } catch (const client::client_error& e) {
        st.ctx.out.failure(e.what());
        st.failed = true;
    } catch (const std::exception& e) {
        st.ctx.out.failure(std::string{"error: "} + e.what());
        st.failed = true;
    }
    clear_interrupt();  // Ctrl-C stopped the command, not the shell
    if (!st.ctx.conn.is_open()) {
        st.lost = true;
    }
}

// ---- stdin is not a terminal: plain lines ----

void run_plain(shell_state& st) {
    std::string pending;
    char chunk[4096];
    while (!st.done()) {
        if (interrupted()) {
            break;  // no prompt to return to: Ctrl-C or SIGTERM ends the shell
        }
        if (!input_ready(input_wait)) {
            if (!keep_mirror_live(st)) {
                report_lost(st);
            }
            continue;
        }
        const ssize_t n = read(STDIN_FILENO, chunk, sizeof chunk);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            st.ctx.out.failure(std::string{"cannot read standard input: "} + std::strerror(errno));
            st.failed = true;
            break;
        }
        if (n == 0) {  // end of input; a last line without newline still counts
            if (!pending.empty()) {
                execute_line(st, pending);
            }
            break;
        }
        pending.append(chunk, static_cast<std::size_t>(n));
        for (auto end = pending.find('\n'); end != std::string::npos && !st.done();
             end = pending.find('\n')) {
            std::string line = pending.substr(0, end);
            pending.erase(0, end + 1);
            if (!line.empty() && line.back() == '\r') {
                line.pop_back();
            }
            execute_line(st, line);
        }
    }
}

// ---- stdin is a terminal: readline, through its callback interface so that the connection
// is polled while the user types ----

shell_state* g_shell = nullptr;  // for the C callback

std::string history_path() {
    const char* home = std::getenv("HOME");
    return home == nullptr || *home == '\0' ? std::string{}
                                            : std::string{home} + "/.ecsnet_client_history";
}

extern "C" void on_readline(char* line) {
    shell_state& st = *g_shell;
    if (line == nullptr) {  // Ctrl-D
        std::fputs("\n", stdout);
        st.quit = true;
    } else {
        const std::string text{line};
        std::free(line);  // NOLINT: readline allocates with malloc
        if (text.find_first_not_of(" \t") != std::string::npos) {
            add_history(text.c_str());
        }
        execute_line(st, text);
    }
    if (st.done()) {
        rl_callback_handler_remove();  // no new prompt
    }
}

void run_interactive(shell_state& st) {
    const std::string history = history_path();
    using_history();
    stifle_history(history_lines);
    if (!history.empty()) {
        (void)read_history(history.c_str());
    }
    rl_catch_signals = 0;  // SIGINT/SIGTERM set our flag (interrupt.hpp)
    g_shell = &st;

    const auto& m = st.ctx.conn.mirror();
    std::cout << "connected to " << st.ctx.endpoint << " as client "
              << st.ctx.conn.welcome().client_id << ": " << m.size() << " entities at tick "
              << m.tick() << ". Type help for the commands, quit to leave.\n"
              << std::flush;
    rl_callback_handler_install("ecsnet> ", on_readline);
    while (!st.done()) {
        if (interrupted()) {  // Ctrl-C at the prompt drops the line being typed
            clear_interrupt();
            rl_callback_sigcleanup();
            rl_replace_line("", 0);
            std::fputs("^C\n", stdout);
            rl_on_new_line();
            rl_redisplay();
            continue;
        }
        if (input_ready(input_wait)) {
            rl_callback_read_char();
            continue;
        }
        if (!keep_mirror_live(st)) {
            rl_callback_handler_remove();
            std::fputs("\n", stdout);
            report_lost(st);
        }
    }
    g_shell = nullptr;
    if (!history.empty()) {
        (void)write_history(history.c_str());
    }
}

}  // namespace

int run_shell(context& ctx) {
    shell_state st{ctx};
    st.ctx.in_shell = true;
    catch_interrupts();
    if (isatty(STDIN_FILENO) != 0) {
        run_interactive(st);
        // A person saw each error as it happened: leaving is a success unless the
        // connection was lost.
        return st.lost ? exit_failure : exit_ok;
    }
    run_plain(st);
    if (st.lost || st.failed) {
        return exit_failure;
    }
    return st.usage_error ? exit_usage : exit_ok;
}

}  // namespace ecsnet::client_cli
