#include "identity_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "ecsnet/protocol/messages.hpp"

namespace ecsnet::client_cli {

namespace {

// File names from arbitrary host and client names: unreserved bytes as they are, every
// other byte as %XX, so distinct names never share a file.
std::string escaped(const std::string& text) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.') {
            out += ch;
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out.empty() ? "%" : out;
}

std::string error_text() { return std::strerror(errno); }

}  // namespace

std::optional<identity_store> identity_store::from_environment() {
    if (const char* state = std::getenv("XDG_STATE_HOME"); state != nullptr && *state == '/') {
        return identity_store{std::filesystem::path{state} / "ecsnet" / "keys"};
    }
    if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') {
        return identity_store{std::filesystem::path{home} / ".local" / "state" / "ecsnet" / "keys"};
    }
    return std::nullopt;
}

identity_store::identity_store(std::filesystem::path directory) : directory_{std::move(directory)} {}

std::filesystem::path identity_store::path_of(const std::string& host, std::uint16_t port,
                                              const std::string& name) const {
    return directory_ / (escaped(host) + "_" + std::to_string(port) + "_" + escaped(name) + ".key");
}

std::vector<std::uint8_t> identity_store::load(const std::string& host, std::uint16_t port,
                                               const std::string& name) const {
    std::ifstream in{path_of(host, port, name), std::ios::binary};
    std::vector<std::uint8_t> key(protocol::resume_key_bytes + 1);
    in.read(reinterpret_cast<char*>(key.data()), static_cast<std::streamsize>(key.size()));
    if (in.gcount() != static_cast<std::streamsize>(protocol::resume_key_bytes)) {
        return {};
    }
    key.resize(protocol::resume_key_bytes);
    return key;
}

void identity_store::save(const std::string& host, std::uint16_t port, const std::string& name,
                          const std::vector<std::uint8_t>& key) const {
    std::error_code ec;
    std::filesystem::create_directories(directory_, ec);
    if (ec) {
        throw std::runtime_error("cannot create " + directory_.string() + ": " + ec.message());
    }
    // Only this user may list which servers it plays on.
    ::chmod(directory_.c_str(), 0700);
    const auto path = path_of(host, port, name);
    const auto temporary = path.string() + ".tmp." + std::to_string(::getpid());
    // Created 0600 from the start (O_EXCL: never through someone else's file).
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        throw std::runtime_error("cannot write " + temporary + ": " + error_text());
    }
    const bool written = ::write(fd, key.data(), key.size()) == static_cast<ssize_t>(key.size());
    const bool synced = written && ::fsync(fd) == 0;
    ::close(fd);
    if (!synced || std::rename(temporary.c_str(), path.c_str()) != 0) {
        const std::string why = error_text();
        std::remove(temporary.c_str());
        throw std::runtime_error("cannot write " + path.string() + ": " + why);
    }
}

}  // namespace ecsnet::client_cli
