// The session header: the first line of a JSONL file, the sessions row of SQLite.
#include <fmt/format.h>

#include "cairn/store/session.hpp"

namespace cairn {

Json encode(const SessionHeader& header) {
  Json json = Json::object();
  json["type"] = "session";
  json["version"] = header.version;
  json["id"] = header.id;
  json["timestamp"] = header.timestamp;
  json["cwd"] = header.cwd;
  if (header.parent_session) json["parentSession"] = *header.parent_session;
  for (const auto& [key, value] : header.extra.items()) json[key] = value;
  return json;
}

Result<SessionHeader> decode_header(const Json& json) {
  if (!json.is_object()) return fail(Errc::corrupt_log, "session header: not a JSON object");
  auto type = json.find("type");
  if (type == json.end() || *type != "session") return fail(Errc::corrupt_log, "session header: type is not \"session\"");
  SessionHeader header;
  auto string_of = [&](const char* key, std::string& out, bool required) -> Status {
    auto it = json.find(key);
    if (it == json.end()) {
      if (required) return fail(Errc::corrupt_log, fmt::format("session header: {} missing", key));
      return {};
    }
    if (!it->is_string()) return fail(Errc::corrupt_log, fmt::format("session header: {} is not a string", key));
    out = it->get<std::string>();
    return {};
  };
  if (auto s = string_of("id", header.id, true); !s) return std::unexpected(s.error());
  if (auto s = string_of("timestamp", header.timestamp, false); !s) return std::unexpected(s.error());
  if (auto s = string_of("cwd", header.cwd, false); !s) return std::unexpected(s.error());
  auto version = json.find("version");
  if (version == json.end() || !version->is_number_integer()) {
    return fail(Errc::corrupt_log, "session header: version missing or not an integer");
  }
  header.version = version->get<std::int64_t>();
  if (auto parent = json.find("parentSession"); parent != json.end() && !parent->is_null()) {
    if (!parent->is_string()) return fail(Errc::corrupt_log, "session header: parentSession is not a string");
    header.parent_session = parent->get<std::string>();
  }
  for (const auto& [key, value] : json.items()) {
    if (key == "type" || key == "version" || key == "id" || key == "timestamp" || key == "cwd" ||
        key == "parentSession") {
      continue;
    }
    header.extra[key] = value;
  }
  return header;
}

bool is_child_session(const SessionHeader& header) { return header.extra.is_object() && header.extra.contains("child"); }

}  // namespace cairn
