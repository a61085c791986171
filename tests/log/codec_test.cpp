// The JSON codec of messages and records: round trips that keep unknown
// fields, the exact errors for malformed input, the field rules, and pi's
// projection of messages to the model.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cairn/json.hpp"
#include "log/index.hpp"
#include "cairn/log/message.hpp"
#include "cairn/log/record.hpp"

namespace cairn {
namespace {

Json parse(std::string_view text) { return Json::parse(text); }

// Field order is not part of equality: the requirement is the same JSON value.
nlohmann::json unordered(const Json& value) { return nlohmann::json::parse(value.dump()); }

Record decode_ok(const Json& json, bool require_seq = true) {
  auto record = decode_record(json, require_seq);
  EXPECT_TRUE(record.has_value()) << (record ? "" : record.error().code + ": " + record.error().message);
  return record ? *record : Record{};
}

void expect_record_round_trip(std::string_view text) {
  SCOPED_TRACE(text);
  Json json = parse(text);
  auto record = decode_record(json);
  ASSERT_TRUE(record.has_value()) << record.error().code << ": " << record.error().message;
  EXPECT_EQ(unordered(encode(*record)), unordered(json));
  // Encoding is stable: a second pass changes nothing, order included.
  auto again = decode_record(encode(*record));
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_EQ(encode(*again).dump(), encode(*record).dump());
}

void expect_message_round_trip(std::string_view text) {
  SCOPED_TRACE(text);
  Json json = parse(text);
  auto message = decode_message(json);
  ASSERT_TRUE(message.has_value()) << message.error().code << ": " << message.error().message;
  EXPECT_EQ(unordered(encode(*message)), unordered(json));
}

void expect_record_error(std::string_view text, std::string_view code, std::string_view message,
                         bool require_seq = true) {
  SCOPED_TRACE(text);
  auto record = decode_record(parse(text), require_seq);
  ASSERT_FALSE(record.has_value());
  EXPECT_EQ(record.error().code, code);
  EXPECT_EQ(record.error().message, message);
}

void expect_message_error(std::string_view text, std::string_view message) {
  SCOPED_TRACE(text);
  auto decoded = decode_message(parse(text));
  ASSERT_FALSE(decoded.has_value());
  EXPECT_EQ(decoded.error().code, "invalid_record");
  EXPECT_EQ(decoded.error().message, message);
}

void expect_fields_error(const Record& record, std::string_view message) {
  auto status = check_fields(record);
  ASSERT_FALSE(status.has_value());
  EXPECT_EQ(status.error().code, "invalid_record");
  EXPECT_EQ(status.error().message, message);
}

constexpr std::string_view kUsage =
    R"({"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,)"
    R"("cost":{"input":0.00003,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.00003}})";

std::string assistant_json(std::string_view content) {
  return std::string(R"({"role":"assistant","content":)") + std::string(content) +
         R"(,"api":"openai-completions","provider":"openai","model":"gpt-4o","usage":)" + std::string(kUsage) +
         R"(,"stopReason":"stop","timestamp":1700000000000})";
}

// ---- is_lossless ------------------------------------------------------------

TEST(Lossless, FindsNanAndInfinityAtAnyDepth) {
  EXPECT_TRUE(is_lossless(parse(R"({"a":[1,2.5,{"b":null,"c":"x"}],"d":true})")));
  Json nested = parse(R"({"a":[1,{"b":[]}]})");
  nested["a"][1]["b"].push_back(std::numeric_limits<double>::quiet_NaN());
  EXPECT_FALSE(is_lossless(nested));
  EXPECT_FALSE(is_lossless(Json(std::numeric_limits<double>::infinity())));
  EXPECT_FALSE(is_lossless(Json::array({-std::numeric_limits<double>::infinity()})));
  EXPECT_TRUE(is_lossless(Json(std::numeric_limits<double>::max())));
}

// ---- messages ---------------------------------------------------------------

TEST(MessageCodec, RoundTripsEveryRoleWithUnknownFields) {
  expect_message_round_trip(R"({"role":"user","content":"hi","timestamp":1,"x-client":"tui"})");
  expect_message_round_trip(
      R"({"role":"user","content":[{"type":"text","text":"look","textSignature":"sig","k":1},)"
      R"({"type":"image","data":"aGk=","mimeType":"image/png","w":{"h":2}}],"timestamp":2})");
  expect_message_round_trip(assistant_json(
      R"([{"type":"thinking","thinking":"hmm","thinkingSignature":"s","redacted":false,"z":0},)"
      R"({"type":"text","text":"ok"},)"
      R"({"type":"toolCall","id":"call_1","name":"read","arguments":{"path":"a.txt"},"thoughtSignature":"t"}])"));
  expect_message_round_trip(
      R"({"role":"assistant","content":[],"api":"a","provider":"p","model":"m","responseId":"r1",)"
      R"("usage":{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"totalTokens":10,"reasoning":7,)"
      R"("cost":{"input":0.5,"output":1.25,"cacheRead":0,"cacheWrite":0,"total":1.75,"currency":"USD"}},)"
      R"("stopReason":"error","errorMessage":"overloaded","timestamp":3})");
  expect_message_round_trip(
      R"({"role":"toolResult","toolCallId":"call_1","toolName":"read","content":[{"type":"text","text":"x"}],)"
      R"("details":{"diff":[1,2]},"isError":false,"timestamp":4,"extra1":[null]})");
  expect_message_round_trip(
      R"({"role":"toolResult","toolCallId":"c","toolName":"t","content":[],"isError":true,"timestamp":4})");
  expect_message_round_trip(
      R"({"role":"custom","customType":"note","content":"text","display":true,"details":null,"timestamp":5})");
  expect_message_round_trip(
      R"({"role":"custom","customType":"note","content":[{"type":"text","text":"a"}],"display":false,"timestamp":5})");
  expect_message_round_trip(R"({"role":"branchSummary","summary":"s","fromId":"root","timestamp":6,"u":1})");
  expect_message_round_trip(R"({"role":"compactionSummary","summary":"s","tokensBefore":1234,"timestamp":7})");
  expect_message_round_trip(
      R"({"role":"bashExecution","command":"ls","output":"a\nb","exitCode":0,"cancelled":false,)"
      R"("truncated":true,"fullOutputPath":"/tmp/out","excludeFromContext":true,"timestamp":8})");
}

TEST(MessageCodec, KeepsHowOptionalFieldsWereSpelled) {
  // Older pi writes `"exitCode": null`; newer omits it; `excludeFromContext`
  // may be written as false. Each spelling survives.
  expect_message_round_trip(
      R"({"role":"bashExecution","command":"x","output":"","exitCode":null,"cancelled":true,"truncated":false,"timestamp":1})");
  expect_message_round_trip(
      R"({"role":"bashExecution","command":"x","output":"","cancelled":true,"truncated":false,"timestamp":1})");
  expect_message_round_trip(
      R"({"role":"bashExecution","command":"x","output":"","exitCode":2,"cancelled":false,"truncated":false,)"
      R"("excludeFromContext":false,"timestamp":1})");

  auto null_exit = decode_message(parse(
      R"({"role":"bashExecution","command":"x","output":"","exitCode":null,"cancelled":false,"truncated":false,"timestamp":1})"));
  ASSERT_TRUE(null_exit.has_value());
  EXPECT_EQ(std::get<BashExecutionMessage>(*null_exit).exit_code, std::nullopt);
  EXPECT_TRUE(std::get<BashExecutionMessage>(*null_exit).extra.empty());

  auto absent = decode_message(parse(R"({"role":"user","content":"no time"})"));
  ASSERT_TRUE(absent.has_value());
  const auto& user = std::get<UserMessage>(*absent);
  EXPECT_FALSE(user.has_timestamp);
  EXPECT_EQ(user.timestamp, 0);
  EXPECT_TRUE(user.extra.empty());
  EXPECT_EQ(encode(*absent).dump(), R"({"role":"user","content":"no time"})");
}

TEST(MessageCodec, WritesKnownFieldsInOrderThenUnknownInOriginalOrder) {
  auto message = decode_message(parse(R"({"zeta":1,"timestamp":9,"content":"c","alpha":2,"role":"user"})"));
  ASSERT_TRUE(message.has_value());
  EXPECT_EQ(encode(*message).dump(), R"({"role":"user","content":"c","timestamp":9,"zeta":1,"alpha":2})");
}

TEST(MessageCodec, DecodesTypedValues) {
  auto message = decode_message(parse(assistant_json(
      R"([{"type":"text","text":"a"},{"type":"toolCall","id":"c1","name":"bash","arguments":{"cmd":"ls"}}])")));
  ASSERT_TRUE(message.has_value());
  const auto& assistant = std::get<AssistantMessage>(*message);
  ASSERT_EQ(assistant.content.size(), 2u);
  EXPECT_EQ(std::get<TextContent>(assistant.content[0]).text, "a");
  const auto& call = std::get<ToolCall>(assistant.content[1]);
  EXPECT_EQ(call.id, "c1");
  EXPECT_EQ(call.arguments["cmd"], "ls");
  EXPECT_EQ(assistant.usage.total_tokens, 15);
  EXPECT_DOUBLE_EQ(assistant.usage.cost.input, 0.00003);
  EXPECT_EQ(assistant.stop_reason, StopReason::stop);
  EXPECT_EQ(assistant.timestamp, 1700000000000);
  EXPECT_EQ(role_of(*message), "assistant");
}

TEST(MessageCodec, WritesIntegralCostsAsJavaScriptDoes) {
  // pi writes 0 for a zero cost, never 0.0: re-encoding keeps the line.
  auto message = decode_message(parse(assistant_json("[]")));
  ASSERT_TRUE(message.has_value());
  EXPECT_EQ(encode(*message)["usage"]["cost"].dump(),
            R"({"input":3e-05,"output":0,"cacheRead":0,"cacheWrite":0,"total":3e-05})");
}

TEST(MessageCodec, NamesTheOffendingField) {
  expect_message_error(R"([1])", "message: expected an object");
  expect_message_error(R"({"content":"x"})", "message.role: missing");
  expect_message_error(R"({"role":7})", "message.role: expected a string");
  expect_message_error(R"({"role":"system","content":"x"})", "message.role: unknown role 'system'");
  expect_message_error(
      R"({"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"},{"type":"text","text":3}],"timestamp":1})",
      "message.content[2].text: expected a string");
  expect_message_error(R"({"role":"user","content":7,"timestamp":1})",
                       "message.content: expected a string or an array");
  expect_message_error(R"({"role":"user","content":[{"type":"thinking","thinking":"x"}],"timestamp":1})",
                       "message.content[0].type: expected 'text' or 'image', got 'thinking'");
  expect_message_error(R"({"role":"user","content":"x","timestamp":"2024-01-01"})",
                       "message.timestamp: expected an integer");
  expect_message_error(assistant_json(R"([{"type":"image","data":"","mimeType":"x"}])"),
                       "message.content[0].type: expected 'text', 'thinking' or 'toolCall', got 'image'");
  expect_message_error(assistant_json(R"([{"type":"toolCall","id":"c","name":"n","arguments":[1]}])"),
                       "message.content[0].arguments: expected an object");
  expect_message_error(R"({"role":"assistant","content":[],"api":"a","provider":"p","model":"m","stopReason":"stop"})",
                       "message.usage: missing");
  expect_message_error(
      R"({"role":"assistant","content":[],"api":"a","provider":"p","model":"m","usage":{"input":-1}})",
      "message.usage.input: expected a non-negative integer");
  std::string bad_cost = assistant_json("[]");
  bad_cost.replace(bad_cost.find(R"("total":0.00003)"), 15, R"("total":"1")");
  expect_message_error(bad_cost, "message.usage.cost.total: expected a number");
  std::string bad_stop = assistant_json("[]");
  bad_stop.replace(bad_stop.find(R"("stop")"), 6, R"("done")");
  expect_message_error(bad_stop,
                       "message.stopReason: unknown value 'done' (expected 'stop', 'length', 'toolUse', 'error' or 'aborted')");
  expect_message_error(
      R"({"role":"bashExecution","command":"x","output":"","exitCode":"1","cancelled":false,"truncated":false})",
      "message.exitCode: expected an integer");
  expect_message_error(R"({"role":"toolResult","toolCallId":"c","toolName":"t","content":[],"timestamp":1})",
                       "message.isError: missing");
}

TEST(MessageCodec, StopReasonNames) {
  for (auto reason : {StopReason::stop, StopReason::length, StopReason::tool_use, StopReason::error,
                      StopReason::aborted}) {
    EXPECT_EQ(parse_stop_reason(to_string(reason)), reason);
  }
  EXPECT_EQ(to_string(StopReason::tool_use), "toolUse");
  EXPECT_EQ(parse_stop_reason("tool_use"), std::nullopt);
}

// ---- convert_to_llm ---------------------------------------------------------

BashExecutionMessage bash(std::string output, std::optional<std::int64_t> exit_code) {
  BashExecutionMessage m;
  m.command = "make test";
  m.output = std::move(output);
  m.exit_code = exit_code;
  m.timestamp = 42;
  return m;
}

std::string only_text(const LlmMessage& message) {
  const auto& user = std::get<UserMessage>(message);
  const auto& blocks = std::get<std::vector<UserBlock>>(user.content);
  EXPECT_EQ(blocks.size(), 1u);
  return std::get<TextContent>(blocks.at(0)).text;
}

TEST(ConvertToLlm, BashExecutionBecomesPiText) {
  auto plain = convert_to_llm({bash("ok", 0)});
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_EQ(only_text(plain[0]), "Ran `make test`\n```\nok\n```");
  EXPECT_EQ(std::get<UserMessage>(plain[0]).timestamp, 42);

  EXPECT_EQ(only_text(convert_to_llm({bash("", std::nullopt)})[0]), "Ran `make test`\n(no output)");
  EXPECT_EQ(only_text(convert_to_llm({bash("boom", 2)})[0]),
            "Ran `make test`\n```\nboom\n```\n\nCommand exited with code 2");

  auto cancelled = bash("", 130);
  cancelled.cancelled = true;
  EXPECT_EQ(only_text(convert_to_llm({cancelled})[0]), "Ran `make test`\n(no output)\n\n(command cancelled)");

  auto truncated = bash("tail", 0);
  truncated.truncated = true;
  EXPECT_EQ(only_text(convert_to_llm({truncated})[0]), "Ran `make test`\n```\ntail\n```");
  truncated.full_output_path = "/tmp/full.log";
  EXPECT_EQ(only_text(convert_to_llm({truncated})[0]),
            "Ran `make test`\n```\ntail\n```\n\n[Output truncated. Full output: /tmp/full.log]");

  auto excluded = bash("secret", 0);
  excluded.exclude_from_context = true;
  EXPECT_TRUE(convert_to_llm({excluded}).empty());
}

TEST(ConvertToLlm, SummariesAndCustomBecomeUserMessages) {
  BranchSummaryMessage branch{"went left", "e1", 10, Json::object()};
  CompactionSummaryMessage compaction{"all of it", 900, 11, Json::object()};
  CustomMessage text_custom{"note", UserContent{std::string("remember")}, true, std::nullopt, 12, Json::object()};
  CustomMessage block_custom{"img",
                             UserContent{std::vector<UserBlock>{ImageContent{"aGk=", "image/png"},
                                                                TextContent{"caption", std::nullopt}}},
                             false, Json{{"k", 1}}, 13, Json::object()};
  auto out = convert_to_llm({branch, compaction, text_custom, block_custom});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(only_text(out[0]),
            "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
            "went left</summary>");
  EXPECT_EQ(only_text(out[1]),
            "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
            "all of it\n</summary>");
  EXPECT_EQ(only_text(out[2]), "remember");
  EXPECT_EQ(std::get<UserMessage>(out[0]).timestamp, 10);
  EXPECT_EQ(std::get<UserMessage>(out[1]).timestamp, 11);
  EXPECT_EQ(std::get<UserMessage>(out[2]).timestamp, 12);
  EXPECT_EQ(encode(out[3]).dump(),
            R"({"role":"user","content":[{"type":"image","data":"aGk=","mimeType":"image/png"},)"
            R"({"type":"text","text":"caption"}],"timestamp":13})");
}

TEST(ConvertToLlm, ProviderRolesPassThroughUnchanged) {
  std::vector<AgentMessage> messages;
  for (auto text : {std::string(R"({"role":"user","content":"q","timestamp":1,"x":1})"),
                    assistant_json(R"([{"type":"toolCall","id":"c","name":"n","arguments":{}}])"),
                    std::string(R"({"role":"toolResult","toolCallId":"c","toolName":"n","content":[],)"
                                R"("isError":false,"timestamp":3})")}) {
    auto message = decode_message(parse(text));
    ASSERT_TRUE(message.has_value());
    messages.push_back(*message);
  }
  auto out = convert_to_llm(messages);
  ASSERT_EQ(out.size(), 3u);
  for (std::size_t i = 0; i < out.size(); ++i) EXPECT_EQ(encode(out[i]), encode(messages[i]));
}

// ---- records: round trips ---------------------------------------------------

TEST(RecordCodec, RoundTripsEveryTreeEntryType) {
  const std::string message_entry =
      R"({"type":"message","seq":0,"id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":)" +
      assistant_json(R"([{"type":"text","text":"hi","later":true}])") + R"(,"future":{"x":1}})";
  for (std::string_view text : std::initializer_list<std::string_view>{
           message_entry,
           R"({"type":"model_change","seq":1,"id":"b","parentId":"a1","timestamp":"t","ref":"main","provider":"anthropic","modelId":"claude","why":"user"})",
           R"({"type":"thinking_level_change","seq":2,"id":"c","parentId":"b","timestamp":"t","thinkingLevel":"high"})",
           R"({"type":"active_tools_change","seq":3,"id":"d","parentId":"c","timestamp":"t","activeToolNames":["read","bash"]})",
           R"({"type":"compaction","seq":4,"id":"e","parentId":"d","timestamp":"t","summary":"s","firstKeptEntryId":"b","tokensBefore":5000,"details":{"readFiles":["a"]},"fromHook":true})",
           R"({"type":"compaction","seq":4,"id":"e","parentId":"d","timestamp":"t","summary":"s","firstKeptEntryId":"b","tokensBefore":0})",
           R"({"type":"branch_summary","seq":5,"id":"f","parentId":"a1","timestamp":"t","fromId":"e","summary":"s","details":null,"fromHook":false})",
           R"({"type":"custom","seq":6,"id":"g","parentId":"f","timestamp":"t","customType":"state","data":{"n":[1,2]}})",
           R"({"type":"custom","seq":6,"id":"g","parentId":"f","timestamp":"t","customType":"state"})",
           R"({"type":"custom_message","seq":7,"id":"h","parentId":"g","timestamp":"t","customType":"note","content":[{"type":"text","text":"x"}],"details":{"a":1},"display":true})",
           R"({"type":"custom_message","seq":7,"id":"h","parentId":"g","timestamp":"t","customType":"note","content":"plain","display":false})",
           R"({"type":"label","seq":8,"id":"i","parentId":"h","timestamp":"t","targetId":"a1","label":"start"})",
           R"({"type":"label","seq":8,"id":"i","parentId":"h","timestamp":"t","targetId":"a1","label":null})",
           R"({"type":"label","seq":8,"id":"i","parentId":"h","timestamp":"t","targetId":"a1"})",
           R"({"type":"session_info","seq":9,"id":"j","parentId":"i","timestamp":"t","name":"refactor"})",
           R"({"type":"session_info","seq":9,"id":"j","parentId":"i","timestamp":"t"})",
           R"({"type":"leaf","seq":10,"id":"k","parentId":"j","timestamp":"t","ref":"slack:1","targetId":"b"})",
           R"({"type":"leaf","seq":10,"id":"k","parentId":"j","timestamp":"t","ref":"slack:1","targetId":null})",
       }) {
    expect_record_round_trip(text);
  }
}

TEST(RecordCodec, RoundTripsEveryHarnessRecordType) {
  for (std::string_view text : {
           R"({"type":"operation_started","seq":1,"id":"op1","ref":"main","timestamp":"t","sourceLeafId":"a1",)"
           R"("intent":{"kind":"run","initialMessages":[{"type":"message","id":"u1","message":{"role":"user","content":"go","timestamp":1},"q":1},)"
           R"({"type":"custom_message","id":"u2","customType":"ctx","content":"c","display":false}],)"
           R"("systemPromptOverride":"be brief","resumeData":{"ext":{"n":1}},"newIntentField":[1]},"host":"m1"})",
           R"({"type":"operation_started","seq":1,"id":"op1","ref":"main","timestamp":"t","sourceLeafId":null,"intent":{"kind":"run","initialMessages":[]}})",
           R"({"type":"operation_started","seq":2,"id":"op2","ref":"main","timestamp":"t","sourceLeafId":"a1",)"
           R"("intent":{"kind":"compaction","customInstructions":"keep todos","resultEntryId":"c1","z":0}})",
           R"({"type":"operation_started","seq":3,"id":"op3","ref":"main","timestamp":"t","sourceLeafId":"a1",)"
           R"("intent":{"kind":"navigation","targetId":"b","destinationLeafId":null,"summarize":true,"customInstructions":"ci",)"
           R"("label":"l","summaryEntryId":"s1","labelEntryId":"l1","leafEntryId":"lf1"}})",
           R"({"type":"operation_started","seq":3,"id":"op3","ref":"main","timestamp":"t","sourceLeafId":"a1",)"
           R"("intent":{"kind":"navigation","targetId":"b","destinationLeafId":"b","summarize":false,"leafEntryId":"lf1"}})",
           R"({"type":"operation_cancelled","seq":4,"id":"x1","ref":"main","timestamp":"t","runId":"op1","reason":"user"})",
           R"({"type":"operation_finished","seq":5,"id":"x2","ref":"main","timestamp":"t","runId":"op1","outcome":"failed",)"
           R"("error":{"code":"retries_exhausted","message":"gave up","status":529}})",
           R"({"type":"operation_finished","seq":5,"id":"x2","ref":"main","timestamp":"t","runId":"op1","outcome":"completed"})",
           R"({"type":"generation_started","seq":6,"id":"x3","ref":"main","timestamp":"t","runId":"op1","purpose":"step","attempt":2,)"
           R"("model":{"provider":"openai","modelId":"gpt-4o","region":"eu"}})",
           R"({"type":"tool_started","seq":7,"id":"x4","ref":"main","timestamp":"t","runId":"op1","assistantEntryId":"a2",)"
           R"("toolIndex":0,"toolCallId":"call_1","toolName":"bash","effectiveArgs":{"command":"ls"},"resultEntryId":"r1","replay":"never"})",
           R"({"type":"queue_enqueued","seq":8,"id":"x5","ref":"main","timestamp":"t","queue":"steer","runId":"op1",)"
           R"("target":{"type":"message","id":"m9","message":{"role":"user","content":[{"type":"text","text":"stop"}],"timestamp":5}}})",
           R"({"type":"queue_enqueued","seq":9,"id":"x6","ref":"main","timestamp":"t","queue":"nextRun",)"
           R"("target":{"type":"custom_message","id":"m10","customType":"n","content":"later","display":true}})",
           R"({"type":"write_deferred","seq":10,"id":"x7","ref":"main","timestamp":"t","runId":"op1",)"
           R"("target":{"type":"label","id":"l9","targetId":"a1","label":"here"}})",
           R"({"type":"ref_created","seq":11,"id":"x8","ref":"slack:1","timestamp":"t","name":"slack:1","at":"a1"})",
           R"({"type":"ref_created","seq":11,"id":"x8","ref":"slack:1","timestamp":"t","name":"slack:1","at":null})",
           R"({"type":"ref_deleted","seq":12,"id":"x9","ref":"slack:1","timestamp":"t","name":"slack:1"})",
       }) {
    expect_record_round_trip(text);
  }
}

TEST(RecordCodec, ToolStartedCarriesItsSandboxPolicyAndReadsWithoutOne) {
  expect_record_round_trip(
      R"({"type":"tool_started","seq":7,"id":"x4","ref":"main","timestamp":"t","runId":"op1","assistantEntryId":"a2",)"
      R"("toolIndex":0,"toolCallId":"call_1","toolName":"bash","effectiveArgs":{},"resultEntryId":"r1","replay":"never",)"
      R"("sandbox":{"mode":"workspaceWrite","network":false,"newer":[1]}})");
  const Record with = decode_ok(parse(
      R"({"type":"tool_started","seq":7,"id":"x4","ref":"main","timestamp":"t","runId":"op1","assistantEntryId":"a2",)"
      R"("toolIndex":0,"toolCallId":"call_1","toolName":"bash","effectiveArgs":{},"resultEntryId":"r1","replay":"never",)"
      R"("sandbox":{"mode":"readOnly","network":true}})"));
  const auto& started = std::get<ToolStarted>(std::get<HarnessRecord>(with.body).body);
  ASSERT_TRUE(started.sandbox);
  EXPECT_EQ(started.sandbox->mode, SandboxMode::read_only);
  EXPECT_TRUE(started.sandbox->network);
  const Record without = decode_ok(parse(
      R"({"type":"tool_started","seq":7,"id":"x4","ref":"main","timestamp":"t","runId":"op1","assistantEntryId":"a2",)"
      R"("toolIndex":0,"toolCallId":"call_1","toolName":"bash","effectiveArgs":{},"resultEntryId":"r1","replay":"never"})"));
  EXPECT_FALSE(std::get<ToolStarted>(std::get<HarnessRecord>(without.body).body).sandbox);
  auto bad = decode_record(parse(
      R"({"type":"tool_started","seq":7,"id":"x4","ref":"main","timestamp":"t","runId":"op1","assistantEntryId":"a2",)"
      R"("toolIndex":0,"toolCallId":"call_1","toolName":"bash","effectiveArgs":{},"resultEntryId":"r1","replay":"never",)"
      R"("sandbox":{"mode":"danger","network":false}})"));
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("sandbox.mode"), std::string::npos) << bad.error().message;
}

TEST(RecordCodec, ANetworkGrantedToOneCallRoundTripsAndMeansANetworkOnUnderASandbox) {
  const std::string head =
      R"({"type":"tool_started","seq":7,"id":"x4","ref":"main","timestamp":"t","runId":"op1","assistantEntryId":"a2",)"
      R"("toolIndex":0,"toolCallId":"call_1","toolName":"bash","effectiveArgs":{},"resultEntryId":"r1","replay":"never",)";
  expect_record_round_trip(head + R"("sandbox":{"mode":"workspaceWrite","network":true,"networkGranted":true}})");
  expect_record_round_trip(
      R"({"type":"input_requested","seq":8,"id":"x5","ref":"main","timestamp":"t","runId":"op1","kind":"approval",)"
      R"("assistantEntryId":"a2","toolIndex":0,"toolCallId":"call_1","toolName":"bash","arguments":{},"rule":"default",)"
      R"("sandbox":{"mode":"readOnly","network":false}})");
  for (const auto& [sandbox, complaint] : {
           std::pair{R"({"mode":"workspaceWrite","network":false,"networkGranted":true})", "needs \"network\": true"},
           std::pair{R"({"mode":"off","network":true,"networkGranted":true})", "needs a sandbox"},
           std::pair{R"({"mode":"readOnly","network":true,"networkGranted":false})", "only as true"},
       }) {
    auto refused = decode_record(parse(head + R"("sandbox":)" + sandbox + "}"));
    ASSERT_FALSE(refused.has_value()) << sandbox;
    EXPECT_NE(refused.error().message.find(complaint), std::string::npos) << refused.error().message;
    EXPECT_NE(refused.error().message.find("sandbox.networkGranted"), std::string::npos) << refused.error().message;
  }
}

TEST(RecordCodec, PiLinesReencodeByteForByte) {
  // Lines as pi writes them (no seq): same fields, same order, same numbers.
  for (std::string_view line : {
           R"({"type":"message","id":"3f2a9c1b","parentId":null,"timestamp":"2025-06-01T10:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"hello"}],"timestamp":1748772000000}})",
           R"({"type":"model_change","id":"a","parentId":"3f2a9c1b","timestamp":"2025-06-01T10:00:01.000Z","provider":"anthropic","modelId":"claude-sonnet-4"})",
           R"({"type":"compaction","id":"b","parentId":"a","timestamp":"2025-06-01T10:00:02.000Z","summary":"## Goal","firstKeptEntryId":"a","tokensBefore":120000,"details":{"readFiles":[],"modifiedFiles":["x.ts"]}})",
       }) {
    auto record = decode_record(parse(line), false);
    ASSERT_TRUE(record.has_value()) << record.error().message;
    EXPECT_EQ(record->seq, -1);
    EXPECT_EQ(encode(*record).dump(), line);
  }
}

TEST(RecordCodec, EncodesTypeThenSeqThenEnvelope) {
  auto record = decode_ok(parse(R"({"seq":3,"extra":1,"timestamp":"t","id":"i","type":"ref_deleted","name":"n","ref":"r"})"));
  EXPECT_EQ(record.seq, 3);
  EXPECT_EQ(encode(record).dump(),
            R"({"type":"ref_deleted","seq":3,"id":"i","ref":"r","timestamp":"t","name":"n","extra":1})");
  record.seq = -1;
  EXPECT_EQ(encode(record).dump(), R"({"type":"ref_deleted","id":"i","ref":"r","timestamp":"t","name":"n","extra":1})");
}

TEST(RecordCodec, DecodesTypedTreeEntry) {
  auto record = decode_ok(parse(
      R"({"type":"message","seq":7,"id":"m","parentId":"p","timestamp":"t","ref":"r","message":{"role":"user","content":"x","timestamp":1},"ignorable":true})"));
  EXPECT_EQ(record.seq, 7);
  EXPECT_EQ(type_of(record), RecordType::message);
  const auto& entry = std::get<TreeEntry>(record.body);
  EXPECT_EQ(entry.id, "m");
  EXPECT_EQ(entry.parent_id, "p");
  EXPECT_EQ(entry.ref, "r");
  EXPECT_EQ(entry.timestamp, "t");
  // A known type keeps `ignorable` like any other unknown key.
  EXPECT_EQ(entry.extra.dump(), R"({"ignorable":true})");
  EXPECT_EQ(role_of(std::get<MessageBody>(entry.body).message), "user");
}

TEST(RecordCodec, ProvisionedEntriesHaveNoEnvelope) {
  TreeEntry entry;
  entry.id = "p1";
  entry.parent_id = "ignored";
  entry.timestamp = "ignored";
  entry.ref = "ignored";
  entry.body = SessionInfo{"name"};
  entry.extra = Json{{"k", 1}};
  Json json = encode_provisioned(entry);
  EXPECT_EQ(json.dump(), R"({"type":"session_info","id":"p1","name":"name","k":1})");
  auto decoded = decode_provisioned(json, "target");
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(encode_provisioned(*decoded), json);
  EXPECT_FALSE(decoded->parent_id.has_value());

  auto with_parent = decode_provisioned(parse(R"({"type":"label","id":"l","parentId":"x","targetId":"a"})"), "target");
  ASSERT_FALSE(with_parent.has_value());
  EXPECT_EQ(with_parent.error().message, "target.parentId: not allowed in a provisioned entry");
}

TEST(RecordCodec, IgnorableUnknownTypeIsKeptVerbatim) {
  auto record = decode_ok(parse(R"({"type":"plugin:x","seq":4,"ignorable":true,"payload":{"a":[1]}})"));
  EXPECT_EQ(record.seq, 4);
  EXPECT_EQ(type_of(record), RecordType::ignorable);
  const auto& ignorable = std::get<IgnorableRecord>(record.body);
  EXPECT_FALSE(ignorable.json.contains("seq"));  // Record::seq holds it
  EXPECT_EQ(encode(record).dump(), R"({"type":"plugin:x","seq":4,"ignorable":true,"payload":{"a":[1]}})");
}

TEST(RecordCodec, SeqIsOptionalOnlyWhenAskedFor) {
  auto record = decode_ok(parse(R"({"type":"ref_deleted","id":"i","ref":"r","timestamp":"t","name":"n"})"), false);
  EXPECT_EQ(record.seq, -1);
  expect_record_error(R"({"type":"ref_deleted","id":"i","ref":"r","timestamp":"t","name":"n"})", "invalid_record",
                      "seq: missing");
  expect_record_error(R"({"type":"ref_deleted","seq":-1,"id":"i","ref":"r","timestamp":"t","name":"n"})",
                      "invalid_record", "seq: expected a non-negative integer", false);
  expect_record_error(R"({"type":"ref_deleted","seq":1.5,"id":"i","ref":"r","timestamp":"t","name":"n"})",
                      "invalid_record", "seq: expected a non-negative integer");
}

TEST(RecordCodec, RefusesMalformedRecords) {
  expect_record_error(R"([1,2])", "invalid_record", "record: expected an object");
  expect_record_error(R"({"seq":0})", "invalid_record", "type: missing");
  expect_record_error(R"({"type":5,"seq":0})", "invalid_record", "type: expected a string");
  expect_record_error(R"({"type":"mystery","seq":0,"id":"x"})", "unknown_type", "unknown record type 'mystery'");
  expect_record_error(R"({"type":"mystery","seq":0,"ignorable":"yes"})", "unknown_type",
                      "unknown record type 'mystery'");
  expect_record_error(R"({"type":"label","seq":0,"id":"l","timestamp":"t","targetId":"a"})", "invalid_record",
                      "parentId: missing");
  expect_record_error(R"({"type":"label","seq":0,"id":"l","parentId":3,"timestamp":"t","targetId":"a"})",
                      "invalid_record", "parentId: expected a string or null");
  expect_record_error(R"({"type":"label","seq":0,"id":"l","parentId":null,"timestamp":"t","targetId":"a","label":4})",
                      "invalid_record", "label: expected a string");
  expect_record_error(
      R"({"type":"active_tools_change","seq":0,"id":"a","parentId":null,"timestamp":"t","activeToolNames":["a",1]})",
      "invalid_record", "activeToolNames[1]: expected a string");
  expect_record_error(
      R"({"type":"message","seq":0,"id":"m","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"},{"type":"text","text":false}]}})",
      "invalid_record", "message.content[2].text: expected a string");
  expect_record_error(R"({"type":"operation_started","seq":0,"id":"o","ref":"main","timestamp":"t","sourceLeafId":null,"intent":{"kind":"dance"}})",
                      "invalid_record",
                      "intent.kind: unknown value 'dance' (expected 'run', 'compaction' or 'navigation')");
  expect_record_error(
      R"({"type":"operation_started","seq":0,"id":"o","ref":"main","timestamp":"t","sourceLeafId":null,)"
      R"("intent":{"kind":"run","initialMessages":[{"type":"message","id":"u","message":{"role":"user"}}]}})",
      "invalid_record", "intent.initialMessages[0].message.content: missing");
  expect_record_error(R"({"type":"tool_started","seq":0,"id":"x","ref":"main","timestamp":"t","runId":"r",)"
                      R"("assistantEntryId":"a","toolIndex":"0","toolCallId":"c","toolName":"n","effectiveArgs":{},)"
                      R"("resultEntryId":"e","replay":"safe"})",
                      "invalid_record", "toolIndex: expected an integer");
  expect_record_error(R"({"type":"generation_started","seq":0,"id":"x","ref":"main","timestamp":"t","runId":"r",)"
                      R"("purpose":"step","attempt":1,"model":"gpt"})",
                      "invalid_record", "model: expected an object");
  expect_record_error(R"({"type":"queue_enqueued","seq":0,"id":"x","ref":"main","timestamp":"t","queue":"nextRun",)"
                      R"("target":{"type":"operation_cancelled","id":"y"}})",
                      "invalid_record", "target.type: 'operation_cancelled' is not a tree entry type");
}

TEST(RecordCodec, NestedUnknownTypeNamesItsPlace) {
  auto top = decode_tree_entry(parse(R"({"type":"mystery","id":"x","parentId":null,"timestamp":"t"})"));
  ASSERT_FALSE(top.has_value());
  EXPECT_EQ(top.error().code, "unknown_type");
  EXPECT_EQ(top.error().message, "unknown record type 'mystery'");
  auto nested = decode_provisioned(parse(R"({"type":"mystery","id":"x"})"), "target");
  ASSERT_FALSE(nested.has_value());
  EXPECT_EQ(nested.error().code, "unknown_type");
  EXPECT_EQ(nested.error().message, "target.type: unknown record type 'mystery'");
}

TEST(RecordCodec, DecodeAppliesTheFieldRules) {
  expect_record_error(R"({"type":"operation_cancelled","seq":0,"id":"x","ref":"main","timestamp":"t","runId":"r","reason":"bored"})",
                      "invalid_record", "reason: unknown value 'bored' (expected 'user' or 'shutdown')");
  expect_record_error(R"({"type":"ref_created","seq":0,"id":"x","ref":"main","timestamp":"t","name":"","at":null})",
                      "invalid_record", "name: must not be empty");
}

TEST(RecordCodec, DecodersNeverThrowOnHostileInput) {
  for (std::string_view text : {R"(null)", R"("x")", R"(3)", R"({"type":null})", R"({"type":"message","seq":0,"message":[]})",
                                R"({"type":"message","seq":0,"id":{},"parentId":[],"timestamp":1,"message":{"role":[]}})",
                                R"({"type":"operation_started","seq":18446744073709551615})",
                                R"({"type":"queue_enqueued","seq":0,"id":"x","ref":"r","timestamp":"t","queue":"steer","target":[]})"}) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(decode_record(parse(text)).has_value());
    EXPECT_FALSE(decode_message(parse(text)).has_value());
    EXPECT_FALSE(decode_tree_entry(parse(text)).has_value());
    EXPECT_FALSE(decode_provisioned(parse(text), "p").has_value());
  }
}

// ---- type names -------------------------------------------------------------

TEST(RecordTypes, NamesAndKinds) {
  int tree = 0, harness = 0;
  for (int i = 0; i <= static_cast<int>(RecordType::damaged); ++i) {
    auto type = static_cast<RecordType>(i);
    EXPECT_EQ(parse_record_type(to_string(type)), type);
    EXPECT_NE(is_tree_type(type), is_harness_type(type));
    tree += is_tree_type(type);
    harness += is_harness_type(type);
  }
  EXPECT_EQ(tree, 12);
  EXPECT_EQ(harness, 12);
  EXPECT_FALSE(is_tree_type(RecordType::ignorable));
  EXPECT_FALSE(is_harness_type(RecordType::ignorable));
  EXPECT_EQ(parse_record_type("session"), std::nullopt);
  EXPECT_EQ(to_string(RecordType::custom_message), "custom_message");
  EXPECT_EQ(type_of(TreeBody{Leaf{}}), RecordType::leaf);
  EXPECT_EQ(type_of(HarnessBody{WriteDeferred{}}), RecordType::write_deferred);
  EXPECT_EQ(type_of(HarnessBody{OperationStarted{}}), RecordType::operation_started);
  EXPECT_EQ(type_of(HarnessBody{InputRequested{}}), RecordType::input_requested);
  EXPECT_EQ(type_of(HarnessBody{InputResolved{}}), RecordType::input_resolved);
}

HarnessRecord harness_record(HarnessBody body, std::string id = "h1") {
  return HarnessRecord{std::move(id), "main", "2025-01-01T00:00:00Z", std::move(body), Json::object()};
}

TEST(RecordTypes, OperationKindAndRunId) {
  EXPECT_EQ(kind_of(RunIntent{}), OperationKind::run);
  EXPECT_EQ(kind_of(CompactionIntent{}), OperationKind::compaction);
  EXPECT_EQ(kind_of(NavigationIntent{}), OperationKind::navigation);
  EXPECT_EQ(run_id_of(harness_record(OperationStarted{}, "op7")), "op7");
  EXPECT_EQ(run_id_of(harness_record(OperationFinished{"op7", OperationOutcome::completed, std::nullopt})), "op7");
  EXPECT_EQ(run_id_of(harness_record(ToolStarted{"op7", "a1", 0, "c1", "bash", Json::object(), "r1", Replay::never})), "op7");
  EXPECT_EQ(run_id_of(harness_record(QueueEnqueued{QueueKind::steer, "op7", {}})), "op7");
  EXPECT_EQ(run_id_of(harness_record(QueueEnqueued{QueueKind::next_run, std::nullopt, {}})), "");
  EXPECT_EQ(run_id_of(harness_record(RefCreated{"r", std::nullopt})), "");
}

// ---- check_fields -----------------------------------------------------------

Record valid_record(HarnessBody body) { return Record{0, harness_record(std::move(body))}; }

ProvisionedEntry user_entry(std::string id) {
  ProvisionedEntry entry;
  entry.id = std::move(id);
  entry.body = MessageBody{UserMessage{std::string("hi"), 1, Json::object()}};
  return entry;
}

Record tree_record(TreeBody body) {
  return Record{0, TreeEntry{"e1", std::nullopt, "2025-01-01T00:00:00Z", std::nullopt, std::move(body), Json::object()}};
}

TEST(CheckFields, AcceptsValidRecords) {
  EXPECT_TRUE(check_fields(valid_record(OperationCancelled{"op1", CancelReason::shutdown})).has_value());
  EXPECT_TRUE(check_fields(valid_record(QueueEnqueued{QueueKind::follow_up, "op1", user_entry("m1")})).has_value());
  EXPECT_TRUE(check_fields(valid_record(QueueEnqueued{QueueKind::next_run, std::nullopt, user_entry("m1")})).has_value());
  EXPECT_TRUE(check_fields(tree_record(Leaf{std::nullopt})).has_value());
}

TEST(CheckFields, RefusesNanAnywhere) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  expect_fields_error(tree_record(Custom{"state", Json{{"x", nan}}}), "data: not lossless JSON (NaN or infinity)");
  expect_fields_error(tree_record(Compaction{"s", "a", 1, Json::array({nan}), std::nullopt}),
                      "details: not lossless JSON (NaN or infinity)");

  auto extra = tree_record(SessionInfo{});
  std::get<TreeEntry>(extra.body).extra = Json{{"ok", 1}, {"weird", nan}};
  expect_fields_error(extra, "weird: not lossless JSON (NaN or infinity)");

  ToolResultMessage result{"c1", "read", {}, Json{{"v", std::numeric_limits<double>::infinity()}}, false, 1,
                           Json::object()};
  expect_fields_error(tree_record(MessageBody{result}), "message.details: not lossless JSON (NaN or infinity)");

  AssistantMessage assistant;
  assistant.usage.cost.total = nan;
  expect_fields_error(tree_record(MessageBody{assistant}), "message.usage.cost.total: must be a finite number");

  ToolStarted tool{"op1", "a1", 0, "c1", "bash", Json{{"n", nan}}, "r1", Replay::never};
  expect_fields_error(valid_record(tool), "effectiveArgs: not lossless JSON (NaN or infinity)");

  RunIntent run;
  run.resume_data = Json{{"ext", nan}};
  expect_fields_error(valid_record(OperationStarted{std::nullopt, run}),
                      "intent.resumeData: not lossless JSON (NaN or infinity)");

  // The same rule guards decoding: a record that carries NaN cannot be written.
  Json line = encode(tree_record(Custom{"state", Json{{"x", nan}}}));
  EXPECT_FALSE(is_lossless(line));
  auto decoded = decode_record(line);
  ASSERT_FALSE(decoded.has_value());
  EXPECT_EQ(decoded.error().message, "data: not lossless JSON (NaN or infinity)");
}

TEST(CheckFields, RefusesEmptyIdsAndBadNumbers) {
  auto empty_id = tree_record(SessionInfo{});
  std::get<TreeEntry>(empty_id.body).id = "";
  expect_fields_error(empty_id, "id: must not be empty");
  auto empty_time = tree_record(SessionInfo{});
  std::get<TreeEntry>(empty_time.body).timestamp = "";
  expect_fields_error(empty_time, "timestamp: must not be empty");

  expect_fields_error(valid_record(GenerationStarted{"op1", GenerationPurpose::step, 0, {"p", "m"}}), "attempt: must be at least 1");
  expect_fields_error(valid_record(ToolStarted{"op1", "a1", -1, "c1", "bash", Json::object(), "r1", Replay::never}),
                      "toolIndex: must not be negative");
  expect_fields_error(valid_record(ToolStarted{"op1", "a1", 0, "c1", "bash", Json::array(), "r1", Replay::safe}),
                      "effectiveArgs: expected an object");
  expect_fields_error(valid_record(OperationCancelled{"", CancelReason::user}), "runId: must not be empty");
  expect_fields_error(valid_record(RefCreated{"", std::nullopt}), "name: must not be empty");
  expect_fields_error(tree_record(Compaction{"s", "a", -5, std::nullopt, std::nullopt}),
                      "tokensBefore: must not be negative");
  expect_fields_error(tree_record(MessageBody{CompactionSummaryMessage{"s", -1, 1, Json::object()}}),
                      "message.tokensBefore: must not be negative");
}

TEST(CheckFields, QueueRules) {
  expect_fields_error(valid_record(QueueEnqueued{QueueKind::steer, std::nullopt, user_entry("m1")}),
                      "runId: missing (a steer item belongs to its run)");
  expect_fields_error(valid_record(QueueEnqueued{QueueKind::next_run, "op1", user_entry("m1")}),
                      "runId: not allowed on a nextRun item");
  expect_fields_error(valid_record(QueueEnqueued{QueueKind::steer, "op1", user_entry("")}), "target.id: must not be empty");

  ProvisionedEntry label;
  label.id = "l1";
  label.body = Label{"a1", "x"};
  expect_fields_error(valid_record(QueueEnqueued{QueueKind::follow_up, "op1", label}),
                      "target.type: expected 'message' or 'custom_message', got 'label'");
  // A deferred write may carry any tree entry.
  EXPECT_TRUE(check_fields(valid_record(WriteDeferred{"op1", label})).has_value());

  RunIntent run;
  run.initial_messages = {user_entry("m1"), label};
  expect_fields_error(valid_record(OperationStarted{"a1", run}),
                      "intent.initialMessages[1].type: expected 'message' or 'custom_message', got 'label'");
}

TEST(CheckFields, MessagesInside) {
  AssistantMessage assistant;
  assistant.content = {TextContent{"a", std::nullopt}, ToolCall{"", "bash", Json::object()}};
  expect_fields_error(tree_record(MessageBody{assistant}), "message.content[1].id: must not be empty");

  ProvisionedEntry entry;
  entry.id = "m1";
  entry.body = MessageBody{assistant};
  expect_fields_error(valid_record(QueueEnqueued{QueueKind::steer, "op1", entry}),
                      "target.message.content[1].id: must not be empty");
}

TEST(CheckFields, IgnorableRecordsMustBeLossless) {
  Json json = parse(R"({"type":"plugin:x","ignorable":true})");
  EXPECT_TRUE(check_fields(Record{0, IgnorableRecord{json}}).has_value());
  json["v"] = std::numeric_limits<double>::infinity();
  expect_fields_error(Record{0, IgnorableRecord{json}}, "v: not lossless JSON (NaN or infinity)");
}

}  // namespace
}  // namespace cairn

namespace cairn {
namespace {

TEST(InputRecords, RoundTripThroughTheCodec) {
  expect_record_round_trip(
      R"({"type":"input_requested","seq":7,"id":"q1","ref":"main","timestamp":"2025-01-01T00:00:00Z","runId":"op1","kind":"approval","assistantEntryId":"a1","toolIndex":0,"toolCallId":"c1","toolName":"bash","arguments":{"command":"rm -rf build"},"rule":"bash"})");
  expect_record_round_trip(
      R"({"type":"input_requested","seq":7,"id":"q2","ref":"main","timestamp":"2025-01-01T00:00:00Z","runId":"op1","kind":"question","assistantEntryId":"a1","toolIndex":1,"toolCallId":"c2","toolName":"ask_user","arguments":{"question":"Colour?"},"question":"Colour?","choices":["red","blue"]})");
  expect_record_round_trip(
      R"j({"type":"input_resolved","seq":8,"id":"r1","ref":"main","timestamp":"2025-01-01T00:00:00Z","runId":"op1","requestId":"q1","decision":"allow","arguments":{"command":"rm -rf out"},"remember":"bash(rm -rf out)","by":"ada"})j");
  expect_record_round_trip(
      R"({"type":"input_resolved","seq":9,"id":"r2","ref":"main","timestamp":"2025-01-01T00:00:00Z","runId":"op1","requestId":"q2","decision":"answer","answer":"blue","by":"ada"})");
  EXPECT_EQ(run_id_of(harness_record(InputResolved{.run_id = "op3", .request_id = "q"})), "op3");
}

TEST(InputRecords, FieldRules) {
  InputRequested approval{.run_id = "op1", .kind = InputKind::approval, .assistant_entry_id = "a1", .tool_index = 0,
                          .tool_call_id = "c1", .tool_name = "bash", .arguments = Json::object(), .rule = "bash"};
  EXPECT_TRUE(check_fields(valid_record(approval)).has_value());
  auto no_rule = approval;
  no_rule.rule.reset();
  expect_fields_error(valid_record(no_rule), "rule: missing (an approval request names the rule that asked)");
  auto question = approval;
  question.kind = InputKind::question;
  expect_fields_error(valid_record(question), "question: missing (a question request asks one)");

  InputResolved allow{.run_id = "op1", .request_id = "q1", .decision = InputDecision::allow, .by = "ada"};
  EXPECT_TRUE(check_fields(valid_record(allow)).has_value());
  auto reason = allow;
  reason.reason = "why";
  expect_fields_error(valid_record(reason), "reason: allowed only with decision deny");
  auto answer = allow;
  answer.decision = InputDecision::answer;
  expect_fields_error(valid_record(answer), "answer: missing (decision answer carries it)");
  auto remember = allow;
  remember.decision = InputDecision::deny;
  remember.remember = "bash";
  expect_fields_error(valid_record(remember), "remember: allowed only with decision allow");
  auto nobody = allow;
  nobody.by = "";
  expect_fields_error(valid_record(nobody), "by: must not be empty");
}

// ---- closed sets ------------------------------------------------------------

// A value of each closed set in its JSON spelling: the words the log and the
// HTTP API have always written, and nothing else reads as one.
template <class E>
void expect_spelling(std::optional<E> (*parse)(std::string_view),
                     std::initializer_list<std::pair<E, std::string_view>> names) {
  for (const auto& [value, name] : names) {
    EXPECT_EQ(to_string(value), name);
    EXPECT_EQ(parse(name), value) << name;
  }
  EXPECT_EQ(parse("bogus"), std::nullopt);
  EXPECT_EQ(parse(""), std::nullopt);
}

TEST(ClosedSets, KeepTheLogsSpelling) {
  expect_spelling(parse_operation_kind, {{OperationKind::run, "run"},
                                         {OperationKind::compaction, "compaction"},
                                         {OperationKind::navigation, "navigation"}});
  expect_spelling(parse_cancel_reason, {{CancelReason::user, "user"}, {CancelReason::shutdown, "shutdown"}});
  expect_spelling(parse_operation_outcome, {{OperationOutcome::completed, "completed"},
                                            {OperationOutcome::aborted, "aborted"},
                                            {OperationOutcome::failed, "failed"},
                                            {OperationOutcome::cancelled, "cancelled"}});
  expect_spelling(parse_generation_purpose, {{GenerationPurpose::step, "step"},
                                             {GenerationPurpose::compaction, "compaction"},
                                             {GenerationPurpose::branch_summary, "branch_summary"}});
  expect_spelling(parse_replay, {{Replay::never, "never"}, {Replay::safe, "safe"}, {Replay::resume, "resume"}});
  expect_spelling(parse_queue_kind, {{QueueKind::steer, "steer"},
                                     {QueueKind::follow_up, "followUp"},
                                     {QueueKind::next_run, "nextRun"}});
  expect_spelling(parse_input_kind, {{InputKind::approval, "approval"}, {InputKind::question, "question"}});
  expect_spelling(parse_input_decision, {{InputDecision::allow, "allow"},
                                         {InputDecision::deny, "deny"},
                                         {InputDecision::answer, "answer"}});
  expect_spelling(parse_thinking_level, {{ThinkingLevel::off, "off"},
                                         {ThinkingLevel::minimal, "minimal"},
                                         {ThinkingLevel::low, "low"},
                                         {ThinkingLevel::medium, "medium"},
                                         {ThinkingLevel::high, "high"},
                                         {ThinkingLevel::xhigh, "xhigh"}});
  expect_spelling(parse_stop_reason, {{StopReason::stop, "stop"},
                                      {StopReason::length, "length"},
                                      {StopReason::tool_use, "toolUse"},
                                      {StopReason::error, "error"},
                                      {StopReason::aborted, "aborted"}});
}

// `valid` decodes; with the string at `pointer` replaced by "bogus" it is
// refused, and the error names the field and the values it may hold.
void expect_unknown_value_refused(std::string_view valid, const char* pointer, std::string_view message) {
  SCOPED_TRACE(pointer);
  Json json = parse(valid);
  ASSERT_TRUE(decode_record(json).has_value()) << decode_record(json).error().message;
  json[Json::json_pointer(pointer)] = "bogus";
  auto record = decode_record(json);
  ASSERT_FALSE(record.has_value());
  EXPECT_EQ(record.error().code, "invalid_record");
  EXPECT_EQ(record.error().message, message);
}

TEST(ClosedSets, DecodingRefusesAnUnknownValueNamingTheField) {
  expect_unknown_value_refused(
      R"({"type":"thinking_level_change","seq":0,"id":"c","parentId":null,"timestamp":"t","thinkingLevel":"high"})",
      "/thinkingLevel",
      "thinkingLevel: unknown value 'bogus' (expected 'off', 'minimal', 'low', 'medium', 'high' or 'xhigh')");
  expect_unknown_value_refused(
      R"({"type":"message","seq":0,"id":"m","parentId":null,"timestamp":"t","message":{"role":"assistant",)"
      R"("content":[],"api":"a","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":0,)"
      R"("cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},)"
      R"("stopReason":"stop","timestamp":1}})",
      "/message/stopReason",
      "message.stopReason: unknown value 'bogus' (expected 'stop', 'length', 'toolUse', 'error' or 'aborted')");
  expect_unknown_value_refused(
      R"({"type":"operation_started","seq":0,"id":"o","ref":"main","timestamp":"t","sourceLeafId":null,)"
      R"("intent":{"kind":"compaction","resultEntryId":"c"}})",
      "/intent/kind", "intent.kind: unknown value 'bogus' (expected 'run', 'compaction' or 'navigation')");
  expect_unknown_value_refused(
      R"({"type":"operation_cancelled","seq":0,"id":"x","ref":"main","timestamp":"t","runId":"r","reason":"user"})",
      "/reason", "reason: unknown value 'bogus' (expected 'user' or 'shutdown')");
  expect_unknown_value_refused(
      R"({"type":"operation_finished","seq":0,"id":"x","ref":"main","timestamp":"t","runId":"r","outcome":"failed"})",
      "/outcome", "outcome: unknown value 'bogus' (expected 'completed', 'aborted', 'failed' or 'cancelled')");
  expect_unknown_value_refused(
      R"({"type":"generation_started","seq":0,"id":"x","ref":"main","timestamp":"t","runId":"r","purpose":"step",)"
      R"("attempt":1,"model":{"provider":"p","modelId":"m"}})",
      "/purpose", "purpose: unknown value 'bogus' (expected 'step', 'compaction' or 'branch_summary')");
  expect_unknown_value_refused(
      R"({"type":"tool_started","seq":0,"id":"x","ref":"main","timestamp":"t","runId":"r","assistantEntryId":"a",)"
      R"("toolIndex":0,"toolCallId":"c","toolName":"n","effectiveArgs":{},"resultEntryId":"e","replay":"safe"})",
      "/replay", "replay: unknown value 'bogus' (expected 'never', 'safe' or 'resume')");
  expect_unknown_value_refused(
      R"({"type":"queue_enqueued","seq":0,"id":"x","ref":"main","timestamp":"t","queue":"nextRun",)"
      R"("target":{"type":"message","id":"u","message":{"role":"user","content":"hi"}}})",
      "/queue", "queue: unknown value 'bogus' (expected 'steer', 'followUp' or 'nextRun')");
  expect_unknown_value_refused(
      R"({"type":"input_requested","seq":0,"id":"q1","ref":"main","timestamp":"t","runId":"op1","kind":"approval",)"
      R"("assistantEntryId":"a1","toolIndex":0,"toolCallId":"c1","toolName":"bash","arguments":{},"rule":"bash"})",
      "/kind", "kind: unknown value 'bogus' (expected 'approval' or 'question')");
  expect_unknown_value_refused(
      R"({"type":"input_resolved","seq":0,"id":"r1","ref":"main","timestamp":"t","runId":"op1","requestId":"q1",)"
      R"("decision":"deny","by":"ada"})",
      "/decision", "decision: unknown value 'bogus' (expected 'allow', 'deny' or 'answer')");
}

// A placeholder names the type the damaged record had: one this build knows,
// and of its own kind (a tree entry's for damaged_entry, else a harness record's).
TEST(ClosedSets, APlaceholderWasARecordTypeOfItsKind) {
  const std::string line =
      R"({"type":"damaged","seq":0,"id":"d","ref":"main","timestamp":"t","runId":"r","was":"operation_finished",)"
      R"("reason":"checksum","bytes":10,"openRuns":["r"],"repairedAt":"t"})";
  expect_record_round_trip(line);
  auto record = decode_record(parse(line));
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(damage_of(*record)->was, RecordType::operation_finished);
  Json json = parse(line);
  json["was"] = "bogus";
  expect_record_error(json.dump(), "invalid_record", "was: unknown record type 'bogus'");
  json["was"] = "message";
  expect_record_error(json.dump(), "invalid_record", "was: 'message' is not a harness record type");
}

TEST(ClosedSets, AValueOfTheWrongJsonTypeIsNoValue) {
  expect_record_error(
      R"({"type":"operation_finished","seq":0,"id":"x","ref":"main","timestamp":"t","runId":"r","outcome":1})",
      "invalid_record", "outcome: expected a string");
}

}  // namespace
}  // namespace cairn
