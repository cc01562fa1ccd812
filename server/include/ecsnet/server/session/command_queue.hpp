#pragma once

// The clients' commands between two ticks, and their replies. Sessions queue commands (and
// replies decided on arrival, such as a rate limit's) as they come; the tick applies them in
// arrival order; each reply goes back to its session at once, or, with --journal, once the
// tick's batch is durable: a reply then promises the command survives a crash
// (docs/PERSISTENCE.md). A session that is gone takes its commands and replies with it.

#include <boost/asio/io_context.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/server/persistence/journal.hpp"

namespace ecsnet::server {

class session;

class command_queue {
public:
    // `world_context`: the world's thread, where replies made durable are sent from.
    explicit command_queue(boost::asio::io_context& world_context) : world_context_{world_context} {}
    command_queue(const command_queue&) = delete;
    command_queue& operator=(const command_queue&) = delete;

    // A command of `from`'s owner, or a reply owed already, in the order they came.
    void push(const std::shared_ptr<session>& from, protocol::client_message message);
    void push(const std::shared_ptr<session>& from, protocol::command_result result);
    [[nodiscard]] bool empty() const noexcept { return queued_.empty(); }

    using apply_fn = std::function<protocol::command_result(std::uint32_t client,
                                                            const protocol::client_message&)>;
    // Applies what was queued, in order. Without a journal every reply goes at once; with one,
    // what each applied command left is recorded in it and the replies wait for commit().
    void apply(const apply_fn& apply, const ecs::World& world, journal_writer* journal);
    // The tick's batch (its records, the replies held) handed to the journal's thread; once it
    // is durable the replies are sent, in order, from the world's thread. If it cannot be
    // written nothing is sent and `on_journal_failed(error)` runs there instead.
    void commit(journal_writer& journal, std::uint64_t tick);
    std::function<void(const std::string& error, std::size_t withheld)> on_journal_failed;

private:
    struct queued {
        std::weak_ptr<session> from;
        std::uint32_t client;
        std::variant<protocol::client_message, protocol::command_result> what;
    };
    using replies = std::vector<std::pair<std::weak_ptr<session>, protocol::command_result>>;

    boost::asio::io_context& world_context_;
    std::vector<queued> queued_;
    replies held_;  // with a journal: until the batch is durable
    // The journal's thread posts here once a batch is durable; those posts must not reach a
    // queue that is gone.
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace ecsnet::server
