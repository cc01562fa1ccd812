#include "ecsnet/server/replication/replicator.hpp"

#include <unordered_map>

#include "ecsnet/protocol/messages.hpp"

namespace ecsnet::server {

// The tick's frames as every client of the whole world receives them: the delta, the
// owner-only deltas and, every N ticks, the checksum of one slice. Each is encoded at most
// once per tick, when the first client needs it.
class replicator::single_stream {
public:
    single_stream(replicator& r, const ecs::World& world,
                  const ecs::World::change_set_type& changes, std::uint64_t tick)
        : r_{r}, world_{world}, changes_{changes}, tick_{tick} {}

    [[nodiscard]] std::size_t delta_bytes() { return delta()->size(); }

    void send_to(std::uint64_t id, std::uint32_t owner, const sink& send) {
        const protocol::frame* own = own_frame(owner);
        const protocol::frame* checksum = nullptr;
        protocol::frame own_checksum;
        if (tick_ % r_.options_.checksum_interval == 0) {
            prepare_checksum();
            checksum = &checksum_;
            // A client's mirror also holds its own owner-only values: its checksum adds them.
            if (const auto terms = owner_terms_.find(owner); owner != 0 && terms != owner_terms_.end()) {
                const auto timer = timed(r_.profile_, tick_stage::checksum);
                own_checksum = protocol::encode(protocol::server_control{protocol::checksum_report{
                    tick_, sum_.hash + terms->second, sum_.entities, range_.first, range_.end}});
                checksum = &own_checksum;
            }
        }
        const auto timer = timed(r_.profile_, tick_stage::hand_off);
        send(id, delta(), checksum, own);
    }

private:
    const protocol::frame& delta() {
        if (!delta_) {
            const auto timer = timed(r_.profile_, tick_stage::encode);
            delta_ = r_.encoder_.encode_delta(world_, changes_, tick_);
            // Types replicated to their owner only: one more frame per owner with changes.
            owner_frames_ = r_.encoder_.encode_owner_only(world_, changes_, tick_);
        }
        return *delta_;
    }
    const protocol::frame* own_frame(std::uint32_t owner) {
        (void)delta();
        if (owner == 0) {
            return nullptr;  // an observer without an owner: nobody's private values
        }
        for (const auto& f : owner_frames_) {
            if (f.owner == owner) {
                return &f.bytes;
            }
        }
        return nullptr;
    }
    void prepare_checksum() {
        if (checksum_) {
            return;
        }
        const auto timer = timed(r_.profile_, tick_stage::checksum);
        range_ = r_.next_checksum_range(world_);
        sum_ = protocol::checksum::of_world(world_, r_.types_, range_);
        owner_terms_ = protocol::checksum::owner_only_terms(world_, r_.types_, range_);
        checksum_ = protocol::encode(protocol::server_control{
            protocol::checksum_report{tick_, sum_.hash, sum_.entities, range_.first, range_.end}});
    }

    replicator& r_;
    const ecs::World& world_;
    const ecs::World::change_set_type& changes_;
    std::uint64_t tick_;
    std::optional<protocol::frame> delta_;
    std::vector<protocol::replication_encoder::owner_frame> owner_frames_;
    protocol::frame checksum_;
    protocol::checksum::slice_sum sum_;
    protocol::checksum::index_range range_;
    std::unordered_map<std::uint32_t, std::uint64_t> owner_terms_;
};

replicator::replicator(const protocol::component_registry& types, interest_manager& interest,
                       replicator_options options)
    : types_{types}, interest_{interest}, options_{options}, encoder_{types} {}

void replicator::add_client(std::uint64_t id, std::uint32_t owner, bool whole_world) {
    client c{owner, std::nullopt};
    if (interest_.enabled() && !whole_world) {
        c.view.emplace(owner);
    }
    clients_.insert_or_assign(id, std::move(c));
}

void replicator::remove_client(std::uint64_t id) { clients_.erase(id); }

const client_view* replicator::view(std::uint64_t client) const noexcept {
    const auto it = clients_.find(client);
    return it == clients_.end() || !it->second.view ? nullptr : &*it->second.view;
}

std::vector<protocol::frame> replicator::start_frames(const ecs::World& world,
                                                      std::uint64_t client, std::uint64_t tick) {
    const auto it = clients_.find(client);
    if (it != clients_.end() && it->second.view) {
        // Under interest management the mirror starts empty; what the client sees then
        // arrives as entries, within its budget.
        it->second.view->reset();
        return {encoder_.encode_empty_snapshot(tick)};
    }
    // Between ticks nothing writes to the world, so one snapshot serves every joiner of a tick.
    if (snapshot_tick_ != tick) {
        snapshot_cache_ = encoder_.encode_snapshot(world, tick);
        snapshot_tick_ = tick;
        snapshot_bytes_ = 0;
        for (const auto& f : snapshot_cache_) {
            snapshot_bytes_ += f->size();
        }
    }
    std::vector<protocol::frame> frames = snapshot_cache_;
    // The owner-only values of the client's own entities, after the last chunk.
    const std::uint32_t owner = it == clients_.end() ? 0 : it->second.owner;
    if (owner == 0) {
        return frames;
    }
    if (auto own = encoder_.encode_owner_only_snapshot(world, owner, tick)) {
        frames.push_back(std::move(*own));
    }
    return frames;
}

protocol::checksum::index_range replicator::next_checksum_range(const ecs::World& world) {
    // Up to checksum_slice indices the whole world is hashed each time; past that,
    // successive checksums cover successive slices, the last one open-ended, so a tick never
    // hashes more than one slice of a large world.
    const std::size_t slots = world.entities().slots();
    if (slots <= options_.checksum_slice) {
        checksum_next_index_ = 0;
        return {};
    }
    protocol::checksum::index_range range{checksum_next_index_,
                                          checksum_next_index_ + options_.checksum_slice};
    if (range.end >= slots) {
        range.end = protocol::checksum::index_range{}.end;
        checksum_next_index_ = 0;
    } else {
        checksum_next_index_ = range.end;
    }
    return range;
}

void replicator::tick(const ecs::World& world, const ecs::World::change_set_type& changes,
                      std::uint64_t tick, const sink& send) {
    single_stream stream{*this, world, changes, tick};
    changes_ = &changes;
    if (!interest_.enabled()) {
        for (const auto& [id, c] : clients_) {
            stream.send_to(id, c.owner, send);
        }
        return;
    }
    // Per tick: the change masks by entity, once. Per client: what it should see (the
    // policy), then its own frame, of a size proportional to what it sees.
    const client_view::context ctx{world, types_,  tick_changes_,      interest_,
                                   tick,  options_.tick_rate, plan_scratch_};
    tick_changes_built_ = false;
    bool views = false;
    for (auto& [id, c] : clients_) {
        if (c.view) {
            serve_view(world, id, c, ctx, stream, send);
            views = views || !c.view->whole_world();
        } else {
            stream.send_to(id, c.owner, send);  // joined before interest was turned on
        }
    }
    interest_.views_needed(views);
}

std::size_t replicator::empty_frame_bytes(const ecs::World& world, std::uint64_t tick) {
    if (empty_frame_tick_ != tick) {
        const auto timer = timed(profile_, tick_stage::encode);
        empty_frame_bytes_ =
            encoder_.encode_view_delta(world, protocol::replication_encoder::view_changes{}, tick)
                ->size();
        empty_frame_tick_ = tick;
    }
    return empty_frame_bytes_;
}

void replicator::serve_view(const ecs::World& world, std::uint64_t id, client& c,
                            const client_view::context& ctx, single_stream& stream,
                            const sink& send) {
    client_view& v = *c.view;
    const player_interest& p = interest_.player(c.owner);
    // A client that sees the whole world and holds all of it shares the single stream: a
    // small room pays nothing per client for interest management.
    const bool everything = interest_.sees_everything(world, c.owner, p);
    // Charged like its own frame would be: the bytes beyond an empty Delta of the tick.
    const std::size_t empty = empty_frame_bytes(world, ctx.tick);
    if (everything && v.whole_world() && v.afford(ctx, stream.delta_bytes(), empty)) {
        stream.send_to(id, c.owner, send);
        return;
    }
    if (!tick_changes_built_) {
        // Once per tick, and only when a client needs its own frame.
        const auto timer = timed(profile_, tick_stage::view_plan);
        tick_changes_.build(world, *changes_, types_);
        tick_changes_built_ = true;
    }
    if (v.whole_world()) {
        v.hold_everything(ctx);  // out of view or over budget: its own frames from now on
    }
    desired_.clear();
    {
        const auto timer = timed(profile_, tick_stage::view_query);
        if (!interest_.collect(world, c.owner, p, desired_)) {
            v.listed(desired_);  // the policy failed: the view stays as it is, updates flow
        }
    }
    const std::uint64_t deferred = v.stats().deferred;
    std::optional<tick_profile::scope> planning{std::in_place, profile_, tick_stage::view_plan};
    const auto& plan = v.plan(ctx, desired_);
    planning.reset();
    stats_.view_entered += plan.entered.size() + plan.spawned.size();
    stats_.view_left += plan.left.size();
    stats_.view_deferred += v.stats().deferred - deferred;
    std::optional<tick_profile::scope> encoding{std::in_place, profile_, tick_stage::encode};
    const protocol::frame delta = encoder_.encode_view_delta(world, plan, ctx.tick);
    encoding.reset();
    v.sent(delta->size(), empty);
    // Each client's checksum sums what it holds: spread over the interval by client id, so
    // that no tick pays for all of them. Taken before a switch to whole-world mode, which
    // forgets the records the sum is made of (it summed nothing on such a tick: a mismatch).
    std::optional<protocol::frame> checksum;
    if ((ctx.tick + id) % options_.checksum_interval == 0) {
        const auto timer = timed(profile_, tick_stage::checksum);
        checksum = protocol::encode(
            protocol::server_control{v.checksum(world, types_, ctx.tick, plan_scratch_)});
    }
    if (everything && desired_.size() == world.alive() && v.in_sync()) {
        v.set_whole_world();  // holds it all: the single stream from the next tick
    }
    const auto timer = timed(profile_, tick_stage::hand_off);
    send(id, delta, checksum ? &*checksum : nullptr, nullptr);
}

}  // namespace ecsnet::server
