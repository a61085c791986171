// The checksum every record line ends with (cairn/log/checksum.hpp).
#include <gtest/gtest.h>

#include "log/checksum.hpp"
#include "log/index.hpp"
#include "cairn/log/record.hpp"
#include "cairn/store/store.hpp"
#include "support/test_support.hpp"

namespace cairn {
namespace {

TEST(Checksum, IsCrc32cOfTheBytes) {
  // The check value of CRC-32C (RFC 3720, B.4), in hardware and out.
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(""), 0u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
}

TEST(Checksum, EndsTheLineAndFindsAnyChangedByte) {
  std::string line = R"({"type":"custom","seq":3,"id":"a","customType":"x"})";
  add_checksum(line);
  EXPECT_TRUE(line.ends_with("\"}"));
  EXPECT_NE(line.find(",\"crc\":\""), std::string::npos);
  ASSERT_TRUE(check_checksum(line));
  EXPECT_EQ(*check_checksum(line), Checksum::valid);
  EXPECT_TRUE(Json::accept(line));
  // Every single-byte change before the checksum is found, inside strings too.
  for (std::size_t at = 0; at + kChecksumSuffixSize < line.size(); ++at) {
    std::string damaged = line;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x01);
    auto checked = check_checksum(damaged);
    ASSERT_FALSE(checked) << "byte " << at;
    EXPECT_EQ(checked.error().code, "corrupt_log");
    EXPECT_NE(checked.error().message.find("checksum mismatch"), std::string::npos);
  }
  EXPECT_EQ(*check_checksum(R"({"type":"custom","seq":3})"), Checksum::absent);
}

TEST(Checksum, IsAReservedKeyThatDecodingDrops) {
  auto record = decode_record(Json::parse(
      R"({"type":"custom","seq":0,"id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","customType":"x","crc":"00000000"})"));
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_FALSE(std::get<TreeEntry>(record->body).extra.contains("crc"));
  EXPECT_FALSE(encode(*record).contains("crc"));

  TreeEntry entry{.id = "b", .timestamp = "2026-01-01T00:00:00.000Z", .ref = "main", .body = Custom{.custom_type = "x"}};
  entry.extra["crc"] = "12345678";
  auto refused = check_fields(Record{.body = entry});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("reserved"), std::string::npos);
}

TEST(Checksum, EveryStoreWritesItOnEveryRecord) {
  testing::TempDir dir;
  for (const std::string& uri : {std::string("memory:"), "jsonl:" + dir.str(), "sqlite:" + dir.str() + "/s.db"}) {
    SCOPED_TRACE(uri);
    auto store = open_store(uri);
    ASSERT_TRUE(store) << store.error().message;
    auto session = (*store)->create({.id = "c"});
    ASSERT_TRUE(session) << session.error().message;
    EXPECT_EQ((*session)->header().version, kLogFormatVersion);
    ASSERT_TRUE((*session)->append({testing::user_entry("one", std::nullopt, "e0"), testing::user_entry("two", "e0", "e1")}));
    auto log = (*session)->get_log();
    ASSERT_TRUE(log);
    ASSERT_EQ(log->size(), 2u);
    for (const LogLine& line : *log) {
      auto checked = check_checksum(line.json);
      ASSERT_TRUE(checked) << checked.error().message;
      EXPECT_EQ(*checked, Checksum::valid) << line.json;
    }
  }
}

}  // namespace
}  // namespace cairn
