// Work that must be undone on its own, without the transaction around it: an internal subtransaction, as
// PL/pgSQL's BEGIN ... EXCEPTION blocks use. Rolling it back undoes its writes, its row locks and the
// heavyweight locks it took (a limit's lock: limit_lock.hpp), and lets the caller go on after an error it
// expected (a unique violation, a serialization failure it retries).
#pragma once

#include "postgres_headers.hpp"

namespace pg_ratelimit {

enum class SubtransactionEnd { keep, roll_back };

// Runs fn() in an internal subtransaction, kept (its work and locks passed to the enclosing transaction) if
// fn returns keep, rolled back if roll_back. An error rolls it back; one whose SQLSTATE is `expected` or
// `also_expected` (0: none) is then forgotten and reported by returning false; any other is raised again. Returns true
// when fn returned. fn must be trivially destructible (a lambda capturing by reference): an error longjmps out of it
// (cpp_boundary.hpp). The memory context and resource owner of the caller are current again after.
template <typename Fn>
bool in_subtransaction(const Fn &fn, int expected = 0, int also_expected = 0) {
    const MemoryContext memory = CurrentMemoryContext;
    const ResourceOwner owner = CurrentResourceOwner;
    BeginInternalSubTransaction(nullptr);
    MemoryContextSwitchTo(memory);
    bool returned = true;
    PG_TRY();
    {
        if (fn() == SubtransactionEnd::keep)
            ReleaseCurrentSubTransaction();
        else
            RollbackAndReleaseCurrentSubTransaction();
        MemoryContextSwitchTo(memory);
        CurrentResourceOwner = owner;
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(memory);
        ErrorData *error = CopyErrorData();
        FlushErrorState();
        RollbackAndReleaseCurrentSubTransaction();
        MemoryContextSwitchTo(memory);
        CurrentResourceOwner = owner;
        if (error->sqlerrcode == 0 || (error->sqlerrcode != expected && error->sqlerrcode != also_expected))
            ReThrowError(error);
        FreeErrorData(error);
        returned = false;
    }
    PG_END_TRY();
    return returned;
}

}  // namespace pg_ratelimit
