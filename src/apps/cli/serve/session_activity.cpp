#include "session_activity.hpp"

namespace cairn::serve {

Result<Json> SessionActivity::summary(const std::string& id, const Session& session) {
  std::lock_guard lock(mu_);
  Totals& totals = totals_[id];
  // A session removed and made again under the same id starts over.
  if (totals.seq >= session.size()) totals = {};
  for (;;) {
    auto lines = session.get_log(totals.seq, 4096);
    if (!lines) return std::unexpected(lines.error());
    if (lines->empty()) break;
    for (const LogLine& line : *lines) {
      totals.seq = line.seq;
      const Json record = Json::parse(line.json, nullptr, false);
      if (!record.is_object()) continue;
      if (auto at = record.find("timestamp"); at != record.end() && at->is_string()) totals.updated_at = at->get<std::string>();
      auto message = record.find("message");
      if (record.value("type", "") != "message" || message == record.end() || !message->is_object() ||
          message->value("role", "") != "assistant") {
        continue;
      }
      const Json& usage = message->value("usage", Json::object());
      if (!usage.is_object()) continue;
      if (auto tokens = usage.find("totalTokens"); tokens != usage.end() && tokens->is_number_integer()) {
        totals.tokens += tokens->get<std::int64_t>();
      }
      if (auto cost = usage.find("cost"); cost != usage.end() && cost->is_object()) {
        if (auto total = cost->find("total"); total != cost->end() && total->is_number()) totals.cost += total->get<double>();
      }
    }
  }
  return Json{{"updatedAt", totals.updated_at}, {"cost", totals.cost}, {"tokens", totals.tokens}};
}

void SessionActivity::forget(const std::string& id) {
  std::lock_guard lock(mu_);
  totals_.erase(id);
}

}  // namespace cairn::serve
