// The "openai-responses" API: OpenAI's Responses API
// (POST {base_url}/responses, streamed), also served by some compatible
// servers (vLLM, Ollama, OpenRouter).
//
// Request: "input" items: the system prompt as a "system" message
// ("developer" for a reasoning model), user messages (input_text,
// input_image as a data URL), the assistant's earlier output replayed as the
// items it came as — reasoning items with their encrypted content, messages
// with their ids, function_call items — and function_call_output items for
// tool results (their images follow in a user message). Requests are
// stateless ("store": false), so a reasoning model's items come back
// encrypted ("include": ["reasoning.encrypted_content"]) to be replayed.
// StreamOptions: max_tokens (max_output_tokens), temperature, headers,
// thinking_level (→ reasoning.effort with a reasoning summary; "off" sends
// none), and in `extra`: "toolChoice", "reasoningSummary" ("auto" by default,
// "concise", "detailed", or "off" for none), "idleTimeoutMs" (default
// 300000: a reasoning model may think for minutes before its first byte),
// "connectTimeoutMs".
//
// What the blocks keep for replay (pi's format, so sessions move between
// the two): a thinking block's signature is the reasoning item as JSON; a
// text block's signature is {"v":1,"id":…} naming its message item (with
// "phase" when the server gave one); a tool call's id is "call_id|item_id".
//
// Model::compat keys (each optional):
//   "supportsStore": bool   send "store": false. Default true.
//   "includeEncryptedReasoning": bool   ask for encrypted reasoning (a
//       reasoning model only). Default true; servers that refuse the
//       "include" value need false.
//   "supportsXhigh": bool   thinking level xhigh is sent as such; otherwise
//       as "high". Default false.
#pragma once

#include <memory>
#include <string>

#include "cairn/llm/http.hpp"
#include "cairn/llm/provider.hpp"

namespace cairn {

// `api_key` is sent as "Authorization: Bearer …" (not at all when empty) and
// appears in no message, event or error.
std::shared_ptr<Provider> make_openai_responses_provider(std::string api_key, HttpClient client = {});

}  // namespace cairn
