// The Responses API request body: cairn's context as "input" items, with the
// assistant's earlier output replayed from what its blocks kept (the
// formats are described in openai_responses.hpp).
#pragma once

#include <optional>
#include <string>

#include "cairn/json.hpp"
#include "cairn/llm/provider.hpp"

namespace cairn::wire {

Json responses_payload(const Model& model, const LlmContext& context, const StreamOptions& options);

// A text block's signature: the message item it came as.
struct TextSignature {
  std::string id;
  std::optional<std::string> phase;  // "commentary" or "final_answer"
};
std::string encode_text_signature(const TextSignature& signature);
// Reads pi's two spellings: {"v":1,"id":…,"phase":…}, or the bare id.
std::optional<TextSignature> decode_text_signature(const std::optional<std::string>& signature);

}  // namespace cairn::wire
