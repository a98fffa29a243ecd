#!/usr/bin/env bash
# Finding 58 (low-medium): the C++ client's Limiter::acquire drops rate_limit_acquire's shadow_denied: on
# a shadow concurrency limit with no free slot, the Lease it returns (acquired = true, free_slots 0,
# retry_after 0, reset_after 0) is identical to a real lease, although no slot was taken. Lease::acquired
# is documented as "a slot was taken", which is then false, and a program has no way to watch its shadow
# limit (the reason to run one) -- every other client type carries the flag (Decision::shadow_denied,
# AllDecision, Reservation::holds_nothing); README: "A shadow concurrency limit lets a caller through
# without a lease when no slot is free (shadow_denied)".
# Attack: a shadow limit of N = 1; in one transaction the client acquires twice (the second finds no slot).
# Expected: the second Lease tells it holds nothing (a shadow_denied member, as Decision's; the probe below
# looks for that name at compile time), or is not `acquired`.
# Builds the client library (CMake, -j2) in a temporary directory.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/lib.sh"
setup_review
q -c "SELECT rate_limit_define('watched', rate => 1, period => '1 hour', algorithm => 'concurrency', shadow => true)" >/dev/null || exit 2
build=$(mktemp -d)
trap 'rm -rf "$build"; cleanup_review' EXIT
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$build/cmake.log" 2>&1 &&
    cmake --build "$build" -j2 --target pg_ratelimit_client >>"$build/cmake.log" 2>&1 || { tail -n 20 "$build/cmake.log"; exit 2; }
cat >"$build/probe.cpp" <<'CPP'
#include <iostream>
#include <pg_ratelimit/lease.hpp>
#include <pg_ratelimit/limiter.hpp>
#include <pqxx/pqxx>
#include <type_traits>

template <typename T, typename = void> struct has_shadow_denied : std::false_type {};
template <typename T> struct has_shadow_denied<T, std::void_t<decltype(std::declval<T>().shadow_denied)>> : std::true_type {};

template <typename L> void print(const L &lease) {
    std::cout << lease.acquired << ' ' << lease.free_slots << ' ' << lease.retry_after.count() << ' '
              << lease.reset_after.count();
    if constexpr (has_shadow_denied<L>::value) std::cout << ' ' << static_cast<bool>(lease.shadow_denied);
    std::cout << '\n';
}

int main() {
    pg_ratelimit::Limiter limiter("");
    pqxx::connection connection("");
    pqxx::work tx(connection);
    print(limiter.acquire(tx, "acme", "watched", pg_ratelimit::LeaseScope::transaction));
    print(limiter.acquire(tx, "acme", "watched", pg_ratelimit::LeaseScope::transaction));
    std::cout << tx.exec("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 21069 AND pid = pg_backend_pid()")[0][0].as<int>() << '\n';
    tx.commit();
}
CPP
lib=$(find "$build" -name 'libpg_ratelimit_client*' | head -n 1)
# shellcheck disable=SC2046
g++ -std=c++17 -I "$root/client/include" "$build/probe.cpp" "$lib" $(pkg-config --cflags --libs libpqxx) -lpthread -o "$build/probe" ||
    exit 2
out=$("$build/probe" 2>&1) || { echo "$out"; exit 2; }
echo "first lease, second lease (acquired free_slots retry_after reset_after [shadow_denied]), slots held:"
echo "$out"
first=$(sed -n 1p <<<"$out"); second=$(sed -n 2p <<<"$out"); held=$(sed -n 3p <<<"$out")
[ "$held" = 1 ] || { echo "unexpected: $held slots held"; exit 2; }
[ "$first" != "$second" ] && holds "the client's second Lease tells it holds no slot ($second)"
reproduced "one slot taken, yet both Leases read '$first': the client cannot tell a shadow pass from a lease"
