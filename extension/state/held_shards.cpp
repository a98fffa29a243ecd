#include "state/held_shards.hpp"

#include "pg_compat.hpp"

#include "state/state_access.hpp"

namespace pg_ratelimit {
namespace {

LocalTransactionId owner = InvalidLocalTransactionId;  // the transaction the keys belong to
// Hashes of (limit name, key): a collision only makes a call on another key avoid waiting too.
uint64 held[HELD_KEYS_PER_TRANSACTION];
int held_count = 0;
int next_slot = 0;  // where the next key goes once the array is full (the oldest entry)

uint64 key_of(const StateTarget &target) {
    const text *limit = DatumGetTextPP(target.limit_name);
    const text *key = DatumGetTextPP(target.key);
    const uint64 seed = hash_bytes_extended(reinterpret_cast<const unsigned char *>(VARDATA_ANY(limit)),
                                            static_cast<int>(VARSIZE_ANY_EXHDR(limit)), 0);
    return hash_bytes_extended(reinterpret_cast<const unsigned char *>(VARDATA_ANY(key)),
                               static_cast<int>(VARSIZE_ANY_EXHDR(key)), seed);
}

void forget_other_transactions() {
    if (owner == pg_compat::local_transaction_id()) return;
    owner = pg_compat::local_transaction_id();
    held_count = 0;
    next_slot = 0;
}

bool holds(uint64 key) {
    for (int i = 0; i < held_count; ++i)
        if (held[i] == key) return true;
    return false;
}

}  // namespace

bool holds_key_shard(const StateTarget &target) {
    forget_other_transactions();
    return holds(key_of(target));
}

void remember_key_shard(const StateTarget &target) {
    forget_other_transactions();
    const uint64 key = key_of(target);
    if (holds(key)) return;
    if (held_count < HELD_KEYS_PER_TRANSACTION) {
        held[held_count++] = key;
        return;
    }
    held[next_slot] = key;
    next_slot = (next_slot + 1) % HELD_KEYS_PER_TRANSACTION;
}

}  // namespace pg_ratelimit
