#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

// Where ecsnet-client keeps the resume keys servers give it (development identity, no
// connect token): one file per server and client name under $XDG_STATE_HOME/ecsnet/keys/
// (default ~/.local/state), the directory 0700 and each file 0600, so `spawn` in one run and
// `destroy` in the next are the same owner for this user, and only for this user.
namespace ecsnet::client_cli {

class identity_store {
public:
    // The directory from the environment (XDG_STATE_HOME, else HOME); none when neither is set.
    [[nodiscard]] static std::optional<identity_store> from_environment();
    explicit identity_store(std::filesystem::path directory);

    // The key saved for this server and name; empty if none (or unreadable, or not 32 bytes).
    [[nodiscard]] std::vector<std::uint8_t> load(const std::string& host, std::uint16_t port,
                                                 const std::string& name) const;
    // Saves it atomically with mode 0600. Throws std::runtime_error naming the path.
    void save(const std::string& host, std::uint16_t port, const std::string& name,
              const std::vector<std::uint8_t>& key) const;

    [[nodiscard]] std::filesystem::path path_of(const std::string& host, std::uint16_t port,
                                                const std::string& name) const;

private:
    std::filesystem::path directory_;
};

}  // namespace ecsnet::client_cli
