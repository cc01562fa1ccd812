#include "ecsnet/client/connection.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "transport.hpp"

namespace ecsnet::client {

namespace asio = boost::asio;
using detail::sentence_part;

namespace {

constexpr auto keepalive_interval = 15s;

}  // namespace

connection::connection(const connect_options& options)
    : work_{io_.get_executor()},
      endpoint_{options.host + ":" + std::to_string(options.port)},
      reader_{options.max_frame_bytes, options.protocol_version >= protocol::compact_input_protocol_version},
      expected_types_{options.expected_types} {
    const auto deadline = clock::now() + options.timeout;
    connect(options, deadline);
    if (!options.join) {
        return;
    }
    send(protocol::hello{options.protocol_version, options.name, options.token,
                         options.resume_key, options.connect_token});
    const bool joined = poll_until([&] { return (welcome_ && mirror_.ready()) || closed_; },
                                   std::chrono::duration_cast<std::chrono::milliseconds>(
                                       deadline - clock::now()));
    if (closed_) {
        // A TLS or WebSocket server closes a plain TCP client at its first bytes, without a
        // word.
        const bool other_transport = !options.tls && !options.websocket && !welcome_ &&
                                     (*closed_ == "server closed the connection" ||
                                      *closed_ == "connection reset by peer");
        if (refused_server_) {
            throw client_error("cannot join " + endpoint_ + ": " + *closed_);
        }
        throw client_error("server at " + endpoint_ + " refused: " + *closed_ +
                           (other_transport ? " (if it serves TLS, connect with --tls; if it is a "
                                              "WebSocket port, with --ws)"
                                            : ""));
    }
    if (!joined) {
        throw client_error("timed out joining " + endpoint_ +
                           (welcome_ ? " (no complete snapshot)" : " (no Welcome)"));
    }
}

void connection::connect(const connect_options& options, clock::time_point deadline) {
    if (options.tls) {
        tls_context_.emplace(detail::make_tls_context(options.ca_file));
    }
    transport_ = detail::make_transport(
        io_, detail::transport_options{.host = options.host,
                                       .port = options.port,
                                       .tls = tls_context_ ? &*tls_context_ : nullptr,
                                       .websocket = options.websocket,
                                       .ws_path = options.ws_path,
                                       .ca_option = "--ca"});
    boost::system::error_code ec;
    asio::ip::tcp::resolver resolver{io_};
    const auto endpoints = resolver.resolve(options.host, std::to_string(options.port), ec);
    if (ec) {
        throw client_error("cannot resolve " + options.host + ": " + sentence_part(ec.message()));
    }
    bool connected = false;
    asio::async_connect(transport_->socket(), endpoints,
                        [&](const boost::system::error_code& e, const auto&) {
                            ec = e;
                            connected = true;
                        });
    run_until([&] { return connected; }, deadline);
    if (!connected) {
        throw client_error("cannot connect to " + endpoint_ + ": timed out");
    }
    if (ec) {
        throw client_error("cannot connect to " + endpoint_ + ": " + sentence_part(ec.message()));
    }
    transport_->socket().set_option(asio::ip::tcp::no_delay(true), ec);
    if (options.tls || options.websocket) {
        handshake(deadline);
    }
}

void connection::run_until(const std::function<bool()>& done, clock::time_point deadline) {
    while (!done() && io_.run_one_until(deadline) != 0) {
    }
    // run_one_until gives up at the deadline before running a handler that is ready: a thread
    // descheduled past it (a load generator's thousand clients on one core) would report a
    // write the kernel had taken as timed out.
    while (!done() && io_.poll_one() != 0) {
    }
}

void connection::handshake(clock::time_point deadline) {
    bool done = false;
    std::string failure;
    transport_->async_handshake([&](const std::string& f) {
        failure = f;
        done = true;
    });
    run_until([&] { return done; }, deadline);
    if (!done) {
        const std::string stage = transport_->handshake_stage();
        transport_->close();
        io_.run_for(100ms);  // the aborted handshake completes while its captures live
        throw client_error(stage + ": timed out");
    }
    if (!failure.empty()) {
        throw client_error(failure);
    }
}

connection::~connection() { close(); }

const protocol::welcome& connection::welcome() const {
    if (!welcome_) {
        throw client_error("not joined: no Welcome received");
    }
    return *welcome_;
}

void connection::close() {
    if (transport_) {
        transport_->close();
    }
    if (!closed_) {
        closed_ = "closed by the client";
    }
}

void connection::fail(std::string reason) {
    if (!closed_) {
        closed_ = std::move(reason);
    }
    transport_->close();
}

void connection::send(const protocol::client_message& message) {
    if (closed_) {
        throw client_error("connection to " + endpoint_ + " is closed: " + *closed_);
    }
    protocol::frame frame;
    try {
        const auto* in = std::get_if<protocol::input>(&message);
        frame = in != nullptr && welcome_ && welcome_->version >= protocol::compact_input_protocol_version
                    ? protocol::encode_input(*in, mirror_.types(), input_reference_)
                    : protocol::encode(message, mirror_.types());
    } catch (const std::invalid_argument& e) {
        throw client_error(e.what());
    }
    bytes_sent_ += frame->size();
    // Shared with the handler, which owns the frame: the write may outlive this call if it
    // times out.
    struct outcome {
        bool done = false;
        std::string failure;
    };
    const auto result = std::make_shared<outcome>();
    transport_->async_write({asio::buffer(*frame)},
                            [result, keep = frame](const std::string& failure, std::size_t) {
                                result->failure = failure;
                                result->done = true;
                            });
    const auto deadline = clock::now() + 5s;
    run_until([&] { return result->done; }, deadline);
    if (!result->done) {
        fail("server did not accept data for 5 s");
        io_.run_for(100ms);  // let the aborted write complete
        throw client_error("sending to " + endpoint_ + " timed out");
    }
    if (!result->failure.empty()) {
        fail(result->failure);
        throw client_error("sending to " + endpoint_ + " failed: " + result->failure);
    }
    last_send_ = clock::now();
}

void connection::start_read() {
    if (reading_ || closed_) {
        return;
    }
    reading_ = true;
    transport_->async_read([this](const std::string& failure, std::span<const std::uint8_t> bytes,
                                  std::size_t wire_bytes) {
        reading_ = false;
        if (!failure.empty()) {
            fail(failure);
            return;
        }
        bytes_received_ += wire_bytes;
        detach_current_frame();  // a callback reads: feed() may move the reader's buffer
        reader_.feed(bytes);
        (void)process_frames();
    });
}

void connection::detach_current_frame() {
    if (frame_in_reader_) {
        for (auto& storage : reader_.detach()) {
            current_storage_.push_back(std::move(storage));
        }
        frame_in_reader_ = false;
    }
}

std::size_t connection::process_frames() {
    std::size_t handled = 0;
    std::span<const std::uint8_t> frame;
    for (;;) {
        if (handling_ == 0 && !held_.empty()) {  // they came before what reader_ holds
            const std::vector<std::uint8_t> bytes = std::move(held_.front());
            held_.pop_front();
            handle_frame(bytes, true);
            ++handled;
            continue;
        }
        if (closed_) {
            break;
        }
        detach_current_frame();  // next() may overwrite the copy of a misaligned frame
        const auto status = reader_.next(frame);
        if (status == protocol::frame_reader::status::need_more) {
            break;
        }
        if (status == protocol::frame_reader::status::oversize) {
            fail("server sent a frame larger than " + std::to_string(reader_.max_frame_bytes()) +
                 " bytes");
            break;
        }
        ++frames_received_;
        if (handling_ != 0) {
            hold_frame(frame);
            continue;
        }
        struct in_reader {
            bool& flag;
            explicit in_reader(bool& f) : flag{f} { flag = true; }
            ~in_reader() { flag = false; }
        } mark{frame_in_reader_};
        handle_frame(frame, false);
        ++handled;
    }
    return handled;
}

bool connection::handle_compact(std::span<const std::uint8_t> bytes) {
    std::string why;
    return record(protocol::decode_compact_server_frame(bytes, &why),
                  "invalid compact frame from the server: ", why);
}

void connection::hold_frame(std::span<const std::uint8_t> bytes) {
    if (protocol::is_compact(protocol::read_prefix(bytes.first<protocol::frame_prefix_bytes>()))) {
        (void)handle_compact(bytes);  // nothing to apply to the mirror: no need to wait
        return;
    }
    std::string why;
    const wire::ServerMessage* message = protocol::verify_server_frame(bytes, &why);
    if (message == nullptr) {
        fail("malformed frame from the server: " + why);
        return;
    }
    switch (message->body_type()) {
        case wire::ServerBody::Snapshot:
        case wire::ServerBody::Delta:
        case wire::ServerBody::Checksum:
            break;
        default:
            if (!record_control(*message)) {
                return;
            }
    }
    held_.emplace_back(bytes.begin(), bytes.end());
}

bool connection::record_control(const wire::ServerMessage& message) {
    std::string why;
    return record(protocol::decode_server_control(message, &why),
                  "invalid message from the server: ", why);
}

bool connection::record(std::optional<protocol::server_control> control, const char* refusal,
                        const std::string& why) {
    if (!control) {
        refused_server_ = true;
        fail(refusal + why);
        return false;
    }
    if (auto* w = std::get_if<protocol::welcome>(&*control)) {
        for (const protocol::component_info& expected : expected_types_) {
            if (const auto* actual = w->components.find(expected.name)) {
                if (auto problem = protocol::incompatibility(expected, *actual)) {
                    refused_server_ = true;
                    fail("the server's schema does not match this client: " + *problem);
                    return false;
                }
            }
        }
        mirror_.set_schema(w->components);
        welcome_ = *w;
    } else if (auto* r = std::get_if<protocol::command_result>(&*control)) {
        results_[r->request_id] = std::move(*r);
    } else if (auto* p = std::get_if<protocol::pong>(&*control)) {
        last_pong_ = *p;
    } else if (auto* a = std::get_if<protocol::input_ack>(&*control)) {
        last_input_ack_ = *a;
    } else if (auto* rejected = std::get_if<protocol::input_rejected>(&*control)) {
        if (rejected->code == wire::ErrorCode::Malformed || rejected->code == wire::ErrorCode::InvalidValue) {
            input_reference_.reset();  // the server forgot its reference
        }
        last_input_rejected_ = std::move(*rejected);
    } else if (auto* d = std::get_if<protocol::disconnect>(&*control)) {
        closed_ = d->reason.empty() ? "disconnected by the server" : d->reason;
    }
    return true;
}

void connection::handle_frame(std::span<const std::uint8_t> bytes, bool recorded) {
    if (protocol::is_compact(protocol::read_prefix(bytes.first<protocol::frame_prefix_bytes>()))) {
        if (!recorded) {
            (void)handle_compact(bytes);
        }
        return;
    }
    std::string why;
    const wire::ServerMessage* message = protocol::verify_server_frame(bytes, &why);
    if (message == nullptr) {
        fail("malformed frame from the server: " + why);
        return;
    }
    ++handling_;
    struct done {
        connection& c;
        ~done() {
            if (--c.handling_ == 0) {
                c.current_storage_.clear();
            }
        }
    } leave{*this};
    switch (message->body_type()) {
        case wire::ServerBody::Snapshot:
        case wire::ServerBody::Delta:
            mirror_.apply(*message);
            break;
        case wire::ServerBody::Checksum:
            mirror_.apply(*message);
            last_checksum_ = protocol::checksum_report{message->body_as_Checksum()->tick(),
                                                       message->body_as_Checksum()->hash(),
                                                       message->body_as_Checksum()->entity_count()};
            break;
        default:
            if (!recorded && !record_control(*message)) {
                return;
            }
    }
    if (on_message) {
        const auto handler = on_message;  // the callback may replace on_message
        handler(*message);
    }
}

bool connection::poll_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
    const auto deadline = clock::now() + timeout;
    while (!pred()) {
        // Frames held while a callback ran, or left behind by a callback that threw.
        if (handling_ == 0 && process_frames() != 0) {
            continue;
        }
        if (closed_) {
            return pred();
        }
        // An inconsistent mirror asks for a fresh snapshot, once per inconsistency.
        if (auto reason = mirror_.take_resync_reason()) {
            send(protocol::resync_request{reason->substr(0, protocol::max_reason_bytes)});
        }
        // The server closes clients that send nothing for its idle timeout (60 s by default).
        if (welcome_ && clock::now() - last_send_ > keepalive_interval) {
            send(protocol::ping{++last_ping_nonce_});
        }
        start_read();
        if (io_.run_one_until(deadline) == 0) {
            return pred();  // timed out (the work guard keeps the context from stopping)
        }
    }
    return true;
}

void connection::poll_for(std::chrono::milliseconds duration) {
    (void)poll_until([] { return false; }, duration);
}

std::optional<protocol::command_result> connection::take_result(std::uint32_t request_id) {
    const auto it = results_.find(request_id);
    if (it == results_.end()) {
        return std::nullopt;
    }
    auto result = std::move(it->second);
    results_.erase(it);
    return result;
}

protocol::command_result connection::request(const protocol::client_message& command,
                                             std::uint32_t request_id,
                                             std::chrono::milliseconds timeout) {
    send(command);
    if (!poll_until([&] { return results_.contains(request_id); }, timeout)) {
        throw client_error(closed_ ? "connection closed while waiting for request " +
                                         std::to_string(request_id) + ": " + *closed_
                                   : "no answer to request " + std::to_string(request_id) +
                                         " within " + std::to_string(timeout.count()) + " ms");
    }
    return *take_result(request_id);
}

}  // namespace ecsnet::client
