// The interactive mode's terminal-free parts: the transcript renderer given
// events, the status line, slash command parsing, /tree's listing, what a
// line and Ctrl+C mean, where the history lives.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "apps/cli/tui/event_renderer.hpp"
#include "apps/cli/tui/input.hpp"
#include "apps/cli/tui/slash_commands.hpp"
#include "apps/cli/tui/status_line.hpp"
#include "apps/cli/tui/terminal_text.hpp"
#include "apps/cli/tui/tree_view.hpp"
#include "apps/cli/tui/utf8_check.hpp"

namespace cairn::cli::tui {
namespace {

// An assistant message being streamed, and the events that announce it.
struct Stream {
  AssistantMessage message;

  Event start() const {
    Event e{.type = EventType::message_start, .ref = "main"};
    e.message = std::make_shared<const AgentMessage>(message);
    return e;
  }
  Event update(std::string type, int index, std::string delta = {}) const {
    Json d = {{"type", type}, {"contentIndex", index}};
    if (!delta.empty()) d["delta"] = delta;
    Event e{.type = EventType::message_update, .ref = "main", .data = {{"assistantMessageEvent", d}}};
    e.message = std::make_shared<const AgentMessage>(message);
    return e;
  }
  Event end() const {
    Event e{.type = EventType::message_end, .ref = "main", .seq = 7};
    e.message = std::make_shared<const AgentMessage>(message);
    return e;
  }
  // Appends to the text block at `index` and returns its delta event.
  Event text(int index, const std::string& delta) {
    while (message.content.size() <= static_cast<std::size_t>(index)) message.content.push_back(TextContent{});
    std::get<TextContent>(message.content[index]).text += delta;
    return update("text_delta", index, delta);
  }
};

Event message_end(AgentMessage message) {
  Event e{.type = EventType::message_end, .ref = "main", .seq = 3};
  e.message = std::make_shared<const AgentMessage>(std::move(message));
  return e;
}

std::string feed(EventRenderer& renderer, const std::vector<Event>& events) {
  std::string out;
  for (const auto& event : events) out += renderer.render(event);
  return out;
}

RenderOptions plain(std::size_t width = 40) { return RenderOptions{.width = width, .color = false}; }

TEST(TuiRenderer, StreamedTextComesOutInCompleteLinesAndKeepsTheRestLive) {
  EventRenderer renderer(plain());
  Stream s;
  std::string out = feed(renderer, {s.start(), s.update("text_start", 0)});
  out += renderer.render(s.text(0, "Hello, "));
  EXPECT_EQ(out, "");
  EXPECT_EQ(renderer.live_line(), "Hello, ");
  out += renderer.render(s.text(0, "world.\nSecond"));
  EXPECT_EQ(out, "Hello, world.\n");
  EXPECT_EQ(renderer.live_line(), "Second");
  out += renderer.render(s.update("text_end", 0));
  EXPECT_EQ(out, "Hello, world.\nSecond\n");
  EXPECT_EQ(renderer.live_line(), "");
  // message_end does not print the streamed text again.
  EXPECT_EQ(renderer.render(s.end()), "");
}

TEST(TuiRenderer, LongStreamedLinesWrapAtTheWidthOnSpaces) {
  EventRenderer renderer(plain(20));
  Stream s;
  std::string out = feed(renderer, {s.start(), s.update("text_start", 0)});
  out += renderer.render(s.text(0, "the quick brown fox jumps over the lazy dog"));
  EXPECT_EQ(out, "the quick brown fox\njumps over the lazy\n");
  EXPECT_EQ(renderer.live_line(), "dog");
  EXPECT_EQ(renderer.flush(), "dog\n");
}

TEST(TuiRenderer, ThinkingIsCollapsedToOneDimLineUnlessShown) {
  Stream s;
  s.message.content.push_back(ThinkingContent{.thinking = "First I will\nlook at the files, then answer."});
  s.message.content.push_back(TextContent{.text = ""});
  {
    EventRenderer renderer(plain(40));
    std::string out = feed(renderer, {s.start(), s.update("thinking_start", 0),
                                      s.update("thinking_delta", 0, "First I will\nlook"),
                                      s.update("thinking_end", 0)});
    EXPECT_EQ(out, "~ thinking: First I will look at the ...\n");
    out = feed(renderer, {s.update("text_start", 1), s.text(1, "Done.\n"), s.end()});
    EXPECT_EQ(out, "Done.\n");  // the thinking is not repeated at the end
  }
  {
    EventRenderer renderer(RenderOptions{.width = 40, .color = true, .show_thinking = true});
    std::string out = feed(renderer, {s.start(), s.update("thinking_start", 0),
                                      s.update("thinking_delta", 0, "First I will\nlook"),
                                      s.update("thinking_end", 0)});
    EXPECT_EQ(out, "\x1b[2mFirst I will\x1b[0m\n\x1b[2mlook\x1b[0m\n");
  }
}

TEST(TuiRenderer, ToolCallsShowTheirArgumentsOnOneLineAndResultsTruncated) {
  EventRenderer renderer(plain(40));
  Stream s;
  s.message.content.push_back(ToolCall{.id = "call_1", .name = "bash", .arguments = {{"command", "sleep 5"}}});
  std::string out = feed(renderer, {s.start(), s.update("toolcall_start", 0), s.update("toolcall_end", 0), s.end()});
  EXPECT_EQ(out, "-> bash {\"command\":\"sleep 5\"}\n");

  ToolResultMessage result{.tool_call_id = "call_1", .tool_name = "bash"};
  result.content = {TextContent{.text = "one\ntwo\nthree\nfour\nfive\nsix\n"}};
  EXPECT_EQ(renderer.render(message_end(result)),
            "   | one\n   | two\n   | three\n   | four\n   | ... 2 more lines\n");

  result.content = {TextContent{.text = "command not found: frob"}};
  result.is_error = true;
  EXPECT_EQ(renderer.render(message_end(result)), "   ! command not found: frob\n");

  ToolCall wide{.id = "call_2", .name = "write", .arguments = {{"path", "a.txt"}, {"content", std::string(100, 'x')}}};
  Stream s2;
  s2.message.content.push_back(wide);
  out = feed(renderer, {s2.start(), s2.update("toolcall_end", 0)});
  EXPECT_EQ(out, "-> write {\"path\":\"a.txt\",\"content\":\"x...\n");
  EXPECT_EQ(display_width(out.substr(0, out.size() - 1)), 40u);
}

TEST(TuiRenderer, MessagesNotStreamedArePrintedWhole) {
  EventRenderer renderer(plain(40));
  AssistantMessage answer;
  answer.content = {ThinkingContent{.thinking = "hmm"}, TextContent{.text = "All done."},
                    ToolCall{.id = "c", .name = "ls", .arguments = Json::object()}};
  EXPECT_EQ(renderer.render(message_end(answer)), "~ thinking: hmm\nAll done.\n-> ls\n");

  AssistantMessage failed;
  failed.stop_reason = StopReason::error;
  failed.error_message = "HTTP 500: upstream\nfailure";
  EXPECT_EQ(renderer.render(message_end(failed)), "! HTTP 500: upstream failure\n");
}

TEST(TuiRenderer, UserMessagesAreQuotedAndWrapped) {
  EventRenderer renderer(plain(20));
  UserMessage user{.content = std::string("steer left\nthen go straight on for a while")};
  EXPECT_EQ(renderer.render(message_end(user)), "> steer left\n  then go straight\n  on for a while\n");
}

TEST(TuiRenderer, OperationEndsRetriesAndFaults) {
  EventRenderer renderer(plain(60));
  EXPECT_EQ(renderer.render(Event{.type = EventType::run_end, .data = {{"outcome", "completed"}}}), "");
  EXPECT_EQ(renderer.render(Event{.type = EventType::run_cancel}), "(aborting...)\n");
  EXPECT_EQ(renderer.render(Event{.type = EventType::run_end, .data = {{"outcome", "aborted"}}}), "(run aborted)\n");
  EXPECT_EQ(renderer.render(Event{.type = EventType::run_end,
                                  .data = {{"outcome", "failed"},
                                           {"error", {{"code", "retries_exhausted"}, {"message", "4 attempts failed"}}}}}),
            "! run failed: 4 attempts failed\n");
  EXPECT_EQ(renderer.render(Event{.type = EventType::retry_scheduled,
                                  .data = {{"attempt", 1}, {"maxAttempts", 4}, {"delayMs", 1500}, {"errorMessage", "429"}}}),
            "(attempt 1/4 failed, retrying in 1.5s: 429)\n");
  EXPECT_EQ(renderer.render(Event{.type = EventType::compaction_start, .data = {{"reason", "threshold"}}}),
            "(compacting the context: threshold...)\n");
  EXPECT_EQ(renderer.render(Event{.type = EventType::compaction_end,
                                  .data = {{"reason", "threshold"},
                                           {"outcome", "failed"},
                                           {"error", {{"code", "nothing_to_compact"}, {"message", "nothing to shed"}}}}}),
            "(compaction skipped: nothing to shed)\n");
  EXPECT_EQ(renderer.render(Event{.type = EventType::compaction_end,
                                  .data = {{"reason", "manual"},
                                           {"outcome", "failed"},
                                           {"error", {{"code", "nothing_to_compact"}, {"message", "nothing to shed"}}}}}),
            "! compaction failed: nothing to shed\n");
  EXPECT_EQ(renderer.render(Event{.type = EventType::compaction_end,
                                  .data = {{"outcome", "completed"}, {"entry", {{"tokensBefore", 1234}}}}}),
            "(compacted: 1234 tokens summarised)\n");
  EXPECT_EQ(renderer.render(Event{.type = EventType::navigation_end,
                                  .data = {{"outcome", "completed"}, {"newLeafId", "0123456789abcdef"}}}),
            "(moved to 01234567)\n");
  EXPECT_EQ(renderer.render(Event{.type = EventType::fault, .data = {{"code", "io_error"}, {"message", "disk full"}}}),
            "! the session stopped writing: disk full\n");
  EXPECT_EQ(renderer.render(Event{.type = EventType::queue_update}), "");
}

TEST(TuiRenderer, ARunsFailureDoesNotRepeatTheErrorItsLastResponseShowed) {
  EventRenderer renderer(plain(60));
  AssistantMessage failed;
  failed.stop_reason = StopReason::error;
  failed.error_message = "HTTP 500: upstream failure";
  EXPECT_EQ(renderer.render(message_end(failed)), "! HTTP 500: upstream failure\n");
  const Event end{.type = EventType::run_end,
                  .data = {{"outcome", "failed"},
                           {"error", {{"code", "provider_error"}, {"message", "HTTP 500: upstream failure"}}}}};
  EXPECT_EQ(renderer.render(end), "! run failed (provider_error)\n");
  EXPECT_EQ(renderer.render(end), "! run failed: HTTP 500: upstream failure\n");
}

TEST(TuiRenderer, AnEndingEventFlushesTheLiveLineFirst) {
  EventRenderer renderer(plain(40));
  Stream s;
  feed(renderer, {s.start(), s.update("text_start", 0), s.text(0, "partial")});
  EXPECT_EQ(renderer.render(Event{.type = EventType::run_end, .data = {{"outcome", "aborted"}}}), "partial\n(run aborted)\n");
}

TEST(TuiText, WidthsCutsAndWraps) {
  EXPECT_EQ(display_width("abc"), 3u);
  EXPECT_EQ(display_width("\x1b[2mabc\x1b[0m"), 3u);
  EXPECT_EQ(display_width("h\xc3\xa9llo"), 5u);      // é
  EXPECT_EQ(display_width("\xe6\x97\xa5\xe6\x9c\xac"), 4u);  // 日本
  EXPECT_EQ(truncate_to_width("abcdefgh", 6), "abc...");
  EXPECT_EQ(truncate_to_width("abc", 6), "abc");
  EXPECT_EQ(truncate_to_width("\x1b[1mabcdefgh\x1b[0m", 6), "\x1b[1mabc...\x1b[0m");
  EXPECT_EQ(wrap_point("aaaa bbbb", 6), 5u);
  EXPECT_EQ(wrap_point("aaaaaaaa", 6), 6u);
  EXPECT_EQ(wrap_point("aaa", 6), 3u);
  EXPECT_EQ(collapse_whitespace("  a \n\t b  "), "a b");
  EXPECT_EQ(split_lines("a\nb\n"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(strip_escapes("\x1b[31mred\x1b[0m"), "red");
}

TEST(TuiStatus, FormatsModelRefTokensCostContextAndActivity) {
  StatusState state{.model = "openai/gpt-4o", .thinking_level = "low", .ref = "main", .input_tokens = 12345,
                    .output_tokens = 1300, .cost = 0.0421, .context_percent = 12.4};
  EXPECT_EQ(format_status(state, 200), "openai/gpt-4o (think low) | main | in 12k out 1.3k | $0.042 | ctx 12%");
  state.activity = "running bash";
  state.queued_steer = 1;
  state.queued_follow_up = 2;
  state.context_percent = 4.25;
  EXPECT_EQ(format_status(state, 200),
            "openai/gpt-4o (think low) | main | in 12k out 1.3k | $0.042 | ctx 4.2% | running bash | queued 1 steer, 2 "
            "follow-up");
  EXPECT_EQ(format_status(state, 20), "openai/gpt-4o (th...");
  state.context_percent.reset();
  state.activity.clear();
  state.queued_steer = state.queued_follow_up = 0;
  state.cost = 3.5;
  EXPECT_EQ(format_status(state, 200), "openai/gpt-4o (think low) | main | in 12k out 1.3k | $3.50 | ctx ?");
  state.sandbox_off = true;  // --sandbox off is never out of sight
  state.activity = "running bash";
  EXPECT_EQ(format_status(state, 200),
            "openai/gpt-4o (think low) | main | in 12k out 1.3k | $3.50 | ctx ? | no sandbox | running bash");
  state.sandbox_off = false;
  state.activity.clear();
  EXPECT_EQ(format_tokens(999), "999");
  EXPECT_EQ(format_tokens(1500), "1.5k");
  EXPECT_EQ(format_tokens(2'500'000), "2.5M");
}

TEST(TuiStatus, TheTrackerAddsEachOperationsSpendToTheSessionsTotals) {
  StatusTracker tracker;
  tracker.set_totals(1000, 100, 0.01);
  tracker.apply(Event{.type = EventType::run_start});
  EXPECT_EQ(tracker.state().activity, "running");
  const auto usage = [](std::int64_t input, std::int64_t output, double cost, double percent) {
    return Event{.type = EventType::context_usage,
                 .data = {{"context", {{"tokens", 5000}, {"contextWindow", 100000}, {"percent", percent}}},
                          {"operationSpend", {{"input", input}, {"output", output}, {"cacheRead", 0}, {"cacheWrite", 0},
                                              {"cost", cost}}}}};
  };
  tracker.apply(usage(200, 20, 0.002, 5.0));
  tracker.apply(usage(500, 50, 0.005, 6.0));  // cumulative: replaces the last report
  EXPECT_EQ(tracker.state().input_tokens, 1500);
  EXPECT_EQ(tracker.state().output_tokens, 150);
  EXPECT_DOUBLE_EQ(*tracker.state().context_percent, 6.0);
  tracker.apply(Event{.type = EventType::tool_start, .data = {{"toolName", "bash"}}});
  EXPECT_EQ(tracker.state().activity, "running bash");
  tracker.apply(Event{.type = EventType::queue_update, .data = {{"steer", Json::array({1})}, {"followUp", Json::array()}}});
  EXPECT_EQ(tracker.state().queued_steer, 1u);
  tracker.apply(Event{.type = EventType::run_end, .data = {{"outcome", "completed"}}});
  EXPECT_EQ(tracker.state().activity, "");
  EXPECT_EQ(tracker.state().queued_steer, 0u);
  tracker.apply(Event{.type = EventType::run_start});
  tracker.apply(usage(10, 1, 0.001, 6.5));
  EXPECT_EQ(tracker.state().input_tokens, 1510);
  EXPECT_NEAR(tracker.state().cost, 0.016, 1e-9);
  tracker.apply(Event{.type = EventType::config_update,
                      .data = {{"property", "model"}, {"value", {{"provider", "p"}, {"modelId", "m"}}}}});
  EXPECT_EQ(tracker.state().model, "p/m");
  tracker.apply(Event{.type = EventType::config_update, .data = {{"property", "thinkingLevel"}, {"value", "high"}}});
  EXPECT_EQ(tracker.state().thinking_level, "high");
}

TEST(TuiStatus, EachRunningSubagentHasALineUnderTheStatusUntilItsRunEnds) {
  StatusTracker tracker;
  tracker.apply(Event{.type = EventType::run_start});
  for (const auto& [call, description] : {std::pair{"t1", "find the tests"}, std::pair{"t2", "review"}}) {
    tracker.apply(Event{.type = EventType::tool_start,
                        .data = {{"toolName", "task"}, {"toolCallId", call},
                                 {"args", {{"prompt", "..."}, {"description", description}}}}});
  }
  const auto child = [](std::string session, std::string call, Json inner) {
    return Event{.type = EventType::child_session_event,
                 .data = {{"child", {{"session", session}, {"toolCallId", call}, {"depth", 1}}}, {"event", std::move(inner)}}};
  };
  tracker.apply(child("k1", "t1", {{"type", "run_start"}, {"seq", 0}}));
  tracker.apply(child("k2", "t2", {{"type", "run_start"}, {"seq", 0}}));
  tracker.apply(child("k1", "t1", {{"type", "tool_start"}, {"toolName", "grep"}, {"seq", 4}}));
  tracker.apply(child("k2", "t2", {{"type", "message_update"}}));
  StatusState state = tracker.state();
  state.model = "p/m";
  EXPECT_EQ(format_status(state, 200),
            "p/m (think off) | main | in 0 out 0 | $0.000 | ctx ? | running task\n"
            "↳ find the tests: running grep\n"
            "↳ review: writing");
  tracker.apply(child("k1", "t1", {{"type", "run_end"}, {"seq", 9}}));
  ASSERT_EQ(tracker.state().subagents.size(), 1u);
  EXPECT_EQ(tracker.state().subagents[0].label, "review");
  tracker.apply(Event{.type = EventType::run_end, .data = {{"outcome", "completed"}}});
  EXPECT_TRUE(tracker.state().subagents.empty());
}

TEST(TuiSlash, ParsesCommandsAndTheirArguments) {
  auto command = parse_slash("/model openai/gpt-4o ");
  ASSERT_TRUE(command);
  EXPECT_EQ(command->name, "model");
  EXPECT_EQ(command->args, "openai/gpt-4o");
  command = parse_slash("  /label 3 first try");
  ASSERT_TRUE(command);
  EXPECT_EQ(command->name, "label");
  EXPECT_EQ(split_first_word(command->args), (std::pair<std::string, std::string>{"3", "first try"}));
  EXPECT_FALSE(parse_slash("hello /model"));
  EXPECT_FALSE(parse_slash("//etc/passwd is a path"));
  EXPECT_FALSE(parse_slash("/ "));
  EXPECT_EQ(unescape_slash("//etc/passwd"), "/etc/passwd");
  EXPECT_EQ(unescape_slash("plain"), "plain");
  for (const char* name : {"model", "thinking", "thinking-show", "compact", "tree", "fork", "label", "name", "session",
                           "sessions", "new", "resume", "ref", "help"}) {
    EXPECT_TRUE(find_command(name)) << name;
    EXPECT_NE(help_text().find(std::string("/") + name), std::string::npos) << name;
  }
  EXPECT_EQ(unknown_command_hint("forkk"), "unknown command /forkk (did you mean /fork?) - /help lists the commands");
  EXPECT_EQ(unknown_command_hint("th"), "unknown command /th (did you mean /thinking?) - /help lists the commands");
  EXPECT_EQ(unknown_command_hint("xyzzy"), "unknown command /xyzzy - /help lists the commands");
}

TEST(TuiInput, EnterPromptsWhenIdleAndSteersWhileRunningAltEnterFollowsUp) {
  EXPECT_EQ(classify_line("  ", false, false).kind, InputAction::Kind::nothing);
  auto action = classify_line("hello", false, false);
  EXPECT_EQ(action.kind, InputAction::Kind::prompt);
  EXPECT_EQ(action.text, "hello");
  EXPECT_EQ(classify_line("hello", false, true).kind, InputAction::Kind::prompt);
  EXPECT_EQ(classify_line("go left", true, false).kind, InputAction::Kind::steer);
  EXPECT_EQ(classify_line("then this", true, true).kind, InputAction::Kind::follow_up);
  action = classify_line("/tree", true, false);
  EXPECT_EQ(action.kind, InputAction::Kind::command);
  EXPECT_EQ(action.command.name, "tree");
  action = classify_line("//tmp is full", false, false);
  EXPECT_EQ(action.kind, InputAction::Kind::prompt);
  EXPECT_EQ(action.text, "/tmp is full");
}

TEST(TuiInput, CtrlCAbortsARunClearsTheLineAndExitsWhenPressedTwice) {
  using A = InterruptPolicy::Action;
  InterruptPolicy policy;
  EXPECT_EQ(policy.on_interrupt(true, false), A::abort);
  EXPECT_EQ(policy.on_interrupt(true, true), A::abort);
  EXPECT_EQ(policy.on_interrupt(false, false), A::clear_line);
  EXPECT_EQ(policy.on_interrupt(false, true), A::exit);
  EXPECT_EQ(policy.on_interrupt(false, true), A::arm_exit);
  policy.on_other_key();
  EXPECT_EQ(policy.on_interrupt(false, true), A::arm_exit);
  EXPECT_EQ(policy.on_interrupt(false, true), A::exit);
}

TEST(TuiInput, HistoryLivesInTheXdgStateDirectory) {
  std::map<std::string, std::string> env;
  GetEnv getenv = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  EXPECT_FALSE(history_path(getenv));
  env["HOME"] = "/home/u";
  EXPECT_EQ(history_path(getenv), std::filesystem::path("/home/u/.local/state/cairn/history"));
  env["XDG_STATE_HOME"] = "/state";
  EXPECT_EQ(history_path(getenv), std::filesystem::path("/state/cairn/history"));
}

TreeEntry entry(std::string id, std::optional<std::string> parent, TreeBody body) {
  return TreeEntry{.id = std::move(id), .parent_id = std::move(parent), .body = std::move(body)};
}

MessageBody user(std::string text) { return MessageBody{UserMessage{.content = std::move(text)}}; }
MessageBody assistant(std::string text) {
  AssistantMessage message;
  message.content = {TextContent{.text = std::move(text)}};
  return MessageBody{message};
}

TEST(TuiTree, NumbersEntriesIndentsBranchesAndMarksLeavesAndLabels) {
  std::vector<TreeEntry> entries = {
      entry("aaaaaaaa1", std::nullopt, user("hello")),
      entry("bbbbbbbb2", "aaaaaaaa1", assistant("hi there")),
      entry("cccccccc3", "bbbbbbbb2", user("first branch")),
      entry("dddddddd4", "bbbbbbbb2", user("second branch")),
      entry("eeeeeeee5", "dddddddd4", assistant("ok")),
      entry("ffffffff6", "eeeeeeee5", Label{.target_id = "cccccccc3", .label = "try 1"}),
  };
  const TreeView view =
      build_tree_view(entries, {{"ffffffff6", {"main"}}, {"cccccccc3", {"other"}}}, std::string("ffffffff6"), 80);
  EXPECT_EQ(view.lines, (std::vector<std::string>{
                            "1   aaaaaaaa user: hello",
                            "2   bbbbbbbb assistant: hi there",
                            "3   +- cccccccc [try 1] user: first branch <- other",
                            "4   +- dddddddd user: second branch",
                            "5 *    eeeeeeee assistant: ok <- main",
                        }));
  EXPECT_EQ(view.ids, (std::vector<std::string>{"aaaaaaaa1", "bbbbbbbb2", "cccccccc3", "dddddddd4", "eeeeeeee5"}));

  std::vector<std::string> all;
  for (const auto& e : entries) all.push_back(e.id);
  EXPECT_EQ(resolve_entry_choice("4", view, all), "dddddddd4");
  EXPECT_EQ(resolve_entry_choice(" ccc ", view, all), "cccccccc3");
  EXPECT_EQ(resolve_entry_choice("eeeeeeee5", view, all), "eeeeeeee5");
  EXPECT_FALSE(resolve_entry_choice("9", view, all));
  EXPECT_FALSE(resolve_entry_choice("", view, all));
  entries.push_back(entry("aaaaaaab7", "aaaaaaaa1", user("x")));
  all.push_back("aaaaaaab7");
  auto ambiguous = resolve_entry_choice("aaaaaaa", view, all);
  ASSERT_FALSE(ambiguous);
  EXPECT_EQ(ambiguous.error(), "'aaaaaaa' starts 2 entries: give more of the id");
}

// ---- text refused at the door -----------------------------------------------------

TEST(Utf8Check, NamesTheFirstByteThatIsNotUtf8ByLineAndColumn) {
  EXPECT_EQ(first_invalid_utf8(""), std::nullopt);
  EXPECT_EQ(first_invalid_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\nline two"), std::nullopt);
  EXPECT_EQ(first_invalid_utf8("first\ncaf\xE9 au lait"), "byte 0xE9 at line 2, column 4");
  // Columns count characters, not bytes.
  EXPECT_EQ(first_invalid_utf8("\xC3\xA9\xC3\xA9\xFF"), "byte 0xFF at line 1, column 3");
  // What UTF-8 forbids though it looks like a sequence: an overlong form, a
  // surrogate, a code point past U+10FFFF, a sequence cut short, a stray
  // continuation byte.
  EXPECT_EQ(first_invalid_utf8("a\xC0\xAF"), "byte 0xC0 at line 1, column 2");
  EXPECT_EQ(first_invalid_utf8("a\xE0\x80\xAF"), "byte 0xE0 at line 1, column 2");
  EXPECT_EQ(first_invalid_utf8("a\xED\xA0\x80"), "byte 0xED at line 1, column 2");
  EXPECT_EQ(first_invalid_utf8("a\xF4\x90\x80\x80"), "byte 0xF4 at line 1, column 2");
  EXPECT_EQ(first_invalid_utf8("ab\xE2\x82"), "byte 0xE2 at line 1, column 3");
  EXPECT_EQ(first_invalid_utf8("\x80"), "byte 0x80 at line 1, column 1");
}

}  // namespace
}  // namespace cairn::cli::tui
