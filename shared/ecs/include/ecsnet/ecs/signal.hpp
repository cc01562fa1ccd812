#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace ecsnet::ecs {

// A list of listeners, called in the order they connected. A listener may connect or
// disconnect others (or itself) while the signal is being published: removals take effect at
// once, additions from the next publish on.
template <typename... Args>
class signal {
public:
    using listener = std::function<void(Args...)>;
    using connection = std::uint64_t;

    connection connect(listener fn) {
        const connection id = ++last_id_;
        // While publishing, the vector being walked must not reallocate under the running
        // listener: park new listeners until the outermost publish ends.
        (publishing_ == 0 ? listeners_ : pending_).push_back(entry{id, std::move(fn), true});
        ++live_;
        return id;
    }

    // Returns false when nothing is connected under this id.
    bool disconnect(connection id) {
        for (auto* list : {&listeners_, &pending_}) {
            for (auto& e : *list) {
                if (e.id == id && e.alive) {
                    e.alive = false;
                    ++dead_;
                    --live_;
                    collect();
                    return true;
                }
            }
        }
        return false;
    }

    // On every write of a component: one load, no division by the entry size.
    [[nodiscard]] bool empty() const noexcept { return live_ == 0; }
    [[nodiscard]] std::size_t size() const noexcept { return live_; }

    void publish(Args... args) {
        if (listeners_.empty()) {
            return;
        }
        ++publishing_;
        try {
            const std::size_t count = listeners_.size();
            for (std::size_t i = 0; i < count; ++i) {
                if (listeners_[i].alive) {
                    listeners_[i].fn(args...);
                }
            }
        } catch (...) {
            // A throwing listener must not leave the signal "publishing" for good (new
            // listeners would be parked forever and removals never collected).
            --publishing_;
            collect();
            throw;
        }
        --publishing_;
        if (dead_ != 0 || !pending_.empty()) [[unlikely]] {
            collect();
        }
    }

private:
    struct entry {
        connection id;
        listener fn;
        bool alive;
    };

    void collect() {
        if (publishing_ != 0) {
            return;
        }
        if (dead_ != 0) {
            std::erase_if(listeners_, [](const entry& e) { return !e.alive; });
            std::erase_if(pending_, [](const entry& e) { return !e.alive; });
            dead_ = 0;
        }
        for (auto& e : pending_) {
            listeners_.push_back(std::move(e));
        }
        pending_.clear();
    }

    std::vector<entry> listeners_;
    std::vector<entry> pending_;
    std::size_t dead_{0};
    std::size_t live_{0};
    std::size_t publishing_{0};
    connection last_id_{0};
};

}  // namespace ecsnet::ecs
