// The Messages API's event stream, as Anthropic documents it ("Streaming
// Messages"): message_start; for each content block a content_block_start,
// its deltas and a content_block_stop; message_delta with the stop reason and
// the cumulative usage; message_stop. ping may come anywhere, error ends the
// stream, and event types this build does not know are skipped as the
// documentation asks.
#include <fmt/format.h>

#include "anthropic_wire.hpp"
#include "llm/tool_arguments.hpp"

namespace cairn::anthropic {
namespace {

const std::string* string_field(const Json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return nullptr;
  return it->get_ptr<const std::string*>();
}

std::optional<std::int64_t> integer_field(const Json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<std::int64_t>();
}

const Json* object_field(const Json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_object()) return nullptr;
  return &*it;
}

}  // namespace

HttpHeaders request_headers(const std::string& api_key) {
  HttpHeaders headers;
  headers.emplace_back("anthropic-version", "2023-06-01");
  if (!api_key.empty()) headers.emplace_back("x-api-key", api_key);
  return headers;
}

bool EventParser::malformed(std::string what) {
  failure_ = wire::Failure{.message = fmt::format("malformed stream event: {}", what)};
  return false;
}

bool EventParser::on_event(const SseEvent& event) {
  if (failure_) return false;
  Json data = Json::parse(event.data, nullptr, /*allow_exceptions=*/false);
  if (data.is_discarded() || !data.is_object()) {
    // Bytes mangled on the way, most likely: worth another attempt, as the
    // OpenAI providers decide. Well-formed events out of protocol (below)
    // are not: asking again gets the same.
    failure_ = wire::Failure{.message = fmt::format("malformed stream event: the data of a '{}' event is not a JSON object",
                                                    event.event),
                             .retryable = true};
    return false;
  }
  // The data names its type too; servers that omit the event line still
  // send that.
  const std::string* named = string_field(data, "type");
  const std::string type = named ? *named : event.event;
  if (type == "message_start") return on_message_start(data);
  if (type == "content_block_start") return on_block_start(data);
  if (type == "content_block_delta") return on_block_delta(data);
  if (type == "content_block_stop") return on_block_stop(data);
  if (type == "message_delta") return on_message_delta(data);
  if (type == "message_stop") {
    message_stopped_ = true;
    return true;
  }
  if (type == "error") return on_error(data);
  return true;  // ping, and whatever the API adds later
}

std::variant<StopReason, wire::Failure> EventParser::stop_reason() const {
  if (unsuccessful_stop_) return wire::Failure{.message = fmt::format("the model stopped: {}", *unsuccessful_stop_)};
  return out_.message().stop_reason;
}

bool EventParser::on_message_start(const Json& data) {
  if (const Json* message = object_field(data, "message")) {
    if (const Json* usage = object_field(*message, "usage")) read_usage(*usage);
  }
  out_.start();
  return true;
}

// Usage arrives in message_start (input and cache counts) and again in
// message_delta (cumulative; a proxy may leave some counts out). A count
// only replaces the one before when it is present.
void EventParser::read_usage(const Json& usage) {
  Usage& u = out_.message().usage;
  if (auto n = integer_field(usage, "input_tokens")) u.input = *n;
  if (auto n = integer_field(usage, "output_tokens")) u.output = *n;
  if (auto n = integer_field(usage, "cache_read_input_tokens")) u.cache_read = *n;
  if (auto n = integer_field(usage, "cache_creation_input_tokens")) u.cache_write = *n;
  // The API gives no total; input excludes the cached tokens, so all four add up.
  u.total_tokens = u.input + u.output + u.cache_read + u.cache_write;
}

EventParser::OpenBlock* EventParser::find_block(const Json& data) {
  auto index = integer_field(data, "index");
  if (!index) return nullptr;
  for (auto& block : blocks_) {
    if (block.wire_index == *index && block.open) return &block;
  }
  return nullptr;
}

bool EventParser::on_block_start(const Json& data) {
  auto index = integer_field(data, "index");
  const Json* block = object_field(data, "content_block");
  const std::string* type = block ? string_field(*block, "type") : nullptr;
  if (!index || !type) return malformed("content_block_start without an index or a typed content_block");
  if (find_block(data)) return malformed(fmt::format("content block {} started twice", *index));

  using Kind = OpenBlock::Kind;
  OpenBlock open{.wire_index = *index};
  if (*type == "text") {
    open.kind = Kind::text;
    open.content_index = out_.begin_text();
    if (const std::string* text = string_field(*block, "text")) out_.text_delta(open.content_index, *text);
  } else if (*type == "thinking") {
    open.kind = Kind::thinking;
    open.content_index = out_.begin_thinking();
    if (const std::string* thinking = string_field(*block, "thinking")) out_.thinking_delta(open.content_index, *thinking);
  } else if (*type == "redacted_thinking") {
    // Encrypted reasoning, to be handed back untouched.
    const std::string* opaque = string_field(*block, "data");
    if (!opaque) return malformed("redacted_thinking without data");
    open.kind = Kind::thinking;
    open.content_index = out_.begin_redacted_thinking(*opaque);
  } else if (*type == "tool_use") {
    const std::string* id = string_field(*block, "id");
    const std::string* name = string_field(*block, "name");
    if (!id || !name) return malformed("tool_use without an id or a name");
    open.kind = Kind::tool_use;
    // The arguments start as `input` (an empty object when they stream);
    // input that is not an object is kept raw at the block's end, as any
    // arguments that are not one.
    const auto input = block->find("input");
    const bool seeded = input != block->end() && !input->is_null() && !(input->is_object() && input->empty());
    open.seeded = seeded;
    open.content_index = out_.begin_tool_call(*id, *name, seeded ? input->dump() : std::string());
  }
  // Else a server tool's block, or whatever comes next: not content cairn keeps.
  blocks_.push_back(open);
  return true;
}

bool EventParser::on_block_delta(const Json& data) {
  OpenBlock* block = find_block(data);
  const Json* delta = object_field(data, "delta");
  const std::string* type = delta ? string_field(*delta, "type") : nullptr;
  if (!block) return malformed("content_block_delta for a block that is not open");
  if (!type) return malformed("content_block_delta without a typed delta");
  using Kind = OpenBlock::Kind;
  if (block->kind == Kind::ignored) return true;
  const int index = block->content_index;

  // Each field read below is required by its delta type.
  auto piece = [&](const char* key) -> const std::string* { return string_field(*delta, key); };
  if (*type == "text_delta") {
    const std::string* text = piece("text");
    if (block->kind != Kind::text || !text) return malformed("text_delta out of place");
    out_.text_delta(index, *text);
  } else if (*type == "thinking_delta") {
    const std::string* thinking = piece("thinking");
    if (block->kind != Kind::thinking || !thinking) return malformed("thinking_delta out of place");
    out_.thinking_delta(index, *thinking);
  } else if (*type == "signature_delta") {
    const std::string* signature = piece("signature");
    if (block->kind != Kind::thinking || !signature) return malformed("signature_delta out of place");
    auto& thinking = std::get<ThinkingContent>(out_.message().content.at(static_cast<std::size_t>(index)));
    thinking.thinking_signature = thinking.thinking_signature.value_or("") + *signature;
  } else if (*type == "input_json_delta") {
    const std::string* json = piece("partial_json");
    if (block->kind != Kind::tool_use || !json) return malformed("input_json_delta out of place");
    // The API often opens with an empty piece; it changes nothing.
    if (json->empty()) return true;
    if (block->seeded) {
      out_.set_tool_call_arguments(index, {});  // streamed arguments replace the start's
      block->seeded = false;
    }
    out_.tool_call_delta(index, *json);
  }
  // citations_delta and later kinds carry nothing cairn keeps.
  return true;
}

bool EventParser::on_block_stop(const Json& data) {
  OpenBlock* block = find_block(data);
  if (!block) return malformed("content_block_stop for a block that is not open");
  block->open = false;
  // The builder reads a tool call's arguments as they ended: exactly what the
  // model sent is what the tool runs with.
  if (block->kind != OpenBlock::Kind::ignored) out_.end_block(block->content_index);
  return true;
}

bool EventParser::on_message_delta(const Json& data) {
  if (const Json* delta = object_field(data, "delta")) {
    if (const std::string* reason = string_field(*delta, "stop_reason")) {
      StopReason& stop = out_.message().stop_reason;
      if (*reason == "end_turn" || *reason == "stop_sequence" || *reason == "pause_turn") {
        // pause_turn: a server tool paused a long turn; resubmitting goes on.
        stop = StopReason::stop;
      } else if (*reason == "max_tokens" || *reason == "model_context_window_exceeded") {
        stop = StopReason::length;
      } else if (*reason == "tool_use") {
        stop = StopReason::tool_use;
      } else {
        // "refusal", and reasons this build does not know: not a success.
        unsuccessful_stop_ = *reason;
      }
    }
  }
  if (const Json* usage = object_field(data, "usage")) read_usage(*usage);
  return true;
}

bool EventParser::on_error(const Json& data) {
  const Json* error = object_field(data, "error");
  const std::string* type = error ? string_field(*error, "type") : nullptr;
  const std::string* message = error ? string_field(*error, "message") : nullptr;
  failure_ = wire::classify_stream_error(type ? *type : "error", message ? *message : "the stream reported an error");
  return false;
}

}  // namespace cairn::anthropic
