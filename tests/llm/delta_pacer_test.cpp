#include "llm/delta_pacer.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace cairn::wire {
namespace {

using namespace std::chrono_literals;
using Clock = DeltaPacer::Clock;

// Feeds `text` in `piece`-byte fragments to block 0, all at one instant;
// returns the reports, the rest taken at the end.
std::vector<std::string> reports_of(const std::string& text, std::size_t piece) {
  DeltaPacer pacer;
  const Clock::time_point now = Clock::now();
  std::vector<std::string> reports;
  for (std::size_t at = 0; at < text.size(); at += piece) {
    if (pacer.add(0, std::string_view(text).substr(at, piece), now)) reports.push_back(pacer.take(0));
  }
  if (std::string rest = pacer.take(0); !rest.empty()) reports.push_back(std::move(rest));
  return reports;
}

std::string joined(const std::vector<std::string>& pieces) {
  std::string out;
  for (const std::string& piece : pieces) out += piece;
  return out;
}

TEST(DeltaPacer, ASmallMessageHasEveryFragmentReported) {
  const std::string text(DeltaPacer::kSmallMessage, 'x');
  std::vector<std::string> reports = reports_of(text, 16);
  EXPECT_EQ(reports.size(), text.size() / 16);
  EXPECT_EQ(joined(reports), text);
}

TEST(DeltaPacer, ALongBlockIsReportedInLogarithmicallyManyReports) {
  const std::string text(1'000'000, 'x');
  std::vector<std::string> reports = reports_of(text, 40);
  EXPECT_EQ(joined(reports), text);
  // 103 fragments up to 4 KiB, then one report each time the message grew by
  // half: 4 KiB · 1.5^14 > 1 MB.
  EXPECT_LE(reports.size(), DeltaPacer::kSmallMessage / 40 + 1 + 15);
  // Each report past the small part is at least half of what came before it.
  std::size_t before = 0;
  for (std::size_t i = 0; i + 1 < reports.size(); ++i) {  // the last is what was left at the end
    if (before > DeltaPacer::kSmallMessage) {
      EXPECT_GE(2 * reports[i].size(), before) << i;
      EXPECT_LE(2 * reports[i].size(), before + 80) << i;  // and not much more: reported as soon as due
    }
    before += reports[i].size();
  }
}

TEST(DeltaPacer, AFragmentWaitsNoLongerThanTheQuietLimitOnceAnotherArrives) {
  DeltaPacer pacer;
  const Clock::time_point t0 = Clock::now();
  ASSERT_TRUE(pacer.add(0, std::string(DeltaPacer::kSmallMessage * 4, 'x'), t0));
  (void)pacer.take(0);
  EXPECT_FALSE(pacer.add(0, "a", t0 + 1ms));
  EXPECT_FALSE(pacer.add(0, "b", t0 + 1ms + DeltaPacer::kMaxQuiet / 2));
  EXPECT_TRUE(pacer.add(0, "c", t0 + 1ms + DeltaPacer::kMaxQuiet));
  EXPECT_EQ(pacer.take(0), "abc");
  EXPECT_EQ(pacer.take(0), "");
  // The quiet time counts from the first fragment after a report.
  EXPECT_FALSE(pacer.add(0, "d", t0 + 2 * DeltaPacer::kMaxQuiet));
}

TEST(DeltaPacer, BlocksAreGatheredApart) {
  DeltaPacer pacer;
  const Clock::time_point now = Clock::now();
  ASSERT_TRUE(pacer.add(0, std::string(DeltaPacer::kSmallMessage * 4, 'x'), now));
  (void)pacer.take(0);
  EXPECT_FALSE(pacer.add(1, "one", now));
  EXPECT_FALSE(pacer.add(2, "two", now));
  EXPECT_FALSE(pacer.add(1, "more", now));
  EXPECT_EQ(pacer.take(2), "two");
  EXPECT_EQ(pacer.take(1), "onemore");
  EXPECT_EQ(pacer.take(0), "");
}

}  // namespace
}  // namespace cairn::wire
