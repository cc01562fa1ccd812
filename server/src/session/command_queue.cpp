#include "ecsnet/server/session/command_queue.hpp"

#include <boost/asio/post.hpp>

#include "ecsnet/server/session/session.hpp"

namespace ecsnet::server {

void command_queue::push(const std::shared_ptr<session>& from, protocol::client_message message) {
    queued_.push_back(queued{from, from->owner_id(), std::move(message)});
}

void command_queue::push(const std::shared_ptr<session>& from, protocol::command_result result) {
    queued_.push_back(queued{from, from->owner_id(), std::move(result)});
}

void command_queue::apply(const apply_fn& apply, const ecs::World& world, journal_writer* journal) {
    // Swapped out first: a reply may close its session (a fatal disconnect owed after it),
    // which must not touch the vector being walked.
    std::vector<queued> commands;
    commands.swap(queued_);
    for (auto& command : commands) {
        const auto s = command.from.lock();
        if (s == nullptr || !s->awaits_results()) {
            continue;  // the connection is gone: its commands go with it
        }
        protocol::command_result result;
        if (auto* decided = std::get_if<protocol::command_result>(&command.what)) {
            result = std::move(*decided);
        } else {
            const auto& message = std::get<protocol::client_message>(command.what);
            result = apply(command.client, message);
            if (journal != nullptr && result.ok) {
                journal->command(world, message, result);
            }
        }
        if (journal != nullptr) {
            held_.emplace_back(s, std::move(result));  // in order behind the journaled ones
        } else {
            s->send_result(result);
        }
    }
}

void command_queue::commit(journal_writer& journal, std::uint64_t tick) {
    if (held_.empty() && journal.pending_records() == 0) {
        return;
    }
    // One batch per tick, one fdatasync on the journal's thread; the replies then come back
    // to the world's thread, in order.
    journal.commit(tick, [this, alive = std::weak_ptr<bool>{alive_},
                          results = std::exchange(held_, {})](const std::string& error) mutable {
        boost::asio::post(world_context_, [this, alive, results = std::move(results), error]() {
            if (alive.expired()) {
                return;
            }
            if (!error.empty()) {
                // Acknowledging would be a lie: nothing is sent.
                if (on_journal_failed) {
                    on_journal_failed(error, results.size());
                }
                return;
            }
            for (const auto& [weak, result] : results) {
                if (const auto s = weak.lock(); s != nullptr && s->awaits_results()) {
                    s->send_result(result);
                }
            }
        });
    });
}

}  // namespace ecsnet::server
