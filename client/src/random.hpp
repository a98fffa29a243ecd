// Jitter needs randomness, not security: one fast generator per thread, so no locking.
#pragma once

#include <chrono>
#include <random>

namespace pg_ratelimit::detail {

inline std::mt19937_64 &thread_rng() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    return rng;
}

// Uniform in [0, ceiling].
template <typename Duration>
Duration uniform_up_to(Duration ceiling) {
    if (ceiling <= Duration::zero()) return Duration::zero();
    std::uniform_int_distribution<typename Duration::rep> pick(0, ceiling.count());
    return Duration(pick(thread_rng()));
}

}  // namespace pg_ratelimit::detail
