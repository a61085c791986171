#include "harness/harness_support.hpp"

#include <condition_variable>
#include <thread>

namespace cairn::testing {

std::vector<Tool> test_tools(std::shared_ptr<ToolEffects> effects) {
  const Json schema = {{"type", "object"},
                       {"properties", {{"id", {{"type", "string"}}}, {"text", {{"type", "string"}}}, {"ms", {{"type", "integer"}}}}},
                       {"required", {"id"}}};
  std::vector<Tool> tools;
  tools.push_back(Tool{.name = "echo", .description = "Echoes text", .parameters = schema, .replay = Replay::safe,
                       .execute = [effects](const Json& args, const ToolContext& context) {
                         effects->note("echo", args);
                         context.update(ToolResult::text("echoing"));
                         return ToolResult::text(args.value("text", std::string("echo")));
                       }});
  tools.push_back(Tool{.name = "effect", .description = "Has an effect", .parameters = schema, .replay = Replay::never,
                       .execute = [effects](const Json& args, const ToolContext&) {
                         effects->note("effect", args);
                         return ToolResult::text("done");
                       }});
  tools.push_back(Tool{.name = "slow", .description = "Waits", .parameters = schema, .replay = Replay::never,
                       .execute = [effects](const Json& args, const ToolContext& context) {
                         effects->note("slow", args);
                         std::mutex mu;
                         std::condition_variable_any cv;
                         std::unique_lock lock(mu);
                         const auto ms = std::chrono::milliseconds(args.value("ms", 60000));
                         if (cv.wait_for(lock, context.cancel, ms, [] { return false; }), context.cancel.stop_requested()) {
                           return ToolResult::text("stopped", true);
                         }
                         return ToolResult::text("slept");
                       }});
  tools.push_back(Tool{.name = "serial", .description = "Runs alone", .parameters = schema, .replay = Replay::safe,
                       .parallel = false,
                       .execute = [effects](const Json& args, const ToolContext&) {
                         effects->note("serial", args);
                         return ToolResult::text("serial");
                       }});
  return tools;
}

void expect_every_call_answered_once(const std::vector<Record>& log) {
  std::map<std::string, const AgentMessage*> messages;  // entry id -> message (null: not a message)
  std::map<std::string, std::vector<std::string>> children;
  for (const auto& record : log) {
    const auto* entry = std::get_if<TreeEntry>(&record.body);
    if (!entry) continue;
    const auto* body = std::get_if<MessageBody>(&entry->body);
    messages[entry->id] = body ? &body->message : nullptr;
    children[entry->parent_id.value_or("")].push_back(entry->id);
  }
  for (const auto& [id, message] : messages) {
    const auto* assistant = message ? std::get_if<AssistantMessage>(message) : nullptr;
    if (!assistant) continue;
    std::vector<std::string> calls;
    for (const auto& block : assistant->content) {
      if (const auto* call = std::get_if<ToolCall>(&block)) calls.push_back(call->id);
    }
    if (calls.empty()) continue;
    auto check = [&](std::map<std::string, int>& counts, const std::string& where) {
      for (const auto& call : calls) {
        EXPECT_EQ(counts[call], 1) << "tool call " << call << " of entry " << id << ", " << where;
      }
    };
    // Each path below the assistant message, up to the next one or its end.
    std::vector<std::pair<std::string, std::map<std::string, int>>> stack{{id, {}}};
    while (!stack.empty()) {
      auto [at, counts] = std::move(stack.back());
      stack.pop_back();
      if (children[at].empty()) check(counts, "at the end of the branch " + at);
      for (const auto& child : children[at]) {
        const AgentMessage* m = messages[child];
        if (m && std::holds_alternative<AssistantMessage>(*m)) {
          check(counts, "before the next assistant message " + child);
          continue;
        }
        auto next = counts;
        if (m) {
          if (const auto* result = std::get_if<ToolResultMessage>(m)) ++next[result->tool_call_id];
        }
        stack.push_back({child, std::move(next)});
      }
    }
  }
}

std::vector<ToolResultMessage> results_for(const std::vector<Record>& log, const std::string& call_id) {
  std::vector<ToolResultMessage> out;
  for (const auto& record : log) {
    const auto* entry = std::get_if<TreeEntry>(&record.body);
    const auto* body = entry ? std::get_if<MessageBody>(&entry->body) : nullptr;
    const auto* result = body ? std::get_if<ToolResultMessage>(&body->message) : nullptr;
    if (result && result->tool_call_id == call_id) out.push_back(*result);
  }
  return out;
}

std::vector<std::string> EventLog::types(bool with_updates) const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& e : events_) {
    if (!with_updates && (e.type == EventType::message_update || e.type == EventType::tool_update)) continue;
    out.push_back(std::string(to_string(e.type)));
  }
  return out;
}

std::size_t EventLog::count(EventType type) const {
  std::lock_guard lock(mu_);
  std::size_t n = 0;
  for (const auto& e : events_) n += e.type == type;
  return n;
}

HarnessTest::HarnessTest() : store_(make_memory_store(StoreOptions{.sync = SyncPolicy::none})) {
  auto session = store_->create(CreateOptions{.cwd = "/work"});
  EXPECT_TRUE(session.has_value());
  session_ = *session;
  session_id_ = session_->id();
}

HarnessOptions HarnessTest::options() {
  HarnessOptions options;
  options.session = session_;
  options.models.add(FauxProvider::model(), faux_);
  options.model = FauxProvider::model();
  options.tools = test_tools(effects_);
  options.retry = retry_;
  options.system_prompt = [](const std::vector<std::string>& tools) {
    return "You are a test. Tools: " + std::to_string(tools.size());
  };
  return options;
}

AgentHarness& HarnessTest::make_harness() { return make_harness_with(options()); }

AgentHarness& HarnessTest::make_harness_with(HarnessOptions options) {
  listener_.reset();
  harness_.reset();
  auto created = AgentHarness::create(std::move(options));
  if (!created) {
    ADD_FAILURE() << "AgentHarness::create: " << created.error().code << ": " << created.error().message;
    std::abort();
  }
  harness_.emplace(std::move(created->harness));
  suspended_ = std::move(created->suspended);
  listener_ = harness_->on_event([this](const Event& e) { events_.add(e); });
  return *harness_;
}

void HarnessTest::reopen() {
  listener_.reset();
  harness_.reset();
  session_.reset();
  memory_store_fail_after(*store_, -1);
  auto session = store_->open(session_id_);
  if (!session) {
    ADD_FAILURE() << "reopen: " << session.error().message;
    std::abort();
  }
  session_ = *session;
}

std::vector<Record> HarnessTest::records() const {
  std::vector<Record> out;
  auto log = session_->get_log();
  EXPECT_TRUE(log.has_value());
  for (const auto& line : *log) {
    auto record = decode_record(Json::parse(line.json));
    EXPECT_TRUE(record.has_value()) << line.json;
    out.push_back(*record);
  }
  return out;
}

std::vector<std::string> HarnessTest::record_types() const {
  std::vector<std::string> out;
  for (const auto& record : records()) {
    std::string type(to_string(type_of(record)));
    if (const auto* entry = std::get_if<TreeEntry>(&record.body)) {
      if (const auto* body = std::get_if<MessageBody>(&entry->body)) type += ":" + std::string(role_of(body->message));
    }
    out.push_back(type);
  }
  return out;
}

}  // namespace cairn::testing
