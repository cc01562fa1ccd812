#include "ecsnet/server/operations/logging.hpp"

#include <spdlog/cfg/env.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <memory>

namespace ecsnet::server {

namespace {

void append_json_escaped(std::string_view text, spdlog::memory_buf_t& out) {
    static constexpr char hex[] = "0123456789abcdef";
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
            case '"': out.append(std::string_view{"\\\""}); break;
            case '\\': out.append(std::string_view{"\\\\"}); break;
            case '\n': out.append(std::string_view{"\\n"}); break;
            case '\r': out.append(std::string_view{"\\r"}); break;
            case '\t': out.append(std::string_view{"\\t"}); break;
            default:
                if (c < 0x20 || c == 0x7f) {
                    const char escaped[] = {'\\', 'u', '0', '0', hex[c >> 4U], hex[c & 0xFU]};
                    out.append(std::string_view{escaped, sizeof(escaped)});
                } else {
                    out.push_back(ch);
                }
        }
    }
}

// %* : the message, escaped for a JSON string. spdlog's %v is not escaped, so a client name
// with a quote or a newline would break the line or inject fields.
class json_message_flag final : public spdlog::custom_flag_formatter {
public:
    void format(const spdlog::details::log_msg& msg, const std::tm&,
                spdlog::memory_buf_t& dest) override {
        append_json_escaped(std::string_view{msg.payload.data(), msg.payload.size()}, dest);
    }
    [[nodiscard]] std::unique_ptr<custom_flag_formatter> clone() const override {
        return std::make_unique<json_message_flag>();
    }
};

}  // namespace

void setup_logging(const std::string& level, log_format format) {
    auto logger = spdlog::stderr_color_mt("ecsnet");
    if (format == log_format::json) {
        auto formatter = std::make_unique<spdlog::pattern_formatter>();
        formatter->add_flag<json_message_flag>('*').set_pattern(
            R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","msg":"%*"})");
        logger->set_formatter(std::move(formatter));
    } else {
        logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%-5l%$ %v");
    }
    logger->set_level(spdlog::level::from_str(level));
    logger->flush_on(spdlog::level::warn);
    spdlog::set_default_logger(logger);
    // After set_default_logger, or SPDLOG_LEVEL would not reach this logger.
    spdlog::cfg::load_env_levels();
}

std::string printable(std::string_view text, std::size_t max_bytes) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(std::min(text.size(), max_bytes) + 2);
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (out.size() >= max_bytes) {
            out += "...";
            break;
        }
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '"' || c == '\\') {
            out.push_back('\\');
            out.push_back(static_cast<char>(c));
        } else if (c < 0x20 || c == 0x7f) {
            out += "\\x";
            out.push_back(hex[c >> 4U]);
            out.push_back(hex[c & 0xFU]);
        } else {
            out.push_back(static_cast<char>(c));
        }
    }
    return out;
}

}  // namespace ecsnet::server
