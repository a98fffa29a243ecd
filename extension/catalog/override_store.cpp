#include "catalog/override_store.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "catalog/limit_cache.hpp"
#include "message_text.hpp"

namespace pg_ratelimit {
namespace {

enum class OverrideStatement { any, one_key, of_limit };
constexpr int STATEMENT_COUNT = 3;

struct StatementText {
    const char *sql;
    int nargs;
    Oid argtypes[2];
};

// Indexed by OverrideStatement. Names resolve in the extension's schema only (extension_sql.hpp).
constexpr StatementText TEXTS[] = {
    {"SELECT 1 FROM ONLY rate_limit_override LIMIT 1", 0, {}},
    {"SELECT rate, capacity, max_reserved FROM ONLY rate_limit_override"
     " WHERE limit_name OPERATOR(pg_catalog.=) $1 AND key OPERATOR(pg_catalog.=) $2",
     2,
     {TEXTOID, TEXTOID}},
    {"SELECT key, rate, capacity, max_reserved FROM ONLY rate_limit_override"
     " WHERE limit_name OPERATOR(pg_catalog.=) $1",
     1,
     {TEXTOID}},
};
static_assert(sizeof(TEXTS) / sizeof(TEXTS[0]) == STATEMENT_COUNT, "one text per OverrideStatement");

// By the isolation level's kind (serializable or not: see extension_sql.hpp, Scan::one_key), statement.
SPIPlanPtr plans[2][STATEMENT_COUNT];

SPIPlanPtr statement(OverrideStatement which) {
    SPIPlanPtr &plan = plans[IsolationIsSerializable() ? 1 : 0][static_cast<int>(which)];
    if (plan != nullptr) return plan;
    const StatementText &text = TEXTS[static_cast<int>(which)];
    SPIPlanPtr prepared = SPI_prepare(text.sql, text.nargs, const_cast<Oid *>(text.argtypes));
    if (prepared == nullptr)
        elog(ERROR, "pg_ratelimit: SPI_prepare failed (%s): %s", SPI_result_code_string(SPI_result), text.sql);
    if (SPI_keepplan(prepared) != 0) elog(ERROR, "pg_ratelimit: SPI_keepplan failed");
    plan = prepared;
    return plan;
}

void run(OverrideStatement which, Datum *args, Snapshot snapshot, long max_rows) {
    const int rc =
        SPI_execute_snapshot(statement(which), args, nullptr, snapshot, InvalidSnapshot, true, false, max_rows);
    if (rc != SPI_OK_SELECT)
        elog(ERROR, "pg_ratelimit: reading rate_limit_override failed: %s", SPI_result_code_string(rc));
}

int compare_keys(const char *a, int a_length, const char *b, int b_length) {
    const int common = memcmp(a, b, Min(a_length, b_length));
    if (common != 0) return common;
    return a_length < b_length ? -1 : a_length > b_length ? 1 : 0;
}

struct ErrorKey {
    const text *limit_name;
    const char *key;
    int key_length;
};

void override_error_context(void *arg) {
    const auto *where = static_cast<const ErrorKey *>(arg);
    const char *key = pnstrdup(where->key, where->key_length);
    errcontext("the override of rate limit \"%s\" for key \"%s\"", text_to_cstring(where->limit_name),
               clipped_text(key));
}

}  // namespace

core::Limit apply_override(const core::Limit &limit, const Override &value) {
    core::Limit effective = limit;
    effective.rate = value.rate;
    // rate * (capacity / rate): a sliding window's capacity, equal to its rate, stays exactly equal.
    effective.capacity = std::isnan(value.capacity) ? value.rate * (limit.capacity / limit.rate) : value.capacity;
    if (!std::isnan(value.max_reserved))
        effective.max_reserved = value.max_reserved;
    else if (!std::isinf(limit.max_reserved))
        effective.max_reserved = limit.max_reserved * (value.rate / limit.rate);
    return effective;
}

void require_valid_override(const core::Limit &effective, const text *limit_name, const char *key, int key_length) {
    ErrorKey where{limit_name, key, key_length};
    ErrorContextCallback callback;
    callback.callback = override_error_context;
    callback.arg = &where;
    callback.previous = error_context_stack;
    error_context_stack = &callback;
    require_valid_limit(effective);
    error_context_stack = callback.previous;
}

Override override_from_row(HeapTuple row, TupleDesc desc, int first) {
    bool isnull = false;
    Override value;
    const Datum rate = SPI_getbinval(row, desc, first, &isnull);
    if (isnull)
        ereport(ERROR, (errcode(ERRCODE_NOT_NULL_VIOLATION), errmsg("rate_limit_override has a NULL rate for a key"),
                        errhint("Set the override again with rate_limit_override().")));
    value.rate = DatumGetFloat8(rate);
    const Datum capacity = SPI_getbinval(row, desc, first + 1, &isnull);
    value.capacity = isnull ? std::numeric_limits<double>::quiet_NaN() : DatumGetFloat8(capacity);
    const Datum max_reserved = SPI_getbinval(row, desc, first + 2, &isnull);
    value.max_reserved = isnull ? std::numeric_limits<double>::quiet_NaN() : DatumGetFloat8(max_reserved);
    // A NaN stored by hand (the CHECK constraints refuse it; a DBA may have dropped them) is no "NULL".
    if (!isnull && std::isnan(value.max_reserved)) value.max_reserved = -1;  // refused by validation
    return value;
}

bool override_read(Datum limit_name, Datum key, Snapshot snapshot, Override *value) {
    Datum args[] = {limit_name, key};
    run(OverrideStatement::one_key, args, snapshot, 1);
    if (SPI_processed == 0) return false;
    *value = override_from_row(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
    return true;
}

bool override_any(Snapshot snapshot) {
    run(OverrideStatement::any, nullptr, snapshot, 1);
    return SPI_processed > 0;
}

OverrideSet *override_set_read(Datum limit_name, Snapshot snapshot, long max_rows) {
    Datum args[] = {limit_name};
    run(OverrideStatement::of_limit, args, snapshot, max_rows > 0 ? max_rows + 1 : 0);
    auto *set = static_cast<OverrideSet *>(palloc0(sizeof(OverrideSet)));
    const uint64 rows = SPI_processed;
    set->more_rows = max_rows > 0 && rows > static_cast<uint64>(max_rows);
    set->count = static_cast<int>(set->more_rows ? static_cast<uint64>(max_rows) : rows);
    set->keys = static_cast<const char **>(palloc(sizeof(char *) * (set->count + 1)));
    set->key_lengths = static_cast<int *>(palloc(sizeof(int) * (set->count + 1)));
    set->values = static_cast<Override *>(palloc(sizeof(Override) * (set->count + 1)));
    // Sorted through an index array: a row's three fields stay together.
    int *order = static_cast<int *>(palloc(sizeof(int) * (set->count + 1)));
    const char **keys = static_cast<const char **>(palloc(sizeof(char *) * (set->count + 1)));
    int *lengths = static_cast<int *>(palloc(sizeof(int) * (set->count + 1)));
    for (int i = 0; i < set->count; ++i) {
        bool isnull = false;
        const text *key = DatumGetTextPP(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
        keys[i] = VARDATA_ANY(key);
        lengths[i] = VARSIZE_ANY_EXHDR(key);
        order[i] = i;
    }
    // Insertion sort would be quadratic; qsort_arg compares through the index.
    struct Keys {
        const char **keys;
        int *lengths;
    } sort_keys{keys, lengths};
    qsort_arg(
        order, set->count, sizeof(int),
        [](const void *a, const void *b, void *arg) {
            const auto *k = static_cast<const Keys *>(arg);
            const int x = *static_cast<const int *>(a);
            const int y = *static_cast<const int *>(b);
            return compare_keys(k->keys[x], k->lengths[x], k->keys[y], k->lengths[y]);
        },
        &sort_keys);
    for (int i = 0; i < set->count; ++i) {
        set->keys[i] = keys[order[i]];
        set->key_lengths[i] = lengths[order[i]];
        set->values[i] = override_from_row(SPI_tuptable->vals[order[i]], SPI_tuptable->tupdesc, 2);
    }
    return set;
}

const Override *override_set_find(const OverrideSet *set, const char *key, int key_length) {
    if (set == nullptr) return nullptr;
    int low = 0;
    int high = set->count - 1;
    while (low <= high) {
        const int middle = low + (high - low) / 2;
        const int order = compare_keys(set->keys[middle], set->key_lengths[middle], key, key_length);
        if (order == 0) return &set->values[middle];
        if (order < 0)
            low = middle + 1;
        else
            high = middle - 1;
    }
    return nullptr;
}

core::Limit override_set_limit(const OverrideSet *set, const core::Limit &limit, const char *key, int key_length) {
    const Override *value = override_set_find(set, key, key_length);
    return value == nullptr ? limit : apply_override(limit, *value);
}

}  // namespace pg_ratelimit
