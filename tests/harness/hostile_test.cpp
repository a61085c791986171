// Whatever a model, a tool or a caller hands the harness, the log it writes
// holds exactly one result per tool call (invariant 5), stays valid JSON, and
// keeps secrets out (DESIGN.md, invariant 16): arguments that are not JSON,
// duplicate and empty call ids, unknown tools, text that is not UTF-8, and a
// model or a tool that repeats a provider key.
#include <fmt/format.h>

#include "harness/harness_support.hpp"

namespace cairn::testing {
namespace {


ToolCall raw_call(std::string id, std::string raw) {
  return ToolCall{.id = std::move(id), .name = "echo", .arguments = Json::object(), .raw_arguments = std::move(raw)};
}

std::string text_of_result(const ToolResultMessage& result) {
  std::string out;
  for (const auto& block : result.content) {
    if (const auto* text = std::get_if<TextContent>(&block)) out += text->text;
  }
  return out;
}

std::vector<std::string> call_ids(const AssistantMessage& message) {
  std::vector<std::string> out;
  for (const auto& block : message.content) {
    if (const auto* call = std::get_if<ToolCall>(&block)) out.push_back(call->id);
  }
  return out;
}

// The first assistant message of the log that has tool calls.
std::optional<AssistantMessage> first_batch(const std::vector<Record>& log) {
  for (const auto& record : log) {
    const auto* entry = std::get_if<TreeEntry>(&record.body);
    const auto* body = entry ? std::get_if<MessageBody>(&entry->body) : nullptr;
    const auto* assistant = body ? std::get_if<AssistantMessage>(&body->message) : nullptr;
    if (assistant && !call_ids(*assistant).empty()) return *assistant;
  }
  return std::nullopt;
}

std::size_t tool_started_count(const std::vector<Record>& log) {
  std::size_t n = 0;
  for (const auto& record : log) {
    if (const auto* h = std::get_if<HarnessRecord>(&record.body)) n += std::holds_alternative<ToolStarted>(h->body);
  }
  return n;
}

TEST_F(HarnessTest, ArgumentsThatAreNotJsonGetAnErrorResultAndTheRunGoesOn) {
  auto& harness = make_harness();
  FauxResponse response;
  response.content.push_back(raw_call("c1", R"({"id": "e1", oops)"));
  response.content.push_back(raw_call("c2", "[1, 2]"));
  response.content.push_back(raw_call("c3", "{\"text\": \"" + std::string(300, 'x') + "\""));
  response.content.push_back(ToolCall{.id = "c4", .name = "echo", .arguments = args("e4", "fine")});
  faux_->push(response);
  faux_->push(FauxResponse::text("done"));
  auto result = harness.main().prompt("go");
  ASSERT_TRUE(result.ok()) << result.error->message;

  const auto log = records();
  expect_every_call_answered_once(log);
  EXPECT_EQ(tool_started_count(log), 1u);  // only c4 started
  EXPECT_EQ(effects_->count("echo", "e1"), 0);
  EXPECT_EQ(effects_->count("echo", "e4"), 1);
  const auto c1 = results_for(log, "c1");
  ASSERT_EQ(c1.size(), 1u);
  EXPECT_TRUE(c1[0].is_error);
  EXPECT_TRUE(text_of_result(c1[0]).starts_with("Tool call arguments are not valid JSON: at line 1, column "))
      << text_of_result(c1[0]);
  EXPECT_TRUE(text_of_result(c1[0]).ends_with(R"(; they began: {"id": "e1", oops)")) << text_of_result(c1[0]);
  EXPECT_EQ(text_of_result(results_for(log, "c2")[0]), "Tool call arguments are not valid JSON: a JSON array, not an object; they began: [1, 2]");
  const std::string c3 = text_of_result(results_for(log, "c3")[0]);
  EXPECT_TRUE(c3.ends_with("; they began: {\"text\": \"" + std::string(200 - 10, 'x') + "…")) << c3;
  EXPECT_EQ(text_of_result(results_for(log, "c4")[0]), "fine");
  // The model sees its own text back with the error.
  const auto requests = faux_->requests();
  ASSERT_EQ(requests.size(), 2u);
  const auto& sent = std::get<AssistantMessage>(requests[1].messages[1]);
  EXPECT_EQ(std::get<ToolCall>(sent.content[0]).raw_arguments, R"({"id": "e1", oops)");
}

TEST_F(HarnessTest, DuplicateAndEmptyCallIdsAreMadeUniqueBeforeTheResponseIsRecorded) {
  auto& harness = make_harness();
  FauxResponse response = FauxResponse::tool_call("c1", "echo", args("e1"));
  response.then_tool_call("c1", "echo", args("e2"))
      .then_tool_call("", "echo", args("e3"))
      .then_tool_call("call_1|fc_1", "echo", args("e4"))
      .then_tool_call("call_1|fc_1", "echo", args("e5"))
      .then_tool_call("c1", "nope", args("e6"));  // an unknown tool, with a third c1
  faux_->push(response);
  faux_->push(FauxResponse::text("done"));
  auto result = harness.main().prompt("go");
  ASSERT_TRUE(result.ok()) << result.error->message;

  const auto log = records();
  auto batch = first_batch(log);
  ASSERT_TRUE(batch);
  EXPECT_EQ(call_ids(*batch), (std::vector<std::string>{"c1", "c1_2", "call_3", "call_1|fc_1", "call_1_2", "c1_3"}));
  expect_every_call_answered_once(log);
  for (const char* id : {"e1", "e2", "e3", "e4", "e5"}) EXPECT_EQ(effects_->count("echo", id), 1) << id;
  EXPECT_EQ(text_of_result(results_for(log, "c1_3")[0]), "Tool nope not found");
  EXPECT_EQ(tool_started_count(log), 5u);  // the unknown tool never started
  // Results answer the ids the recorded message carries, in its order.
  const auto requests = faux_->requests();
  ASSERT_EQ(requests.size(), 2u);
  std::vector<std::string> answered;
  for (const auto& m : requests[1].messages) {
    if (const auto* r = std::get_if<ToolResultMessage>(&m)) answered.push_back(r->tool_call_id);
  }
  EXPECT_EQ(answered, call_ids(*batch));
}

TEST_F(HarnessTest, TextThatIsNotUtf8IsRefusedAtAcceptanceWithTheFieldAndOffset) {
  auto& harness = make_harness();
  const auto before = records().size();

  auto prompted = harness.main().prompt("ab\xff");
  EXPECT_EQ(prompted.outcome, Outcome::rejected);
  ASSERT_TRUE(prompted.error);
  EXPECT_EQ(prompted.error->code, "invalid_message");
  EXPECT_EQ(prompted.error->message,
            "the prompt is not valid UTF-8: content has a byte that begins no UTF-8 character at offset 2");

  UserMessage blocks{.content = std::vector<UserBlock>{TextContent{.text = "ok"}, TextContent{.text = "\xc3("}}};
  auto with_blocks = harness.main().prompt(std::vector<AgentMessage>{blocks});
  EXPECT_EQ(with_blocks.outcome, Outcome::rejected);
  EXPECT_NE(with_blocks.error->message.find("content[1].text has a byte that begins no UTF-8 character at offset 0"),
            std::string::npos)
      << with_blocks.error->message;

  for (auto queued : {harness.main().next_run("\xed\xa0\x80 surrogate"), harness.main().steer("x\xe2\x82"),
                      harness.main().follow_up("\xf5")}) {
    EXPECT_EQ(queued.outcome, Outcome::rejected);
    ASSERT_TRUE(queued.error);
    EXPECT_EQ(queued.error->code, "invalid_message");
    EXPECT_NE(queued.error->message.find("is not valid UTF-8"), std::string::npos) << queued.error->message;
  }
  auto appended = harness.main().session().append_message(UserMessage{.content = std::string("\x80")});
  ASSERT_FALSE(appended);
  EXPECT_EQ(appended.error().code, "invalid_message");
  auto custom = harness.main().session().append_custom_entry("note", Json{{"k", "v\xff"}});
  ASSERT_FALSE(custom);
  EXPECT_EQ(custom.error().code, "invalid_entry");
  EXPECT_NE(custom.error().message.find("data.k"), std::string::npos) << custom.error().message;
  auto compacted = harness.main().compact(std::string("keep \xff"));
  EXPECT_EQ(compacted.outcome, Outcome::rejected);

  EXPECT_EQ(records().size(), before);  // nothing was appended
  EXPECT_FALSE(harness.faulted());
  faux_->push(FauxResponse::text("fine"));
  EXPECT_TRUE(harness.main().prompt("caf\xc3\xa9").ok());  // valid UTF-8 goes through
}

TEST_F(HarnessTest, ModelAndToolOutputThatIsNotUtf8IsRepairedNotFaulted) {
  auto opts = options();
  opts.tools.push_back(Tool{.name = "binary", .description = "prints bytes", .parameters = {{"type", "object"}},
                            .replay = Replay::safe,
                            .execute = [](const Json&, const ToolContext&) { return ToolResult::text("out\xfe\xff"); }});
  auto created = AgentHarness::create(opts);
  ASSERT_TRUE(created);
  faux_->push(FauxResponse::text("bad \xc0\xaf").then_tool_call("c1", "binary", Json::object()));
  faux_->push(FauxResponse::text("done"));
  auto result = created->harness.main().prompt("go");
  ASSERT_TRUE(result.ok()) << result.error->message;
  const auto log = records();
  EXPECT_EQ(text_of_result(results_for(log, "c1")[0]), "out\xEF\xBF\xBD\xEF\xBF\xBD");
  auto batch = first_batch(log);
  ASSERT_TRUE(batch);
  EXPECT_EQ(std::get<TextContent>(batch->content[0]).text, "bad \xEF\xBF\xBD\xEF\xBF\xBD");
}

// ---- secrets ---------------------------------------------------------------

constexpr const char* kSecret = "sk-test-0123456789abcdef";

// Streams its text in three-byte deltas, so that the secret arrives in pieces.
class ChunkedProvider : public Provider {
 public:
  explicit ChunkedProvider(std::string text) : text_(std::move(text)) {}
  ProviderResponse stream(const Model& model, const LlmContext&, const StreamOptions&, const PayloadHook&,
                          const ProviderEventSink& on_event, std::stop_token) override {
    ProviderResponse response;
    AssistantMessage& message = response.message;
    message.api = model.api;
    message.provider = model.provider;
    message.model = model.id;
    message.timestamp = now_unix_ms();
    auto emit = [&](ProviderEvent::Type type, int index, std::string delta = {}) {
      on_event(ProviderEvent{.type = type, .content_index = index, .delta = std::move(delta), .partial = &message});
    };
    emit(ProviderEvent::Type::start, -1);
    message.content.push_back(TextContent{});
    emit(ProviderEvent::Type::text_start, 0);
    for (std::size_t at = 0; at < text_.size(); at += 3) {
      const std::string piece = text_.substr(at, 3);
      std::get<TextContent>(message.content[0]).text += piece;
      emit(ProviderEvent::Type::text_delta, 0, piece);
    }
    emit(ProviderEvent::Type::text_end, 0);
    emit(ProviderEvent::Type::done, -1);
    return response;
  }

 private:
  std::string text_;
};

class SecretsTest : public HarnessTest {
 protected:
  void expect_nowhere(const std::vector<Event>& events) {
    auto log = session_->get_log();
    ASSERT_TRUE(log);
    for (const auto& line : *log) EXPECT_EQ(line.json.find(kSecret), std::string::npos) << line.json;
    for (const auto& e : events) {
      const std::string json = encode(e).dump();
      EXPECT_EQ(json.find(kSecret), std::string::npos) << json;
    }
  }
};

TEST_F(SecretsTest, AModelAndAToolThatRepeatAKeyPutItInNoRecordAndNoEvent) {
  auto opts = options();
  opts.secrets = Secrets({kSecret});
  Json seen_args;
  opts.tools.push_back(Tool{.name = "leak", .description = "prints the key", .parameters = {{"type", "object"}},
                            .replay = Replay::safe,
                            .execute = [&seen_args](const Json& a, const ToolContext& context) {
                              seen_args = a;
                              context.update(ToolResult::text(fmt::format("partial {}", kSecret)));
                              auto result = ToolResult::text(fmt::format("KEY={}", kSecret));
                              result.details = Json{{"env", kSecret}};
                              return result;
                            }});
  auto created = AgentHarness::create(opts);
  ASSERT_TRUE(created);
  auto& harness = created->harness;
  EventLog events;
  auto listener = harness.on_event([&](const Event& e) { events.add(e); });

  FauxResponse response = FauxResponse::text(fmt::format("the key is {}", kSecret));
  response.content.insert(response.content.begin(), ThinkingContent{.thinking = fmt::format("I saw {}", kSecret)});
  response.then_tool_call("c1", "leak", Json{{"key", kSecret}, {kSecret, 1}});
  response.content.push_back(raw_call("c2", fmt::format("{{\"oops\": \"{}\"", kSecret)));
  faux_->push(response);
  faux_->push(FauxResponse::text(fmt::format("done with {}", kSecret)));
  ASSERT_TRUE(harness.main().prompt("go").ok());
  // The call ran with what the log says it ran with.
  EXPECT_EQ(seen_args, (Json{{"key", "[redacted]"}, {"[redacted]", 1}}));

  // A failure that quotes the key: the run's error, its events and the
  // recorded response do not.
  faux_->push(FauxResponse::failure(fmt::format("401: invalid key {}", kSecret), false));
  auto failed = harness.main().prompt("again");
  EXPECT_EQ(failed.outcome, Outcome::failed);
  ASSERT_TRUE(failed.error);
  EXPECT_EQ(failed.error->message, "401: invalid key [redacted]");
  expect_nowhere(events.all());
}

TEST_F(SecretsTest, AKeyStreamedInPiecesIsHeldBackFromTheDeltas) {
  auto opts = options();
  opts.secrets = Secrets({kSecret});
  const std::string text = fmt::format("before {} after, and sk-te is no key", kSecret);
  opts.models = Models{};
  opts.models.add(FauxProvider::model(), std::make_shared<ChunkedProvider>(text));
  auto created = AgentHarness::create(opts);
  ASSERT_TRUE(created);
  auto& harness = created->harness;
  EventLog events;
  auto listener = harness.on_event([&](const Event& e) { events.add(e); });
  ASSERT_TRUE(harness.main().prompt("go").ok());

  std::string streamed;
  for (const auto& e : events.all()) {
    if (e.type != EventType::message_update) continue;
    const Json& update = e.data["assistantMessageEvent"];
    if (update["type"] == "text_delta") streamed += update.value("delta", std::string());
  }
  const std::string redacted = "before [redacted] after, and sk-te is no key";
  EXPECT_EQ(streamed, redacted);  // joined, the deltas are the redacted text
  expect_nowhere(events.all());
  auto context = session_->build_context("main");
  ASSERT_TRUE(context);
  const auto& answer = std::get<AssistantMessage>(context->messages.back());
  EXPECT_EQ(std::get<TextContent>(answer.content[0]).text, redacted);
}

}  // namespace
}  // namespace cairn::testing
