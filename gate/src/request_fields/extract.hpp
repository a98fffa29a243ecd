// Evaluating a request field on a request.
#pragma once

#include <optional>
#include <string>

#include "request_fields/json_path.hpp"
#include "request_fields/request_view.hpp"

namespace gate::request_fields {

// The field's raw value, or nothing when the request does not have it (no such header, cookie, parameter
// or claim; a claim that is an object, an array or null; no verified token).
std::optional<std::string> extract(const FieldPath &path, const RequestView &request);

}  // namespace gate::request_fields
