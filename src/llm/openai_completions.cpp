// The Chat Completions stream: chunks of deltas for choice 0, read into a
// message as they arrive (see openai_completions.hpp for the mapping).

#include "cairn/llm/openai_completions.hpp"

#include <algorithm>
#include <map>
#include <variant>

#include <fmt/format.h>

#include "message_builder.hpp"
#include "openai_completions_payload.hpp"
#include "provider_support.hpp"
#include "wire_support.hpp"

namespace cairn::wire {
namespace {

// Reads one response's chunks into the builder. The stream ends at [DONE];
// a finish_reason says how the response ended (the usage chunk may follow).
class CompletionsStream final : public wire::StreamParser {
 public:
  explicit CompletionsStream(wire::MessageBuilder& out) : out_(out) {}

  // False stops the transfer: the stream is over, or broken (failure()).
  bool on_event(const SseEvent& event) override {
    std::string_view data = event.data;
    if (data == "[DONE]") {
      done_ = true;
      return false;
    }
    Json chunk = Json::parse(data, nullptr, false);
    if (chunk.is_discarded() || !chunk.is_object()) {
      // Bytes mangled on the way, most likely: worth another attempt.
      failure_ = Failure{.message = fmt::format("the server sent a malformed chunk: {}",
                                                to_valid_utf8(data.substr(0, 200))),
                         .retryable = true};
      return false;
    }
    if (const Json* error = field(chunk, "error")) {
      failure_ = stream_error(*error);
      return false;
    }
    out_.start();
    if (const Json* usage = field(chunk, "usage"); usage != nullptr && usage->is_object()) read_usage(*usage);
    const Json* choice = first_choice(chunk);
    if (choice == nullptr) return true;
    if (const Json* delta = field(*choice, "delta"); delta != nullptr && delta->is_object()) {
      if (!read_delta(*delta)) return false;
    }
    if (std::string_view reason = string_field(*choice, "finish_reason"); !reason.empty()) finish_reason_ = reason;
    return true;
  }

  const std::optional<Failure>& failure() const override { return failure_; }
  // A finish_reason says so; only the usage chunk may follow it.
  bool complete() const override { return done_ || finish_reason_.has_value(); }

  // The stop reason finish_reason names, or the failure it stands for.
  std::variant<StopReason, Failure> stop_reason() const override {
    std::string_view reason = finish_reason_ ? std::string_view(*finish_reason_) : "stop";
    if (reason == "length") return StopReason::length;
    if (reason == "content_filter") {
      return Failure{.message = "the response was stopped by the provider's content filter"};
    }
    if (reason == "error") {  // OpenRouter, when the upstream provider failed mid-response
      return Failure{.message = "the server ended the response with an error", .retryable = true};
    }
    bool calls = std::any_of(out_.message().content.begin(), out_.message().content.end(),
                             [](const AssistantBlock& b) { return std::holds_alternative<ToolCall>(b); });
    // Some servers say "stop" after tool calls; the calls are what matters.
    if (reason == "tool_calls" || reason == "function_call" || calls) return StopReason::tool_use;
    return StopReason::stop;
  }

 private:
  static Failure stream_error(const Json& error) {
    if (error.is_string()) return wire::classify_stream_error("", error.get<std::string>());
    std::string kind(string_field(error, "code"));
    if (const Json* code = field(error, "code"); code != nullptr && code->is_number_integer()) kind = code->dump();
    if (kind.empty()) kind = string_field(error, "type");
    return wire::classify_stream_error(kind, string_field(error, "message"));
  }

  static const Json* first_choice(const Json& chunk) {
    const Json* choices = field(chunk, "choices");
    if (choices == nullptr || !choices->is_array()) return nullptr;
    for (const Json& choice : *choices) {
      if (int_field(choice, "index", 0) == 0 && choice.is_object()) return &choice;
    }
    return nullptr;
  }

  void read_usage(const Json& usage) {
    std::int64_t prompt = int_field(usage, "prompt_tokens");
    std::int64_t cached = 0;
    if (const Json* details = field(usage, "prompt_tokens_details")) cached = int_field(*details, "cached_tokens");
    if (cached == 0) cached = int_field(usage, "prompt_cache_hit_tokens");  // DeepSeek's spelling
    Usage& out = out_.message().usage;
    // prompt_tokens counts the cached ones too.
    out.cache_read = std::min(cached, prompt);
    out.input = prompt - out.cache_read;
    out.output = int_field(usage, "completion_tokens");
    out.cache_write = 0;
    out.total_tokens = int_field(usage, "total_tokens", out.input + out.cache_read + out.output);
  }

  bool read_delta(const Json& delta) {
    if (std::string_view text = string_field(delta, "content"); !text.empty()) {
      if (!close_all_but(text_)) return false;
      if (!text_) text_ = out_.begin_text();
      out_.text_delta(*text_, text);
    }
    for (std::string_view name : wire::kReasoningFields) {
      std::string_view thinking = string_field(delta, name);
      if (thinking.empty()) continue;
      if (!close_all_but(thinking_)) return false;
      if (!thinking_) thinking_ = out_.begin_thinking(std::string(name));
      out_.thinking_delta(*thinking_, thinking);
      break;  // a server that sends the same words in two fields means them once
    }
    if (const Json* calls = field(delta, "tool_calls"); calls != nullptr && calls->is_array()) {
      if (!close_all_but(std::nullopt, /*keep_tool_calls=*/true)) return false;
      std::int64_t position = 0;
      for (const Json& call : *calls) {
        if (!read_tool_call(call, position++)) return false;
      }
    }
    return true;
  }

  // One tool call fragment. Calls are told apart by their index; they stay
  // open until something else begins or the stream ends, since a server may
  // interleave the fragments of parallel calls.
  bool read_tool_call(const Json& call, std::int64_t position) {
    std::int64_t wire_index = int_field(call, "index", position);
    std::string id(string_field(call, "id"));
    const Json* function = field(call, "function");
    std::string name(function ? string_field(*function, "name") : "");
    std::string_view arguments = function ? string_field(*function, "arguments") : "";

    auto known = calls_.find(wire_index);
    if (known != calls_.end() && !id.empty()) {
      // A new id under an index in use is a new call (servers that number
      // every call 0).
      const auto& existing = std::get<ToolCall>(out_.message().content.at(static_cast<std::size_t>(known->second)));
      if (!existing.id.empty() && existing.id != id) {
        out_.end_block(known->second);
        calls_.erase(known);
        known = calls_.end();
      }
    }
    if (known == calls_.end()) {
      calls_[wire_index] = out_.begin_tool_call(std::move(id), std::move(name));
      out_.tool_call_delta(calls_[wire_index], arguments);
      return true;
    }
    int index = known->second;
    if (!out_.is_open(index)) {
      return fail(Failure{.message = fmt::format("the server continued tool call {} after it had ended", wire_index),
                          .retryable = true});
    }
    auto& block = std::get<ToolCall>(out_.message().content.at(static_cast<std::size_t>(index)));
    if (!id.empty()) block.id = std::move(id);
    if (!name.empty()) block.name = std::move(name);
    out_.tool_call_delta(index, arguments);
    return true;
  }

  // Ends every open block except `keep` (and the tool calls, if asked):
  // something else has begun.
  bool close_all_but(std::optional<int> keep, bool keep_tool_calls = false) {
    for (std::optional<int>* slot : {&text_, &thinking_}) {
      if (*slot && *slot != keep) {
        out_.end_block(**slot);
        slot->reset();
      }
    }
    if (keep_tool_calls) return true;
    for (const auto& [wire_index, index] : calls_) out_.end_block(index);
    return true;
  }

  bool fail(Failure failure) {
    failure_ = std::move(failure);
    return false;
  }

  wire::MessageBuilder& out_;
  std::optional<int> text_, thinking_;          // the open text and thinking blocks
  std::map<std::int64_t, int> calls_;           // tool calls by wire index → content index
  std::optional<std::string> finish_reason_;
  bool done_ = false;
  std::optional<Failure> failure_;
};

}  // namespace
}  // namespace cairn::wire

namespace cairn {

std::shared_ptr<Provider> make_openai_completions_provider(std::string api_key, HttpClient client) {
  return std::make_shared<wire::SseProvider>(
      std::move(api_key), std::move(client),
      wire::WireApi{.default_base_url = wire::kOpenAiBaseUrl,
                    .path = "/chat/completions",
                    .headers = wire::bearer_headers,
                    .payload = wire::completions_payload,
                    .make_parser = [](wire::MessageBuilder& out) -> std::unique_ptr<wire::StreamParser> {
                      return std::make_unique<wire::CompletionsStream>(out);
                    }});
}

}  // namespace cairn
