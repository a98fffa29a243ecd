// Where the bounded rate_limit_cleanup(limit_name, max_rows) of this session continues.
//
// A bounded call examines at most max_rows rows and then stops at a key boundary; the next bounded call
// with the same limit_name (NULL: all limits) in the same backend continues after the last key examined,
// so that a loop of short transactions walks the table once instead of re-reading its first rows (keys
// still in use, which stay) every time. Once a pass has reached the end, the next call starts a new one.
// rate_limit_cleanup_batches resets the position first, so each CALL is one complete pass.
//
// The position is backend-local and not transactional: a call that fails leaves it where it was (the
// rows it would have examined are examined again), and a call whose transaction later rolls back has
// moved it on (the rows it deleted come back and wait for the next pass). It only ever says where a
// scan starts, never what is deleted: every row is judged, locked and compared as in an unbounded pass.
#pragma once

#include "postgres_headers.hpp"

namespace pg_ratelimit {

enum class CleanupPhase {
    limits,   // walking the limits in name order, each one's keys in key order
    orphans,  // deleting rows of limits that no longer exist (or of another storage)
};

struct CleanupPosition {
    CleanupPhase phase;
    const text *limit;      // the limit to continue with (or the first one after it, if it is gone); nullptr: the first
    const text *after_key;  // continue after this key of `limit`; nullptr: from its first key
};

// The position for a bounded call with this limit_name argument (nullptr: all limits): where the last
// bounded call with the same argument stopped, or the start of a pass. Valid until the next
// cleanup_position_save or _reset.
CleanupPosition cleanup_position_load(const text *filter);

// After a bounded call: where it stopped (copied into backend memory), or, with `complete`, that its pass
// reached the end (the next call starts over).
void cleanup_position_save(const text *filter, const CleanupPosition &stopped, bool complete);

// Forget any position: the next bounded call starts a pass (rate_limit_cleanup_batches, at its start).
void cleanup_position_reset();

// Whether the last bounded call of this backend completed its pass (rate_limit_cleanup_batches stops then).
bool cleanup_pass_complete();

}  // namespace pg_ratelimit
