// The server's JSON spellings of the harness's values (results, statuses,
// snapshots), camelCase as the log and events spell theirs.
#pragma once

#include "cairn/harness/harness.hpp"
#include "cairn/json.hpp"

namespace cairn::serve {

Json to_json(const PendingInput& input);
Json to_json(const SuspendedOperation& operation);
Json to_json(const RefStatus& status, const std::vector<SuspendedOperation>& suspended);
Json to_json(const RunResult& result);
Json to_json(const AbortResult& result);
// `transcript_limit`: only the newest that many entries of the transcript,
// and `transcriptOmitted`, how many older ones were left out (a client reads
// them with GET …/refs/{ref}/branch when it needs them).
Json to_json(const RefSnapshot& snapshot, std::optional<std::size_t> transcript_limit = std::nullopt);
Json to_json(const SessionSnapshot& snapshot);
Json to_json(const Error& error);
Json messages_json(const std::vector<AgentMessage>& messages);

}  // namespace cairn::serve
