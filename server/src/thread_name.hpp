#pragma once

#include <pthread.h>

#include <string>

namespace ecsnet::server::detail {

// The calling thread's name in /proc/<pid>/task/<tid>/comm, top and ecsnet-loadgen's per-thread
// CPU: at most 15 characters (Linux), cut beyond.
inline void name_this_thread(const std::string& name) noexcept {
    (void)pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace ecsnet::server::detail
