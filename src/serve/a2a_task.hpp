// An A2A task read from a session's log: a task is one run operation of a
// ref, from its operation_started to its operation_finished. What the task
// says (state, history, answer) and the events a stream of it sends are
// both folded from the same records in seq order, so that a stream read
// from the log after a cut and one that watched the run live send the same
// events with the same cursors.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cairn/json.hpp"
#include "cairn/store/session.hpp"

namespace cairn::serve {

// "SESSION/REF/RUN"; the context is "SESSION/REF".
struct TaskId {
  std::string session, ref, run;
  std::string context() const { return session + "/" + ref; }
  std::string id() const { return context() + "/" + run; }
};

// What a task's records say, folded in order.
struct TaskView {
  TaskId id;
  std::int64_t start_seq = -1;  // its operation_started
  std::int64_t last_seq = -1;   // the newest record folded
  std::string state = "TASK_STATE_WORKING";
  std::string timestamp;
  std::string prompt;
  std::string prompt_id;
  std::vector<std::pair<std::string, std::string>> answers;  // assistant texts: entry id, text
  std::map<std::string, Json> pending;                       // input requests not yet resolved, by id
  std::string error;
  std::string last_text;            // of the last assistant message folded
  Json last_calls = Json::array();  // its tool calls
  bool finished = false;

  bool terminal() const { return finished; }
  bool interrupted() const { return !finished && !pending.empty(); }
  // One record of the log after start_seq; returns whether it was the task's.
  bool fold(const Record& record);
  std::string final_text() const { return answers.empty() ? std::string() : answers.back().second; }
  Json status() const;
  Json artifacts() const;
  // The Task object; its metadata's cairn.snapshotSeq is the newest record
  // it reflects.
  Json task(std::optional<std::int64_t> history_length) const;
};

// A log line as its record; none when it cannot be read (a damaged line
// tells a task nothing).
std::optional<Record> decode_line(const LogLine& line);

// The task's records from its operation_started up to `until` (inclusive;
// none: to its end, or the log's). Nullopt when `id` names no run of its
// ref; an error when the log cannot be read.
Result<std::optional<TaskView>> read_task(const Session& session, const TaskId& id,
                                          std::optional<std::int64_t> until = std::nullopt);

// A2A message objects as the task's events carry them.
Json agent_message(const TaskId& task, std::string message_id, const std::string& text, const Json& data = nullptr);

// The events of a task's stream, decided record by record. Each update
// announces exactly one record: its seq is the update's
// metadata["cairn.seq"] and its SSE id. An assistant message with tool
// calls is a status update; one with text only may be the task's answer,
// which is not known until the next record of the task: it is announced
// then, as the artifact update when the task completes with it, else as a
// status update. An input request is a status update (the stream ends
// there), the answer to the last one another; operation_finished is the
// final status. An answer announced otherwise (text beside tool calls) is
// restated at the end by an artifact that carries no seq and no id.
class TaskEvents {
 public:
  // `view`: the task folded up to `cursor` (the client has everything up to
  // it); `rpc_id`: the JSON-RPC request's id, when the frames answer one.
  TaskEvents(TaskView view, std::int64_t cursor, std::optional<Json> rpc_id);

  // The next record of the session (any ref: others are skipped); appends
  // the SSE frames it decides to `out`.
  void feed(const Record& record, std::string& out);
  bool done() const { return done_; }
  const TaskView& view() const { return view_; }

  // One StreamResponse as an SSE frame.
  std::string frame(const Json& response, std::optional<std::int64_t> seq) const;

 private:
  struct HeldAnswer {
    std::int64_t seq;
    std::string entry_id;
    std::string text;
  };
  void emit_status(const Json& status, std::optional<std::int64_t> seq, std::string& out) const;
  void release_held(std::string& out);

  TaskView view_;
  std::int64_t cursor_;
  std::optional<Json> rpc_id_;
  std::optional<HeldAnswer> held_;
  bool done_ = false;
};

}  // namespace cairn::serve
