// The harness-record half of the record codec (harness_codec.cpp), used by the
// record envelope in record_codec.cpp, and the table both halves share.
#pragma once

#include <cstdint>
#include <optional>

#include "cairn/log/record.hpp"
#include "field_table.hpp"

namespace cairn::detail {

// {"type","seq"?,"id","ref","timestamp", body fields…, extra…}
Json encode_harness(const HarnessRecord& record, std::optional<std::int64_t> seq);
// `type` is a harness type; `json` is an object (checked by the caller).
Result<HarnessRecord> decode_harness(const Json& json, RecordType type);

// A placeholder's damage report, in the placeholder's own object: damaged_entry
// and damaged alike.
void write_was(Json& out, const DamageReport& damage);
void read_was(ObjectReader& r, DamageReport& damage);
template <>
inline constexpr auto kFields<DamageReport> = std::tuple{
    ByHand<DamageReport>{write_was, read_was},
    field("reason", &DamageReport::reason),
    field("bytes", &DamageReport::bytes),
    field("openRuns", &DamageReport::open_runs),
    field("original", &DamageReport::original),
    field("repairedAt", &DamageReport::repaired_at),
};

}  // namespace cairn::detail
