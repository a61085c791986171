// Redaction of output that arrives in pieces: however the pieces fall, the
// redacted stream equals the whole text redacted at once, and no piece of
// output shows the beginning of a secret before the rest has decided it.
#include <gtest/gtest.h>

#include <random>

#include "harness/stream_redactor.hpp"
#include "log/secret_stream.hpp"

namespace cairn {
namespace {

std::string stream(const Secrets& secrets, const std::vector<std::string>& pieces) {
  SecretStream redactor(secrets);
  std::string out;
  for (const auto& piece : pieces) out += redactor.feed(piece);
  return out + redactor.finish();
}

TEST(SecretStream, ASecretSplitAcrossPiecesIsRedacted) {
  const Secrets secrets({"sk-test-secret-value"});
  EXPECT_EQ(stream(secrets, {"key: sk-te", "st-secret-", "value.\n"}), "key: [redacted].\n");
  EXPECT_EQ(stream(secrets, {"s", "k", "-test-secret-value", "sk-test-secret-value"}), "[redacted][redacted]");
}

TEST(SecretStream, WhatMayBeginASecretIsHeldBackUntilItIsDecided) {
  const Secrets secrets({"sk-test-secret-value"});
  SecretStream redactor(secrets);
  EXPECT_EQ(redactor.feed("value sk-te"), "value ");
  EXPECT_EQ(redactor.feed("rrible"), "sk-terrible");  // not a secret after all
  EXPECT_EQ(redactor.feed(" and sk-test-secret"), " and ");
  EXPECT_EQ(redactor.finish(), "sk-test-secret");  // the output ended: it never became one
}

TEST(SecretStream, ASecretThatExtendsAnotherGoesWhole) {
  const Secrets secrets({"token-abcdefgh", "token-abcdefgh-longer"});
  EXPECT_EQ(stream(secrets, {"a token-abcdefgh", "-longer b token-abcdefgh", ". c"}), "a [redacted] b [redacted]. c");
}

TEST(SecretStream, WithoutSecretsEverythingPassesAtOnce) {
  const Secrets none;
  SecretStream redactor(none);
  EXPECT_EQ(redactor.feed("sk-anything"), "sk-anything");
  EXPECT_EQ(redactor.finish(), "");
}

TEST(SecretStream, AnySplitGivesWhatRedactingTheWholeGives) {
  const Secrets secrets({"alpha-secret-1", "BETA_SECRET_22", "gamma.key.333"});
  const std::vector<std::string> parts = {"alpha-secret-1", "BETA_SECRET_22", "gamma.key.333", "alpha-sec", "BETA_",
                                          "gamma.k", "x", "yz ", "\n", "a", "-", "1"};
  std::mt19937 rng(20261130);
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    const int count = std::uniform_int_distribution<int>(0, 12)(rng);
    for (int i = 0; i < count; ++i) text += parts[std::uniform_int_distribution<std::size_t>(0, parts.size() - 1)(rng)];
    std::vector<std::string> pieces;
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t size = std::uniform_int_distribution<std::size_t>(1, 9)(rng);
      pieces.push_back(text.substr(at, size));
      at += size;
    }
    ASSERT_EQ(stream(secrets, pieces), secrets.redact(text)) << "text: " << text;
  }
}

// The harness's deltas, a SecretStream per content block: a block that ends
// while what it holds is a whole secret that a longer one extends releases
// it redacted (a copy of this logic once released it as it was).
TEST(SecretStream, ABlockEndingOnAWholeSecretReleasesItRedacted) {
  const Secrets secrets({"token-abcdefgh", "token-abcdefgh-longer"});
  StreamRedactor redactor(secrets);
  EXPECT_EQ(redactor.pass(0, "a token-abcdefgh"), "a ");
  EXPECT_EQ(redactor.pass(1, "other block"), "other block");
  EXPECT_EQ(redactor.release(0), "[redacted]");
  EXPECT_TRUE(redactor.revealed());
  EXPECT_EQ(redactor.pass(2, "b token-abcdefgh"), "b ");
  const auto rest = redactor.release_all();
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest.at(2), "[redacted]");
}


}  // namespace
}  // namespace cairn
