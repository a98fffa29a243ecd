// The canaries of test/sanitized_backend.sh: deliberate defects, each called once in a backend of its own
// at the end of every run. The script requires a report of each, so that a run in which the
// instrumentation or the collection of reports silently stopped working (no preloaded runtime, options
// lost, reports written where the script does not look) fails instead of passing with no reports.
// Built with -fsanitize=address,undefined -fno-wrapv for the AddressSanitizer run, plain for valgrind
// (memcheck checks every read; it has nothing to say about signed overflow).
#include "postgres.h"

#include "fmgr.h"

PG_MODULE_MAGIC;

// volatile: the compiler can neither see nor drop the defects below.
static volatile int one = 1;

// Reads one byte past a malloc'd buffer (AddressSanitizer, memcheck).
PG_FUNCTION_INFO_V1(sanitizer_canary_heap_overflow);
Datum sanitizer_canary_heap_overflow(PG_FUNCTION_ARGS) {
    char *buffer = calloc(8, 1);
    char value;

    (void)fcinfo;
    if (buffer == NULL) PG_RETURN_INT32(-1);
    value = buffer[7 + one];
    free(buffer);
    PG_RETURN_INT32(value);
}

// Overflows a signed integer (UndefinedBehaviorSanitizer).
PG_FUNCTION_INFO_V1(sanitizer_canary_signed_overflow);
Datum sanitizer_canary_signed_overflow(PG_FUNCTION_ARGS) {
    (void)fcinfo;
    PG_RETURN_INT32(PG_INT32_MAX + one);
}
