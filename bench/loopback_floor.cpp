// loopback-floor: the CPU a sender spends just to push one message per tick to K TCP clients
// over 127.0.0.1, with nothing else: no game, no encoding, no event loop. A lower bound for
// ecsnet-server's CPU in the load scenarios, measured the same way (sender pinned to core 0,
// receivers to core 1, utime + stime of the sender over the window).
//
// Usage: loopback-floor [clients=32] [bytes=1000] [tick_hz=30] [seconds=10]
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

void pin(int core) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    sched_setaffinity(0, sizeof set, &set);
}

double cpu_seconds() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

}  // namespace

int main(int argc, char** argv) {
    const int clients = argc > 1 ? std::atoi(argv[1]) : 32;
    const int bytes = argc > 2 ? std::atoi(argv[2]) : 1000;
    const double hz = argc > 3 ? std::atof(argv[3]) : 30.0;
    const double seconds = argc > 4 ? std::atof(argv[4]) : 10.0;
    if (clients < 1 || bytes < 1 || hz <= 0 || seconds <= 0) {
        std::fprintf(stderr, "usage: loopback-floor [clients] [bytes] [tick_hz] [seconds]\n");
        return 2;
    }

    const int listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        listen(listener, clients) != 0 ||
        getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        std::perror("listen");
        return 1;
    }

    const pid_t child = fork();
    if (child == 0) {  // the receivers: one blocking thread per connection, on core 1
        pin(1);
        std::vector<std::thread> threads;
        for (int i = 0; i < clients; ++i) {
            threads.emplace_back([address] {
                const int fd = socket(AF_INET, SOCK_STREAM, 0);
                if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
                    return;
                }
                std::vector<char> buffer(64 * 1024);
                while (recv(fd, buffer.data(), buffer.size(), 0) > 0) {
                }
                close(fd);
            });
        }
        for (auto& t : threads) {
            t.join();
        }
        _exit(0);
    }

    pin(0);
    std::vector<int> sockets;
    for (int i = 0; i < clients; ++i) {
        const int fd = accept(listener, nullptr, nullptr);
        const int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        sockets.push_back(fd);
    }
    const std::vector<char> message(static_cast<std::size_t>(bytes), 'x');
    const auto period = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(1.0 / hz));
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = cpu_seconds();
    auto next = start;
    long ticks = 0;
    while (std::chrono::steady_clock::now() - start < std::chrono::duration<double>(seconds)) {
        next += period;
        std::this_thread::sleep_until(next);
        for (const int fd : sockets) {
            if (send(fd, message.data(), message.size(), MSG_NOSIGNAL) < 0) {
                std::perror("send");
                return 1;
            }
        }
        ++ticks;
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double cpu = cpu_seconds() - cpu_start;
    for (const int fd : sockets) {
        close(fd);
    }
    waitpid(child, nullptr, 0);
    std::printf("loopback-floor: %d clients x %d B at %.0f Hz for %.1f s (%ld ticks): sender CPU "
                "%.2f %% of one core, %.1f us per send\n",
                clients, bytes, hz, wall, ticks, 100.0 * cpu / wall,
                1e6 * cpu / static_cast<double>(ticks * clients));
    return 0;
}
