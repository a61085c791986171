// A scripted provider for tests and the offline demo: each request takes the
// next scripted response (or asks a function for one) and streams it block by
// block, with optional delays, failures and stalls that honour cancellation.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cairn/llm/provider.hpp"

namespace cairn {

struct FauxResponse {
  std::vector<AssistantBlock> content;
  Usage usage;
  // A failure instead of a response: the message streamed so far is returned
  // with stop_reason error and this message.
  std::optional<std::string> error;
  bool retryable = false;
  std::optional<std::int64_t> retry_after_ms;
  bool context_overflow = false;
  // Pause before each streamed chunk.
  std::chrono::milliseconds chunk_delay{0};
  // Stream the first block, then wait until cancelled.
  bool stall = false;

  static FauxResponse text(std::string text);
  static FauxResponse tool_call(std::string id, std::string name, Json arguments);
  static FauxResponse failure(std::string message, bool retryable);
  FauxResponse& then_tool_call(std::string id, std::string name, Json arguments);
};

class FauxProvider : public Provider {
 public:
  using Script = std::function<FauxResponse(const LlmContext& context)>;

  FauxProvider() = default;
  explicit FauxProvider(Script script) : script_(std::move(script)) {}

  void push(FauxResponse response);
  // Requests seen so far (their contexts), oldest first. Each is a copy of
  // the whole context: a long benchmark turns this off.
  std::vector<LlmContext> requests() const;
  void record_requests(bool on);
  std::size_t remaining() const;

  ProviderResponse stream(const Model& model, const LlmContext& context, const StreamOptions& options,
                          const PayloadHook& before_payload, const ProviderEventSink& on_event,
                          std::stop_token cancel) override;

  // A model served by "faux".
  static Model model(std::string id = "faux-1");

 private:
  mutable std::mutex mu_;
  std::deque<FauxResponse> queue_;
  Script script_;
  std::vector<LlmContext> requests_;
  bool record_requests_ = true;
};

}  // namespace cairn
