#include "ecsnet/server/transport/static_files.hpp"

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <system_error>
#include <utility>
#include <vector>

#include "ecsnet/server/operations/logging.hpp"

namespace ecsnet::server {

namespace fs = std::filesystem;
namespace http = boost::beast::http;

namespace {

using response = http::response<http::string_body>;

constexpr std::string_view plain_text = "text/plain; charset=utf-8";

// Every answer, errors too: the page is always asked for again (a rebuilt bundle shows at the
// next load), and browsers never guess a type.
response make_answer(http::status status, unsigned version, bool head,
                     std::string_view content_type, std::string body) {
    response r{status, version};
    r.set(http::field::content_type, content_type);
    r.set(http::field::cache_control, "no-cache");
    r.set("X-Content-Type-Options", "nosniff");
    r.content_length(body.size());
    if (!head) {
        r.body() = std::move(body);
    }
    return r;
}

response text_answer(http::status status, unsigned version, bool head, std::string line) {
    return make_answer(status, version, head, plain_text, std::move(line) + "\n");
}

[[nodiscard]] int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

// Empty optional on a '%' not followed by two hex digits.
[[nodiscard]] std::optional<std::string> percent_decode(std::string_view in) {
    std::string out;
    out.reserve(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i] != '%') {
            out.push_back(in[i]);
            continue;
        }
        if (i + 2 >= in.size()) {
            return std::nullopt;
        }
        const int high = hex_value(in[i + 1]);
        const int low = hex_value(in[i + 2]);
        if (high < 0 || low < 0) {
            return std::nullopt;
        }
        out.push_back(static_cast<char>(high * 16 + low));
        i += 2;
    }
    return out;
}

// A path segment as it may stand in a Location header.
[[nodiscard]] std::string percent_encode(std::string_view segment) {
    static constexpr std::string_view safe = "-._~!$&'()*+,;=:@";
    static constexpr std::array<char, 16> hex{'0', '1', '2', '3', '4', '5', '6', '7',
                                              '8', '9', 'A', 'B', 'C', 'D', 'E', 'F'};
    std::string out;
    for (const char c : segment) {
        const auto byte = static_cast<unsigned char>(c);
        if (std::isalnum(byte) != 0 || safe.find(c) != std::string_view::npos) {
            out.push_back(c);
        } else {
            out.push_back('%');
            out.push_back(hex[byte >> 4U]);
            out.push_back(hex[byte & 0x0FU]);
        }
    }
    return out;
}

[[nodiscard]] bool inside(const fs::path& root, const fs::path& p) {
    const auto [end_of_root, rest] = std::mismatch(root.begin(), root.end(), p.begin(), p.end());
    (void)rest;
    return end_of_root == root.end();
}

[[nodiscard]] std::vector<std::string_view> split_segments(std::string_view path) {
    std::vector<std::string_view> segments;
    std::size_t start = 0;
    while (start <= path.size()) {
        const std::size_t end = std::min(path.find('/', start), path.size());
        if (end > start) {
            segments.push_back(path.substr(start, end - start));
        }
        start = end + 1;
    }
    return segments;
}

[[nodiscard]] static_reply reply_of(response message) {
    static_reply reply;
    reply.message = std::move(message);
    return reply;
}

// Large files are an operator's mistake, not a client's: said a few times a minute at most.
log_limiter& size_warnings() {
    static log_limiter limiter{5, std::chrono::seconds{60}};
    return limiter;
}

}  // namespace

static_files::static_files(fs::path root, std::string mount, std::size_t max_file_bytes)
    : root_{std::move(root)}, mount_{std::move(mount)}, max_file_bytes_{max_file_bytes} {
    while (!mount_.empty() && mount_.back() == '/') {
        mount_.pop_back();
    }
}

bool static_files::available() const {
    std::error_code ec;
    return !root_.empty() && fs::is_directory(root_, ec);
}

static_reply static_files::open(http::verb method, std::string_view target, unsigned version) const {
    const bool head = method == http::verb::head;
    if (method != http::verb::get && !head) {
        response r = text_answer(http::status::method_not_allowed, version, false,
                                 "only GET and HEAD");
        r.set(http::field::allow, "GET, HEAD");
        return reply_of(std::move(r));
    }
    const std::size_t query_at = std::min(target.find('?'), target.size());
    const std::string_view raw_path = target.substr(0, query_at);
    const std::string_view query = target.substr(query_at);
    const std::string shown = printable(raw_path, 200);
    const auto not_found = [&](std::string_view why) {
        return text_answer(http::status::not_found, version, head,
                           "not found: " + shown + (why.empty() ? "" : " (" + std::string{why} + ")"));
    };
    const auto redirect_to_directory = [&](const std::string& path) {
        response r = text_answer(http::status::moved_permanently, version, head,
                                 "moved to " + path + "/");
        r.set(http::field::location, path + "/" + std::string{query});
        return r;
    };

    if (!raw_path.starts_with(mount_)) {
        return reply_of(not_found({}));
    }
    const std::string_view rest = raw_path.substr(mount_.size());
    if (rest.empty()) {
        return reply_of(redirect_to_directory(mount_));  // "/inspector": its pages link relative to "/inspector/"
    }
    if (rest.front() != '/') {
        return reply_of(not_found({}));  // "/inspectorx"
    }
    const std::optional<std::string> decoded = percent_decode(rest);
    if (!decoded) {
        return reply_of(text_answer(http::status::bad_request, version, head,
                                    "bad request: malformed percent-encoding in " + shown));
    }
    if (decoded->find('\0') != std::string::npos) {
        return reply_of(text_answer(http::status::bad_request, version, head,
                                    "bad request: a NUL byte in the path"));
    }
    const std::vector<std::string_view> segments = split_segments(*decoded);
    for (const std::string_view segment : segments) {
        if (segment == "..") {
            return reply_of(text_answer(http::status::bad_request, version, head,
                                        "bad request: '..' in the path " + shown));
        }
        if (segment.front() == '.') {
            return reply_of(not_found("hidden files are not served"));
        }
    }

    std::error_code ec;
    const fs::path root = fs::canonical(root_, ec);
    if (ec || !fs::is_directory(root, ec)) {
        return reply_of(not_found("the served directory is missing"));
    }
    fs::path wanted = root;
    for (const std::string_view segment : segments) {
        wanted /= segment;
    }
    // Symlinks inside the root are followed, as long as they stay inside it.
    fs::path file = fs::canonical(wanted, ec);
    if (ec) {
        return reply_of(not_found({}));
    }
    if (!inside(root, file)) {
        return reply_of(not_found("it links out of the served directory"));
    }
    std::string name = segments.empty() ? std::string{} : std::string{segments.back()};
    if (fs::is_directory(file, ec)) {
        if (decoded->back() != '/') {
            std::string path = mount_;
            for (const std::string_view segment : segments) {
                path += "/" + percent_encode(segment);
            }
            return reply_of(redirect_to_directory(path));
        }
        file = fs::canonical(file / "index.html", ec);
        if (ec || !inside(root, file)) {
            return reply_of(not_found("no index.html; directories are not listed"));
        }
        name = "index.html";
    }
    // Opened without following a link (the real path has none left) nor blocking (a FIFO put
    // there since), and judged by what was opened.
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0) {
            ::close(fd);
        }
        return reply_of(not_found({}));
    }
    static_reply reply = reply_of(make_answer(http::status::ok, version, head, content_type_of(name), {}));
    reply.file_size = static_cast<std::uint64_t>(st.st_size);
    reply.message.content_length(*reply.file_size);
    if (head) {
        ::close(fd);
    } else {
        reply.file.emplace();
        reply.file->native_handle(fd);
    }
    return reply;
}

response static_files::answer(http::verb method, std::string_view target, unsigned version) const {
    static_reply reply = open(method, target, version);
    if (!reply.file_size) {
        return std::move(reply.message);
    }
    const bool head = method == http::verb::head;
    const std::string shown = printable(target.substr(0, std::min(target.find('?'), target.size())), 200);
    if (*reply.file_size > max_file_bytes_) {
        std::size_t suppressed = 0;
        if (size_warnings().allow(suppressed)) {
            spdlog::warn("static files: {} is {} bytes, over the {} served at most: answered 500{}",
                         shown, *reply.file_size, max_file_bytes_,
                         suppressed > 0 ? fmt::format(" ({} more not logged)", suppressed) : "");
        }
        return text_answer(http::status::internal_server_error, version, head,
                           "server error: " + shown + " is too large to serve");
    }
    if (head) {
        return std::move(reply.message);
    }
    std::string body(static_cast<std::size_t>(*reply.file_size), '\0');
    boost::system::error_code ec;
    std::size_t have = 0;
    while (have < body.size() && !ec) {
        const std::size_t n = reply.file->read(body.data() + have, body.size() - have, ec);
        if (n == 0) {
            break;
        }
        have += n;
    }
    if (ec || have != body.size()) {
        std::size_t suppressed = 0;
        if (size_warnings().allow(suppressed)) {
            spdlog::warn("static files: cannot read {}: answered 500", shown);
        }
        return text_answer(http::status::internal_server_error, version, head,
                           "server error: cannot read " + shown);
    }
    reply.message.body() = std::move(body);
    return std::move(reply.message);
}

std::string_view content_type_of(const fs::path& file) {
    std::string extension = file.extension().string();
    std::transform(extension.begin(), extension.end(), extension.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 11> types{{
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".json", "application/json"},
        {".map", "application/json"},
        {".png", "image/png"},
        {".svg", "image/svg+xml"},
        {".ico", "image/x-icon"},
        {".wasm", "application/wasm"},
        {".txt", "text/plain; charset=utf-8"},
    }};
    for (const auto& [ext, type] : types) {
        if (extension == ext) {
            return type;
        }
    }
    return "application/octet-stream";
}

fs::path executable_dir() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::path{} : exe.parent_path();
}

fs::path default_web_dir(std::string_view app) {
    const fs::path dir = executable_dir();
    if (dir.empty()) {
        return {};
    }
    return (dir / ".." / "share" / "ecsnet" / "web" / app).lexically_normal();
}

}  // namespace ecsnet::server
