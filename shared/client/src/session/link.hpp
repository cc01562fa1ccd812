#pragma once

// The network side of one connection attempt (session/impl.hpp's link), included by
// attempts.cpp alone: the only file that starts, stops and feeds it.

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <memory>
#include <string>
#include <vector>

#include "../transport.hpp"
#include "impl.hpp"

namespace ecsnet::client::detail {

using tcp = boost::asio::ip::tcp;

// The sockets of one connection attempt: resolve, connect, TLS and/or the WebSocket upgrade,
// then read and write until it fails or is stopped. Runs only on the io_context's thread, once
// start() was posted there.
class link : public std::enable_shared_from_this<link> {
public:
    link(asio::io_context& io, std::shared_ptr<channel> ch, const transport_options& options)
        : transport_{make_transport(io, options)},
          resolver_{io},
          channel_{std::move(ch)},
          host_{options.host},
          port_{options.port},
          endpoint_{host_ + ":" + std::to_string(port_)},
          handshake_{options.tls != nullptr || options.websocket} {}

    void start() {
        if (stopped_) {
            return;
        }
        boost::system::error_code ec;
        const auto address = asio::ip::make_address(host_, ec);
        if (!ec) {  // no lookup for an address
            transport_->socket().async_connect(
                tcp::endpoint{address, port_},
                [self = shared_from_this()](const boost::system::error_code& e) {
                    self->connected(e);
                });
            return;
        }
        resolver_.async_resolve(
            host_, std::to_string(port_),
            [self = shared_from_this()](const boost::system::error_code& e,
                                        const tcp::resolver::results_type& endpoints) {
                if (self->stopped_) {
                    return;
                }
                if (e) {
                    self->fail("cannot resolve " + self->host_ + ": " + sentence_part(e.message()),
                               true);
                    return;
                }
                asio::async_connect(self->transport_->socket(), endpoints,
                                    [self](const boost::system::error_code& e2, const tcp::endpoint&) {
                                        self->connected(e2);
                                    });
            });
    }

    // Writes what update() queued, if nothing is being written.
    void flush() {
        if (stopped_ || !open_ || writing_) {
            return;
        }
        {
            const std::lock_guard lock{channel_->mutex};
            while (!channel_->outgoing.empty()) {
                writing_frames_.push_back(std::move(channel_->outgoing.front()));
                channel_->outgoing.pop_front();
            }
        }
        if (writing_frames_.empty()) {
            return;
        }
        std::vector<asio::const_buffer> buffers;
        buffers.reserve(writing_frames_.size());
        for (const auto& f : writing_frames_) {
            buffers.push_back(asio::buffer(*f));
        }
        writing_ = true;
        transport_->async_write(std::move(buffers),
                                [self = shared_from_this()](const std::string& failure,
                                                            std::size_t n) {
                                    self->written(failure, n);
                                });
    }

    void resume_reading() {
        if (open_) {
            read();
        }
    }

    void stop() {
        stopped_ = true;
        resolver_.cancel();
        transport_->close();
    }

private:
    void connected(const boost::system::error_code& ec) {
        if (stopped_) {
            return;
        }
        if (ec) {
            fail("cannot connect to " + endpoint_ + ": " + sentence_part(ec.message()), true);
            return;
        }
        boost::system::error_code ignored;
        transport_->socket().set_option(tcp::no_delay(true), ignored);
        if (!handshake_) {
            ready();
            return;
        }
        transport_->async_handshake([self = shared_from_this()](const std::string& failure) {
            if (self->stopped_) {
                return;
            }
            if (!failure.empty()) {
                self->fail(failure, true);
                return;
            }
            self->ready();
        });
    }

    void ready() {
        open_ = true;
        {
            const std::lock_guard lock{channel_->mutex};
            channel_->connected = true;
        }
        flush();
        read();
    }

    void read() {
        if (stopped_ || reading_) {
            return;
        }
        reading_ = true;
        transport_->async_read([self = shared_from_this()](const std::string& failure,
                                                           std::span<const std::uint8_t> bytes,
                                                           std::size_t wire_bytes) {
            self->received(failure, bytes, wire_bytes);
        });
    }

    void received(const std::string& failure, std::span<const std::uint8_t> bytes,
                  std::size_t wire_bytes) {
        reading_ = false;
        if (stopped_) {
            return;
        }
        if (!failure.empty()) {
            fail(failure, false);
            return;
        }
        const auto now = std::chrono::steady_clock::now();
        bool pause = false;
        {
            const std::lock_guard lock{channel_->mutex};
            channel_->received.push_back(
                {std::vector<std::uint8_t>(bytes.begin(), bytes.end()), wire_bytes, now});
            channel_->received_bytes += bytes.size();
            channel_->last_received = now;
            pause = channel_->received_bytes >= channel_->max_received_bytes;
            channel_->read_paused = pause;
        }
        if (!pause) {
            read();
        }
    }

    void written(const std::string& failure, std::size_t n) {
        writing_ = false;
        writing_frames_.clear();
        if (stopped_) {
            return;
        }
        if (!failure.empty()) {
            fail("sending failed: " + failure, false);
            return;
        }
        {
            const std::lock_guard lock{channel_->mutex};
            channel_->unsent_bytes -= std::min(n, channel_->unsent_bytes);
        }
        flush();
    }

    void fail(std::string text, bool connecting) {
        if (stopped_) {
            return;
        }
        {
            const std::lock_guard lock{channel_->mutex};
            if (!channel_->failure) {
                channel_->failure = link_failure{std::move(text), connecting};
            }
        }
        stop();
    }

    std::unique_ptr<transport> transport_;
    tcp::resolver resolver_;
    std::shared_ptr<channel> channel_;
    std::string host_;
    std::uint16_t port_;
    std::string endpoint_;
    bool handshake_;  // TLS or WebSocket
    std::vector<protocol::frame> writing_frames_;
    bool open_{false};
    bool reading_{false};
    bool writing_{false};
    bool stopped_{false};
};


}  // namespace ecsnet::client::detail
