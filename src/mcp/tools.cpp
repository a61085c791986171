// MCP tools as cairn Tools: their names, their replay and approval defaults
// from the annotations, their results in the harness's shape.

#include <fmt/format.h>

#include "cairn/tools/mcp.hpp"
#include "cairn/utf8.hpp"

namespace cairn::mcp {

namespace {

// What a call returns to the model at most, as the built-in tools do: a
// server that answers 10 MB must not flood the context.
constexpr std::size_t kMaxResultText = 50 * 1024;
constexpr std::size_t kMaxName = 64;

std::string sanitized(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return out;
}

// FNV-1a: a short, stable tag that keeps two long names apart once cut.
std::string hash_tag(std::string_view text) {
  std::uint32_t hash = 2166136261u;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 16777619u;
  }
  return fmt::format("{:08x}", hash);
}

// `object[key]` when it is a string, else `fallback`: a server's odd value
// is shown as missing, not thrown (as Json::value would).
std::string string_in(const Json& object, const char* key, std::string fallback = {}) {
  if (!object.is_object()) return fallback;
  if (auto it = object.find(key); it != object.end() && it->is_string()) return it->get<std::string>();
  return fallback;
}

std::string describe_link(const Json& block) {
  std::string text = fmt::format("[resource link: {}", string_in(block, "name", string_in(block, "uri", "?")));
  if (block.contains("uri")) text += fmt::format(" <{}>", string_in(block, "uri"));
  if (block.contains("mimeType")) text += fmt::format(" ({})", string_in(block, "mimeType"));
  if (block.contains("description")) text += fmt::format(": {}", string_in(block, "description"));
  return text + "]";
}

std::string describe_resource(const Json& block) {
  const Json resource = block.value("resource", Json::object());
  const std::string uri = string_in(resource, "uri", "?");
  if (auto text = resource.find("text"); text != resource.end() && text->is_string()) {
    return fmt::format("[resource {}]\n{}", uri, text->get<std::string>());
  }
  const std::string blob = string_in(resource, "blob");
  return fmt::format("[resource {} ({}), {} bytes of base64 data not shown]", uri,
                     string_in(resource, "mimeType", "binary"), blob.size());
}

bool is_mcp_name(std::string_view name) { return name.starts_with("mcp__"); }

}  // namespace

Replay replay_from(const Annotations& annotations) {
  if (annotations.read_only.value_or(false)) return Replay::safe;
  // The protocol's defaults: destructive unless said otherwise, not idempotent.
  if (annotations.idempotent.value_or(false) && !annotations.destructive.value_or(true)) return Replay::safe;
  return Replay::never;
}

ApprovalDecision approval_from(const Annotations& annotations) {
  return annotations.read_only.value_or(false) ? ApprovalDecision::allow : ApprovalDecision::ask;
}

std::string cairn_tool_name(std::string_view server, std::string_view tool, std::set<std::string>& taken) {
  const std::string whole = fmt::format("mcp__{}__{}", server, tool);
  std::string name = sanitized(whole);
  if (name.size() > kMaxName) name = name.substr(0, kMaxName - 9) + "_" + hash_tag(whole);
  if (taken.contains(name)) {
    // Two names that sanitise alike (`a.b` and `a_b`): the later gets a number.
    for (int n = 2;; ++n) {
      const std::string suffix = fmt::format("_{}", n);
      std::string candidate = name.size() + suffix.size() > kMaxName ? name.substr(0, kMaxName - suffix.size()) + suffix
                                                                     : name + suffix;
      if (!taken.contains(candidate)) {
        name = std::move(candidate);
        break;
      }
    }
  }
  taken.insert(name);
  return name;
}

ToolResult to_tool_result(const Json& result) {
  ToolResult out;
  const auto is_error = result.find("isError");
  out.is_error = is_error != result.end() && is_error->is_boolean() && is_error->get<bool>();
  std::size_t text_bytes = 0;
  bool cut = false;
  std::size_t total_text = 0;
  const auto add_text = [&](std::string text) {
    text = to_valid_utf8(text);
    total_text += text.size();
    if (cut) return;
    if (text_bytes + text.size() > kMaxResultText) {
      text.resize(utf8_floor(text, kMaxResultText - text_bytes));
      cut = true;
    }
    text_bytes += text.size();
    out.content.push_back(TextContent{.text = std::move(text)});
  };
  if (auto content = result.find("content"); content != result.end() && content->is_array()) {
    for (const Json& block : *content) {
      if (!block.is_object()) continue;
      const std::string type = string_in(block, "type");
      if (type == "text") {
        add_text(string_in(block, "text"));
      } else if (type == "image" && block.contains("data") && block["data"].is_string()) {
        out.content.push_back(ImageContent{.data = block["data"].get<std::string>(),
                                           .mime_type = string_in(block, "mimeType", "image/png")});
      } else if (type == "audio") {
        add_text(fmt::format("[audio ({}), {} bytes of base64 data not shown]", string_in(block, "mimeType", "?"),
                             string_in(block, "data").size()));
      } else if (type == "resource_link") {
        add_text(describe_link(block));
      } else if (type == "resource") {
        add_text(describe_resource(block));
      } else {
        add_text(fmt::format("[content of type '{}', which cairn does not show]", type));
      }
    }
  }
  if (auto structured = result.find("structuredContent"); structured != result.end() && !structured->is_null()) {
    out.details = Json{{"structuredContent", *structured}};
    if (out.content.empty()) add_text(structured->dump(2, ' ', false, Json::error_handler_t::replace));
  }
  if (cut) {
    out.content.push_back(TextContent{.text = fmt::format("\n\n[The result was cut at {} KB of its {} KB of text.]",
                                                          kMaxResultText / 1024, total_text / 1024)});
  }
  if (out.content.empty()) out.content.push_back(TextContent{.text = out.is_error ? "(error without a message)" : "(no output)"});
  return out;
}

std::vector<McpTool> make_tools(const std::vector<std::shared_ptr<Client>>& clients) {
  std::vector<McpTool> out;
  std::set<std::string> taken;
  for (const auto& client : clients) {
    if (client->state() != ServerState::ready) continue;
    const ServerConfig& config = client->config();
    for (const ServerTool& listed : client->tools()) {
      McpTool made;
      made.server = config.name;
      made.server_tool = listed.name;
      made.annotations = listed.annotations;
      ToolOverride say = config.all_tools;
      if (auto it = config.tools.find(listed.name); it != config.tools.end()) {
        if (it->second.replay) say.replay = it->second.replay;
        if (it->second.approval) say.approval = it->second.approval;
      }
      made.approval = say.approval.value_or(approval_from(listed.annotations));
      Tool& tool = made.tool;
      tool.name = cairn_tool_name(config.name, listed.name, taken);
      tool.description = listed.description.empty() ? fmt::format("{} (from MCP server {})", listed.name, config.name)
                                                    : listed.description;
      tool.parameters = listed.input_schema;
      tool.replay = say.replay.value_or(replay_from(listed.annotations));
      tool.parallel = true;
      // The client, not a connection: a call goes to whatever connection
      // the server has when it is made.
      tool.execute = [client, server_tool = listed.name, timeout = config.timeout](const Json& args,
                                                                                    const ToolContext& context) {
        auto progress = [&context](const CallProgress& step) {
          if (!context.update) return;
          std::string text = step.total ? fmt::format("progress {}/{}", step.progress, *step.total)
                                        : fmt::format("progress {}", step.progress);
          if (!step.message.empty()) text += ": " + step.message;
          context.update(ToolResult::text(std::move(text)));
        };
        auto result = client->call_tool(server_tool, args, progress, context.cancel, timeout);
        if (!result) return ToolResult::text(result.error().message, true);
        return to_tool_result(*result);
      };
      out.push_back(std::move(made));
    }
  }
  return out;
}

std::vector<ApprovalRule> approval_rules(const std::vector<McpTool>& tools) {
  std::vector<ApprovalRule> rules;
  for (const McpTool& tool : tools) {
    rules.push_back(ApprovalRule{.tool = tool.tool.name, .pattern = std::nullopt, .decision = tool.approval});
  }
  return rules;
}

std::optional<std::string> describe_missing_tool(std::string_view name,
                                                 const std::vector<std::shared_ptr<Client>>& clients) {
  if (!is_mcp_name(name)) return std::nullopt;
  // The configured server whose (sanitised) prefix the name has: the longest,
  // as one server's name may begin another's.
  const Client* owner = nullptr;
  std::size_t longest = 0;
  for (const auto& client : clients) {
    const std::string prefix = sanitized(fmt::format("mcp__{}__", client->config().name));
    if (name.starts_with(prefix) && prefix.size() > longest) {
      owner = client.get();
      longest = prefix.size();
    }
  }
  if (!owner) {
    std::string_view rest = name.substr(5);
    const std::string server(rest.substr(0, rest.find("__")));
    return fmt::format("no MCP server '{}' is configured here", server);
  }
  const std::string& server = owner->config().name;
  switch (owner->state()) {
    case ServerState::ready:
      return fmt::format("MCP server '{}' no longer has this tool", server);
    case ServerState::starting:
      return fmt::format("MCP server '{}' is restarting{}", server,
                         owner->state_message().empty() ? "" : " after: " + owner->state_message());
    case ServerState::failed:
      return fmt::format("MCP server '{}' is not running: {}", server, owner->state_message());
  }
  return std::nullopt;
}

}  // namespace cairn::mcp
