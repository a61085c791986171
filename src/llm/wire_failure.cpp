// Failure classification for the wire providers: what the retry policy and
// compaction need to know about an HTTP status, a transport failure or an
// error inside a stream, and how long the server asked us to wait.

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <ctime>

#include <fmt/format.h>

#include "wire_support.hpp"

namespace cairn::wire {
namespace {

using SystemClock = std::chrono::system_clock;

// Long enough for any server's explanation, short enough for a log line.
constexpr std::size_t kMaxErrorText = 2000;

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) {
    return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  });
  return out;
}

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

std::string_view trim_space(std::string_view text) {
  while (!text.empty() && std::string_view(" \t\r\n").find(text.front()) != std::string_view::npos) text.remove_prefix(1);
  while (!text.empty() && std::string_view(" \t\r\n").find(text.back()) != std::string_view::npos) text.remove_suffix(1);
  return text;
}

// A number of (possibly fractional) units, the whole text.
std::optional<double> parse_number(std::string_view text) {
  text = trim_space(text);
  if (text.empty()) return std::nullopt;
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::int64_t to_ms(double value) {
  if (value <= 0) return 0;
  // A day is more than any server means; it also keeps the cast defined.
  return static_cast<std::int64_t>(std::ceil(std::min(value, 86400000.0)));
}

std::int64_t until(SystemClock::time_point when, SystemClock::time_point now) {
  return std::max<std::int64_t>(0, std::chrono::ceil<std::chrono::milliseconds>(when - now).count());
}

std::optional<int> digits(std::string_view text) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<SystemClock::time_point> from_utc(int year, int month, int day, int hour, int minute, double second) {
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second < 0 || second >= 61) {
    return std::nullopt;
  }
  std::tm utc{};
  utc.tm_year = year - 1900;
  utc.tm_mon = month - 1;
  utc.tm_mday = day;
  utc.tm_hour = hour;
  utc.tm_min = minute;
  std::time_t seconds = timegm(&utc);
  if (seconds == static_cast<std::time_t>(-1)) return std::nullopt;
  return SystemClock::from_time_t(seconds) +
         std::chrono::duration_cast<SystemClock::duration>(std::chrono::duration<double>(second));
}

// RFC 9110's preferred HTTP date: "Sun, 06 Nov 1994 08:49:37 GMT".
std::optional<SystemClock::time_point> parse_http_date(std::string_view text) {
  text = trim_space(text);
  if (text.size() != 29 || text[3] != ',' || text.substr(25) != " GMT") return std::nullopt;
  static constexpr std::array<std::string_view, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                               "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  auto month = std::find(kMonths.begin(), kMonths.end(), text.substr(8, 3));
  auto day = digits(text.substr(5, 2));
  auto year = digits(text.substr(12, 4));
  auto hour = digits(text.substr(17, 2));
  auto minute = digits(text.substr(20, 2));
  auto second = digits(text.substr(23, 2));
  if (month == kMonths.end() || !day || !year || !hour || !minute || !second || text[19] != ':' || text[22] != ':') {
    return std::nullopt;
  }
  return from_utc(*year, static_cast<int>(month - kMonths.begin()) + 1, *day, *hour, *minute, *second);
}

// RFC 3339, as Anthropic's reset headers: "2025-01-31T12:00:30Z",
// fractional seconds and numeric offsets allowed.
std::optional<SystemClock::time_point> parse_rfc3339(std::string_view text) {
  text = trim_space(text);
  if (text.size() < 20 || text[4] != '-' || text[7] != '-' || (text[10] != 'T' && text[10] != 't' && text[10] != ' ') ||
      text[13] != ':' || text[16] != ':') {
    return std::nullopt;
  }
  auto year = digits(text.substr(0, 4));
  auto month = digits(text.substr(5, 2));
  auto day = digits(text.substr(8, 2));
  auto hour = digits(text.substr(11, 2));
  auto minute = digits(text.substr(14, 2));
  std::size_t zone = text.find_first_of("Zz+-", 17);
  if (!year || !month || !day || !hour || !minute || zone == std::string_view::npos) return std::nullopt;
  auto second = parse_number(text.substr(17, zone - 17));
  if (!second) return std::nullopt;
  auto when = from_utc(*year, *month, *day, *hour, *minute, *second);
  if (!when) return std::nullopt;
  std::string_view offset = text.substr(zone);
  if (offset == "Z" || offset == "z") return when;
  if (offset.size() != 6 || offset[3] != ':') return std::nullopt;
  auto offset_hours = digits(offset.substr(1, 2));
  auto offset_minutes = digits(offset.substr(4, 2));
  if (!offset_hours || !offset_minutes) return std::nullopt;
  auto shift = std::chrono::hours(*offset_hours) + std::chrono::minutes(*offset_minutes);
  return offset[0] == '+' ? *when - shift : *when + shift;
}

// A Go duration, as OpenAI's x-ratelimit-reset-* headers: "1s", "6m0s",
// "20ms", "1h2m3.5s".
std::optional<double> parse_duration_ms(std::string_view text) {
  text = trim_space(text);
  if (text.empty()) return std::nullopt;
  double total = 0;
  while (!text.empty()) {
    std::size_t unit = text.find_first_not_of("0123456789.");
    if (unit == 0) return std::nullopt;
    auto amount = parse_number(text.substr(0, unit));
    if (!amount) return std::nullopt;
    text.remove_prefix(unit == std::string_view::npos ? text.size() : unit);
    std::size_t unit_end = text.find_first_of("0123456789.");
    std::string_view name = text.substr(0, unit_end);
    text.remove_prefix(name.size());
    if (name == "h") {
      total += *amount * 3600000;
    } else if (name == "m") {
      total += *amount * 60000;
    } else if (name == "s" || name.empty()) {
      total += *amount * 1000;  // a bare number is seconds
    } else if (name == "ms") {
      total += *amount;
    } else if (name == "us" || name == "\xC2\xB5s") {
      total += *amount / 1000;
    } else if (name == "ns") {
      total += *amount / 1000000;
    } else {
      return std::nullopt;
    }
  }
  return total;
}

// The providers' own rate-limit windows: a reset header, and the header
// saying how much of that limit is left.
struct ResetHeader {
  std::string_view reset;
  std::string_view remaining;
  bool is_date;  // RFC 3339 (Anthropic) rather than a duration (OpenAI)
};
constexpr std::array<ResetHeader, 6> kResetHeaders = {{
    {"x-ratelimit-reset-requests", "x-ratelimit-remaining-requests", false},
    {"x-ratelimit-reset-tokens", "x-ratelimit-remaining-tokens", false},
    {"anthropic-ratelimit-requests-reset", "anthropic-ratelimit-requests-remaining", true},
    {"anthropic-ratelimit-tokens-reset", "anthropic-ratelimit-tokens-remaining", true},
    {"anthropic-ratelimit-input-tokens-reset", "anthropic-ratelimit-input-tokens-remaining", true},
    {"anthropic-ratelimit-output-tokens-reset", "anthropic-ratelimit-output-tokens-remaining", true},
}};

// The wait the reset headers imply: the longest among the exhausted limits;
// if none says it is exhausted (the request needed more than is left), the
// longest of all, after which every limit is whole again.
std::optional<std::int64_t> reset_delay_ms(const HttpHeaders& headers, SystemClock::time_point now) {
  std::optional<std::int64_t> exhausted, any;
  for (const auto& spec : kResetHeaders) {
    auto value = find_header(headers, spec.reset);
    if (!value) continue;
    std::optional<std::int64_t> delay;
    if (spec.is_date) {
      if (auto when = parse_rfc3339(*value)) delay = until(*when, now);
    } else if (auto ms = parse_duration_ms(*value)) {
      delay = to_ms(*ms);
    }
    if (!delay) continue;
    any = std::max(any.value_or(0), *delay);
    auto remaining = find_header(headers, spec.remaining);
    if (remaining && parse_number(*remaining) == 0.0) exhausted = std::max(exhausted.value_or(0), *delay);
  }
  return exhausted ? exhausted : any;
}

// What a server's error body says: its message and its type or code.
struct ServerError {
  std::string text;
  std::string kind;
};

std::string json_scalar(const Json* value) {
  if (value == nullptr) return {};
  if (value->is_string()) return value->get<std::string>();
  if (value->is_number()) return value->dump();
  return {};
}

ServerError read_error_body(std::string_view body) {
  ServerError out;
  Json json = Json::parse(body, nullptr, false);
  if (json.is_array() && !json.empty()) json = json.front();  // some servers wrap the error in a list
  if (!json.is_discarded() && json.is_object()) {
    const Json* error = field(json, "error");
    if (error != nullptr && error->is_object()) {
      out.text = json_scalar(field(*error, "message"));
      out.kind = json_scalar(field(*error, "code"));
      if (out.kind.empty()) out.kind = json_scalar(field(*error, "type"));
      // OpenRouter passes the upstream provider's own words along here.
      if (const Json* metadata = field(*error, "metadata"); metadata != nullptr) {
        std::string raw = json_scalar(field(*metadata, "raw"));
        if (!raw.empty()) out.text += (out.text.empty() ? "" : " ") + raw;
      }
    } else if (error != nullptr && error->is_string()) {
      out.text = error->get<std::string>();
    }
    if (out.text.empty()) out.text = json_scalar(field(json, "message"));
    if (out.text.empty()) out.text = json_scalar(field(json, "detail"));
    if (out.kind.empty()) out.kind = json_scalar(field(json, "code"));
    if (out.text.empty() && out.kind.empty()) out.text = std::string(trim_space(body));
  } else {
    out.text = std::string(trim_space(body));
  }
  return out;
}

// Server text, made fit for an error message: valid UTF-8, bounded.
std::string bounded(std::string_view text) {
  std::string clean = to_valid_utf8(trim_space(text));
  if (clean.size() <= kMaxErrorText) return clean;
  clean.resize(utf8_floor(clean, kMaxErrorText));
  return clean + "…";
}

std::string_view status_phrase(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 422: return "Unprocessable Content";
    case 425: return "Too Early";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 529: return "Overloaded";
    default: return "";
  }
}

}  // namespace

bool is_context_overflow(std::string_view text) {
  static constexpr std::array<std::string_view, 20> kWordings = {
      "context_length_exceeded",               // OpenAI's error code
      "context length exceeded",               //
      "maximum context length",                // OpenAI, vLLM, OpenRouter, Mistral
      "exceeds the context window",            // OpenAI (both APIs)
      "prompt is too long",                    // Anthropic
      "input is too long for requested model", // Amazon Bedrock
      "maximum prompt length is",              // xAI
      "reduce the length of the messages",     // Groq
      "exceeds the available context size",    // llama.cpp server
      "exceed_context_size",                   // llama.cpp server's error type
      "greater than the context length",       // LM Studio
      "exceeds the context length",            // Ollama and others
      "exceeds context length",                //
      "context window exceeds limit",          // MiniMax
      "exceeded model token limit",            // Kimi
      "token limit exceeded",                  //
      "too many tokens",                       //
      "exceeds the maximum number of tokens",  // Gemini
      "input length and `max_tokens` exceed context limit",  // Anthropic, with max_tokens
      "exceeds the limit of",                  // GitHub Copilot ("prompt token count of N exceeds the limit of M")
  };
  std::string lowered = lower(text);
  for (std::string_view wording : kWordings) {
    if (contains(lowered, wording)) {
      // Copilot's wording is only about tokens when it says so.
      if (wording == "exceeds the limit of" && !contains(lowered, "token")) continue;
      return true;
    }
  }
  return false;
}

std::optional<std::int64_t> retry_delay_ms(int status, const HttpHeaders& headers, SystemClock::time_point now) {
  if (auto ms = find_header(headers, "retry-after-ms")) {
    if (auto value = parse_number(*ms)) return to_ms(*value);
  }
  if (auto after = find_header(headers, "retry-after")) {
    if (auto seconds = parse_number(*after)) return to_ms(*seconds * 1000);
    if (auto when = parse_http_date(*after)) return until(*when, now);
  }
  if (status == 429) return reset_delay_ms(headers, now);
  return std::nullopt;
}

Failure classify_status(int status, const HttpHeaders& headers, std::string_view body) {
  return classify_status(status, headers, body, SystemClock::now());
}

Failure classify_status(int status, const HttpHeaders& headers, std::string_view body, SystemClock::time_point now) {
  ServerError error = read_error_body(body);
  Failure failure;
  failure.status = status;
  std::string text = bounded(error.text);
  if (text.empty()) text = std::string(status_phrase(status));
  failure.message = fmt::format("HTTP {}", status);
  if (!error.kind.empty()) failure.message += fmt::format(" ({})", bounded(error.kind));
  if (!text.empty()) failure.message += ": " + text;

  // A rate limit is never an overflow, whatever its wording ("too many
  // tokens per minute").
  failure.context_overflow = status != 429 && (is_context_overflow(error.kind) || is_context_overflow(error.text));
  failure.retryable = !failure.context_overflow &&
                      (status == 408 || status == 409 || status == 425 || status == 429 || (status >= 500 && status <= 599));
  if (status == 429 && lower(error.kind) == "insufficient_quota") failure.retryable = false;
  if (failure.retryable) failure.retry_after_ms = retry_delay_ms(status, headers, now);
  return failure;
}

Failure classify_transport(const HttpResult& result) {
  Failure failure;
  failure.status = result.status;
  std::string detail = to_valid_utf8(result.message);
  switch (result.failure) {
    case HttpFailure::connect_failed:
      failure.retryable = true;
      failure.message = "could not reach the server: " + detail;
      break;
    case HttpFailure::connection_reset:
      failure.retryable = true;
      failure.message = "the connection broke before the response ended: " + detail;
      break;
    case HttpFailure::idle_timeout:
      failure.retryable = true;
      failure.message = "the stream stalled: " + detail;
      break;
    case HttpFailure::cancelled:
      failure.message = "aborted";
      break;
    case HttpFailure::none:
    case HttpFailure::other:
      failure.message = "the request failed: " + detail;
      break;
  }
  return failure;
}

Failure classify_stream_error(std::string_view type, std::string_view message) {
  Failure failure;
  std::string kind = lower(type);
  std::string words = lower(message);
  bool rate_limited = contains(kind, "rate_limit") || contains(words, "rate limit");
  failure.context_overflow = !rate_limited && (is_context_overflow(kind) || is_context_overflow(words));
  // Some servers give an HTTP status as the error's code.
  std::optional<int> status = digits(kind);
  if (status == 429) rate_limited = true;
  bool transient = rate_limited || contains(kind, "overloaded") || contains(words, "overloaded") ||
                   (status && (*status == 408 || *status == 409 || *status == 425 || (*status >= 500 && *status <= 599))) ||
                   kind == "server_error" || kind == "api_error" || contains(kind, "internal") ||
                   contains(kind, "unavailable") || contains(kind, "timeout") || contains(words, "try again");
  failure.retryable = transient && !failure.context_overflow && kind != "insufficient_quota";
  std::string text = bounded(message);
  if (text.empty()) text = "the provider reported an error";
  failure.message = type.empty() ? text : fmt::format("{}: {}", bounded(type), text);
  return failure;
}

}  // namespace cairn::wire
