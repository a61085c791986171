#include "approval_cli.hpp"

#include <fmt/format.h>

#include "cli.hpp"
#include "text.hpp"

namespace cairn::cli {

std::string describe_input(const PendingInput& input) {
  if (input.kind == "question") {
    std::string text = fmt::format("question ({}): {}", input.tool_call_id, input.question.value_or(""));
    if (!input.choices.empty()) {
      text += " [";
      for (std::size_t i = 0; i < input.choices.size(); ++i) text += (i ? " | " : "") + input.choices[i];
      text += "]";
    }
    return text;
  }
  std::string what;
  if (auto it = input.arguments.find("command"); it != input.arguments.end() && it->is_string()) {
    what = it->get<std::string>();
  } else if (auto path = input.arguments.find("path"); path != input.arguments.end() && path->is_string()) {
    what = path->get<std::string>();
  } else {
    what = input.arguments.dump();
  }
  return fmt::format("{} ({}): {}  [asked by rule {}]", input.tool_name, input.tool_call_id, one_line(what, 400),
                     input.rule.value_or("default"));
}

int report_awaiting_input(const std::string& session_id, const std::string& ref,
                          const std::vector<PendingInput>& pending) {
  const std::string ref_flag = ref == "main" ? "" : " --ref " + ref;
  fmt::print(stderr, "cairn: session {} waits for input:\n", session_id);
  for (const auto& input : pending) {
    fmt::print(stderr, "  {}\n", describe_input(input));
    const std::string call = pending.size() > 1 ? " --call " + input.tool_call_id : "";
    if (input.kind == "question") {
      fmt::print(stderr, "    answer:   cairn answer {}{}{} TEXT\n", session_id, ref_flag, call);
      fmt::print(stderr, "    decline:  cairn deny {}{}{} [--reason TEXT]\n", session_id, ref_flag, call);
    } else {
      fmt::print(stderr, "    allow:    cairn approve {}{}{} [--always]\n", session_id, ref_flag, call);
      fmt::print(stderr, "    deny:     cairn deny {}{}{} [--reason TEXT]\n", session_id, ref_flag, call);
    }
  }
  fmt::print(stderr, "  then:       cairn resume {}{}\n", session_id, ref_flag);
  return kAwaitingInput;
}

}  // namespace cairn::cli
