// The Responses API stream: typed events about output items (reasoning,
// messages, function calls), each item one block of the message, ending
// with response.completed, .incomplete or .failed.

#include "cairn/llm/openai_responses.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "message_builder.hpp"
#include "openai_responses_payload.hpp"
#include "provider_support.hpp"
#include "wire_support.hpp"

namespace cairn::wire {
namespace {

class ResponsesStream final : public wire::StreamParser {
 public:
  explicit ResponsesStream(wire::MessageBuilder& out) : out_(out) {}

  // False stops the transfer: the response is over, or broken (failure()).
  bool on_event(const SseEvent& event) override {
    Json data = Json::parse(event.data, nullptr, false);
    if (data.is_discarded() || !data.is_object()) {
      return fail(Failure{.message = fmt::format("the server sent a malformed event: {}",
                                                 to_valid_utf8(std::string_view(event.data).substr(0, 200))),
                          .retryable = true});
    }
    std::string type(string_field(data, "type"));
    if (type.empty()) type = event.event;

    if (type == "error") return fail(error_event(data));
    if (type == "response.failed") return fail(failed_response(data));
    out_.start();
    if (type == "response.output_item.added") return item_added(data);
    if (type == "response.output_item.done") return item_done(data);
    if (type == "response.reasoning_summary_part.added") {
      Item* item = find(data, Item::reasoning);
      // Summary parts are paragraphs; the thinking text keeps them apart.
      if (item != nullptr && item->parts++ > 0) out_.thinking_delta(item->index, "\n\n");
      return true;
    }
    if (type == "response.reasoning_summary_text.delta" || type == "response.reasoning_text.delta") {
      if (Item* item = find(data, Item::reasoning)) {
        item->parts = std::max(item->parts, 1);
        out_.thinking_delta(item->index, string_field(data, "delta"));
      }
      return true;
    }
    if (type == "response.output_text.delta" || type == "response.refusal.delta") {
      if (Item* item = find(data, Item::message)) out_.text_delta(item->index, string_field(data, "delta"));
      return true;
    }
    if (type == "response.function_call_arguments.delta") {
      if (Item* item = find(data, Item::function_call)) out_.tool_call_delta(item->index, string_field(data, "delta"));
      return true;
    }
    if (type == "response.function_call_arguments.done") {
      if (Item* item = find(data, Item::function_call); item != nullptr && field(data, "arguments") != nullptr) {
        out_.set_tool_call_arguments(item->index, std::string(string_field(data, "arguments")));
      }
      return true;
    }
    if (type == "response.completed" || type == "response.done" || type == "response.incomplete") {
      return completed(data);
    }
    return true;  // response.created, content_part.*, *.done and the rest add nothing
  }

  const std::optional<Failure>& failure() const override { return failure_; }
  // The transfer stops at response.completed, so nothing can fail after it.
  bool complete() const override { return stop_reason_.has_value(); }
  std::variant<StopReason, Failure> stop_reason() const override { return stop_reason_.value_or(StopReason::stop); }

 private:
  struct Item {
    enum Kind { reasoning, message, function_call } kind;
    int index;      // content index of its block
    int parts = 0;  // reasoning summary parts begun
  };

  static Failure error_event(const Json& data) {
    const Json* error = field(data, "error");  // some servers nest it
    const Json& source = error != nullptr && error->is_object() ? *error : data;
    std::string kind(string_field(source, "code"));
    if (kind.empty()) kind = string_field(source, "type");
    if (kind == "error") kind.clear();
    return wire::classify_stream_error(kind, string_field(source, "message"));
  }

  static Failure failed_response(const Json& data) {
    const Json* response = field(data, "response");
    const Json* error = response ? field(*response, "error") : nullptr;
    if (error != nullptr && error->is_object()) {
      return wire::classify_stream_error(string_field(*error, "code"), string_field(*error, "message"));
    }
    return Failure{.message = "the response failed without saying why"};
  }

  Item* find(const Json& data, Item::Kind kind) {
    auto it = items_.find(int_field(data, "output_index", -1));
    if (it == items_.end() || it->second.kind != kind || !out_.is_open(it->second.index)) return nullptr;
    return &it->second;
  }

  bool item_added(const Json& data) {
    const Json* item = field(data, "item");
    if (item == nullptr) return true;
    std::int64_t position = int_field(data, "output_index", static_cast<std::int64_t>(items_.size()));
    std::string_view kind = string_field(*item, "type");
    if (kind == "reasoning") {
      items_[position] = Item{Item::reasoning, out_.begin_thinking()};
    } else if (kind == "message") {
      items_[position] = Item{Item::message, out_.begin_text()};
    } else if (kind == "function_call") {
      std::string id = fmt::format("{}|{}", string_field(*item, "call_id"), string_field(*item, "id"));
      items_[position] = Item{Item::function_call, out_.begin_tool_call(std::move(id), std::string(string_field(*item, "name")),
                                                                       std::string(string_field(*item, "arguments")))};
    }
    // Other items (web searches and the like) are the server's own business.
    return true;
  }

  // The item as it ended is the authority on its block.
  bool item_done(const Json& data) {
    const Json* item = field(data, "item");
    auto it = items_.find(int_field(data, "output_index", -1));
    if (item == nullptr || it == items_.end() || !out_.is_open(it->second.index)) return true;
    int index = it->second.index;
    AssistantBlock& block = out_.message().content.at(static_cast<std::size_t>(index));
    switch (it->second.kind) {
      case Item::reasoning: {
        auto& thinking = std::get<ThinkingContent>(block);
        std::string text = joined(field(*item, "summary"), "summary_text", "text");
        if (text.empty()) text = joined(field(*item, "content"), "reasoning_text", "text");
        if (!text.empty()) thinking.thinking = std::move(text);
        // Kept whole for replay: its id and, above all, its encrypted content.
        if (!string_field(*item, "encrypted_content").empty() || !string_field(*item, "id").empty()) {
          thinking.thinking_signature = item->dump();
        }
        out_.end_thinking(index);
        return true;
      }
      case Item::message: {
        auto& text = std::get<TextContent>(block);
        std::string words = joined(field(*item, "content"), "output_text", "text");
        words += joined(field(*item, "content"), "refusal", "refusal");
        if (!words.empty()) text.text = std::move(words);
        if (std::string_view id = string_field(*item, "id"); !id.empty()) {
          wire::TextSignature signature{std::string(id), std::nullopt};
          if (std::string_view phase = string_field(*item, "phase"); !phase.empty()) signature.phase = std::string(phase);
          text.text_signature = wire::encode_text_signature(signature);
        }
        out_.end_text(index);
        return true;
      }
      case Item::function_call: {
        auto& call = std::get<ToolCall>(block);
        if (const Json* arguments = field(*item, "arguments"); arguments != nullptr && arguments->is_string()) {
          out_.set_tool_call_arguments(index, arguments->get<std::string>());
        }
        if (!string_field(*item, "call_id").empty()) {
          call.id = fmt::format("{}|{}", string_field(*item, "call_id"), string_field(*item, "id"));
        }
        if (!string_field(*item, "name").empty()) call.name = string_field(*item, "name");
        out_.end_tool_call(index);
        return true;
      }
    }
    return true;
  }

  // The texts of the parts of `parts` whose type is `type`.
  static std::string joined(const Json* parts, std::string_view type, std::string_view key) {
    std::string out;
    if (parts == nullptr || !parts->is_array()) return out;
    bool first = true;
    for (const Json& part : *parts) {
      if (string_field(part, "type") != type) continue;
      if (!first && type == "summary_text") out += "\n\n";
      out += string_field(part, key);
      first = false;
    }
    return out;
  }

  bool completed(const Json& data) {
    const Json* response = field(data, "response");
    if (response == nullptr) response = &data;
    if (const Json* usage = field(*response, "usage"); usage != nullptr && usage->is_object()) {
      std::int64_t input = int_field(*usage, "input_tokens");
      std::int64_t cached = 0;
      if (const Json* details = field(*usage, "input_tokens_details")) cached = int_field(*details, "cached_tokens");
      Usage& out = out_.message().usage;
      // input_tokens counts the cached ones too.
      out.cache_read = std::min(cached, input);
      out.input = input - out.cache_read;
      out.output = int_field(*usage, "output_tokens");
      out.cache_write = 0;
      out.total_tokens = int_field(*usage, "total_tokens", out.input + out.cache_read + out.output);
    }
    std::string_view status = string_field(*response, "status");
    if (status == "incomplete") {
      const Json* details = field(*response, "incomplete_details");
      if (details != nullptr && string_field(*details, "reason") == "content_filter") {
        return fail(Failure{.message = "the response was stopped by the provider's content filter"});
      }
      stop_reason_ = StopReason::length;
    } else if (status == "failed" || status == "cancelled") {
      return fail(failed_response(data));
    } else {
      bool calls = std::any_of(out_.message().content.begin(), out_.message().content.end(),
                               [](const AssistantBlock& b) { return std::holds_alternative<ToolCall>(b); });
      stop_reason_ = calls ? StopReason::tool_use : StopReason::stop;
    }
    return false;  // nothing follows that the response needs
  }

  bool fail(Failure failure) {
    failure_ = std::move(failure);
    return false;
  }

  wire::MessageBuilder& out_;
  std::map<std::int64_t, Item> items_;  // by output_index
  std::optional<StopReason> stop_reason_;
  std::optional<Failure> failure_;
};

}  // namespace
}  // namespace cairn::wire

namespace cairn {

std::shared_ptr<Provider> make_openai_responses_provider(std::string api_key, HttpClient client) {
  return std::make_shared<wire::SseProvider>(
      std::move(api_key), std::move(client),
      wire::WireApi{.default_base_url = wire::kOpenAiBaseUrl,
                    .path = "/responses",
                    .headers = wire::bearer_headers,
                    .payload = wire::responses_payload,
                    .make_parser = [](wire::MessageBuilder& out) -> std::unique_ptr<wire::StreamParser> {
                      return std::make_unique<wire::ResponsesStream>(out);
                    }});
}

}  // namespace cairn
