// What every provider that speaks a real wire format shares: reading tool
// arguments as they stream in, classifying failures for the retry decision
// (DESIGN.md, Providers), driving one server-sent-events request, keeping
// credentials out of error messages, and the provider-neutral preparation of
// a conversation for replay.
//
// Internal to the llm layer: the public headers are the providers'.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/json.hpp"
#include "cairn/llm/http.hpp"
#include "cairn/llm/provider.hpp"
#include "llm/sse.hpp"
#include "cairn/utf8.hpp"

namespace cairn::wire {

// --- Partial JSON --------------------------------------------------------

// Parses streamed, possibly incomplete JSON (tool-call arguments as they
// arrive): the longest usable prefix, closing open strings, arrays and
// objects. A key whose value has not begun, a number that is not yet one
// ("1.", "-") and a literal cut short ("tr") are left out, as is anything
// after the first byte that no JSON could continue with. Strings never end
// inside an escape or a UTF-8 sequence, so the result always serialises.
// Containers nested deeper than kMaxToolArgumentDepth are left out. An empty
// object when nothing is usable. Never throws.
Json parse_partial_json(std::string_view text);

// Whether the arrays and objects of `text` (JSON, or the start of it) nest
// deeper than `limit`, found by one scan that builds nothing.
bool nests_deeper_than(std::string_view text, int limit);

// --- Failures ------------------------------------------------------------

struct Failure {
  std::string message;  // for AssistantMessage::error_message; never contains a credential
  bool retryable = false;
  std::optional<std::int64_t> retry_after_ms;
  bool context_overflow = false;
  int status = 0;  // HTTP status, 0 when none
};

// An HTTP error status with its headers and (JSON or text) body.
// 408/409/425/429/5xx (529 included) are retryable, the rest not; a 429 whose
// error code is "insufficient_quota" is a billing failure that no wait
// repairs and is not. Retry-After (seconds or an HTTP date), retry-after-ms
// and, on a 429, the providers' own reset headers (OpenAI's
// x-ratelimit-reset-*, Anthropic's anthropic-ratelimit-*-reset) become
// retry_after_ms. A context overflow sets context_overflow and is never
// retryable. The message names the status and the server's error text.
Failure classify_status(int status, const HttpHeaders& headers, std::string_view body);
// The same at a given time, for dates in the headers.
Failure classify_status(int status, const HttpHeaders& headers, std::string_view body,
                        std::chrono::system_clock::time_point now);

// How long the response's headers ask a client to wait: retry-after-ms, then
// Retry-After; on a 429 also the providers' reset headers, the longest of
// those whose limit is exhausted. Nullopt when they say nothing usable.
std::optional<std::int64_t> retry_delay_ms(int status, const HttpHeaders& headers,
                                           std::chrono::system_clock::time_point now);

// A transport failure: connect_failed / connection_reset / idle_timeout are
// retryable, cancelled and other are not.
Failure classify_transport(const HttpResult& result);

// An error reported inside a stream (an SSE error event, an error object in
// a chunk, a failed response): `type` is its type or code. Overloaded, rate
// limit and server-side kinds are retryable; a context overflow is
// recognised and is not.
Failure classify_stream_error(std::string_view type, std::string_view message);

// True when `text` (an error message or body) says the request did not fit
// the model's context window, in any of the wordings the providers and the
// common compatible servers use.
bool is_context_overflow(std::string_view text);

// --- One streamed request ------------------------------------------------

struct [[nodiscard]] SseOutcome {
  HttpResult http;
  // The body of a response that was not an event stream (up to 64 KiB; the
  // transfer stops there): an error status's, or a 2xx body that is not
  // server-sent events (not_event_stream).
  std::string error_body;
  // A 2xx response whose body does not begin as an event stream does (a
  // proxy's HTML page, a JSON answer, garbage), whatever its Content-Type.
  bool not_event_stream = false;
  bool stopped_by_handler = false;  // on_event returned false
  std::optional<Error> sse_error;   // the stream broke the SSE format (a line too long)
};

// Sends `request`; on a 2xx event stream feeds each SSE event to on_event,
// which returns false to stop the transfer (a malformed chunk, or the last
// event a provider needs). Otherwise collects the body as error_body. A 2xx
// body is an event stream when its first line (after a BOM and blank lines)
// is an SSE field or comment; its Content-Type is not trusted either way, as
// proxies relabel streams. A stop on `cancel` ends the transfer within
// milliseconds (http.failure cancelled).
SseOutcome stream_sse(const HttpClient& client, const HttpRequest& request,
                      const std::function<bool(const SseEvent&)>& on_event, std::stop_token cancel);

// --- Responses -----------------------------------------------------------

// A response not streamed yet: its message names the model (api, provider,
// id) and is stamped now, as every provider's response is.
ProviderResponse response_for(const Model& model);

// --- Text ----------------------------------------------------------------

// Nothing but spaces, tabs and line breaks (or nothing at all): text that a
// payload leaves out, as the APIs refuse or ignore it.
inline bool blank(std::string_view text) { return text.find_first_not_of(" \t\r\n") == std::string_view::npos; }

// --- Credentials ---------------------------------------------------------

// The values of `headers` that carry credentials (authorization, x-api-key,
// api-key and any name holding "key", "token" or "secret"), for Secrets.
std::vector<std::string> header_secrets(const std::map<std::string, std::string>& headers);

// --- Requests ------------------------------------------------------------

// Whether `message` came from `model` (same provider, api and id).
bool same_model(const AssistantMessage& message, const Model& model);
// Whether the model takes images as input (its `input` lists "image").
bool takes_images(const Model& model);

// `base` (a model's base_url, trailing slashes ignored) joined with `path`.
std::string join_url(std::string_view base, std::string_view path);

// Adds or replaces a header, names compared case-insensitively.
void set_header(HttpHeaders& headers, std::string_view name, std::string value);

// Timeouts a caller may set per request in StreamOptions::extra:
// "connectTimeoutMs" and "idleTimeoutMs" (positive integers). The idle
// default for the model APIs is long: a reasoning model may think for
// minutes before its first token.
inline constexpr std::chrono::milliseconds kDefaultModelIdleTimeout{300000};
void apply_transport_options(HttpRequest& request, const Json& extra);

// The payload as sent: invalid UTF-8 in a message (a tool that read a binary
// file) becomes U+FFFD instead of an exception.
std::string serialize_payload(const Json& payload);

// --- Conversation replay -------------------------------------------------

// Prepares a conversation for `model`, as pi does before every request:
// - assistant messages that ended in error or were aborted are left out
//   (their partial content is not a state the model can continue from);
// - thinking from another model becomes text (empty thinking is dropped),
//   redacted thinking and signatures from another model are dropped;
// - tool call ids from another model pass through `normalize_tool_call_id`
//   (when set), and the tool results naming them follow;
// - a tool call that got no result before the next user or assistant message
//   gets an error result "No result provided", as every API requires one;
// - a tool result whose call is not in the assistant message before it (lost
//   to damage, say), or a second result of one call, is left out.
// "Another model" is one whose provider, api or id differs from `model`'s.
std::vector<LlmMessage> prepare_messages(
    const std::vector<LlmMessage>& messages, const Model& model,
    const std::function<std::string(const std::string&)>& normalize_tool_call_id = {});

// --- JSON access ---------------------------------------------------------

// `json[key]` when json is an object holding key, else nullptr.
const Json* field(const Json& json, std::string_view key);
// `json[key]` as a string when it is one, else empty.
std::string_view string_field(const Json& json, std::string_view key);
// `json[key]` as an integer when it is a number, else `fallback`.
std::int64_t int_field(const Json& json, std::string_view key, std::int64_t fallback = 0);

}  // namespace cairn::wire
