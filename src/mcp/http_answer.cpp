#include "mcp/http_answer.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "cairn/utf8.hpp"

namespace cairn::mcp {
namespace {

// What an error quotes of the server's body: enough to recognise the
// server's complaint, not a page of HTML.
constexpr std::size_t kAnswerExcerptBytes = 200;
// What is kept of an error page before quoting it: more than the excerpt,
// so that a secret the server echoed across the excerpt's end is still
// whole, and found, when it is redacted.
constexpr std::size_t kAnswerKeptBytes = 16 * 1024;

std::string answer_media_type(std::string_view content_type) {
  std::string_view type = content_type.substr(0, content_type.find(';'));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
  std::string lower(type);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c); });
  return lower;
}

}  // namespace

bool is_mcp_protocol_header(std::string_view name) {
  static constexpr std::string_view kNames[] = {"content-type", "accept", "mcp-session-id", "mcp-protocol-version",
                                                "last-event-id"};
  return std::any_of(std::begin(kNames), std::end(kNames), [&](std::string_view protocol) {
    return name.size() == protocol.size() && std::equal(name.begin(), name.end(), protocol.begin(), [](char a, char b) {
             return (a >= 'A' && a <= 'Z' ? a - 'A' + 'a' : a) == b;
           });
  });
}

HttpAnswer::HttpAnswer(OnMessage on_message, const Secrets& secrets)
    : on_message_(std::move(on_message)), secrets_(secrets) {}

void HttpAnswer::on_headers(int status, const HttpHeaders& headers) {
  status_ = status;
  if (auto type = find_header(headers, "content-type")) content_type_ = answer_media_type(*type);
  if (!success()) {
    // An error's body is never read as messages, whatever it claims to be:
    // the status already says the request failed.
    body_ = Body::other;
  } else if (content_type_ == "application/json") {
    body_ = Body::json;
  } else if (content_type_ == "text/event-stream") {
    body_ = Body::events;
  } else if (!content_type_.empty()) {
    body_ = Body::other;
  }
}

bool HttpAnswer::on_body(std::string_view chunk) {
  switch (body_) {
    case Body::json:
      if (buffer_.size() + chunk.size() > kMaxMessageBytes) {
        malformed_ = fmt::format("the server's answer is larger than the limit of {} MiB", kMaxMessageBytes >> 20);
        buffer_.clear();
        buffer_.shrink_to_fit();
        return false;
      }
      buffer_.append(chunk);
      return true;
    case Body::events:
      if (auto fed = events_.feed(chunk, [this](const SseEvent& event) { on_event(event); }); !fed) {
        malformed_ = fmt::format("the server's event stream broke the limit of {} MiB a message: {}",
                                 kMaxMessageBytes >> 20, fed.error().message);
        return false;
      }
      return malformed_.empty();
    case Body::none:
    case Body::other:
      buffer_.append(chunk.substr(0, kAnswerKeptBytes - std::min(kAnswerKeptBytes, buffer_.size())));
      return buffer_.size() < kAnswerKeptBytes;
  }
  return false;
}

void HttpAnswer::finish() {
  if (body_ != Body::json || !malformed_.empty()) return;
  Json parsed = Json::parse(buffer_, nullptr, false);
  if (parsed.is_discarded() || !(parsed.is_object() || parsed.is_array())) {
    malformed_ = fmt::format("the server's answer is not a JSON-RPC message: {}", quote(buffer_));
    return;
  }
  buffer_.clear();
  buffer_.shrink_to_fit();
  deliver(std::move(parsed));
}

void HttpAnswer::on_event(const SseEvent& event) {
  // An event without data primes the stream with an ID to resume from
  // (protocol 2025-11-25); other event types are not MCP's.
  if (event.data.empty() || event.event != "message" || !malformed_.empty()) return;
  Json parsed = Json::parse(event.data, nullptr, false);
  if (parsed.is_discarded() || !(parsed.is_object() || parsed.is_array())) {
    malformed_ = fmt::format("an event of the server's stream is not a JSON-RPC message: {}", quote(event.data));
    return;
  }
  deliver(std::move(parsed));
}

void HttpAnswer::deliver(Json message) {
  if (message.is_array()) {
    // A batch (protocol 2025-03-26) is its messages, in order.
    for (Json& item : message) {
      if (!item.is_object()) continue;
      ++delivered_;
      on_message_(std::move(item));
    }
    return;
  }
  ++delivered_;
  on_message_(std::move(message));
}

std::string HttpAnswer::excerpt() const { return quote(buffer_); }

std::string HttpAnswer::quote(std::string_view bytes) const {
  std::string text = secrets_.redact(std::string(bytes.substr(0, kAnswerKeptBytes)));
  bool cut = text.size() > kAnswerExcerptBytes;
  if (cut) text.resize(utf8_floor(text, kAnswerExcerptBytes));
  text = to_valid_utf8(text);
  // One line: the quote ends up inside a sentence of an error message.
  std::replace_if(
      text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r' || c == '\t'; }, ' ');
  text.erase(std::remove_if(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }),
             text.end());
  while (!text.empty() && text.back() == ' ') text.pop_back();
  if (cut) text += "…";
  return text;
}

}  // namespace cairn::mcp
