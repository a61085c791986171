// The JSON value type used across cairn. Ordered, so records keep the field
// order they were written with (a pi file re-encodes to the same line).
#pragma once

#include <nlohmann/json.hpp>

namespace cairn {

using Json = nlohmann::ordered_json;

// True when the value holds no NaN or infinity anywhere: such numbers have no
// JSON spelling, so a record holding one could not be stored losslessly.
bool is_lossless(const Json& value);

// An enum whose JSON is its spelling, to_string(value), where nlohmann alone
// would write its number: each closed set the log and the API name opts in
// beside its declaration (kSpelledInJson<E> = true). Reading one back is its
// parse_* function's job, which can refuse a value, so from_json is deleted.
template <class E>
inline constexpr bool kSpelledInJson = false;

template <class E>
  requires kSpelledInJson<E>
void to_json(Json& json, E value) {
  json = to_string(value);
}

template <class E>
  requires kSpelledInJson<E>
void from_json(const Json& json, E& value) = delete;

}  // namespace cairn
