// The read path's fast paths against the general codec they stand in for:
// decode_common_line / decode_record_line (a stored line decoded straight
// from its bytes) and append_json (a message written straight as text). On
// every input — the shapes cairn and pi write, and thousands of mutations of
// them — each must give exactly what the general codec gives: the same
// record, the same error, the same bytes.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "log/index.hpp"
#include "cairn/log/message.hpp"
#include "cairn/log/record.hpp"
#include "support/test_support.hpp"

namespace cairn {
namespace {

// Stored message lines of every shape the fast path takes.
std::vector<std::string> seed_lines() {
  std::vector<std::string> lines = {
      R"({"type":"message","seq":3,"id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi","timestamp":1}})",
      R"({"type":"message","seq":4,"id":"a2","parentId":"a1","timestamp":"2026-01-01T00:00:00.000Z","ref":"side","message":{"role":"user","content":[{"type":"text","text":"look \"here\"\n\u0001 é 😀"},{"type":"image","data":"aGk=","mimeType":"image/png"}]},"crc":"0badc0de"})",
      R"({"type":"message","seq":5,"id":"a3","parentId":"a2","timestamp":"t","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","thinkingSignature":"c2ln","redacted":false},{"type":"text","text":"ok","textSignature":"s"},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.ts","n":-3,"big":18446744073709551615,"f":1.5,"e":1e-7,"x":[true,null,{"k":"v"}]}}],"api":"anthropic-messages","provider":"anthropic","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0.0036,"output":1e-05,"cacheRead":0,"cacheWrite":12,"total":123456.789}},"stopReason":"toolUse","timestamp":1764579614000}})",
      R"({"type":"message","seq":6,"id":"a4","parentId":"a3","timestamp":"t","message":{"role":"assistant","content":[{"type":"toolCall","id":"c2","name":"bash","arguments":{},"rawArguments":"{not json"}],"api":"x","provider":"y","model":"z","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"error","errorMessage":"boom"}})",
      R"({"type":"message","seq":7,"id":"a5","parentId":"a4","timestamp":"t","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"line\tone"}],"details":{"diff":"-a\n+b","list":[1,2.5,"x"]},"isError":false,"timestamp":2}})",
      R"({"type":"message","seq":8,"id":"a6","parentId":"a5","timestamp":"t","message":{"role":"toolResult","toolCallId":"c2","toolName":"bash","content":[],"isError":true,"timestamp":3}})",
  };
  // The pi fixture's message entries, as a cairn log stores them.
  std::ifstream fixture(std::string(CAIRN_FIXTURES_DIR) + "/pi/v3_session.jsonl");
  std::int64_t seq = 10;
  for (std::string text; std::getline(fixture, text);) {
    Json json = Json::parse(text, nullptr, false);
    if (json.is_discarded() || json.value("type", "") != "message") continue;
    auto record = decode_record(json, /*require_seq=*/false);
    if (!record) continue;
    record->seq = seq++;
    lines.push_back(encode(*record).dump());
  }
  return lines;
}

// What the general decoder makes of a line: "json" when it is not JSON,
// else the error (code and message) or the record re-encoded.
std::string general(std::string_view line) {
  const Json json = Json::parse(line, nullptr, false);
  if (json.is_discarded()) return "not json";
  auto record = decode_record(json);
  if (!record) return "error " + record.error().code + ": " + record.error().message;
  return encode(*record).dump();
}

std::string fast(std::string_view line) {
  auto record = decode_record_line(line);
  if (!record) return "not json";
  if (!*record) return "error " + (*record).error().code + ": " + (*record).error().message;
  return encode(**record).dump();
}

// Every value in `json`, by pointer.
void collect(const Json& json, const nlohmann::ordered_json::json_pointer& at,
             std::vector<nlohmann::ordered_json::json_pointer>& out) {
  out.push_back(at);
  if (json.is_object()) {
    for (const auto& [key, value] : json.items()) collect(value, at / key, out);
  } else if (json.is_array()) {
    for (std::size_t i = 0; i < json.size(); ++i) collect(json[i], at / i, out);
  }
}

// One random change of a stored line: a value replaced by another of any
// kind, a key removed or added, a key duplicated, bytes cut or changed.
std::string mutate(const std::string& line, std::mt19937& random) {
  Json json = Json::parse(line);
  std::vector<nlohmann::ordered_json::json_pointer> pointers;
  collect(json, nlohmann::ordered_json::json_pointer(), pointers);
  const auto& at = pointers[std::uniform_int_distribution<std::size_t>(1, pointers.size() - 1)(random)];
  const std::vector<std::string> replacements = {
      "null", "true", "0", "-0", "-0.0", "7", "-7", "1.5", "1e400", "18446744073709551616", "9223372036854775808",
      "\"\"", "\"text\"", "\"toolCall\"", "\"image\"", "\"user\"", "\"assistant\"", "\"toolResult\"", "\"thinking\"",
      "\"custom\"", "\"stop\"", "\"nope\"", "[]", "{}", "[1]", "{\"a\":1}", "\"\\u0000\\ud83d\\ude00\""};
  switch (std::uniform_int_distribution<int>(0, 5)(random)) {
    case 0:
    case 1:
    {
      // Put in as text: nlohmann would not parse every one of them (1e400).
      json.at(at) = "@@replaced@@";
      std::string text = json.dump();
      const std::string& replacement =
          replacements[std::uniform_int_distribution<std::size_t>(0, replacements.size() - 1)(random)];
      return text.replace(text.find("\"@@replaced@@\""), 14, replacement);
    }
    case 2: {  // remove a key
      const auto parent = at.parent_pointer();
      if (json.at(parent).is_object()) json.at(parent).erase(at.back());
      return json.dump();
    }
    case 3: {  // an unknown key in some object
      const auto parent = at.parent_pointer();
      if (json.at(parent).is_object()) json.at(parent)["unknownKey"] = 1;
      return json.dump();
    }
    case 4: {  // a key again, later in its object: nlohmann keeps the last
      std::string text = json.dump();
      const std::size_t key = text.find("\"", std::uniform_int_distribution<std::size_t>(0, text.size() - 1)(random));
      if (key == std::string::npos) return text;
      const std::size_t end = text.find('"', key + 1);
      const std::size_t close = text.find('}', end);
      if (end == std::string::npos || close == std::string::npos) return text;
      return text.substr(0, close) + "," + text.substr(key, end - key + 1) + ":\"dup\"" + text.substr(close);
    }
    default: {  // bytes
      std::string text = line;
      const std::size_t i = std::uniform_int_distribution<std::size_t>(0, text.size() - 1)(random);
      if (random() % 2) return text.substr(0, i);
      text[i] = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(random));
      return text;
    }
  }
}

TEST(LineDecoder, TakesEveryShapeCairnAndPiWrite) {
  // Else the comparisons below would hold with the fast path never taken.
  const auto lines = seed_lines();
  ASSERT_GT(lines.size(), 10u);
  for (const auto& line : lines) {
    SCOPED_TRACE(line);
    auto record = decode_common_line(line);
    ASSERT_TRUE(record.has_value());
    EXPECT_EQ(encode(*record).dump(), general(line));
  }
}

TEST(LineDecoder, GivesTheGeneralDecodersRecordOrErrorOnEveryMutation) {
  std::mt19937 random(17);
  const auto seeds = seed_lines();
  const int rounds = testing::scaled(4000);
  int taken = 0;
  for (int round = 0; round < rounds; ++round) {
    std::string line = seeds[static_cast<std::size_t>(round) % seeds.size()];
    for (int depth = 0; depth < 1 + round % 3; ++depth) {
      if (Json::parse(line, nullptr, false).is_discarded()) break;
      line = mutate(line, random);
    }
    SCOPED_TRACE(line);
    ASSERT_EQ(fast(line), general(line));
    if (auto record = decode_common_line(line)) {
      ++taken;
      // What the fast path takes, the general decoder takes alike.
      auto entry = decode_tree_entry(Json::parse(line));
      ASSERT_TRUE(entry.has_value());
      EXPECT_EQ(encode(std::get<TreeEntry>(record->body)).dump(), encode(*entry).dump());
    }
  }
  // Some mutations keep a line the fast path takes (a changed string, a
  // removed optional key); most do not.
  EXPECT_GT(taken, rounds / 20);
  EXPECT_LT(taken, rounds);
}

std::string written(const LlmMessage& message) {
  std::string out = "<";
  append_json(out, message);
  return out.substr(1);
}

TEST(MessageWriter, WritesTheEncodersBytes) {
  std::vector<AgentMessage> messages;
  for (const auto& line : seed_lines()) {
    auto record = decode_common_line(line);
    ASSERT_TRUE(record.has_value());
    messages.push_back(std::get<MessageBody>(std::get<TreeEntry>(record->body).body).message);
  }
  // Costs as every kind of double, strings with every escape.
  AssistantMessage numbers = std::get<AssistantMessage>(messages[2]);
  for (double value : {0.1, 1e-7, 1e21, 1e300, 5e-324, -2.5, 123456789.123, 9007199254740993.0, -0.0, 0.0036,
                       std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    numbers.usage.cost.total = value;
    numbers.usage.cost.input = -value;
    messages.push_back(numbers);
  }
  std::string every_byte;
  for (int c = 1; c < 128; ++c) every_byte.push_back(static_cast<char>(c));
  messages.push_back(UserMessage{every_byte + "é\u2028😀", 5, Json::object(), true});
  messages.push_back(UserMessage{std::string("nul\0byte", 8), -5, Json::object(), false});
  // Each byte that needs escaping (and some that do not) at every place in
  // and around a run of eight, which the writer skips a word at a time.
  for (std::string special : {"\x01", "\x1f", "\"", "\\", "\n", "\x7f", " ", "\xc3\xa9", "\xf0\x9f\x98\x80"}) {
    for (std::size_t length = 0; length <= 19; ++length) {
      for (std::size_t at = 0; at <= length; ++at) {
        std::string text(length, 'a');
        text.insert(at, special);
        messages.push_back(UserMessage{text, 1, Json::object(), true});
      }
    }
  }
  // Extra keys, merged by the encoder (a known key wins over an extra one).
  UserMessage extra{"x", 1, Json{{"zeta", 1}, {"role", "shadowed"}, {"alpha", {1, 2}}}, true};
  messages.push_back(extra);
  AssistantMessage block_extra = std::get<AssistantMessage>(messages[2]);
  std::get<ToolCall>(block_extra.content[2]).extra = Json{{"partial", true}};
  block_extra.usage.cost.extra = Json{{"currency", "usd"}};
  messages.push_back(block_extra);

  for (const AgentMessage& message : messages) {
    const LlmMessage llm = *to_llm(message);
    SCOPED_TRACE(encode(llm).dump());
    EXPECT_EQ(written(llm), encode(llm).dump());
  }
  // Text that is not UTF-8 is refused as the encoder refuses it.
  const LlmMessage broken = UserMessage{std::string("\xff\xfe"), 1, Json::object(), true};
  EXPECT_THROW((void)encode(broken).dump(), Json::exception);
  EXPECT_THROW((void)written(broken), Json::exception);
}

TEST(MessageWriter, WritesTheLlmFormOfEveryRole) {
  const std::vector<AgentMessage> messages = {
      CustomMessage{"note", std::string("remember this"), true, std::nullopt, 4, Json::object(), true},
      BranchSummaryMessage{"we tried X", "e1", 5, Json::object(), true},
      CompactionSummaryMessage{"so far", 1000, 6, Json::object(), true},
      BashExecutionMessage{.command = "ls", .output = "a\nb", .exit_code = 0, .timestamp = 7},
      BashExecutionMessage{.command = "ls", .output = "", .exclude_from_context = true},
      UserMessage{"plain", 8, Json::object(), true},
  };
  for (const AgentMessage& message : messages) {
    std::string out;
    const bool wrote = append_llm_json(out, message);
    const auto llm = to_llm(message);
    ASSERT_EQ(wrote, llm.has_value());
    EXPECT_EQ(out, llm ? encode(*llm).dump() : "");
  }
}

// What prepare() would store for the entry by the general path: its line, or
// nullopt when it refuses the entry.
std::optional<std::string> encoded_line(const TreeEntry& entry) {
  const Json json = encode(Record{0, entry});
  if (!is_lossless(json)) return std::nullopt;
  try {
    return json.dump(-1, ' ', false, Json::error_handler_t::strict);
  } catch (const Json::exception&) {
    return std::nullopt;
  }
}

TEST(EntryLineWriter, WritesTheEncodersBytesOrLeavesTheEntryToIt) {
  std::vector<TreeEntry> plain;
  for (const auto& line : seed_lines()) {
    auto record = decode_common_line(line);
    ASSERT_TRUE(record.has_value());
    plain.push_back(std::get<TreeEntry>(std::move(record->body)));
  }
  plain[0].parent_id = std::nullopt;
  plain[1].ref = "side \"quoted\"";
  // Each written straight, byte for byte what the encoder writes.
  for (const TreeEntry& entry : plain) {
    std::string out = "prefix";
    ASSERT_TRUE(append_entry_line(out, entry)) << *encoded_line(entry);
    EXPECT_EQ(out, "prefix" + *encoded_line(entry));
  }

  // Entries it must leave to the encoder: it refuses some, merges others.
  const TreeEntry& assistant = plain[2];
  std::vector<TreeEntry> deferred;
  auto with = [&](TreeEntry entry, auto change) {
    change(entry);
    deferred.push_back(std::move(entry));
  };
  with(assistant, [](TreeEntry& e) { e.extra = Json{{"label", "x"}}; });
  with(assistant, [](TreeEntry& e) { e.id = "\xff"; });
  with(assistant, [](TreeEntry& e) { e.parent_id = "\xc3"; });
  with(assistant, [](TreeEntry& e) { e.timestamp = std::string("\xed\xa0\x80"); });
  auto message = [](TreeEntry& e) -> AssistantMessage& {
    return std::get<AssistantMessage>(std::get<MessageBody>(e.body).message);
  };
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    with(assistant, [&](TreeEntry& e) { message(e).usage.cost.total = bad; });
    with(assistant, [&](TreeEntry& e) { std::get<ToolCall>(message(e).content[2]).arguments["n"] = bad; });
  }
  with(assistant, [&](TreeEntry& e) { std::get<ToolCall>(message(e).content[2]).arguments["s"] = "\xff"; });
  with(assistant, [&](TreeEntry& e) { message(e).model = "\x80"; });
  with(assistant, [&](TreeEntry& e) { message(e).extra = Json{{"cached", true}}; });
  with(assistant, [](TreeEntry& e) {
    e.body = MessageBody{CustomMessage{"note", std::string("hi"), true, std::nullopt, 4, Json::object(), true}};
  });
  with(assistant, [](TreeEntry& e) { e.body = ModelChange{"anthropic", "m"}; });
  for (const TreeEntry& entry : deferred) {
    std::string out = "prefix";
    EXPECT_FALSE(append_entry_line(out, entry)) << out;
    EXPECT_EQ(out, "prefix");
  }
  // A deferred entry the encoder takes keeps its bytes through prepare's other path.
  EXPECT_TRUE(encoded_line(deferred[0]).has_value());
  EXPECT_FALSE(encoded_line(deferred[1]).has_value());
  EXPECT_FALSE(encoded_line(deferred[4]).has_value());
}

}  // namespace
}  // namespace cairn
