// What a model or a tool hands the harness, made fit for the log before any
// of it is appended or published (DESIGN.md, invariants 5 and 16; "Secrets
// stay secret"): secrets redacted, text valid UTF-8, and every tool call of
// a response answerable by exactly one result.
#pragma once

#include <string>
#include <string_view>

#include "cairn/harness/tool.hpp"
#include "cairn/log/message.hpp"
#include "cairn/secrets.hpp"

namespace cairn {

// A response as the log may hold it: secrets redacted from its text,
// thinking, tool calls and error; every string valid UTF-8; every tool call
// id non-empty and unique within the message (a later duplicate of `x`
// becomes `x_2`, an empty id `call_<n>`, both of [A-Za-z0-9_-] and at most
// 40 characters, which every provider takes back); arguments that are not a
// JSON object kept as raw_arguments. Idempotent.
void sanitize_response(AssistantMessage& message, const Secrets& secrets);

// Secrets redacted from a streamed partial response (text, thinking, tool
// calls, error) — nothing else, as it may run per streamed chunk. True when
// one was there.
bool redact_partial(AssistantMessage& message, const Secrets& secrets);

// A tool's result as the log may hold it: secrets redacted, valid UTF-8.
void sanitize_result(ToolResult& result, const Secrets& secrets);

// A text the model wrote (a summary) or an error message: the same.
std::string sanitize_text(std::string text, const Secrets& secrets);

// The error result of a call whose arguments are not a JSON object: says why
// (the parser's error, or "not an object") and how they began.
ToolResult invalid_arguments_result(std::string_view raw_arguments);

}  // namespace cairn
