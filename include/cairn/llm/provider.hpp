// The provider interface: one model response, streamed as events, never
// thrown. Failures arrive as an assistant message with stopReason `error` or
// `aborted`, classified retryable or not (DESIGN.md, Providers).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "cairn/json.hpp"
#include "cairn/log/message.hpp"

namespace cairn {

// Dollars per million tokens.
struct ModelPrices {
  double input = 0, output = 0, cache_read = 0, cache_write = 0;
};

struct Model {
  std::string provider;  // "anthropic", "openai", "faux", …
  std::string id;        // the provider's model id
  std::string api;       // wire format: "openai-completions", "anthropic-messages", "faux", …
  std::int64_t context_window = 0;
  std::int64_t max_tokens = 0;
  bool reasoning = false;
  std::vector<std::string> input = {"text"};  // "text", "image"
  ModelPrices prices;
  // Where the wire APIs are served ("https://api.openai.com/v1", a local
  // server's "http://localhost:11434/v1", …) and headers every request to it
  // carries. Credentials are not here: a provider object holds its key.
  std::string base_url;
  std::map<std::string, std::string> headers;
  // Per-model wire quirks of the compatible servers (e.g. which max-tokens
  // field they take), read by the provider of `api`.
  Json compat = Json::object();
};

// What a model may call: a name, a description and a JSON schema.
struct ToolDefinition {
  std::string name;
  std::string description;
  Json parameters = Json::object();
};

// One request's provider-neutral content.
struct LlmContext {
  std::string system_prompt;
  std::vector<LlmMessage> messages;
  std::vector<ToolDefinition> tools;
};

struct StreamOptions {
  ThinkingLevel thinking_level = ThinkingLevel::off;
  std::optional<std::int64_t> max_tokens;
  std::optional<double> temperature;
  std::map<std::string, std::string> headers;
  Json extra = Json::object();  // provider-specific options
};

// A streamed change to the response being built. `partial` is the message so
// far (valid for the duration of the callback).
struct ProviderEvent {
  enum class Type {
    start, text_start, text_delta, text_end, thinking_start, thinking_delta, thinking_end,
    toolcall_start, toolcall_delta, toolcall_end, done, error,
  };
  Type type = Type::start;
  int content_index = -1;
  std::string delta;
  const AssistantMessage* partial = nullptr;
};
std::string_view to_string(ProviderEvent::Type type);

struct [[nodiscard]] ProviderResponse {
  // stop_reason error or aborted on failure, with error_message set.
  AssistantMessage message;
  bool retryable = false;
  std::optional<std::int64_t> retry_after_ms;  // the provider asked to wait this long
  bool context_overflow = false;
  int status = 0;  // HTTP status, 0 when there was none
  std::map<std::string, std::string> headers;
};

// Sees and may replace the wire payload just before it is sent. Empty when
// nobody listens: a provider need not build a payload value then.
using PayloadHook = std::function<Json(const Model& model, Json payload)>;
using ProviderEventSink = std::function<void(const ProviderEvent& event)>;

class Provider {
 public:
  virtual ~Provider() = default;
  // Streams one response. Never throws: every failure is in the response.
  // A stop request on `cancel` ends the stream within milliseconds with
  // stop_reason aborted.
  virtual ProviderResponse stream(const Model& model, const LlmContext& context, const StreamOptions& options,
                                  const PayloadHook& before_payload, const ProviderEventSink& on_event,
                                  std::stop_token cancel) = 0;
};

// The models a harness may call, each with the provider that serves it.
class Models {
 public:
  void add(Model model, std::shared_ptr<Provider> provider);
  struct Entry {
    Model model;
    std::shared_ptr<Provider> provider;
  };
  const Entry* find(std::string_view provider, std::string_view id) const;
  std::vector<Model> list() const;

 private:
  std::vector<Entry> entries_;
};

// The cost of `usage` at `prices`, in dollars.
Cost cost_of(const Usage& usage, const ModelPrices& prices);

}  // namespace cairn
