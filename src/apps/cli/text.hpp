// How records and messages read on a terminal: one-line previews for `log`
// and `tree`, full text for `context`.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "cairn/log/message.hpp"
#include "cairn/log/record.hpp"

namespace cairn::cli {

// Whitespace runs (newlines included) become one space; longer than
// `max_chars` code points ends in "...".
std::string one_line(std::string_view text, std::size_t max_chars = 60);

// The first characters of an id, as the tree shows it.
std::string short_id(std::string_view id);

// The text of a message's content: text blocks joined, images and tool calls
// as short markers.
std::string content_text(const UserContent& content);
std::string message_text(const AgentMessage& message);
std::string message_text(const LlmMessage& message);

// "role: text" in one line.
std::string message_preview(const AgentMessage& message, std::size_t max_chars = 60);
// What a tree entry says, without its type: a message's role and text, a
// summary, a customType, a model.
std::string entry_preview(const TreeEntry& entry, std::size_t max_chars = 60);
// What a harness record says: operation kind, outcome, attempt, tool.
std::string harness_preview(const HarnessRecord& record, std::size_t max_chars = 60);

}  // namespace cairn::cli
