#include "catalog/limit_kind.hpp"

#include "catalog/limit_cache.hpp"
#include "message_text.hpp"

namespace pg_ratelimit {

core::Limit rate_limit_lookup(Oid extension, Oid schema, const text *name) {
    const core::Limit limit = limit_lookup(extension, schema, name);
    if (limit.algorithm == core::Algorithm::concurrency)
        ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                        errmsg("rate limit \"%s\" is a concurrency limit", clipped_text(text_to_cstring(name))),
                        errdetail("A concurrency limit bounds leases held at once; it has no units to request."),
                        errhint("Use rate_limit_acquire() and rate_limit_release().")));
    return limit;
}

void require_concurrency_limit(const core::Limit &limit, const text *name) {
    if (limit.algorithm != core::Algorithm::concurrency)
        ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                        errmsg("rate limit \"%s\" is not a concurrency limit", clipped_text(text_to_cstring(name))),
                        errdetail("Its algorithm is %s.", algorithm_name(limit.algorithm)),
                        errhint("Use rate_limit_acquire() on a limit defined with algorithm => 'concurrency', and "
                                "rate_limit_request() on this one.")));
}

void require_concurrency_kept(const core::Limit &before, const core::Limit &after, const char *name) {
    if (before.algorithm != core::Algorithm::concurrency) return;
    if (after.algorithm != core::Algorithm::concurrency)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("concurrency limit \"%s\" cannot become another kind of limit", clipped_text(name)),
                        errdetail("Session leases held now would no longer be counted."),
                        errhint("Drop it and define it again (session leases held then stop counting), or define "
                                "the new limit under another name.")));
    if (after.period != before.period)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("the period of concurrency limit \"%s\" cannot be changed", clipped_text(name)),
                        errdetail("Session leases held now were taken under the old period; under a new one they "
                                  "would no longer be counted."),
                        errhint("Drop it and define it again (session leases held under the old period then stop "
                                "counting), or define a limit under another name.")));
}

}  // namespace pg_ratelimit
