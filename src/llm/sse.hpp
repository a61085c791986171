// Server-sent events: the framing every streaming LLM API speaks. An
// incremental parser for the WHATWG EventSource format ("text/event-stream",
// HTML Living Standard §9.2.6), fed the response body in whatever pieces the
// network delivers.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "cairn/error.hpp"

namespace cairn {

struct SseEvent {
  std::string event = "message";
  std::string data;  // every data line of the event, joined with "\n"
  // The stream's last event ID when this event was dispatched. As the spec
  // says, an id field lasts beyond its event; absent until one was seen.
  std::optional<std::string> id;
  // A retry field within this event's block (the server's reconnection time).
  std::optional<int> retry_ms;
};

struct SseParserOptions {
  // A line, or an event's data, longer than this is a malformed stream and
  // not something to buffer: a server sending no line break would otherwise
  // grow the buffer until the process dies.
  std::size_t max_line_bytes = std::size_t{16} << 20;
};

// Bytes are passed through as they are: the spec decodes UTF-8 with
// replacement, which the JSON payloads downstream check more strictly anyway.
class SseParser {
 public:
  explicit SseParser(SseParserOptions options = {}) : options_(options) {}

  // Parses `bytes`, the next piece of the stream, and calls `on_event` for
  // every event it completes. A piece may end anywhere, even between the CR
  // and LF of one line break. Fails with "sse_line_too_long" when a line or
  // an event exceeds the limit; the parser then stays failed.
  Status feed(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event);

  // The last event ID and reconnection time the stream has set, for a
  // client that reconnects with Last-Event-ID.
  const std::optional<std::string>& last_event_id() const { return last_event_id_; }
  std::optional<int> reconnection_time_ms() const { return reconnection_time_ms_; }

 private:
  Status feed_lines(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event);
  Status process_line(std::string_view line, const std::function<void(const SseEvent&)>& on_event);
  void dispatch(const std::function<void(const SseEvent&)>& on_event);
  Status too_long(std::string_view what);

  SseParserOptions options_;
  std::string bom_candidate_;     // the stream's first bytes while they may still be a BOM
  bool start_checked_ = false;    // the BOM check is done
  bool skip_lf_ = false;          // the last piece ended with CR: an LF next is its pair
  std::string line_;              // a line begun in an earlier piece
  std::string data_;              // data lines so far, each followed by "\n"
  std::string event_type_;
  std::optional<int> event_retry_ms_;
  std::optional<std::string> last_event_id_;
  std::optional<int> reconnection_time_ms_;
  std::optional<Error> failed_;
};

}  // namespace cairn
