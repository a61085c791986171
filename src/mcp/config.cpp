// The MCP configuration, in the shape Claude Code users already write:
//
//   {"mcpServers": {
//     "fs":   {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
//              "env": {"A": "${A}"}, "cwd": "tools", "timeout": 60000,
//              "replay": "never", "approval": "ask",
//              "tools": {"read_file": {"approval": "allow"}}},
//     "web":  {"type": "http", "url": "https://example.com/mcp",
//              "headers": {"Authorization": "Bearer ${WEB_TOKEN}"}}}}

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "cairn/tools/mcp.hpp"

namespace cairn::mcp {

namespace {

struct Where {
  const std::filesystem::path& file;
  std::string server;
  Error error(const std::string& what) const {
    return Error(Errc::invalid_config, server.empty() ? fmt::format("{}: {}", file.string(), what)
                                                      : fmt::format("{}: server '{}': {}", file.string(), server, what));
  }
};

std::optional<std::string> variable(const std::vector<std::string>& environment, std::string_view name) {
  for (const auto& entry : environment) {
    if (entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=') return entry.substr(name.size() + 1);
  }
  return std::nullopt;
}

// ${VAR} and ${VAR:-default}; every value put in joins `secrets`. `key`
// says where the text stands ("url", "headers".Authorization, "args"[1]).
Result<std::string> expand(std::string_view text, const std::vector<std::string>& environment, Secrets& secrets,
                           const Where& where, std::string_view key) {
  std::string out;
  for (std::size_t at = 0; at < text.size();) {
    const auto open = text.find("${", at);
    if (open == std::string_view::npos) {
      out.append(text.substr(at));
      break;
    }
    out.append(text.substr(at, open - at));
    const auto close = text.find('}', open);
    if (close == std::string_view::npos) return std::unexpected(where.error(fmt::format("{}: a '${{' without its '}}'", key)));
    std::string_view inside = text.substr(open + 2, close - open - 2);
    std::optional<std::string_view> fallback;
    if (auto dash = inside.find(":-"); dash != std::string_view::npos) {
      fallback = inside.substr(dash + 2);
      inside = inside.substr(0, dash);
    }
    if (inside.empty()) return std::unexpected(where.error(fmt::format("{}: an empty ${{}} reference", key)));
    if (auto value = variable(environment, inside); value && !value->empty()) {
      secrets.add(*value);
      out += *value;
    } else if (fallback) {
      out += *fallback;
    } else {
      return std::unexpected(where.error(fmt::format("{}: ${{{}}} is not set", key, inside)));
    }
    at = close + 1;
  }
  return out;
}

Result<std::string> string_field(const Json& object, const char* key, const std::vector<std::string>& environment,
                                 Secrets& secrets, const Where& where) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return std::unexpected(where.error(fmt::format("\"{}\" must be a string", key)));
  return expand(it->get<std::string>(), environment, secrets, where, fmt::format("\"{}\"", key));
}

Result<std::map<std::string, std::string>> string_map(const Json& object, const char* key,
                                                      const std::vector<std::string>& environment, Secrets& secrets,
                                                      const Where& where) {
  std::map<std::string, std::string> out;
  const auto it = object.find(key);
  if (it == object.end()) return out;
  if (!it->is_object()) return std::unexpected(where.error(fmt::format("\"{}\" must be an object of strings", key)));
  for (const auto& [name, value] : it->items()) {
    if (!value.is_string()) return std::unexpected(where.error(fmt::format("\"{}\".{} must be a string", key, name)));
    auto expanded = expand(value.get<std::string>(), environment, secrets, where, fmt::format("\"{}\".{}", key, name));
    if (!expanded) return std::unexpected(expanded.error());
    out[name] = std::move(*expanded);
  }
  return out;
}

Result<ToolOverride> override_of(const Json& object, const Where& where) {
  ToolOverride out;
  if (auto it = object.find("replay"); it != object.end()) {
    if (*it == "safe") out.replay = Replay::safe;
    else if (*it == "never") out.replay = Replay::never;
    else return std::unexpected(where.error("\"replay\" must be \"safe\" or \"never\""));
  }
  if (auto it = object.find("approval"); it != object.end()) {
    if (*it == "allow") out.approval = ApprovalDecision::allow;
    else if (*it == "ask") out.approval = ApprovalDecision::ask;
    else if (*it == "deny") out.approval = ApprovalDecision::deny;
    else return std::unexpected(where.error("\"approval\" must be \"allow\", \"ask\" or \"deny\""));
  }
  return out;
}

Result<ServerConfig> server_of(const std::string& name, const Json& entry, const std::filesystem::path& file,
                               const std::vector<std::string>& environment, Secrets& secrets) {
  const Where where{file, name};
  if (name.empty()) return std::unexpected(Where{file, ""}.error("a server with an empty name"));
  if (!entry.is_object()) return std::unexpected(where.error("must be an object"));
  ServerConfig server;
  server.name = name;
  server.source = file;
  if (entry.contains("type") && !entry["type"].is_string()) return std::unexpected(where.error("\"type\" must be a string"));
  const std::string type = entry.value("type", entry.contains("url") ? "http" : "stdio");
  if (type == "stdio") {
    StdioTransport stdio;
    auto command = string_field(entry, "command", environment, secrets, where);
    if (!command) return std::unexpected(command.error());
    if (command->empty()) return std::unexpected(where.error("\"command\" is empty"));
    stdio.command = std::move(*command);
    if (auto args = entry.find("args"); args != entry.end()) {
      if (!args->is_array()) return std::unexpected(where.error("\"args\" must be an array of strings"));
      for (const Json& arg : *args) {
        if (!arg.is_string()) return std::unexpected(where.error("\"args\" must be an array of strings"));
        auto expanded = expand(arg.get<std::string>(), environment, secrets, where,
                               fmt::format("\"args\"[{}]", stdio.args.size()));
        if (!expanded) return std::unexpected(expanded.error());
        stdio.args.push_back(std::move(*expanded));
      }
    }
    auto env = string_map(entry, "env", environment, secrets, where);
    if (!env) return std::unexpected(env.error());
    stdio.env = std::move(*env);
    if (entry.contains("cwd")) {
      auto cwd = string_field(entry, "cwd", environment, secrets, where);
      if (!cwd) return std::unexpected(cwd.error());
      // Relative to the file that says it, as a project's .mcp.json means.
      stdio.cwd = std::filesystem::path(*cwd).is_absolute() ? std::filesystem::path(*cwd) : file.parent_path() / *cwd;
    }
    if (auto sandboxed = entry.find("sandbox"); sandboxed != entry.end()) {
      if (!sandboxed->is_boolean()) return std::unexpected(where.error("\"sandbox\" must be true or false"));
      stdio.sandboxed = sandboxed->get<bool>();
    }
    server.transport = std::move(stdio);
  } else if (type == "http" || type == "streamable-http" || type == "streamableHttp") {
    HttpTransport http;
    auto url = string_field(entry, "url", environment, secrets, where);
    if (!url) return std::unexpected(url.error());
    if (!url->starts_with("http://") && !url->starts_with("https://")) {
      return std::unexpected(where.error("\"url\" must be an http:// or https:// URL"));
    }
    http.url = std::move(*url);
    auto headers = string_map(entry, "headers", environment, secrets, where);
    if (!headers) return std::unexpected(headers.error());
    for (auto& [header, value] : *headers) {
      // Header values are credentials more often than not.
      secrets.add(value);
      http.headers.emplace_back(header, std::move(value));
    }
    server.transport = std::move(http);
  } else if (type == "sse") {
    return std::unexpected(where.error("the HTTP+SSE transport of protocol 2024-11-05 is not supported; "
                                       "use \"type\": \"http\" (Streamable HTTP)"));
  } else {
    return std::unexpected(where.error(fmt::format("unknown \"type\" '{}' (stdio or http)", type)));
  }
  if (auto timeout = entry.find("timeout"); timeout != entry.end()) {
    if (!timeout->is_number() || timeout->get<double>() <= 0 || timeout->get<double>() > 7 * 86400e3) {
      return std::unexpected(where.error("\"timeout\" must be a number of milliseconds, above 0 and at most a week"));
    }
    server.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(timeout->get<double>()));
  }
  auto all = override_of(entry, where);
  if (!all) return std::unexpected(all.error());
  server.all_tools = *all;
  if (auto tools = entry.find("tools"); tools != entry.end()) {
    if (!tools->is_object()) return std::unexpected(where.error("\"tools\" must be an object"));
    for (const auto& [tool, say] : tools->items()) {
      if (!say.is_object()) return std::unexpected(where.error(fmt::format("\"tools\".{} must be an object", tool)));
      auto one = override_of(say, Where{file, name + "', tool '" + tool});
      if (!one) return std::unexpected(one.error());
      server.tools[tool] = *one;
    }
  }
  return server;
}

}  // namespace

Result<Config> load_config(const std::vector<std::filesystem::path>& files, const std::vector<std::string>& environment) {
  Config config;
  std::map<std::string, ServerConfig> servers;
  for (const auto& file : files) {
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) continue;
    std::ifstream in(file, std::ios::binary);
    if (!in) return std::unexpected(Error(Errc::invalid_config, fmt::format("{}: cannot be read", file.string())));
    std::stringstream text;
    text << in.rdbuf();
    const Json json = Json::parse(text.str(), nullptr, false);
    if (json.is_discarded() || !json.is_object()) {
      return std::unexpected(Error(Errc::invalid_config, fmt::format("{}: not a JSON object", file.string())));
    }
    const auto list = json.find("mcpServers");
    if (list == json.end()) continue;
    if (!list->is_object()) {
      return std::unexpected(Error(Errc::invalid_config, fmt::format("{}: \"mcpServers\" must be an object", file.string())));
    }
    for (const auto& [name, entry] : list->items()) {
      auto server = server_of(name, entry, file, environment, config.secrets);
      if (!server) return std::unexpected(server.error());
      servers[name] = std::move(*server);
    }
  }
  for (auto& [name, server] : servers) config.servers.push_back(std::move(server));
  return config;
}

}  // namespace cairn::mcp
