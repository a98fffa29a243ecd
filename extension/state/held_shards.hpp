// The keys of sharded limits whose shards the current transaction has written (and so holds locked until
// it ends).
//
// A transaction holding one of a key's shards must not wait for another transaction's shard of that key:
// if that one waits for ours, the two deadlock (40P01, under READ COMMITTED). So once a transaction has
// written a shard of a key, its later calls on the key choose among the shards that no concurrent
// transaction is busy with (its own count as free), and are denied rather than wait when those cannot
// serve them (core::choose_shard_for_request, may_wait). Busy is what the call saw when it chose: a
// concurrent transaction that locks the chosen shard between that look and the write can still make it
// wait, a narrow race that PostgreSQL's deadlock detector then resolves (40P01, which the client retries).
//
// Backend-local, forgotten when the top-level transaction ends (told apart by its local transaction id);
// at most HELD_KEYS_PER_TRANSACTION keys are remembered (the oldest are forgotten beyond that).
#pragma once

#include "postgres_headers.hpp"

namespace pg_ratelimit {

inline constexpr int HELD_KEYS_PER_TRANSACTION = 256;

struct StateTarget;

// Whether this transaction wrote one of the target key's shards.
bool holds_key_shard(const StateTarget &target);
void remember_key_shard(const StateTarget &target);

}  // namespace pg_ratelimit
