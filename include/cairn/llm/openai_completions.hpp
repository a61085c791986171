// The "openai-completions" API: OpenAI's Chat Completions
// (POST {base_url}/chat/completions, streamed), which most other servers
// speak too: DeepSeek, Groq, Mistral, OpenRouter, xAI, and the local ones
// (Ollama, llama.cpp server, vLLM, LM Studio).
//
// Request: the system prompt as a "system" message ("developer" for OpenAI's
// reasoning models), user text and images (data URLs), assistant text,
// thinking (replayed in the field it came in) and tool calls, tool results
// as "tool" messages (their images follow in a user message), tools as
// functions with JSON schemas. StreamOptions: max_tokens, temperature,
// headers, thinking_level (→ reasoning_effort on a reasoning model; "off"
// sends none), and in `extra`: "toolChoice" (sent as tool_choice),
// "idleTimeoutMs" (default 300000: a reasoning model may think for minutes
// before its first byte), "connectTimeoutMs".
//
// Stream: text from delta.content; thinking from delta.reasoning_content,
// delta.reasoning or delta.reasoning_text (the first present); tool calls
// from delta.tool_calls by their index, several at once, interleaved or
// not; usage from the chunk that carries it (stream_options.include_usage);
// finish_reason stop / length / tool_calls (content_filter is an error).
//
// The compatible servers differ; Model::compat says how (each key optional,
// the default guessed from base_url and provider as noted):
//   "maxTokensField": "max_completion_tokens" | "max_tokens"
//       which field carries max_tokens. Default: max_completion_tokens for
//       OpenAI (its reasoning models refuse max_tokens), max_tokens for every
//       other server (the field they all accept).
//   "supportsUsageInStreaming": bool   send stream_options.include_usage.
//       Default true.
//   "supportsStore": bool   send "store": false. Default: OpenAI only.
//   "supportsDeveloperRole": bool   a reasoning model's system prompt goes in
//       a "developer" message. Default: OpenAI only.
//   "supportsReasoningEffort": bool   send reasoning_effort. Default true,
//       false for xAI and Z.ai.
//   "thinkingFormat": "openai" | "zai" | "qwen"   how thinking is switched:
//       reasoning_effort; {"thinking": {"type": "enabled"|"disabled"}};
//       {"enable_thinking": bool}. Default "zai" for Z.ai, else "openai".
//   "supportsXhigh": bool   thinking level xhigh is sent as such; otherwise
//       as "high". Default false.
//   "requiresToolResultName": bool   tool messages carry "name". Default:
//       Mistral.
//   "requiresAssistantAfterToolResult": bool   a user message never follows
//       a tool message directly (an assistant message is put between), and
//       assistant content is "" rather than null. Default false.
//   "requiresThinkingAsText": bool   earlier thinking is replayed as text,
//       not in a reasoning field. Default: Mistral.
//   "requiresMistralToolIds": bool   tool call ids are replayed as Mistral
//       demands (9 letters and digits). Default: Mistral.
#pragma once

#include <memory>
#include <string>

#include "cairn/llm/http.hpp"
#include "cairn/llm/provider.hpp"

namespace cairn {

// `api_key` is sent as "Authorization: Bearer …" (not at all when empty, as
// local servers need) and appears in no message, event or error.
std::shared_ptr<Provider> make_openai_completions_provider(std::string api_key, HttpClient client = {});

}  // namespace cairn
