// Arrays as single statement parameters, in PostgreSQL's binary array format (what array_recv reads).
//
// libpqxx 6.4 cannot pass a std::vector as one parameter (make_dynamic_params spreads it over $1..$n,
// so the statement's text would change with the batch size). A text-format array literal would need
// quoting and backslash escapes applied in the client encoding, which is wrong for encodings whose
// multibyte characters contain the byte '\' (SJIS, BIG5, GBK): the escape would split a character. The
// binary format needs no escaping at all: each element travels as its length and its bytes, exactly as
// given, so commas, quotes, braces, backslashes, "NULL", empty strings and any encoding arrive unchanged
// (the server converts text elements from the client encoding like any text parameter, and rejects
// invalid bytes with 22021). float8 elements travel as their IEEE 754 bits: no rounding through text.
//
// The functions return the bytes; they are sent as a binary parameter (compat::binary_param: libpqxx's
// binarystring or bytes), so the statement must give the parameter its type ($1::text[], $1::float8[]):
// array_recv checks the element type it is sent.
#pragma once

#include <string>
#include <vector>

namespace pg_ratelimit::detail {

// A one-dimensional text[] of values (no NULL elements); an empty vector is the empty array. Throws
// std::length_error beyond what the server accepts in one parameter (1 GB).
std::string text_array_param(const std::vector<std::string> &values);

// The same for float8[]. Every double is sent as is, NaN and infinities included (the server judges them).
std::string float8_array_param(const std::vector<double> &values);

}  // namespace pg_ratelimit::detail
