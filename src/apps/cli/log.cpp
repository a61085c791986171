// `cairn log SESSION`: every record, as stored (--json) or one summary line each.
#include <fmt/format.h>

#include "cli.hpp"
#include "text.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli {
namespace {

struct LogOptions {
  std::string store;
  std::string session;
  std::int64_t after = -1;
  bool json = false;
};

// seq, type, id, ref (and run), preview.
std::string summary_line(const LogLine& line) {
  const std::string type(to_string(line.type));
  auto decoded = decode_record_line(line.json);
  if (!decoded) return fmt::format("{:>5}  {:<21} (not valid JSON)", line.seq, type);
  Result<Record>& record = *decoded;
  if (!record) {
    const Json json = Json::parse(line.json, nullptr, false);
    return fmt::format("{:>5}  {:<21} {:<12} (cannot decode: {})", line.seq, type,
                       json.is_object() ? json.value("id", std::string()) : std::string(), record.error().message);
  }
  if (const auto* entry = std::get_if<TreeEntry>(&record->body)) {
    return fmt::format("{:>5}  {:<21} {:<12} {:<16} {}", line.seq, type, entry->id, entry->ref.value_or("main"),
                       entry_preview(*entry));
  }
  if (const auto* harness = std::get_if<HarnessRecord>(&record->body)) {
    std::string where = harness->ref;
    const std::string run(run_id_of(*harness));
    if (!run.empty() && run != harness->id) where += "/" + short_id(run);
    return fmt::format("{:>5}  {:<21} {:<12} {:<16} {}", line.seq, type, harness->id, where,
                       harness_preview(*harness));
  }
  const Json& ignorable = std::get<IgnorableRecord>(record->body).json;
  return fmt::format("{:>5}  {:<21} {:<12} {:<16} type {} (ignorable)", line.seq, type,
                     ignorable.value("id", std::string()), "", ignorable.value("type", std::string("?")));
}

// --json is the log's own bytes; the summary lines quote what the records
// say, visible on a terminal. Empties `out`.
void write_lines(const LogOptions& options, std::string& out) {
  if (options.json) {
    std::fwrite(out.data(), 1, out.size(), stdout);
  } else {
    write_untrusted(stdout, out);
  }
  out.clear();
}

int run_log(const LogOptions& options) {
  auto store = open_store_for(options.store);
  if (!store) return store.error();
  auto session = open_session(**store, options.session, /*read_only=*/true);
  if (!session) return session.error();
  // A page of the log at a time, written out a MiB at a time: a long
  // session's lines are never all copied at once.
  std::string out;
  constexpr std::size_t kPage = 4096;
  for (std::int64_t after = options.after;;) {
    auto page = (*session)->get_log(after, kPage);
    if (!page) return report(page.error());
    if (page->empty()) break;
    after = page->back().seq;
    for (const LogLine& line : *page) {
      out += options.json ? line.json : summary_line(line);
      out += '\n';
      if (out.size() >= (1 << 20)) write_lines(options, out);
    }
  }
  write_lines(options, out);
  return kOk;
}

}  // namespace

void register_log_command(CLI::App& app, Commands& commands) {
  auto [sub, options] = add_session_command(app, commands, "log", "Print a session's records in seq order", run_log);
  sub->add_option("--after", options->after, "Only records with a seq greater than SEQ")->type_name("SEQ");
  sub->add_flag("--json", options->json, "Print every record exactly as stored, one JSON object per line");
}

}  // namespace cairn::cli
