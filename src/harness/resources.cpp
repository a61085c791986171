// Skills and prompt templates: both become an ordinary prompt, so a run that
// invoked one is recorded (and resumed) like any other.
#include <fmt/format.h>

#include "core.hpp"

namespace cairn {

std::string expand_template(const std::string& content, const std::vector<std::string>& args) {
  std::string all;
  for (const auto& arg : args) all += (all.empty() ? "" : " ") + arg;
  std::string out;
  for (std::size_t i = 0; i < content.size(); ++i) {
    if (content[i] != '$' || i + 1 == content.size()) {
      out += content[i];
      continue;
    }
    const char next = content[i + 1];
    if (next >= '1' && next <= '9') {
      const std::size_t index = static_cast<std::size_t>(next - '1');
      if (index < args.size()) out += args[index];
      ++i;
    } else if (next == '@') {
      out += all;
      ++i;
    } else if (content.compare(i + 1, 9, "ARGUMENTS") == 0) {
      out += all;
      i += 9;
    } else {
      out += '$';
    }
  }
  return out;
}

RunResult AgentRef::skill(const std::string& name, const std::string& additional_instructions) {
  std::optional<Skill> found;
  {
    std::lock_guard lock(core_->mu);
    for (const auto& skill : core_->options.resources.skills) {
      if (skill.name == name) found = skill;
    }
  }
  if (!found) {
    return RunResult{.outcome = Outcome::rejected,
                     .error = Error(Errc::unknown_skill, fmt::format("no skill named '{}'", name))};
  }
  std::string text = fmt::format("<skill name=\"{}\" location=\"{}\">\n{}\n</skill>", found->name, found->location,
                                 found->content);
  if (!additional_instructions.empty()) text += "\n\n" + additional_instructions;
  return prompt(std::move(text));
}

RunResult AgentRef::prompt_from_template(const std::string& name, const std::vector<std::string>& args) {
  std::optional<PromptTemplate> found;
  {
    std::lock_guard lock(core_->mu);
    for (const auto& tmpl : core_->options.resources.prompt_templates) {
      if (tmpl.name == name) found = tmpl;
    }
  }
  if (!found) {
    return RunResult{.outcome = Outcome::rejected,
                     .error = Error(Errc::unknown_template, fmt::format("no prompt template named '{}'", name))};
  }
  return prompt(expand_template(found->content, args));
}

Resources AgentHarness::resources() const {
  std::lock_guard lock(core_->mu);
  return core_->options.resources;
}

void AgentHarness::set_resources(Resources resources) {
  Json names = {{"skills", Json::array()}, {"promptTemplates", Json::array()}};
  for (const auto& skill : resources.skills) names["skills"].push_back(skill.name);
  for (const auto& tmpl : resources.prompt_templates) names["promptTemplates"].push_back(tmpl.name);
  {
    std::lock_guard lock(core_->mu);
    core_->options.resources = std::move(resources);
  }
  core_->publish(Event{EventType::config_update, "", std::nullopt, std::nullopt, {{"property", "resources"}, {"value", names}}});
}

}  // namespace cairn
