#include "clock.hpp"

#include "pg_compat.hpp"

namespace pg_ratelimit {
namespace {

char *fake_now_text = nullptr;  // the GUC's string; empty means the real clock
bool fake_now_set = false;
TimestampTz fake_now_value = 0;

// Parses a timestamptz without throwing (a check hook must report, not raise): the same steps as
// timestamptz_in, returning false where it would ereport.
bool parse_timestamptz(const char *text, TimestampTz *result) {
    char workbuf[MAXDATELEN + MAXDATEFIELDS];
    char *field[MAXDATEFIELDS];
    int ftype[MAXDATEFIELDS];
    int nfields = 0;
    int dtype = 0;
    struct pg_tm tm_value;
    fsec_t fsec = 0;
    int tz = 0;
    if (ParseDateTime(text, workbuf, sizeof(workbuf), field, ftype, MAXDATEFIELDS, &nfields) != 0) return false;
    if (pg_compat::decode_date_time(field, ftype, nfields, &dtype, &tm_value, &fsec, &tz) != 0) return false;
    if (dtype != DTK_DATE) return false;  // no 'infinity', 'epoch' or the like
    return tm2timestamp(&tm_value, fsec, &tz, result) == 0;
}

bool check_fake_now(char **newval, void **extra, GucSource) {
    if (*newval == nullptr || (*newval)[0] == '\0') return true;
    TimestampTz value = 0;
    if (!parse_timestamptz(*newval, &value)) {
        GUC_check_errdetail("\"%s\" is not a finite timestamp with time zone.", *newval);
        return false;
    }
    // GUC extras are owned and released by guc.c: allocated its way (pg_compat.hpp).
    auto *parsed = static_cast<TimestampTz *>(pg_compat::guc_extra_alloc(sizeof(TimestampTz)));
    if (parsed == nullptr) return false;
    *parsed = value;
    *extra = parsed;
    return true;
}

void assign_fake_now(const char *newval, void *extra) {
    fake_now_set = newval != nullptr && newval[0] != '\0' && extra != nullptr;
    fake_now_value = fake_now_set ? *static_cast<TimestampTz *>(extra) : 0;
}

}  // namespace

void clock_init() {
    DefineCustomStringVariable("pg_ratelimit.fake_now",
                               "Pins the clock pg_ratelimit uses (for deterministic tests only).",
                               "Empty (the default) means the server's real clock. Only superusers may set it.",
                               &fake_now_text, "", PGC_SUSET, 0, check_fake_now, assign_fake_now, nullptr);
}

TimestampTz clock_now() { return fake_now_set ? fake_now_value : GetCurrentTimestamp(); }

}  // namespace pg_ratelimit
