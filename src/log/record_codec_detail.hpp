// The harness-record half of the record codec (harness_codec.cpp), used by the
// record envelope in record_codec.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/log/record.hpp"

namespace cairn::detail {

// {"type","seq"?,"id","ref","timestamp", body fields…, extra…}
Json encode_harness(const HarnessRecord& record, std::optional<std::int64_t> seq);
// `type` is a harness type; `json` is an object (checked by the caller).
Result<HarnessRecord> decode_harness(const Json& json, RecordType type);

class ObjectReader;
// A placeholder's damage report: {"was"?, "reason", "bytes", "openRuns",
// "original"?, "repairedAt"}, shared by damaged_entry and damaged.
void encode_damage(Json& out, const DamageReport& damage);
DamageReport decode_damage(ObjectReader& r);
// An array of strings at `key` (activeToolNames, choices); an optional one
// that is absent is empty.
std::vector<std::string> read_strings(ObjectReader& r, std::string_view key, bool required = true);

}  // namespace cairn::detail
