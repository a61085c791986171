// Query shapes shared by the session index and the Session API.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cairn/log/record.hpp"

namespace cairn {

enum class Order { newest_first, oldest_first };

// A page continues where the previous one stopped. Cursors are opaque strings;
// they stay valid while the session only grows.
struct EntryQuery {
  std::optional<RecordType> type;         // tree entry types only; absent: every entry
  std::optional<std::string> custom_type;  // for custom / custom_message entries
  Order order = Order::newest_first;
  std::optional<std::size_t> limit;
  std::optional<std::string> cursor;
};

// Where a branch scan starts and stops. Default: the whole path, leaf to root.
struct BranchBounds {
  std::optional<std::string> start;  // leaf end of the path; default the ref's leaf
  std::optional<RecordType> stop_at_type;  // inclusive
  std::optional<std::string> stop_at_id;   // inclusive
};

template <class T>
struct Page {
  std::vector<T> items;
  std::optional<std::string> next_cursor;  // absent: nothing more
};

struct HarnessQuery {
  std::optional<RecordType> type;
  std::optional<std::string> ref;
  std::optional<std::string> run_id;
  std::optional<std::int64_t> after_seq;
  Order order = Order::oldest_first;
  std::optional<std::size_t> limit;
  std::optional<std::string> cursor;
};

// One line of the log exactly as stored.
struct LogLine {
  std::int64_t seq = 0;
  RecordType type = RecordType::message;
  std::string json;
};

struct SessionStats {
  std::int64_t records = 0;
  std::int64_t tree_entries = 0;
  std::int64_t harness_records = 0;
  std::int64_t ignorable_records = 0;
  std::int64_t bytes = 0;  // sum of the stored lines, without newlines
  std::map<std::string, std::int64_t> by_type;
  std::int64_t refs = 0;
  std::int64_t open_operations = 0;
};

struct RefInfo {
  std::string name;
  std::optional<std::string> leaf_id;
  std::optional<std::string> open_operation;  // id of its operation_started, if open
};

// What a request would carry, per pi's buildSessionContext: the messages on
// the branch (compaction and branch summaries applied), and the model and
// thinking level in force at its leaf.
struct SessionContext {
  std::vector<AgentMessage> messages;
  std::vector<std::string> entry_ids;  // the entry each message came from, same order
  ThinkingLevel thinking_level = ThinkingLevel::off;
  bool has_thinking_level = false;  // false: the branch has no thinking_level_change
  std::optional<ModelRef> model;
  std::optional<std::vector<std::string>> active_tool_names;
};

// Receives a context's messages one at a time, in order, rather than held
// (Session::stream_context, for a reader that prints or sends a long context).
using ContextSink = std::function<void(AgentMessage&& message, std::string&& entry_id)>;

}  // namespace cairn
