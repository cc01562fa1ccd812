#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ecsnet/ecs/type_info.hpp"

namespace ecsnet::ecs {

// The component types a system declared it reads and writes (seed 004: "restrict what data a
// system can use"). While the system runs, the world rejects any other access with
// access_violation. Writing implies reading.
class component_access {
public:
    component_access() = default;

    template <typename... T>
    component_access& reads() {
        (add(type_hash_v<T>, type_name_v<T>, false), ...);
        return *this;
    }

    template <typename... T>
    component_access& writes() {
        (add(type_hash_v<T>, type_name_v<T>, true), ...);
        return *this;
    }

    [[nodiscard]] bool allows(std::uint64_t type_hash, bool write) const noexcept {
        const auto it = std::find_if(entries_.begin(), entries_.end(),
                                     [&](const entry& e) { return e.hash == type_hash; });
        return it != entries_.end() && (it->write || !write);
    }

    template <typename T>
    [[nodiscard]] bool can_read() const noexcept {
        return allows(type_hash_v<T>, false);
    }
    template <typename T>
    [[nodiscard]] bool can_write() const noexcept {
        return allows(type_hash_v<T>, true);
    }

    // "reads {Velocity} writes {Position}"
    [[nodiscard]] std::string describe() const {
        std::string reads;
        std::string writes;
        for (const auto& e : entries_) {
            std::string& list = e.write ? writes : reads;
            list += list.empty() ? "" : ", ";
            list += e.name;
        }
        return "reads {" + reads + "} writes {" + writes + "}";
    }

private:
    struct entry {
        std::uint64_t hash;
        std::string_view name;
        bool write;
    };

    void add(std::uint64_t hash, std::string_view name, bool write) {
        for (auto& e : entries_) {
            if (e.hash == hash) {
                e.write = e.write || write;
                return;
            }
        }
        entries_.push_back(entry{hash, name, write});
    }

    std::vector<entry> entries_;
};

}  // namespace ecsnet::ecs
