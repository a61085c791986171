// cairn::serve::Server in process, as a program that embeds cairn drives it:
// a harness factory of its own (a scripted model, tools of its own), every
// request answered by Server::handle, without a socket or a signal.
#include "cairn/serve/server.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "cairn/llm/faux.hpp"

namespace cairn {
namespace {

using namespace std::chrono_literals;

constexpr const char* kToken = "in-process-token-0123";

class ShoutingFactory : public serve::HarnessFactory {
 public:
  std::atomic<int> made{0}, attached{0}, released{0};

  Result<Made> make(const std::shared_ptr<Session>& session, const std::shared_ptr<Store>&) override {
    EXPECT_TRUE(session);
    ++made;
    auto faux = std::make_shared<FauxProvider>();
    faux->push(FauxResponse::tool_call("c1", "shout", {{"text", "hello"}}));
    faux->push(FauxResponse::text("done"));
    Made result;
    result.options.model = FauxProvider::model();
    result.options.models.add(result.options.model, faux);
    Tool shout;
    shout.name = "shout";
    shout.description = "Says a text louder, and what it knows.";
    shout.parameters = {{"type", "object"}, {"properties", {{"text", {{"type", "string"}}}}}, {"required", {"text"}}};
    shout.replay = Replay::safe;
    // The server's token leaks into the result: the server keeps it out of the log.
    shout.execute = [](const Json& args, const ToolContext&) {
      std::string text = args.at("text").get<std::string>();
      for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      return ToolResult::text(text + " " + kToken);
    };
    result.options.tools.push_back(std::move(shout));
    result.attach = [this](AgentHarness&) {
      ++attached;
      return std::shared_ptr<void>(nullptr, [this](void*) { ++released; });
    };
    return result;
  }
  std::filesystem::path default_cwd() const override { return "/srv/in-process"; }
};

serve::HttpRequest request(std::string method, std::string path, std::string body = "") {
  serve::HttpRequest r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.body = std::move(body);
  if (!r.body.empty()) r.headers["content-type"] = "application/json";
  return r;
}

Json json_of(const serve::HttpResponse& response) { return Json::parse(response.body, nullptr, false); }

class ServerInProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    factory_ = std::make_shared<ShoutingFactory>();
    auto store = open_store("memory:");
    ASSERT_TRUE(store);
    serve::ServerOptions options;
    options.port = 0;
    options.tokens = {kToken};
    auto started = serve::Server::start(std::move(*store), factory_, options);
    ASSERT_TRUE(started) << started.error().message;
    server_ = std::move(*started);
  }

  std::shared_ptr<ShoutingFactory> factory_;
  std::unique_ptr<serve::Server> server_;
};

TEST_F(ServerInProcess, RunsTheEmbeddersHarnessAndKeepsItsTokenOutOfTheLog) {
  EXPECT_GT(server_->port(), 0);
  EXPECT_EQ(server_->handle(request("GET", "/healthz")).status, 200);
  const serve::HttpResponse created = server_->handle(request("POST", "/v1/sessions", R"({"id":"s1"})"));
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(json_of(created)["session"].value("cwd", ""), "/srv/in-process");  // the factory's default_cwd
  EXPECT_EQ(factory_->made.load(), 1);
  EXPECT_EQ(factory_->attached.load(), 1);

  const serve::HttpResponse prompted =
      server_->handle(request("POST", "/v1/sessions/s1/refs/main/prompt", R"({"text":"shout hello"})"));
  ASSERT_EQ(prompted.status, 202) << prompted.body;
  std::string state;
  for (int i = 0; i < 500 && state != "idle"; ++i) {
    if (i > 0) std::this_thread::sleep_for(10ms);
    state = json_of(server_->handle(request("GET", "/v1/sessions/s1/refs/main")))["ref"].value("status", "");
  }
  ASSERT_EQ(state, "idle");
  const serve::HttpResponse records = server_->handle(request("GET", "/v1/sessions/s1/records"));
  ASSERT_EQ(records.status, 200);
  EXPECT_NE(records.body.find("HELLO [redacted]"), std::string::npos) << records.body;
  EXPECT_NE(records.body.find("\"done\""), std::string::npos) << records.body;
  EXPECT_EQ(records.body.find(kToken), std::string::npos) << "the server's token reached the log";

  // A stream route answers with what its stream has now: the snapshot.
  const serve::HttpResponse events = server_->handle(request("GET", "/v1/sessions/s1/refs/main/events"));
  EXPECT_EQ(events.status, 200);
  EXPECT_EQ(events.content_type, "text/event-stream");
  EXPECT_NE(events.body.find("\"type\":\"snapshot\""), std::string::npos) << events.body.substr(0, 300);

  // The run as an A2A task, from the typed records of its log.
  const std::string run = json_of(prompted).value("runId", "");
  const serve::HttpResponse task = server_->handle(request("GET", "/a2a/rest/tasks/s1/main/" + run));
  ASSERT_EQ(task.status, 200) << task.body;
  EXPECT_EQ(json_of(task)["status"].value("state", ""), "TASK_STATE_COMPLETED") << task.body;
  EXPECT_EQ(json_of(task)["artifacts"][0]["parts"][0].value("text", ""), "done") << task.body;

  // Errors as over HTTP.
  EXPECT_EQ(server_->handle(request("GET", "/v1/sessions/nobody")).status, 404);
  EXPECT_EQ(server_->handle(request("GET", "/v1/nowhere")).status, 404);
  const serve::HttpResponse refused = server_->handle(request("PUT", "/v1/sessions/s1"));
  EXPECT_EQ(refused.status, 405);
  const auto allow = std::find_if(refused.headers.begin(), refused.headers.end(), [](const auto& h) { return h.first == "Allow"; });
  ASSERT_NE(allow, refused.headers.end());
  EXPECT_EQ(allow->second, "GET, DELETE");

  server_->stop();
  server_->wait();
  EXPECT_EQ(server_->handle(request("GET", "/v1/sessions")).status, 503);
  server_.reset();
  EXPECT_EQ(factory_->released.load(), factory_->attached.load()) << "what attach returned outlived its harness";
}

TEST(ServerStart, NeedsATokenAndAnAddressItCanListenOn) {
  auto factory = std::make_shared<ShoutingFactory>();
  serve::ServerOptions options;
  options.port = 0;
  auto no_token = serve::Server::start(*open_store("memory:"), factory, options);
  ASSERT_FALSE(no_token);
  EXPECT_EQ(no_token.error().code, "invalid_argument");
  options.tokens = {kToken};
  options.host = "256.0.0.1";
  auto bad_host = serve::Server::start(*open_store("memory:"), factory, options);
  ASSERT_FALSE(bad_host);
  EXPECT_NE(bad_host.error().message.find("256.0.0.1"), std::string::npos) << bad_host.error().message;
}

}  // namespace
}  // namespace cairn
