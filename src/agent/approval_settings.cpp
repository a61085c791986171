#include "approval_settings.hpp"

#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "cairn/json.hpp"

namespace cairn::agent {
namespace {

// The rules of one settings file, deny first: a file that both allows and
// denies a call means to deny it.
Status read_rules(const std::filesystem::path& file, bool keep_ask_and_allow, std::vector<ApprovalRule>& rules) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return {};
  std::ifstream in(file);
  if (!in) return fail(Errc::invalid_config, fmt::format("{}: cannot be read", file.string()));
  std::stringstream text;
  text << in.rdbuf();
  const Json settings = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (settings.is_discarded() || !settings.is_object()) {
    return fail(Errc::invalid_config, fmt::format("{}: not a JSON object", file.string()));
  }
  auto approval = settings.find("approval");
  if (approval == settings.end()) return {};
  if (!approval->is_object()) return fail(Errc::invalid_config, fmt::format("{}: approval: expected an object", file.string()));
  for (const auto& [key, value] : approval->items()) {
    if (key != "allow" && key != "ask" && key != "deny") {
      return fail(Errc::invalid_config,
                  fmt::format("{}: approval.{}: unknown (allow, ask and deny hold rules)", file.string(), key));
    }
    if (!value.is_array()) {
      return fail(Errc::invalid_config, fmt::format("{}: approval.{}: expected an array of rules", file.string(), key));
    }
  }
  const std::pair<const char*, ApprovalDecision> lists[] = {
      {"deny", ApprovalDecision::deny}, {"ask", ApprovalDecision::ask}, {"allow", ApprovalDecision::allow}};
  for (const auto& [key, decision] : lists) {
    auto list = approval->find(key);
    if (list == approval->end()) continue;
    if (decision != ApprovalDecision::deny && !keep_ask_and_allow) continue;
    for (std::size_t i = 0; i < list->size(); ++i) {
      const Json& text_rule = (*list)[i];
      if (!text_rule.is_string()) {
        return fail(Errc::invalid_config, fmt::format("{}: approval.{}[{}]: expected a rule such as \"bash(git status)\"",
                                                      file.string(), key, i));
      }
      auto rule = ApprovalRule::parse(text_rule.get<std::string>(), decision);
      if (!rule) return fail(Errc::invalid_config, fmt::format("{}: {}", file.string(), rule.error().message));
      rules.push_back(std::move(*rule));
    }
  }
  return {};
}

bool is_edit(const ApprovalCall& call) {
  return (call.tool_name == "edit" || call.tool_name == "write") && call.subject.has_value();
}

// Whether `path` is inside the workspace's .git/hooks or .cairn, which the
// sandbox keeps read-only for commands: edit and write run in cairn's own
// process, outside the sandbox, so there a human decides.
bool in_protected_part(const std::filesystem::path& cwd, std::string_view path) {
  for (const char* part : {".git/hooks", ".cairn"}) {
    const auto dir = cwd / part;
    std::error_code ec;
    const auto real = std::filesystem::weakly_canonical(dir, ec);
    const std::filesystem::path given(path);
    const auto target = std::filesystem::weakly_canonical(given.is_absolute() ? given : cwd / given, ec);
    if (ec) return true;
    const auto relative = target.lexically_relative(real);
    if (!relative.empty() && relative.begin()->string() != "..") return true;
  }
  return false;
}

// --approval auto: what the sandbox bounds runs unasked, the rest asks.
std::optional<ApprovalVerdict> sandboxed_verdict(const ApprovalCall& call, const std::filesystem::path& cwd) {
  const bool sandboxed = call.sandbox && call.sandbox->mode != SandboxMode::off;
  if (call.wants_network && sandboxed && !call.sandbox->network) {
    return ApprovalVerdict{ApprovalDecision::ask, "auto: the command asks for the network"};
  }
  if (call.tool_name == "bash" && sandboxed) return ApprovalVerdict{ApprovalDecision::allow, "auto: sandboxed"};
  if (is_edit(call) && sandboxed && call.sandbox->mode == SandboxMode::workspace_write &&
      inside_directory(cwd, *call.subject) && !in_protected_part(cwd, *call.subject)) {
    return ApprovalVerdict{ApprovalDecision::allow, "auto: inside the workspace"};
  }
  return std::nullopt;
}

}  // namespace

bool inside_directory(const std::filesystem::path& cwd, std::string_view path) {
  if (path.empty()) return false;
  std::error_code ec;
  const std::filesystem::path given(path);
  const std::filesystem::path full = given.is_absolute() ? given : cwd / given;
  const std::filesystem::path target = std::filesystem::weakly_canonical(full, ec);
  if (ec) return false;
  const std::filesystem::path root = std::filesystem::weakly_canonical(cwd, ec);
  if (ec) return false;
  const std::filesystem::path relative = target.lexically_relative(root);
  if (relative.empty()) return false;
  const std::string first = relative.begin()->string();
  return first != ".." && first != ".";
}

std::string always_rule(std::string_view tool_name, const std::optional<std::string>& subject) {
  if (!subject) return std::string(tool_name);
  std::string escaped;
  for (char c : *subject) {
    if (c == '*' || c == '\\') escaped += '\\';
    escaped += c;
  }
  return fmt::format("{}({})", tool_name, escaped);
}

std::string_view to_string(ApprovalMode mode) {
  switch (mode) {
    case ApprovalMode::ask: return "ask";
    case ApprovalMode::auto_edit: return "auto-edit";
    case ApprovalMode::sandboxed_auto: return "auto";
    case ApprovalMode::never_ask: return "never-ask";
  }
  return "unknown";
}

std::optional<ApprovalMode> parse_approval_mode(std::string_view text) {
  for (auto mode : {ApprovalMode::ask, ApprovalMode::auto_edit, ApprovalMode::sandboxed_auto, ApprovalMode::never_ask}) {
    if (to_string(mode) == text) return mode;
  }
  return std::nullopt;
}

Result<ApprovalPolicy> make_approval_policy(ApprovalMode mode, const std::filesystem::path& cwd,
                                            const std::optional<std::filesystem::path>& user_config_dir) {
  const bool never_ask = mode == ApprovalMode::never_ask;
  std::vector<ApprovalRule> file_rules;
  if (user_config_dir) {
    if (auto read = read_rules(*user_config_dir / "settings.json", !never_ask, file_rules); !read) {
      return std::unexpected(read.error());
    }
  }
  if (auto read = read_rules(cwd / ".cairn" / "settings.json", !never_ask, file_rules); !read) {
    return std::unexpected(read.error());
  }
  ApprovalPolicy policy;
  if (never_ask) {
    policy.rules = std::move(file_rules);  // deny rules only
    policy.fallback = ApprovalDecision::allow;
    return policy;
  }
  // The files' rules decide first; then the mode's own (auto-edit's, auto's);
  // then the rules below.
  policy.decide = [file_rules = std::move(file_rules), mode, cwd](const ApprovalCall& call) -> std::optional<ApprovalVerdict> {
    for (const auto& rule : file_rules) {
      if (rule.matches(call.tool_name, call.subject)) return ApprovalVerdict{rule.decision, rule.text()};
    }
    if (mode == ApprovalMode::auto_edit && is_edit(call) && inside_directory(cwd, *call.subject)) {
      return ApprovalVerdict{ApprovalDecision::allow, "auto-edit"};
    }
    if (mode == ApprovalMode::sandboxed_auto) return sandboxed_verdict(call, cwd);
    return std::nullopt;
  };
  // task runs unasked: the subagent's own calls ask for themselves, through this ref.
  for (const char* tool : {"read", "grep", "find", "ls", "task"}) {
    policy.rules.push_back(ApprovalRule{.tool = tool, .decision = ApprovalDecision::allow});
  }
  policy.fallback = ApprovalDecision::ask;
  return policy;
}

}  // namespace cairn::agent
