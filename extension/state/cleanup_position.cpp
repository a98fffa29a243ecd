#include "state/cleanup_position.hpp"

namespace pg_ratelimit {
namespace {

// All in TopMemoryContext; nullptr when absent.
bool saved = false;
text *saved_filter = nullptr;  // nullptr: the position of cleanup of all limits
CleanupPhase saved_phase = CleanupPhase::limits;
text *saved_limit = nullptr;
text *saved_after_key = nullptr;
bool last_complete = false;

text *keep(const text *value) {
    if (value == nullptr) return nullptr;
    const Size size = VARSIZE_ANY(value);
    auto *copy = static_cast<text *>(MemoryContextAlloc(TopMemoryContext, size));
    memcpy(copy, value, size);
    return copy;
}

void release(text **value) {
    if (*value != nullptr) pfree(*value);
    *value = nullptr;
}

bool same_text(const text *a, const text *b) {
    if (a == nullptr || b == nullptr) return a == b;
    return VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
           memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

}  // namespace

CleanupPosition cleanup_position_load(const text *filter) {
    if (!saved || !same_text(saved_filter, filter)) return CleanupPosition{CleanupPhase::limits, nullptr, nullptr};
    return CleanupPosition{saved_phase, saved_limit, saved_after_key};
}

void cleanup_position_save(const text *filter, const CleanupPosition &stopped, bool complete) {
    // Copy first: `stopped` may point at the position being replaced.
    text *filter_copy = keep(filter);
    text *limit_copy = complete ? nullptr : keep(stopped.limit);
    text *key_copy = complete ? nullptr : keep(stopped.after_key);
    cleanup_position_reset();
    saved = !complete;
    saved_filter = filter_copy;
    saved_phase = stopped.phase;
    saved_limit = limit_copy;
    saved_after_key = key_copy;
    last_complete = complete;
}

void cleanup_position_reset() {
    saved = false;
    release(&saved_filter);
    release(&saved_limit);
    release(&saved_after_key);
    saved_phase = CleanupPhase::limits;
    last_complete = false;
}

bool cleanup_pass_complete() { return last_complete; }

}  // namespace pg_ratelimit
