// The Messages API's event stream, as Anthropic documents it ("Streaming
// Messages"): message_start; for each content block a content_block_start,
// its deltas and a content_block_stop; message_delta with the stop reason and
// the cumulative usage; message_stop. ping may come anywhere, error ends the
// stream, and event types this build does not know are skipped as the
// documentation asks.
#include <fmt/format.h>

#include "anthropic_wire.hpp"
#include "cairn/llm/tool_arguments.hpp"

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

StreamDecoder::StreamDecoder(const Model& model, AssistantMessage& message, const ProviderEventSink& sink)
    : model_(model), message_(message), sink_(sink) {}

void StreamDecoder::ensure_started() {
  if (started_) return;
  started_ = true;
  if (sink_) sink_(ProviderEvent{.type = ProviderEvent::Type::start, .partial = &message_});
}

void StreamDecoder::emit(ProviderEvent::Type type, int content_index, std::string delta) {
  if (type != ProviderEvent::Type::error) ensure_started();
  if (type == ProviderEvent::Type::start || !sink_) return;
  sink_(ProviderEvent{.type = type, .content_index = content_index, .delta = std::move(delta), .partial = &message_});
}

void StreamDecoder::report(OpenBlock& block) {
  std::string delta = pacer_.take(block.content_index);
  if (delta.empty()) return;
  auto& content = message_.content[static_cast<std::size_t>(block.content_index)];
  switch (block.kind) {
    case Kind::text:
      emit(ProviderEvent::Type::text_delta, block.content_index, std::move(delta));
      break;
    case Kind::thinking:
      emit(ProviderEvent::Type::thinking_delta, block.content_index, std::move(delta));
      break;
    case Kind::tool_use:
      if (block.open) {
        // For display only; what the tool runs with is read at the block's end.
        Json partial = wire::parse_partial_json(block.partial_json);
        if (partial.is_object()) std::get<ToolCall>(content).arguments = std::move(partial);
      }
      emit(ProviderEvent::Type::toolcall_delta, block.content_index, std::move(delta));
      break;
    case Kind::redacted_thinking:
    case Kind::ignored:
      break;
  }
}

void StreamDecoder::report_open_blocks() {
  for (OpenBlock& block : blocks_) {
    if (block.open && block.content_index >= 0) report(block);
  }
}

bool StreamDecoder::malformed(std::string what) {
  failure_ = wire::Failure{.message = fmt::format("malformed stream event: {}", what)};
  return false;
}

bool StreamDecoder::on_event(const SseEvent& event) {
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

bool StreamDecoder::on_message_start(const Json& data) {
  if (const Json* message = object_field(data, "message")) {
    if (const Json* usage = object_field(*message, "usage")) read_usage(*usage);
  }
  ensure_started();
  return true;
}

// Usage arrives in message_start (input and cache counts) and again in
// message_delta (cumulative; a proxy may leave some counts out). A count
// only replaces the one before when it is present.
void StreamDecoder::read_usage(const Json& usage) {
  Usage& u = message_.usage;
  if (auto n = integer_field(usage, "input_tokens")) u.input = *n;
  if (auto n = integer_field(usage, "output_tokens")) u.output = *n;
  if (auto n = integer_field(usage, "cache_read_input_tokens")) u.cache_read = *n;
  if (auto n = integer_field(usage, "cache_creation_input_tokens")) u.cache_write = *n;
  // The API gives no total; input excludes the cached tokens, so all four add up.
  u.total_tokens = u.input + u.output + u.cache_read + u.cache_write;
  u.cost = cost_of(u, model_.prices);
}

StreamDecoder::OpenBlock* StreamDecoder::find_block(const Json& data) {
  auto index = integer_field(data, "index");
  if (!index) return nullptr;
  for (auto& block : blocks_) {
    if (block.wire_index == *index && block.open) return &block;
  }
  return nullptr;
}

bool StreamDecoder::on_block_start(const Json& data) {
  auto index = integer_field(data, "index");
  const Json* block = object_field(data, "content_block");
  const std::string* type = block ? string_field(*block, "type") : nullptr;
  if (!index || !type) return malformed("content_block_start without an index or a typed content_block");
  if (find_block(data)) return malformed(fmt::format("content block {} started twice", *index));

  OpenBlock open{.wire_index = *index};
  const int content_index = static_cast<int>(message_.content.size());
  if (*type == "text") {
    open.kind = Kind::text;
    message_.content.push_back(TextContent{});
    emit(ProviderEvent::Type::text_start, content_index);
    if (const std::string* text = string_field(*block, "text"); text && !text->empty()) {
      std::get<TextContent>(message_.content.back()).text = *text;
      emit(ProviderEvent::Type::text_delta, content_index, *text);
    }
  } else if (*type == "thinking") {
    open.kind = Kind::thinking;
    message_.content.push_back(ThinkingContent{});
    emit(ProviderEvent::Type::thinking_start, content_index);
    if (const std::string* thinking = string_field(*block, "thinking"); thinking && !thinking->empty()) {
      std::get<ThinkingContent>(message_.content.back()).thinking = *thinking;
      emit(ProviderEvent::Type::thinking_delta, content_index, *thinking);
    }
  } else if (*type == "redacted_thinking") {
    // Encrypted reasoning, to be handed back untouched. pi keeps the data in
    // the signature field and marks the block redacted; so does cairn.
    const std::string* opaque = string_field(*block, "data");
    if (!opaque) return malformed("redacted_thinking without data");
    open.kind = Kind::redacted_thinking;
    message_.content.push_back(
        ThinkingContent{.thinking = "[Reasoning redacted]", .thinking_signature = *opaque, .redacted = true});
    emit(ProviderEvent::Type::thinking_start, content_index);
  } else if (*type == "tool_use") {
    const std::string* id = string_field(*block, "id");
    const std::string* name = string_field(*block, "name");
    if (!id || !name) return malformed("tool_use without an id or a name");
    open.kind = Kind::tool_use;
    const Json* input = object_field(*block, "input");
    message_.content.push_back(ToolCall{.id = *id, .name = *name, .arguments = input ? *input : Json::object()});
    if (auto it = block->find("input"); it != block->end() && !it->is_object() && !it->is_null()) {
      open.partial_json = it->dump();  // not arguments: kept raw at the block's end, as any text that is not an object
    }
    emit(ProviderEvent::Type::toolcall_start, content_index);
  } else {
    // Server tool blocks and whatever comes next: not content cairn keeps.
    blocks_.push_back(open);
    return true;
  }
  open.content_index = content_index;
  blocks_.push_back(std::move(open));
  return true;
}

bool StreamDecoder::on_block_delta(const Json& data) {
  OpenBlock* block = find_block(data);
  const Json* delta = object_field(data, "delta");
  const std::string* type = delta ? string_field(*delta, "type") : nullptr;
  if (!block) return malformed("content_block_delta for a block that is not open");
  if (!type) return malformed("content_block_delta without a typed delta");
  if (block->kind == Kind::ignored) return true;
  const int index = block->content_index;
  auto& content = message_.content[static_cast<std::size_t>(index)];

  // Each field read below is required by its delta type.
  auto piece = [&](const char* key) -> const std::string* { return string_field(*delta, key); };
  if (*type == "text_delta") {
    const std::string* text = piece("text");
    if (block->kind != Kind::text || !text) return malformed("text_delta out of place");
    std::get<TextContent>(content).text += *text;
    if (pacer_.add(index, *text)) report(*block);
  } else if (*type == "thinking_delta") {
    const std::string* thinking = piece("thinking");
    if (block->kind != Kind::thinking || !thinking) return malformed("thinking_delta out of place");
    std::get<ThinkingContent>(content).thinking += *thinking;
    if (pacer_.add(index, *thinking)) report(*block);
  } else if (*type == "signature_delta") {
    const std::string* signature = piece("signature");
    if (block->kind != Kind::thinking || !signature) return malformed("signature_delta out of place");
    auto& thinking = std::get<ThinkingContent>(content);
    thinking.thinking_signature = thinking.thinking_signature.value_or("") + *signature;
  } else if (*type == "input_json_delta") {
    const std::string* json = piece("partial_json");
    if (block->kind != Kind::tool_use || !json) return malformed("input_json_delta out of place");
    // The API often opens with an empty piece; it changes nothing.
    if (json->empty()) return true;
    block->partial_json += *json;
    if (pacer_.add(index, *json)) report(*block);
  }
  // citations_delta and later kinds carry nothing cairn keeps.
  return true;
}

bool StreamDecoder::on_block_stop(const Json& data) {
  OpenBlock* block = find_block(data);
  if (!block) return malformed("content_block_stop for a block that is not open");
  block->open = false;
  const int index = block->content_index;
  switch (block->kind) {
    case Kind::text:
      report(*block);
      emit(ProviderEvent::Type::text_end, index);
      break;
    case Kind::thinking:
    case Kind::redacted_thinking:
      report(*block);
      emit(ProviderEvent::Type::thinking_end, index);
      break;
    case Kind::tool_use: {
      auto& call = std::get<ToolCall>(message_.content[static_cast<std::size_t>(index)]);
      if (!block->partial_json.empty()) {
        // The partial parse was for display; what the tool runs with must be
        // exactly what the model sent.
        ToolArguments read = read_tool_arguments(block->partial_json);
        call.arguments = std::move(read.arguments);
        call.raw_arguments = std::move(read.raw);
        std::string().swap(block->partial_json);
      }
      report(*block);
      emit(ProviderEvent::Type::toolcall_end, index);
      break;
    }
    case Kind::ignored:
      break;
  }
  return true;
}

bool StreamDecoder::on_message_delta(const Json& data) {
  if (const Json* delta = object_field(data, "delta")) {
    if (const std::string* reason = string_field(*delta, "stop_reason")) {
      if (*reason == "end_turn" || *reason == "stop_sequence" || *reason == "pause_turn") {
        // pause_turn: a server tool paused a long turn; resubmitting goes on.
        message_.stop_reason = StopReason::stop;
      } else if (*reason == "max_tokens" || *reason == "model_context_window_exceeded") {
        message_.stop_reason = StopReason::length;
      } else if (*reason == "tool_use") {
        message_.stop_reason = StopReason::tool_use;
      } else {
        // "refusal", and reasons this build does not know: not a success.
        unsuccessful_stop_ = *reason;
      }
    }
  }
  if (const Json* usage = object_field(data, "usage")) read_usage(*usage);
  return true;
}

bool StreamDecoder::on_error(const Json& data) {
  const Json* error = object_field(data, "error");
  const std::string* type = error ? string_field(*error, "type") : nullptr;
  const std::string* message = error ? string_field(*error, "message") : nullptr;
  failure_ = wire::classify_stream_error(type ? *type : "error", message ? *message : "the stream reported an error");
  return false;
}

}  // namespace cairn::anthropic
