#pragma once

#include <boost/beast/core/file.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace ecsnet::server {

inline constexpr std::size_t max_static_file_bytes = 16 * 1024 * 1024;

// An answer whose file is not read yet: `message` has the headers (a file's: Content-Length
// its size, no body) or a short answer whole (errors, redirects).
struct static_reply {
    boost::beast::http::response<boost::beast::http::string_body> message;
    std::optional<std::uint64_t> file_size;   // the answer is a file's (GET or HEAD)
    std::optional<boost::beast::file> file;   // GET: opened, at its start, for the caller to read
};

// The files under one directory, answered to HTTP GET and HEAD: the browser pages (the
// inspector on the admin endpoint, a game's page on the WebSocket port). Only regular files
// inside the root are served: the path is percent-decoded, `..`, NUL and dot segments (hidden
// files) are refused, and a path whose symlinks lead out of the root is not found. A directory
// serves its index.html (never a listing; `/dir` redirects to `/dir/`). Every answer says
// `Cache-Control: no-cache` and `X-Content-Type-Options: nosniff`. answer() reads a file whole, at
// most `max_file_bytes` (past it: 500, logged); open() leaves it to the caller to stream, at
// any size. The root is resolved at each request, so it may be built or replaced while the
// server runs.
class static_files {
public:
    // `mount`: the URL path the root answers at: "" (the whole site) or "/inspector".
    explicit static_files(std::filesystem::path root, std::string mount = {},
                          std::size_t max_file_bytes = max_static_file_bytes);

    [[nodiscard]] const std::filesystem::path& root() const noexcept { return root_; }
    // Whether the root is a directory now.
    [[nodiscard]] bool available() const;

    // The answer to `method target` (origin-form, under the mount; the query is ignored), ready
    // to write: Content-Length set (HEAD: the GET's, and no body). Keep-alive is the caller's.
    [[nodiscard]] boost::beast::http::response<boost::beast::http::string_body> answer(
        boost::beast::http::verb method, std::string_view target, unsigned version = 11) const;
    // The same answer, a file's bytes left unread: HEAD reads nothing, GET opens the file.
    [[nodiscard]] static_reply open(boost::beast::http::verb method, std::string_view target,
                                    unsigned version = 11) const;

private:
    std::filesystem::path root_;
    std::string mount_;
    std::size_t max_file_bytes_;
};

// "text/javascript; charset=utf-8" for app.js; application/octet-stream for the unknown.
[[nodiscard]] std::string_view content_type_of(const std::filesystem::path& file);

// The directory of the running executable (/proc/self/exe); empty when unknown.
[[nodiscard]] std::filesystem::path executable_dir();
// Where a browser app's files are installed beside the executable:
// <exe dir>/../share/ecsnet/web/<app> (empty when the executable's directory is unknown).
[[nodiscard]] std::filesystem::path default_web_dir(std::string_view app);

}  // namespace ecsnet::server
