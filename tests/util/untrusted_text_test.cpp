// Untrusted text on a terminal (util/untrusted_text.hpp): every control
// character and invalid byte in visible form, plain UTF-8 as it is, the
// same result however a stream is cut into pieces; byte for byte where the
// stream is not a terminal.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "util/untrusted_text.hpp"

namespace cairn {
namespace {

TEST(UntrustedText, EscapeSequencesLoseTheirEscape) {
  // CSI (colour, clear screen), OSC 0 (title), OSC 8 (a link), OSC 52 (the
  // clipboard), DCS: the ESC that starts each becomes ␛, BEL ␇.
  EXPECT_EQ(visible_text("\x1b[31mred\x1b[0m"), "␛[31mred␛[0m");
  EXPECT_EQ(visible_text("\x1b[2J\x1b[H"), "␛[2J␛[H");
  EXPECT_EQ(visible_text("\x1b]0;owned\x07"), "␛]0;owned␇");
  EXPECT_EQ(visible_text("\x1b]8;;https://evil.example/\x1b\\docs\x1b]8;;\x1b\\"),
            "␛]8;;https://evil.example/␛\\docs␛]8;;␛\\");
  EXPECT_EQ(visible_text("\x1b]52;c;cm0gLXJmIH4=\x07"), "␛]52;c;cm0gLXJmIH4=␇");
  EXPECT_EQ(visible_text("\x1bP1$qm\x1b\\"), "␛P1$qm␛\\");
  EXPECT_EQ(visible_text("lone \x1b"), "lone ␛");
  EXPECT_EQ(visible_text("\x1b"), "␛");
}

TEST(UntrustedText, C0ControlsDelAndCarriageReturnAreControlPictures) {
  EXPECT_EQ(visible_text(std::string("a\0b", 3)), "a␀b");
  EXPECT_EQ(visible_text("bell\x07"), "bell␇");
  EXPECT_EQ(visible_text("back\x08space"), "back␈space");
  EXPECT_EQ(visible_text("rm -rf ~\rls"), "rm -rf ~␍ls");  // no line overwrites another
  EXPECT_EQ(visible_text("\x0b\x0c\x1f"), "␋␌␟");
  EXPECT_EQ(visible_text("del\x7f"), "del␡");
  // Newline and tab stay: text keeps its lines and its indentation.
  EXPECT_EQ(visible_text("a\n\tb\n"), "a\n\tb\n");
}

TEST(UntrustedText, C1ControlsAreShownByTheirCodePoint) {
  EXPECT_EQ(visible_text("\xC2\x9B" "2J"), "\\u009B2J");  // CSI in one character
  EXPECT_EQ(visible_text("\xC2\x9D" "0;t\xC2\x9C"), "\\u009D0;t\\u009C");  // OSC … ST
  EXPECT_EQ(visible_text("\xC2\x90q\xC2\x9C"), "\\u0090q\\u009C");  // DCS … ST
  EXPECT_EQ(visible_text("\xC2\x80\xC2\x9F"), "\\u0080\\u009F");
  // Past the C1 range: ordinary characters.
  EXPECT_EQ(visible_text("\xC2\xA0\xC2\xA9"), "\xC2\xA0\xC2\xA9");
}

TEST(UntrustedText, InvalidBytesAreShownAsHex) {
  EXPECT_EQ(visible_text("\xFF"), "\\xFF");
  EXPECT_EQ(visible_text("a\x9B" "2Jb"), "a\\x9B2Jb");  // a raw 8-bit CSI
  EXPECT_EQ(visible_text("\xC0\xAF"), "\\xC0\\xAF");    // overlong '/'
  EXPECT_EQ(visible_text("\xED\xA0\x80"), "\\xED\\xA0\\x80");  // a surrogate
  EXPECT_EQ(visible_text("\xE2\x82x"), "\\xE2\\x82x");  // cut short, then more text
  EXPECT_EQ(visible_text("end \xE2\x82"), "end \\xE2\\x82");  // cut short by the end
  EXPECT_EQ(visible_text("\xF4\x90\x80\x80"), "\\xF4\\x90\\x80\\x80");  // past U+10FFFF
}

TEST(UntrustedText, PlainTextIsUntouched) {
  for (const std::string text : {"", "hello", "héllo — ✓", "日本語のテキスト", "emoji 😀 and ␛ itself", "a\\x1b b",
                                 "tab\tand\nnewline", "{\"json\":\"\\u001b\"}"}) {
    EXPECT_EQ(visible_text(text), text);
  }
}

TEST(UntrustedText, IsIdempotent) {
  const std::string hostile = "\x1b]52;c;x\x07\xC2\x9B\xFF\r\x7f";
  const std::string once = visible_text(hostile);
  EXPECT_EQ(visible_text(once), once);
}

std::string visible_in_pieces(const std::vector<std::string>& pieces) {
  VisibleStream stream;
  std::string out;
  for (const auto& piece : pieces) out += stream.next(piece);
  return out + stream.finish();
}

TEST(UntrustedText, AStreamCutAnywhereGivesWhatTheWholeGives) {
  // An escape sequence over two deltas: the ESC alone already shows.
  EXPECT_EQ(visible_in_pieces({"before \x1b", "]52;c;eA==\x07 after"}), "before ␛]52;c;eA==␇ after");
  // A C1 control over two deltas: its first byte waits for its second.
  VisibleStream stream;
  EXPECT_EQ(stream.next("x\xC2"), "x");
  EXPECT_EQ(stream.next("\x9B" "2J"), "\\u009B2J");
  EXPECT_EQ(stream.finish(), "");
  // A character split in three; and one the stream ends in.
  EXPECT_EQ(visible_in_pieces({"\xF0\x9F", "\x98", "\x80!"}), "😀!");
  EXPECT_EQ(visible_in_pieces({"ok \xE2\x9C"}), "ok \\xE2\\x9C");
  // What follows does not complete it: shown as the invalid bytes it was.
  EXPECT_EQ(visible_in_pieces({"\xE2", "x"}), "\\xE2x");
  EXPECT_EQ(visible_in_pieces({"\xE2\x9C", "\x93"}), "✓");

  // Any text, cut anywhere, in any number of pieces.
  std::mt19937 random(20240611);
  const std::string alphabet[] = {"a", " ", "\n", "\t", "\x1b", "[", "]", "\x07", "\r", "\x7f", "\xC2", "\x9B",
                                  "\xA0", "\xE2", "\x9C", "\x93", "\xF0", "\x9F", "\x98", "\x80", "\xFF", "é", "✓"};
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    const int length = static_cast<int>(random() % 24);
    for (int i = 0; i < length; ++i) text += alphabet[random() % std::size(alphabet)];
    std::vector<std::string> pieces;
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t n = 1 + random() % 4;
      pieces.push_back(text.substr(at, n));
      at += n;
    }
    ASSERT_EQ(visible_in_pieces(pieces), visible_text(text)) << ::testing::PrintToString(text);
  }
}

// ---- writing to a stream ---------------------------------------------------------------

// What `write` wrote to a terminal (a pseudo-terminal with no output
// processing), or to a pipe.
std::string written_to_stream(bool terminal, const std::function<void(std::FILE*)>& write) {
  int read_end = -1, write_end = -1;
  if (terminal) {
    termios raw{};
    cfmakeraw(&raw);
    if (::openpty(&read_end, &write_end, nullptr, &raw, nullptr) != 0) return "(no pty)";
  } else {
    int fds[2];
    if (::pipe(fds) != 0) return "(no pipe)";
    read_end = fds[0];
    write_end = fds[1];
  }
  std::FILE* stream = ::fdopen(write_end, "w");
  write(stream);
  std::fflush(stream);
  std::string out;
  char buffer[4096];
  for (;;) {
    pollfd ready{read_end, POLLIN, 0};
    if (::poll(&ready, 1, 50) <= 0) break;  // written before this was called: there already
    const ssize_t n = ::read(read_end, buffer, sizeof buffer);
    if (n <= 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  std::fclose(stream);
  ::close(read_end);
  return out;
}

TEST(UntrustedText, ATerminalGetsTheVisibleFormAPipeTheBytes) {
  const std::string hostile = "\x1b]0;title\x07 \xC2\x9B" "2J \xFF";
  const std::string shown = "␛]0;title␇ \\u009B2J \\xFF";
  EXPECT_TRUE(written_to_stream(true, [](std::FILE* stream) { EXPECT_TRUE(is_terminal(stream)); }).empty());
  EXPECT_EQ(written_to_stream(true, [&](std::FILE* stream) { write_untrusted(stream, hostile); }), shown);
  EXPECT_EQ(written_to_stream(false, [&](std::FILE* stream) { write_untrusted(stream, hostile); }), hostile);
  EXPECT_EQ(written_to_stream(true, [&](std::FILE* stream) { print_untrusted(stream, "cairn: {}\n", hostile); }),
            "cairn: " + shown + "\n");
  EXPECT_EQ(written_to_stream(false, [&](std::FILE* stream) { print_untrusted(stream, "cairn: {}\n", hostile); }),
            "cairn: " + hostile + "\n");
  // A stream of pieces: a character cut between two, one cut by the end.
  const auto pieces = [](std::FILE* stream) {
    UntrustedWriter writer(stream);
    writer.write("\x1b");
    writer.write("[2J \xC2");
    writer.write("\x9B \xE2\x9C");
    writer.finish();
  };
  EXPECT_EQ(written_to_stream(true, pieces), "␛[2J \\u009B \\xE2\\x9C");
  EXPECT_EQ(written_to_stream(false, pieces), "\x1b[2J \xC2\x9B \xE2\x9C");
}

}  // namespace
}  // namespace cairn
