// The JSON value type used across cairn. Ordered, so records keep the field
// order they were written with (a pi file re-encodes to the same line).
#pragma once

#include <nlohmann/json.hpp>

namespace cairn {

using Json = nlohmann::ordered_json;

// True when the value holds no NaN or infinity anywhere: such numbers have no
// JSON spelling, so a record holding one could not be stored losslessly.
bool is_lossless(const Json& value);

}  // namespace cairn
