// A finished tool call's arguments as the model sent them. Every wire format
// carries them as JSON text that should be an object; a model may send
// anything. What is not a usable object is kept as text, and the call gets
// an error result saying why instead of running (see ToolCall::raw_arguments).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "cairn/json.hpp"

namespace cairn {

// Deeper nesting than any tool's schema asks for. It is found by one scan
// before any value is built: text nested 200,000 deep costs that scan, not
// a recursion, nor a value that every later copy and dump would recurse
// through.
inline constexpr int kMaxToolArgumentDepth = 64;

struct ToolArguments {
  Json arguments = Json::object();  // empty when `raw` is set
  // The text as sent, when it is not a JSON object nested at most
  // kMaxToolArgumentDepth deep.
  std::optional<std::string> raw;
};

// Blank text is no arguments, an empty object: some servers send "" for a
// tool that takes none.
ToolArguments read_tool_arguments(std::string_view text);

// Why `text` is not usable arguments, for the error result the call gets
// (the harness: "arguments are not valid JSON: " and this): "nested deeper
// than 64 levels", "a JSON array, not an object", "not valid JSON at line 1,
// column 12: syntax error while parsing value - invalid string: missing
// closing quote; last read: '"a'" (at most ~300 bytes). Empty when
// read_tool_arguments would not keep the text raw.
std::string tool_arguments_problem(std::string_view text);

}  // namespace cairn
