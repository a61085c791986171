// `cairn context SESSION`: the messages a model request from a ref's leaf
// would carry (pi's buildSessionContext, then convertToLlm).
#include <fmt/format.h>

#include "cairn/overloaded.hpp"

#include "cli.hpp"
#include "text.hpp"

namespace cairn::cli {
namespace {


struct ContextOptions {
  std::string store;
  std::string session;
  std::string ref = "main";
  bool json = false;
};

void print_transcript(const SessionContext& context, const std::vector<LlmMessage>& messages) {
  fmt::print("model: {}  thinking: {}\n",
             context.model ? fmt::format("{}/{}", context.model->provider, context.model->model_id)
                           : std::string("(none)"),
             context.thinking_level);
  for (const LlmMessage& message : messages) {
    std::visit(Overloaded{
                   [](const UserMessage& m) { fmt::print("\n--- user\n{}\n", content_text(m.content)); },
                   [](const AssistantMessage& m) {
                     fmt::print("\n--- assistant ({}/{}, {})\n", m.provider, m.model, to_string(m.stop_reason));
                     for (const auto& block : m.content) {
                       std::visit(Overloaded{
                                      [](const TextContent& t) { fmt::print("{}\n", t.text); },
                                      [](const ThinkingContent& t) {
                                        fmt::print("[thinking] {}\n", one_line(t.thinking, 200));
                                      },
                                      [](const ToolCall& c) {
                                        fmt::print("[tool call {}] {}({})\n", c.id, c.name, c.arguments.dump());
                                      },
                                  },
                                  block);
                     }
                     if (m.error_message) fmt::print("[error] {}\n", *m.error_message);
                   },
                   [](const ToolResultMessage& m) {
                     fmt::print("\n--- toolResult {} ({}){}\n", m.tool_name, m.tool_call_id,
                                m.is_error ? " error" : "");
                     fmt::print("{}\n", message_text(LlmMessage(m)));
                   },
               },
               message);
  }
}

int run_context(const ContextOptions& options) {
  auto store = open_store_for(options.store);
  if (!store) return store.error();
  auto session = open_session(**store, options.session, /*read_only=*/true);
  if (!session) return session.error();
  auto context = (*session)->build_context(options.ref);
  if (!context) return report(context.error());
  if (options.json) {
    // Written message by message, as the provider-neutral JSON of each
    // one's LLM form; the comma goes in only once a message was written.
    std::string text = "[";
    for (const AgentMessage& message : context->messages) {
      if (text.size() > 1) text += ',';
      if (!append_llm_json(text, message) && text.back() == ',') text.pop_back();
    }
    text += "]\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else {
    print_transcript(*context, convert_to_llm(context->messages));
  }
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
