#include "cairn/harness/approval.hpp"

#include <fmt/format.h>

namespace cairn {

std::string_view to_string(ApprovalDecision decision) {
  switch (decision) {
    case ApprovalDecision::allow: return "allow";
    case ApprovalDecision::ask: return "ask";
    case ApprovalDecision::deny: return "deny";
  }
  return "unknown";
}

// Iterative, with one backtrack point per star: linear in practice, and no
// recursion for a hostile pattern of many stars to blow the stack with.
bool glob_match(std::string_view pattern, std::string_view text) {
  std::size_t p = 0, t = 0;
  std::size_t star = std::string_view::npos, resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = ++p;
      resume = t;
      continue;
    }
    if (p < pattern.size()) {
      char want = pattern[p];
      std::size_t width = 1;
      if (want == '\\' && p + 1 < pattern.size()) {
        want = pattern[p + 1];
        width = 2;
      }
      if (want == text[t]) {
        p += width;
        ++t;
        continue;
      }
    }
    if (star == std::string_view::npos) return false;
    p = star;
    t = ++resume;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

Result<ApprovalRule> ApprovalRule::parse(std::string_view text, ApprovalDecision decision) {
  ApprovalRule rule{.decision = decision};
  const std::size_t open = text.find('(');
  if (open == std::string_view::npos) {
    rule.tool = std::string(text);
  } else {
    if (text.back() != ')') {
      return fail(Errc::invalid_argument, fmt::format("approval rule '{}': a pattern ends with ')'", text));
    }
    rule.tool = std::string(text.substr(0, open));
    rule.pattern = std::string(text.substr(open + 1, text.size() - open - 2));
  }
  if (rule.tool.empty()) return fail(Errc::invalid_argument, fmt::format("approval rule '{}': no tool name", text));
  for (char c : rule.tool) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '.' || c == '*';
    if (!ok) return fail(Errc::invalid_argument, fmt::format("approval rule '{}': '{}' is not a tool name", text, rule.tool));
  }
  return rule;
}

std::string ApprovalRule::text() const { return pattern ? fmt::format("{}({})", tool, *pattern) : tool; }

bool ApprovalRule::matches(std::string_view tool_name, const std::optional<std::string>& subject) const {
  if (tool != "*" && tool != tool_name) return false;
  if (!pattern) return true;
  return subject && glob_match(*pattern, *subject);
}

ApprovalVerdict ApprovalPolicy::evaluate(const ApprovalCall& call, const std::vector<ApprovalRule>& remembered) const {
  std::optional<ApprovalVerdict> verdict;
  if (decide) verdict = decide(call);
  if (!verdict) {
    for (const auto& rule : rules) {
      if (rule.matches(call.tool_name, call.subject)) {
        verdict = ApprovalVerdict{rule.decision, rule.text()};
        break;
      }
    }
  }
  if (!verdict) verdict = ApprovalVerdict{fallback, "default"};
  if (verdict->decision == ApprovalDecision::ask) {
    for (const auto& rule : remembered) {
      if (rule.matches(call.tool_name, call.subject)) return ApprovalVerdict{ApprovalDecision::allow, rule.text()};
    }
  }
  return *verdict;
}

}  // namespace cairn
