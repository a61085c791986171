// `cairn context SESSION`: the messages a model request from a ref's leaf
// would carry (pi's buildSessionContext, then convertToLlm).
#include <fmt/format.h>

#include "cairn/overloaded.hpp"

#include "cli.hpp"
#include "text.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli {
namespace {


struct ContextOptions {
  std::string store;
  std::string session;
  std::string ref = "main";
  bool json = false;
};

// One message of the transcript, appended to `out`.
void print_message(std::string& out, const LlmMessage& message) {
  auto to = std::back_inserter(out);
  std::visit(Overloaded{
                 [&](const UserMessage& m) { fmt::format_to(to, "\n--- user\n{}\n", content_text(m.content)); },
                 [&](const AssistantMessage& m) {
                   fmt::format_to(to, "\n--- assistant ({}/{}, {})\n", m.provider, m.model, to_string(m.stop_reason));
                   for (const auto& block : m.content) {
                     std::visit(Overloaded{
                                    [&](const TextContent& t) { fmt::format_to(to, "{}\n", t.text); },
                                    [&](const ThinkingContent& t) {
                                      fmt::format_to(to, "[thinking] {}\n", one_line(t.thinking, 200));
                                    },
                                    [&](const ToolCall& c) {
                                      fmt::format_to(to, "[tool call {}] {}({})\n", c.id, c.name, c.arguments.dump());
                                    },
                                },
                                block);
                   }
                   if (m.error_message) fmt::format_to(to, "[error] {}\n", *m.error_message);
                 },
                 [&](const ToolResultMessage& m) {
                   fmt::format_to(to, "\n--- toolResult {} ({}){}\n", m.tool_name, m.tool_call_id,
                                  m.is_error ? " error" : "");
                   fmt::format_to(to, "{}\n", message_text(LlmMessage(m)));
                 },
             },
             message);
}

int run_context(const ContextOptions& options) {
  auto store = open_store_for(options.store);
  if (!store) return store.error();
  auto session = open_session(**store, options.session, /*read_only=*/true);
  if (!session) return session.error();
  // Streamed: each message is printed (into a buffer written out as it
  // fills) as it comes, so a long branch never sits in memory whole.
  std::string out;
  const auto drain = [&](std::size_t above) {
    if (out.size() <= above) return;
    // The transcript's text is the model's and the tools': visible on a
    // terminal; --json is exact.
    if (options.json) {
      std::fwrite(out.data(), 1, out.size(), stdout);
    } else {
      write_untrusted(stdout, out);
    }
    out.clear();
  };
  constexpr std::size_t kFlushAt = 1 << 20;
  bool first = true;
  if (options.json) {
    out = "[";
  } else {
    auto settings = (*session)->branch_settings(options.ref);
    if (!settings) return report(settings.error());
    fmt::format_to(std::back_inserter(out), "model: {}  thinking: {}\n",
                   settings->model ? fmt::format("{}/{}", settings->model->provider, settings->model->model_id)
                                   : std::string("(none)"),
                   to_string(settings->thinking_level));
  }
  auto context = (*session)->stream_context(options.ref, [&](AgentMessage&& message, std::string&&) {
    if (options.json) {
      // The provider-neutral JSON of each message's LLM form; the comma goes
      // in only once a message was written.
      if (!first) out += ',';
      if (append_llm_json(out, message)) {
        first = false;
      } else if (!first) {
        out.pop_back();
      }
    } else if (auto llm = to_llm(message)) {
      print_message(out, *llm);
    }
    drain(kFlushAt);
  });
  if (!context) return report(context.error());
  if (options.json) out += "]\n";
  drain(0);
  return kOk;
}

}  // namespace

void register_context_command(CLI::App& app, Commands& commands) {
  auto [sub, options] = add_session_command(app, commands, "context", "Print the messages a model request from a ref's leaf would carry", run_context);
  sub->add_option("--ref", options->ref, "The ref whose leaf the context is built from (default: main)")
      ->type_name("R");
  sub->add_flag("--json", options->json, "Print the messages as one JSON array, in the provider-neutral format");
}

}  // namespace cairn::cli
