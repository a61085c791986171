// The names a client gives the server: a ref, session or input id that a
// terminal or a page would act on — a C0 or C1 control, DEL, bytes that are
// not UTF-8 — is refused, whether raw or percent-encoded; plain UTF-8 names
// are taken.
#include "serve/names.hpp"

#include <gtest/gtest.h>

namespace cairn::serve {
namespace {

TEST(Names, ControlCharactersOfEitherSetAndNonUtf8AreRefused) {
  for (const char* bad : {"a\x1b[2Jb", "a\x7f", "\xc2\x9b" "2J", "\xc2\x80", "\xc2\x9f", "a\xff", "\xc3", "a/b", "a\\b",
                          "..", ""}) {
    EXPECT_FALSE(check_name(bad, "ref")) << ::testing::PrintToString(std::string(bad));
  }
  for (const char* encoded : {"%1B%5B2J", "%C2%9B2J", "%7F", "%FF"}) {
    auto decoded = path_name(encoded, "ref");
    ASSERT_FALSE(decoded) << encoded;
    EXPECT_TRUE(decoded.error().is(Errc::invalid_argument));
    EXPECT_NE(decoded.error().message.find("bad ref id"), std::string::npos) << decoded.error().message;
  }
}

TEST(Names, Utf8NamesAreTaken) {
  for (const char* good : {"main", "feature-1.2_x", "héllo", "ветка", "✓", "a b", "\xc2\xa0nbsp"}) {
    EXPECT_TRUE(check_name(good, "ref")) << good;
  }
  auto decoded = path_name("h%C3%A9llo", "ref");
  ASSERT_TRUE(decoded);
  EXPECT_EQ(*decoded, "héllo");
}

}  // namespace
}  // namespace cairn::serve
