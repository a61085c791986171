// The context a request carries is the log's context at that instant. The
// harness carries a ref's projected context from step to step instead of
// rebuilding it from the log (src/harness/context_cache.hpp); these tests
// compare every request against a rebuild, across everything that moves a
// ref's leaf: the run's own appends, steering, deferred writes, idle writes
// through the harness, a writer that bypasses it, a failed response, a
// navigation, and a transform_context hook.
#include <deque>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/harness_support.hpp"

namespace cairn::testing {
namespace {


// The request messages a rebuild from the log gives for `ref` now.
Json expected_messages(const Session& session, const std::string& ref) {
  auto context = session.build_context(ref);
  EXPECT_TRUE(context.has_value());
  std::vector<AgentMessage> messages = context ? context->messages : std::vector<AgentMessage>{};
  std::erase_if(messages, [](const AgentMessage& m) {
    const auto* a = std::get_if<AssistantMessage>(&m);
    return a && (a->stop_reason == StopReason::error || a->stop_reason == StopReason::aborted);
  });
  Json out = Json::array();
  for (const auto& message : convert_to_llm(messages)) out.push_back(encode(message));
  return out;
}

Json encoded(const std::vector<LlmMessage>& messages) {
  Json out = Json::array();
  for (const auto& message : messages) out.push_back(encode(message));
  return out;
}

class ContextTest : public HarnessTest {
 protected:
  // A provider that checks each request against the log, then answers from
  // `plan_`. The script runs on the run's thread, at the request.
  void use_checking_provider() {
    faux_ = std::make_shared<FauxProvider>([this](const LlmContext& context) {
      ++requests_;
      const Json want = expected_messages(*session_, "main");
      const Json got = encoded(context.messages);
      if (got != want) mismatches_.push_back(fmt::format("request {}:\n got  {}\n want {}", requests_, got.dump(), want.dump()));
      for (const auto& message : context.messages) {
        const auto* a = std::get_if<AssistantMessage>(&message);
        if (a && a->stop_reason == StopReason::error) mismatches_.push_back(fmt::format("request {} carries a failed response", requests_));
      }
      if (plan_.empty()) return FauxResponse::failure("the test planned no more responses", false);
      FauxResponse next = std::move(plan_.front());
      plan_.pop_front();
      return next;
    });
  }

  AgentHarness& harness(bool watched) {
    use_checking_provider();
    HarnessOptions opts = options();
    opts.models.add(FauxProvider::model("faux-2"), faux_);
    auto created = AgentHarness::create(std::move(opts));
    if (!created) {
      ADD_FAILURE() << created.error().message;
      std::abort();
    }
    harness_.emplace(std::move(created->harness));
    // Unwatched, the harness builds no hot events at all: both paths must
    // carry the same context.
    if (watched) listener_ = harness_->on_event([this](const Event& e) { events_.add(e); });
    models_ = harness_->hooks().before_request([this](const HookContext&, const BeforeRequestEvent& e) -> std::optional<StreamOptions> {
      models_used_.push_back(e.model.id);
      return std::nullopt;
    });
    return *harness_;
  }

  void scenario(bool watched) {
    AgentHarness& h = harness(watched);
    AgentRef main = h.main();

    // A run with two tool steps.
    plan_ = {FauxResponse::tool_call("c1", "echo", args("a")), FauxResponse::tool_call("c2", "echo", args("b")),
             FauxResponse::text("one")};
    ASSERT_TRUE(main.prompt("first").ok());
    const std::string first_user = context_entry_ids().at(0);

    // Idle writes through the harness, and one that bypasses it.
    ASSERT_TRUE(main.session().append_message(UserMessage{.content = "aside", .timestamp = 1}).has_value());
    ASSERT_TRUE(main.set_thinking_level(ThinkingLevel::high).has_value());
    TreeEntry custom{.parent_id = session_->leaf("main"), .ref = "main",
                     .body = CustomMessageBody{.custom_type = "note", .content = std::string("from elsewhere"), .display = true}};
    ASSERT_TRUE(session_->append(Record{.body = custom}).has_value());

    // A failed run: its error message stays in the log, out of requests.
    plan_ = {FauxResponse::failure("boom", false)};
    EXPECT_EQ(main.prompt("second").outcome, Outcome::failed);

    // Steering and a model switch while a run goes on: both land at the
    // next checkpoint, through the run's own appends.
    Subscription steer = h.hooks().before_tool([&](const HookContext&, const BeforeToolEvent&) -> std::optional<BeforeToolResult> {
      EXPECT_TRUE(main.steer("steered").ok());
      EXPECT_TRUE(main.set_model("faux", "faux-2").has_value());
      return std::nullopt;
    });
    plan_ = {FauxResponse::tool_call("c3", "echo", args("c")), FauxResponse::text("three")};
    ASSERT_TRUE(main.prompt("third").ok());
    steer = {};

    // A navigation by another writer: the leaf goes back to the first prompt.
    TreeEntry leaf{.parent_id = session_->leaf("main"), .ref = "main", .body = Leaf{first_user}};
    ASSERT_TRUE(session_->append(Record{.body = leaf}).has_value());
    plan_ = {FauxResponse::text("four")};
    ASSERT_TRUE(main.prompt("fourth").ok());

    // A writer that bypasses the harness between two steps of a run (here a
    // listener, so only when watched): the next request carries its entry.
    Subscription midrun;
    if (watched) {
      midrun = h.on_event([&](const Event& e) {
        if (e.type != EventType::step_start || ++steps_seen_ != 2) return;
        TreeEntry note{.parent_id = session_->leaf("main"), .ref = "main",
                       .body = CustomMessageBody{.custom_type = "note", .content = std::string("mid-run"), .display = true}};
        EXPECT_TRUE(session_->append(Record{.body = note}).has_value());
      });
    }
    plan_ = {FauxResponse::tool_call("c5", "echo", args("e")), FauxResponse::text("4b")};
    ASSERT_TRUE(main.prompt("fourth, again").ok());
    midrun = {};

    // A transform_context hook sees the log's messages and its output is sent.
    Subscription transform = h.hooks().transform_context(
        [&](const HookContext&, const TransformContextEvent& e) -> std::optional<std::vector<AgentMessage>> {
          auto context = session_->build_context("main");
          EXPECT_EQ(e.messages.size(), context->messages.size());
          return e.messages;
        });
    plan_ = {FauxResponse::tool_call("c4", "echo", args("d")), FauxResponse::text("five")};
    ASSERT_TRUE(main.prompt("fifth").ok());

    EXPECT_EQ(requests_, 11);
    EXPECT_TRUE(mismatches_.empty()) << fmt::format("{}", fmt::join(mismatches_, "\n"));
    // The deferred model change took effect from the request after it.
    EXPECT_EQ(models_used_, (std::vector<std::string>{"faux-1", "faux-1", "faux-1", "faux-1", "faux-1", "faux-2",
                                                      "faux-1", "faux-1", "faux-1", "faux-1", "faux-1"}));
  }

  std::vector<std::string> context_entry_ids() {
    auto context = session_->build_context("main");
    EXPECT_TRUE(context.has_value());
    return context->entry_ids;
  }

  std::deque<FauxResponse> plan_;
  int requests_ = 0;
  int steps_seen_ = 0;
  std::vector<std::string> mismatches_;
  std::vector<std::string> models_used_;
  Subscription models_;
};

TEST_F(ContextTest, EveryRequestCarriesTheLogsContextWhenWatched) { scenario(true); }

TEST_F(ContextTest, EveryRequestCarriesTheLogsContextWhenNobodyWatches) { scenario(false); }

}  // namespace
}  // namespace cairn::testing
