// read and write: numbering, offset/limit, both truncation limits, long
// lines, images, errors; write's parents and atomic replacement.
#include <sys/stat.h>

#include <fmt/format.h>

#include "tools/tools_fixture.hpp"

namespace cairn::testing {
namespace {

using ToolsRead = ToolsFixture;
using ToolsWrite = ToolsFixture;

std::string numbered_lines(int count, const std::string& prefix = "line ") {
  std::string out;
  for (int i = 1; i <= count; ++i) out += fmt::format("{}{}\n", prefix, i);
  return out;
}

TEST_F(ToolsRead, NumbersLinesFromOne) {
  put("a.txt", "alpha\nbeta\n\tgamma\n");
  const ToolResult result = run("read", {{"path", "a.txt"}});
  EXPECT_FALSE(result.is_error);
  EXPECT_EQ(text(result), "     1\talpha\n     2\tbeta\n     3\t\tgamma\n");
  EXPECT_EQ(result.details->at("totalLines"), 3);
}

TEST_F(ToolsRead, OffsetAndLimitSelectLinesAndSayHowToGoOn) {
  put("a.txt", numbered_lines(10));
  const ToolResult result = run("read", {{"path", "a.txt"}, {"offset", 4}, {"limit", 3}});
  EXPECT_FALSE(result.is_error);
  EXPECT_EQ(text(result), "     4\tline 4\n     5\tline 5\n     6\tline 6\n\n[4 more lines in file. Use offset=7 to continue.]");
  // The last part needs no note.
  EXPECT_EQ(text(run("read", {{"path", "a.txt"}, {"offset", 9}})), "     9\tline 9\n    10\tline 10\n");
}

TEST_F(ToolsRead, AnOffsetPastTheEndIsAnError) {
  put("a.txt", numbered_lines(3));
  const ToolResult result = run("read", {{"path", "a.txt"}, {"offset", 9}});
  EXPECT_TRUE(result.is_error);
  EXPECT_NE(text(result).find("offset 9 is beyond the end of the file (3 lines)"), std::string::npos) << text(result);
}

TEST_F(ToolsRead, StopsAt2000LinesWithANote) {
  put("big.txt", numbered_lines(5123));
  const ToolResult result = run("read", {{"path", "big.txt"}});
  const std::string out = text(result);
  EXPECT_FALSE(result.is_error);
  EXPECT_NE(out.find("  2000\tline 2000\n"), std::string::npos);
  EXPECT_EQ(out.find("line 2001"), std::string::npos);
  EXPECT_TRUE(out.ends_with("[Showing lines 1-2000 of 5123. Use offset=2001 to continue.]")) << out.substr(out.size() - 200);
  // Following the note reads on.
  const std::string next = text(run("read", {{"path", "big.txt"}, {"offset", 2001}}));
  EXPECT_TRUE(next.starts_with("  2001\tline 2001\n"));
  EXPECT_TRUE(next.ends_with("[Showing lines 2001-4000 of 5123. Use offset=4001 to continue.]"));
}

TEST_F(ToolsRead, StopsAt50KBWithANote) {
  // 100-byte lines: 50 KB is reached long before 2000 lines.
  put("wide.txt", numbered_lines(1000, std::string(90, 'x')));
  const ToolResult result = run("read", {{"path", "wide.txt"}});
  const std::string out = text(result);
  const auto note = out.find("\n[Showing lines 1-");
  ASSERT_NE(note, std::string::npos);
  EXPECT_LE(note, 50u * 1024);
  EXPECT_NE(out.find("(50.0KB limit). Use offset="), std::string::npos) << out.substr(note);
  EXPECT_EQ(result.details->at("truncatedBy"), "bytes");
  const int last = result.details->at("endLine").get<int>();
  EXPECT_GT(last, 400);
  EXPECT_LT(last, 1000);
  EXPECT_NE(out.find(fmt::format("Use offset={} to continue.]", last + 1)), std::string::npos);
}

TEST_F(ToolsRead, CutsVeryLongLinesWithAMarker) {
  put("long.txt", "short\n" + std::string(5000, 'y') + "\nend\n");
  const std::string out = text(run("read", {{"path", "long.txt"}}));
  EXPECT_NE(out.find("     2\t" + std::string(2000, 'y') + "… [line cut at 2000 of 5000 characters]\n"), std::string::npos);
  EXPECT_EQ(out.find(std::string(2001, 'y')), std::string::npos);
  EXPECT_NE(out.find("     3\tend"), std::string::npos);
}

TEST_F(ToolsRead, ShowsCrlfFilesWithoutCarriageReturnsAndInvalidUtf8Replaced) {
  put("dos.txt", "one\r\ntwo \xff\r\n");
  EXPECT_EQ(text(run("read", {{"path", "dos.txt"}})), "     1\tone\n     2\ttwo \xEF\xBF\xBD\n");
}

TEST_F(ToolsRead, ReturnsAnImageAsAnImageBlock) {
  const std::string png("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16);
  put("pic.dat", png);  // the magic bytes decide, not the name
  const ToolResult result = run("read", {{"path", "pic.dat"}});
  ASSERT_FALSE(result.is_error) << text(result);
  ASSERT_EQ(result.content.size(), 2u);
  const auto& image = std::get<ImageContent>(result.content[1]);
  EXPECT_EQ(image.mime_type, "image/png");
  EXPECT_EQ(image.data, "iVBORw0KGgoAAAANSUhEUg==");
  put("pic.gif", "GIF89a....");
  EXPECT_EQ(std::get<ImageContent>(run("read", {{"path", "pic.gif"}}).content.at(1)).mime_type, "image/gif");
  put("pic.jpg", "\xFF\xD8\xFF\xE0xxxx");
  EXPECT_EQ(std::get<ImageContent>(run("read", {{"path", "pic.jpg"}}).content.at(1)).mime_type, "image/jpeg");
  put("pic.webp", std::string("RIFF\x10\0\0\0WEBPVP8 ", 16));
  EXPECT_EQ(std::get<ImageContent>(run("read", {{"path", "pic.webp"}}).content.at(1)).mime_type, "image/webp");
}

TEST_F(ToolsRead, ErrorsNameThePath) {
  ToolResult missing = run("read", {{"path", "nope/missing.txt"}});
  EXPECT_TRUE(missing.is_error);
  EXPECT_EQ(text(missing), "File not found: nope/missing.txt");
  std::filesystem::create_directories(cwd() / "sub");
  ToolResult dir = run("read", {{"path", "sub"}});
  EXPECT_TRUE(dir.is_error);
  EXPECT_NE(text(dir).find("Cannot read sub: it is a directory"), std::string::npos);
  put("blob.bin", std::string("ab\0cd", 5));
  ToolResult binary = run("read", {{"path", "blob.bin"}});
  EXPECT_TRUE(binary.is_error);
  EXPECT_NE(text(binary).find("blob.bin: it is a binary file"), std::string::npos);
  EXPECT_TRUE(run("read", Json::object()).is_error);
}

TEST_F(ToolsRead, ResolvesAbsoluteAndHomePaths) {
  put("a.txt", "here\n");
  EXPECT_EQ(text(run("read", {{"path", (cwd() / "a.txt").string()}})), "     1\there\n");
  const char* old_home = std::getenv("HOME");
  const std::string saved = old_home ? old_home : "";
  ::setenv("HOME", cwd().c_str(), 1);
  const std::string out = text(run("read", {{"path", "~/a.txt"}}));
  if (old_home) ::setenv("HOME", saved.c_str(), 1);
  else ::unsetenv("HOME");
  EXPECT_EQ(out, "     1\there\n");
}

TEST_F(ToolsWrite, CreatesParentDirectories) {
  const ToolResult result = run("write", {{"path", "deep/er/new.txt"}, {"content", "hello\n"}});
  ASSERT_FALSE(result.is_error) << text(result);
  EXPECT_EQ(get("deep/er/new.txt"), "hello\n");
  EXPECT_EQ(text(result), "Wrote 6 bytes to deep/er/new.txt");
  EXPECT_EQ(result.details->at("created"), true);
}

TEST_F(ToolsWrite, ReplacesAFileKeepingItsModeAndLeavesNoTemporaryFile) {
  put("run.sh", "old");
  ::chmod((cwd() / "run.sh").c_str(), 0755);
  ASSERT_FALSE(run("write", {{"path", "run.sh"}, {"content", "#!/bin/sh\necho new\n"}}).is_error);
  EXPECT_EQ(get("run.sh"), "#!/bin/sh\necho new\n");
  struct stat st {};
  ASSERT_EQ(::stat((cwd() / "run.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(cwd())) names.push_back(entry.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"run.sh"});
}

TEST_F(ToolsWrite, WritesThroughASymlinkToItsTarget) {
  put("real.txt", "old");
  std::filesystem::create_symlink("real.txt", cwd() / "link.txt");
  ASSERT_FALSE(run("write", {{"path", "link.txt"}, {"content", "new"}}).is_error);
  EXPECT_TRUE(std::filesystem::is_symlink(cwd() / "link.txt"));
  EXPECT_EQ(get("real.txt"), "new");
}

TEST_F(ToolsWrite, ADirectoryOrAFileInTheWayIsAnError) {
  std::filesystem::create_directories(cwd() / "sub");
  const ToolResult dir = run("write", {{"path", "sub"}, {"content", "x"}});
  EXPECT_TRUE(dir.is_error);
  EXPECT_NE(text(dir).find("Cannot write sub: it is a directory"), std::string::npos);
  put("file", "x");
  const ToolResult blocked = run("write", {{"path", "file/inner.txt"}, {"content", "x"}});
  EXPECT_TRUE(blocked.is_error);
  EXPECT_NE(text(blocked).find("file/inner.txt"), std::string::npos) << text(blocked);
}

}  // namespace
}  // namespace cairn::testing
