#include "interrupt.hpp"

#include <signal.h>

#include <csignal>

namespace ecsnet::client_cli {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
bool g_installed = false;

extern "C" void on_signal(int /*signal*/) {
    g_interrupted = 1;
}

}  // namespace

void catch_interrupts() {
    if (g_installed) {
        return;
    }
    g_installed = true;
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;  // no SA_RESTART: a blocking select() returns at once with EINTR
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
}

bool interrupted() noexcept {
    return g_interrupted != 0;
}

void clear_interrupt() noexcept {
    g_interrupted = 0;
}

}  // namespace ecsnet::client_cli
