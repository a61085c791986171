// Which tool calls run unasked, which wait for a human, which are refused
// (DESIGN.md, "Input requests"; invariant 13). A policy is evaluated for each
// new call of a batch after before_tool, on the arguments the call would run
// with; `ask` makes the run append an input request and wait for its answer.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/json.hpp"
#include "cairn/log/record.hpp"

namespace cairn {

enum class ApprovalDecision { allow, ask, deny };
std::string_view to_string(ApprovalDecision decision);  // "allow" | "ask" | "deny"

// A tool name ("*" for any) with an optional pattern on the call's subject
// (Tool::approval_subject): `bash`, `bash(git status)`, `bash(npm run test:*)`,
// `edit(src/*)`. In a pattern `*` matches any run of characters, `\*` a star;
// the pattern must match the whole subject. A call whose tool has no subject,
// or whose subject argument is not a string, matches name-only rules alone.
struct ApprovalRule {
  std::string tool;
  std::optional<std::string> pattern;
  ApprovalDecision decision = ApprovalDecision::ask;

  // Parses the text form above; invalid_argument names what is wrong.
  static Result<ApprovalRule> parse(std::string_view text, ApprovalDecision decision);
  std::string text() const;  // the form parse() reads
  bool matches(std::string_view tool_name, const std::optional<std::string>& subject) const;
};

// What a policy decides about: one call, with the arguments it would run with.
struct ApprovalCall {
  std::string ref;
  std::string tool_name;
  const Json* args = nullptr;
  std::optional<std::string> subject;  // the subject argument's value, when the tool has one
  // The sandbox the call would run under (the run's recorded policy, else
  // HarnessOptions::sandbox; empty without one), and whether it asks for the
  // network that policy keeps off (Tool::network_argument): such a call runs
  // with the network only when a human allows it.
  std::optional<SandboxRecord> sandbox;
  bool wants_network = false;
};

struct ApprovalVerdict {
  ApprovalDecision decision = ApprovalDecision::allow;
  std::string rule;  // what decided: a rule's text, "default", or the callback's own words
};

struct ApprovalPolicy {
  // The callback decides first when set; nullopt leaves the call to the
  // rules. It runs on the run's thread and must not block on the harness.
  std::function<std::optional<ApprovalVerdict>(const ApprovalCall& call)> decide;
  // First match wins.
  std::vector<ApprovalRule> rules;
  // When no rule matches. `allow` keeps a harness without a policy as it was.
  ApprovalDecision fallback = ApprovalDecision::allow;

  // The verdict for `call`. `remembered` are the rules answers asked to
  // remember ("always"): one that matches turns an `ask` into `allow`,
  // never a `deny` into anything.
  ApprovalVerdict evaluate(const ApprovalCall& call, const std::vector<ApprovalRule>& remembered = {}) const;
};

// `pattern` matched against all of `text`: `*` any run of characters, `\*` a star.
bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace cairn
