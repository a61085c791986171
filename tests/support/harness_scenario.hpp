// The scenario of the harness's real-process crash test, shared by the child
// that runs it until it is killed and by the parent that resumes what the
// child left: both must offer the same tools and give the same answers, or a
// resumed run would not be the run that was interrupted.
//
// Every prompt's text is its ref's name, and a run takes three steps:
//   [echo (replay safe) + effect (replay never), in parallel] → [effect] → "done".
// The provider's answer is a pure function of the request's context, so a run
// resumed in another process asks the same questions and gets the same
// answers. Tool call ids name the ref and the context's length, which makes
// them unique across the whole session (a branch only grows).
//
// The outside world: each execution of a tool appends its call id as one line
// to MARKER_DIR/<tool>-<call id>, so the number of lines is the number of
// times the effect happened, whichever process ran it.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cairn/harness/harness.hpp"
#include "cairn/llm/faux.hpp"

namespace cairn::testing::scenario {

// At most one kill lands in each of the original attempt and the child's
// resume before the parent resumes, so a request cycle never needs more
// than three attempts; four keeps every resume ending ok.
inline RetryPolicy retry_policy() {
  return RetryPolicy{.max_attempts = 4, .base_delay = std::chrono::milliseconds(1), .max_delay = std::chrono::milliseconds(5)};
}

inline std::string text_of(const UserContent& content) {
  if (const auto* text = std::get_if<std::string>(&content)) return *text;
  std::string out;
  for (const auto& block : std::get<std::vector<UserBlock>>(content)) {
    if (const auto* text = std::get_if<TextContent>(&block)) out += text->text;
  }
  return out;
}

// The answer to a request: decided by the run's prompt (the ref's name) and by
// how many assistant messages the run has produced so far.
inline FauxResponse respond(const LlmContext& context) {
  std::string ref = "unknown";
  int assistants = 0;
  for (const auto& message : context.messages) {
    if (const auto* user = std::get_if<UserMessage>(&message)) {
      ref = text_of(user->content);
      assistants = 0;
    } else if (std::holds_alternative<AssistantMessage>(message)) {
      ++assistants;
    }
  }
  const std::string base = fmt::format("{}-{}", ref, context.messages.size());
  switch (assistants) {
    case 0:
      return FauxResponse::tool_call(base + "-echo", "echo", Json{{"id", base + "-echo"}})
          .then_tool_call(base + "-effect", "effect", Json{{"id", base + "-effect"}});
    case 1:
      return FauxResponse::tool_call(base + "-effect", "effect", Json{{"id", base + "-effect"}});
    default:
      return FauxResponse::text("done");
  }
}

inline std::filesystem::path marker_path(const std::filesystem::path& marker_dir, const std::string& tool,
                                         const std::string& call_id) {
  return marker_dir / fmt::format("{}-{}", tool, call_id);
}

// Lines in a marker file: how many times that call's tool ran.
inline int executions(const std::filesystem::path& marker_dir, const std::string& tool, const std::string& call_id) {
  std::ifstream in(marker_path(marker_dir, tool, call_id));
  int lines = 0;
  for (std::string line; std::getline(in, line);) ++lines;
  return lines;
}

// The effect itself: one write with O_APPEND, so a kill leaves either the
// whole line or none of it, and executions in two processes never mix.
inline void record_execution(const std::filesystem::path& marker_dir, const std::string& tool, const std::string& call_id) {
  const std::string path = marker_path(marker_dir, tool, call_id).string();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(fmt::format("cannot open marker {}", path));
  const std::string line = call_id + "\n";
  const auto written = ::write(fd, line.data(), line.size());
  ::close(fd);
  if (written != static_cast<ssize_t>(line.size())) throw std::runtime_error(fmt::format("cannot write marker {}", path));
}

inline std::vector<Tool> tools(const std::filesystem::path& marker_dir) {
  const Json schema = {{"type", "object"}, {"properties", {{"id", {{"type", "string"}}}}}, {"required", {"id"}}};
  auto make = [&](std::string name, Replay replay) {
    return Tool{.name = name, .description = fmt::format("{} for the crash test", name), .parameters = schema,
                .replay = replay,
                .execute = [marker_dir, name](const Json& args, const ToolContext&) {
                  // The sleeps on both sides of the effect widen the windows in
                  // which a kill lands mid-tool, before and after the effect.
                  const std::string id = args.value("id", std::string());
                  std::this_thread::sleep_for(std::chrono::milliseconds(1));
                  record_execution(marker_dir, name, id);
                  std::this_thread::sleep_for(std::chrono::milliseconds(1));
                  return ToolResult::text(fmt::format("{} {}", name, id));
                }};
  };
  return {make("echo", Replay::safe), make("effect", Replay::never)};
}

inline HarnessOptions options(std::shared_ptr<Session> session, const std::filesystem::path& marker_dir) {
  HarnessOptions options;
  options.session = std::move(session);
  options.models.add(FauxProvider::model(), std::make_shared<FauxProvider>(&respond));
  options.model = FauxProvider::model();
  options.tools = tools(marker_dir);
  options.retry = retry_policy();
  options.system_prompt = [](const std::vector<std::string>&) { return std::string("You are a crash test."); };
  return options;
}

}  // namespace cairn::testing::scenario
