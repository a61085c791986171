// The records the crash child appends, rebuilt identically by the parent to
// check what survived byte for byte.
#pragma once

#include <string>

#include "cairn/log/record.hpp"

namespace cairn::testing {

inline Record crash_record(const std::string& id, const std::optional<std::string>& parent, const std::string& ref) {
  UserMessage message;
  std::string text = "payload of " + id + ": ";
  while (text.size() < 180) text += "the quick brown fox jumps over the lazy dog. ";
  message.content = text;
  message.timestamp = 1764496998000;
  TreeEntry entry;
  entry.id = id;
  entry.parent_id = parent;
  entry.timestamp = "2026-11-30T10:00:00.000Z";
  entry.ref = ref;
  entry.body = MessageBody{std::move(message)};
  return Record{-1, std::move(entry)};
}

}  // namespace cairn::testing
