#include "llm/sse.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace cairn {
namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

Status SseParser::feed(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event) {
  if (failed_) return std::unexpected(*failed_);
  if (!start_checked_) {
    // One BOM may open the stream; it can arrive split over several pieces,
    // so the first bytes wait here until they are known to be one or not.
    while (!bytes.empty() && bom_candidate_.size() < kBom.size()) {
      bom_candidate_ += bytes.front();
      bytes.remove_prefix(1);
      if (!kBom.starts_with(bom_candidate_)) break;
    }
    if (bom_candidate_.size() < kBom.size() && kBom.starts_with(bom_candidate_)) return {};
    start_checked_ = true;
    std::string head = std::move(bom_candidate_);
    if (head == kBom) head.clear();
    if (auto status = feed_lines(head, on_event); !status) return status;
  }
  return feed_lines(bytes, on_event);
}

Status SseParser::feed_lines(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event) {
  while (!bytes.empty()) {
    if (skip_lf_) {
      skip_lf_ = false;
      if (bytes.front() == '\n') {
        bytes.remove_prefix(1);
        continue;
      }
    }
    std::size_t end = bytes.find_first_of("\r\n");
    if (end == std::string_view::npos) {
      if (line_.size() + bytes.size() > options_.max_line_bytes) return too_long("line");
      line_.append(bytes);
      return {};
    }
    std::string_view piece = bytes.substr(0, end);
    std::size_t consumed = end + 1;
    if (bytes[end] == '\r') {
      // CRLF is one line break, CR alone is another; which one it is may only
      // be known from the next piece.
      if (consumed == bytes.size()) {
        skip_lf_ = true;
      } else if (bytes[consumed] == '\n') {
        ++consumed;
      }
    }
    bytes.remove_prefix(consumed);

    Status status;
    if (line_.empty()) {
      // The common case: the whole line is in this piece and is not copied.
      status = process_line(piece, on_event);
    } else {
      if (line_.size() + piece.size() > options_.max_line_bytes) return too_long("line");
      line_.append(piece);
      status = process_line(line_, on_event);
      line_.clear();
    }
    if (!status) return status;
  }
  return {};
}

Status SseParser::process_line(std::string_view line, const std::function<void(const SseEvent&)>& on_event) {
  if (line.empty()) {
    dispatch(on_event);
    return {};
  }
  if (line.front() == ':') return {};  // a comment, often a keep-alive

  std::size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value;
  if (colon != std::string_view::npos) {
    value = line.substr(colon + 1);
    if (value.starts_with(' ')) value.remove_prefix(1);
  }

  if (field == "event") {
    event_type_.assign(value);
  } else if (field == "data") {
    // Many short data lines must not get around the limit a long one meets.
    if (data_.size() + value.size() + 1 > options_.max_line_bytes) return too_long("event");
    data_.append(value);
    data_ += '\n';
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) last_event_id_.emplace(value);
  } else if (field == "retry") {
    int ms = 0;
    auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), ms);
    if (all_digits(value) && error == std::errc{} && end == value.data() + value.size()) {
      reconnection_time_ms_ = ms;
      event_retry_ms_ = ms;
    }
  }
  // Any other field is ignored, as the spec says.
  return {};
}

void SseParser::dispatch(const std::function<void(const SseEvent&)>& on_event) {
  if (data_.empty()) {
    // A block without data dispatches nothing (but its id and retry stay set).
    event_type_.clear();
    event_retry_ms_.reset();
    return;
  }
  data_.pop_back();  // the "\n" after the last data line
  SseEvent event;
  if (!event_type_.empty()) event.event = std::move(event_type_);
  event.data = std::move(data_);
  event.id = last_event_id_;
  event.retry_ms = event_retry_ms_;
  // The state is clean before the callback runs, whatever it does.
  data_.clear();
  event_type_.clear();
  event_retry_ms_.reset();
  on_event(event);
}

Status SseParser::too_long(std::string_view what) {
  failed_ = Error{Errc::sse_line_too_long,
                  fmt::format("a server-sent events {} is longer than {} bytes", what, options_.max_line_bytes)};
  line_.clear();
  line_.shrink_to_fit();
  data_.clear();
  data_.shrink_to_fit();
  return std::unexpected(*failed_);
}

}  // namespace cairn
