// `cairn serve` as a process, over loopback with a plain socket client: auth,
// every route and its errors, the live streams and their reconnection by
// Last-Event-ID at random cut points, approvals answered over HTTP, hostile
// requests, SIGTERM, and a SIGKILL during twenty concurrent runs with tools.
// The model is the local HTTP server speaking openai-completions, answering
// each request from the conversation it carries, so concurrent runs each get
// their own script.
#include "apps/serve_fixture.hpp"

namespace cairn {
namespace {

using namespace std::chrono_literals;
using namespace serve_testing;
using testing::HttpTestServer;
using testing::ReceivedRequest;
using testing::ScriptedResponse;
using testing::connect_loopback;
using testing::send_all_bytes;

// ---- auth --------------------------------------------------------------------------

TEST_F(ServeTest, EveryRouteButHealthzNeedsTheBearerToken) {
  start_server();
  struct stat st {};
  ASSERT_EQ(::stat(token_file().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_GE(token_.size(), 32u);

  EXPECT_EQ(serve_raw(port_, serve_request_text("GET", "/healthz", "", {})).status, 200);
  const ServeReply missing = serve_raw(port_, serve_request_text("GET", "/v1/sessions", "", {}));
  EXPECT_EQ(missing.status, 401);
  EXPECT_EQ(serve_error_code(missing), "unauthorized");
  const ServeReply wrong = serve_raw(port_, serve_request_text("GET", "/v1/sessions", "", {"Authorization: Bearer " + std::string(token_.size(), 'x')}));
  EXPECT_EQ(wrong.status, 403);
  EXPECT_EQ(serve_error_code(wrong), "forbidden");
  EXPECT_EQ(serve_raw(port_, serve_request_text("GET", "/metrics", "", {})).status, 401);
  EXPECT_EQ(serve_raw(port_, serve_request_text("GET", "/v1/sessions/x/refs/main/events", "", {"Authorization: Basic abc"})).status, 401);
  EXPECT_EQ(call("GET", "/v1/sessions").status, 200);
  // No token in any response or in the server's output.
  EXPECT_EQ(wrong.body.find(token_), std::string::npos);
  EXPECT_EQ(serve_slurp(err_).find(token_), std::string::npos);
}

TEST_F(ServeTest, SeveralTokensMayBeListedAndAFileOthersCanReadIsRefused) {
  {
    std::ofstream out(token_file());
    out << "# the operators\n0123456789abcdef0123\n\nfedcba9876543210fedc\n";
  }
  ::chmod(token_file().c_str(), 0644);
  err_ = path("refused.err");
  const pid_t refused = spawn({"serve", "--listen", "127.0.0.1:0", "--store", store(), "--token-file", token_file().string()}, err_);
  int status = 0;
  ::waitpid(refused, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(serve_slurp(err_).find("chmod 600"), std::string::npos) << serve_slurp(err_);

  ::chmod(token_file().c_str(), 0600);
  start_server();
  for (const std::string token : {"0123456789abcdef0123", "fedcba9876543210fedc"}) {
    EXPECT_EQ(serve_raw(port_, serve_request_text("GET", "/v1/sessions", "", {"Authorization: Bearer " + token})).status, 200);
  }
  EXPECT_EQ(serve_raw(port_, serve_request_text("GET", "/v1/sessions", "", {"Authorization: Bearer 0123456789abcdef012"})).status, 403);
}

// ---- routes ------------------------------------------------------------------------

// The web viewer's files need no token (they hold no data), come with a
// policy that keeps the page's scripts its own, and only `/` and `/ui/…`
// are the viewer's; every other route still asks for the token.
TEST_F(ServeTest, TheViewersFilesAreServedWithoutATokenAndNothingElseIs) {
  start_server();
  const ServeReply page = serve_raw(port_, serve_request_text("GET", "/", "", {}));
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.headers.at("content-type"), "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("/ui/app.js"), std::string::npos);
  EXPECT_NE(page.headers.at("content-security-policy").find("script-src 'self'"), std::string::npos);
  EXPECT_NE(page.headers.at("content-security-policy").find("frame-ancestors 'none'"), std::string::npos);
  EXPECT_EQ(page.headers.at("x-content-type-options"), "nosniff");
  for (const std::string file : {"/ui/app.js", "/ui/api.js", "/ui/session.js", "/ui/app.css", "/ui/icon.svg"}) {
    const ServeReply asset = serve_raw(port_, serve_request_text("GET", file, "", {}));
    EXPECT_EQ(asset.status, 200) << file;
    EXPECT_FALSE(asset.body.empty()) << file;
  }
  EXPECT_EQ(serve_raw(port_, serve_request_text("GET", "/ui/app.js", "", {})).headers.at("content-type"),
            "text/javascript; charset=utf-8");
  // The libraries the page imports are built in, served as its own scripts
  // under the same policy, with their licences beside them.
  for (const std::string library : {"/ui/vendor/marked.js", "/ui/vendor/purify.js", "/ui/vendor/highlight.js"}) {
    const ServeReply asset = serve_raw(port_, serve_request_text("GET", library, "", {}));
    EXPECT_EQ(asset.status, 200) << library;
    EXPECT_EQ(asset.headers.at("content-type"), "text/javascript; charset=utf-8") << library;
    EXPECT_NE(asset.headers.at("content-security-policy").find("script-src 'self'"), std::string::npos) << library;
    EXPECT_NE(asset.body.find("export"), std::string::npos) << library << " is an ES module";
  }
  const ServeReply licences = serve_raw(port_, serve_request_text("GET", "/ui/vendor/LICENSES.txt", "", {}));
  EXPECT_EQ(licences.status, 200);
  EXPECT_EQ(licences.headers.at("content-type"), "text/plain; charset=utf-8");
  for (const std::string library : {"==== marked ", "==== dompurify ", "==== @highlightjs/cdn-assets "}) {
    EXPECT_NE(licences.body.find(library), std::string::npos) << library;
  }
  for (const std::string missing : {"/ui/nope.js", "/ui/", "/ui/../api.cpp", "/ui/%2e%2e/index.html"}) {
    EXPECT_EQ(serve_raw(port_, serve_request_text("GET", missing, "", {})).status, 404) << missing;
  }
  EXPECT_EQ(serve_raw(port_, serve_request_text("POST", "/", "{}", {"Content-Type: application/json"})).status, 405);
  // The token is never part of the page.
  EXPECT_EQ(page.body.find(token_), std::string::npos);
  EXPECT_EQ(serve_raw(port_, serve_request_text("GET", "/index.html", "", {})).status, 401);
  EXPECT_EQ(serve_raw(port_, serve_request_text("GET", "/favicon.ico", "", {})).status, 401);
}

// A snapshot can hold only a ref's newest entries (?transcript=N) and say
// how many it left out; GET …/branch gives those, a page at a time, oldest
// first, so that the pages and the snapshot together are the whole
// transcript, each entry once.
TEST_F(ServeTest, ALimitedSnapshotAndTheBranchPagesBeforeItMakeTheWholeTranscript) {
  start_server();
  create_session("s1");
  for (const std::string text : {"say one", "say two", "say three"}) {
    ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", text}}).status, 202);
    ASSERT_EQ(wait_settled("s1", "main"), "idle");
  }
  std::vector<std::string> whole;
  {
    ServeStreamClient stream(port_, "/v1/sessions/s1/refs/main/events", token_);
    auto snapshot = stream.next();
    ASSERT_TRUE(snapshot);
    for (const auto& entry : snapshot->data["transcript"]) whole.push_back(entry["id"]);
    EXPECT_EQ(snapshot->data["transcriptOmitted"], 0);
  }
  ASSERT_EQ(whole.size(), 6u);
  ServeStreamClient stream(port_, "/v1/sessions/s1/refs/main/events?transcript=2", token_);
  auto snapshot = stream.next();
  ASSERT_TRUE(snapshot);
  ASSERT_EQ(snapshot->data["transcript"].size(), 2u);
  EXPECT_EQ(snapshot->data["transcriptOmitted"], 4);
  std::vector<std::string> got;
  for (const auto& entry : snapshot->data["transcript"]) got.push_back(entry["id"]);
  // Pages of 3 before the first held entry, until none is left.
  std::string before = got.front();
  for (int pages = 0; pages < 5; ++pages) {
    const Json page = call("GET", fmt::format("/v1/sessions/s1/refs/main/branch?before={}&limit=3", before)).json();
    ASSERT_TRUE(page["entries"].is_array()) << page.dump();
    std::vector<std::string> older;
    for (const auto& entry : page["entries"]) older.push_back(entry["id"]);
    got.insert(got.begin(), older.begin(), older.end());
    if (page["next"].is_null()) break;
    EXPECT_EQ(page["next"], older.front());
    before = older.front();
  }
  EXPECT_EQ(got, whole);
  // Before the first entry there is nothing.
  EXPECT_EQ(call("GET", fmt::format("/v1/sessions/s1/refs/main/branch?before={}", whole.front())).json()["entries"].size(), 0u);
  EXPECT_EQ(serve_error_code(call("GET", "/v1/sessions/s1/refs/main/branch")), "invalid_argument");
  EXPECT_EQ(serve_error_code(call("GET", "/v1/sessions/s1/refs/main/branch?before=nope")), "unknown_entry");
  // An entry of another branch is not before anything on this one.
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs", Json{{"name", "side"}, {"at", whole[1]}}).status, 201);
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/side/prompt", Json{{"text", "say aside"}}).status, 202);
  ASSERT_EQ(wait_settled("s1", "side"), "idle");
  const Json side = call("GET", "/v1/sessions/s1/refs/side/context").json();
  const std::string aside = side["entryIds"].back();
  EXPECT_EQ(serve_error_code(call("GET", fmt::format("/v1/sessions/s1/refs/main/branch?before={}", aside))), "unknown_entry");
  const Json side_page = call("GET", fmt::format("/v1/sessions/s1/refs/side/branch?before={}", aside)).json();
  ASSERT_EQ(side_page["entries"].size(), 3u) << side_page.dump();
  EXPECT_EQ(side_page["entries"][0]["id"], whole[0]);
  EXPECT_EQ(side_page["entries"][1]["id"], whole[1]);
  EXPECT_EQ(serve_error_code(call("GET", fmt::format("/v1/sessions/s1/refs/main/branch?before={}&limit=0", whole.back()))),
            "invalid_argument");
  EXPECT_EQ(serve_error_code(call("GET", "/v1/sessions/s1/refs/main/events?transcript=0")), "invalid_argument");
  EXPECT_EQ(serve_error_code(call("GET", "/v1/sessions/s1/refs/main/events?transcript=x")), "invalid_argument");
}

// What the viewer shows beside a session and in its tree: its name, model,
// last activity and spend; each message's first line; labels set over HTTP.
TEST_F(ServeTest, ASessionsSummaryTreePreviewsAndLabels) {
  start_server();
  create_session("s1");
  Json info = call("GET", "/v1/sessions/s1").json();
  EXPECT_TRUE(info["name"].is_null());
  EXPECT_EQ(info["model"]["id"], "test");
  EXPECT_EQ(info["activity"]["cost"], 0.0);
  EXPECT_EQ(info["activity"]["tokens"], 0);
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", "say first line\nsecond line"}}).status, 202);
  EXPECT_EQ(wait_settled("s1", "main"), "idle");
  info = call("GET", "/v1/sessions/s1").json();
  const auto log = records("s1");
  EXPECT_EQ(info["activity"]["updatedAt"], log.back()["timestamp"]);

  const Json tree = call("GET", "/v1/sessions/s1/tree").json();
  ASSERT_EQ(tree["entries"].size(), 2u) << tree.dump();
  EXPECT_EQ(tree["entries"][0]["preview"], "say first line");
  EXPECT_EQ(tree["entries"][1]["preview"], "first line");
  const std::string answer = tree["entries"][1]["id"];

  const ServeReply labelled = call("POST", "/v1/sessions/s1/refs/main/label", Json{{"entryId", answer}, {"label", "good"}});
  ASSERT_EQ(labelled.status, 200) << labelled.body;
  EXPECT_EQ(labelled.json()["label"], "good");
  EXPECT_EQ(call("GET", "/v1/sessions/s1/tree").json()["entries"][1]["label"], "good");
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/label", Json{{"entryId", answer}, {"label", "better"}}).status, 200);
  EXPECT_EQ(call("GET", "/v1/sessions/s1/tree").json()["entries"][1]["label"], "better");  // the latest wins
  EXPECT_FALSE(call("GET", "/v1/sessions/s1/tree").json()["entries"][0].contains("label"));
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/label", Json{{"entryId", answer}, {"label", nullptr}}).status, 200);
  EXPECT_FALSE(call("GET", "/v1/sessions/s1/tree").json()["entries"][1].contains("label"));
  EXPECT_EQ(serve_error_code(call("POST", "/v1/sessions/s1/refs/main/label", Json{{"entryId", "nope"}, {"label", "x"}})),
            "unknown_entry");
  EXPECT_EQ(serve_error_code(call("POST", "/v1/sessions/s1/refs/main/label", Json{{"label", "x"}})), "invalid_argument");
  EXPECT_EQ(serve_error_code(call("POST", "/v1/sessions/s1/refs/main/label", Json{{"entryId", answer}, {"label", ""}})),
            "invalid_argument");
  EXPECT_EQ(serve_error_code(call("POST", "/v1/sessions/s1/refs/main/label", Json{{"entryId", answer}, {"labels", "x"}})),
            "invalid_argument");
  EXPECT_EQ(call("GET", "/v1/sessions/s1/refs/main/label").status, 405);
}

TEST_F(ServeTest, SessionsRefsAndRunsThroughTheApi) {
  start_server();
  create_session("s1");
  EXPECT_EQ(serve_error_code(call("POST", "/v1/sessions", Json{{"id", "s1"}})), "already_exists");
  EXPECT_EQ(call("POST", "/v1/sessions", Json{{"id", "s1"}}).status, 409);
  EXPECT_EQ(call("GET", "/v1/sessions/nope").status, 404);
  EXPECT_EQ(serve_error_code(call("GET", "/v1/sessions/nope")), "not_found");

  // A prompt is accepted durably: 202 with the run id and the seq of its operation_started.
  ServeReply accepted = call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", "say hello there"}});
  ASSERT_EQ(accepted.status, 202) << accepted.body;
  const std::string run_id = accepted.json()["runId"];
  const std::int64_t seq = accepted.json()["seq"];
  EXPECT_EQ(wait_settled("s1", "main"), "idle");
  auto log = records("s1");
  ASSERT_GT(log.size(), static_cast<std::size_t>(seq));
  EXPECT_EQ(log[seq]["type"], "operation_started");
  EXPECT_EQ(log[seq]["id"], run_id);
  EXPECT_EQ(log.back()["type"], "operation_finished");

  const Json context = call("GET", "/v1/sessions/s1/refs/main/context").json();
  ASSERT_EQ(context["messages"].size(), 2u) << context.dump();
  EXPECT_EQ(context["messages"][1]["content"][0]["text"], "hello there");

  // Records after a seq, with a limit.
  const Json page = call("GET", "/v1/sessions/s1/records?after=0&limit=2").json();
  ASSERT_EQ(page["records"].size(), 2u);
  EXPECT_EQ(page["records"][0]["seq"], 1);
  EXPECT_EQ(page["next"], 2);
  EXPECT_EQ(serve_error_code(call("GET", "/v1/sessions/s1/records?limit=0")), "invalid_argument");
  EXPECT_EQ(serve_error_code(call("GET", "/v1/sessions/s1/records?after=x")), "invalid_argument");

  // Refs: create at an entry, list, run on it, delete.
  const std::string leaf = context["entryIds"][0];
  ServeReply made = call("POST", "/v1/sessions/s1/refs", Json{{"name", "side"}, {"at", leaf}});
  ASSERT_EQ(made.status, 201) << made.body;
  EXPECT_EQ(serve_error_code(call("POST", "/v1/sessions/s1/refs", Json{{"name", "side"}})), "ref_exists");
  EXPECT_EQ(serve_error_code(call("POST", "/v1/sessions/s1/refs", Json{{"name", "x"}, {"at", "nope"}})), "unknown_entry");
  EXPECT_EQ(call("GET", "/v1/sessions/s1/refs").json()["refs"].size(), 2u);
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/side/prompt", Json{{"text", "say aside"}}).status, 202);
  EXPECT_EQ(wait_settled("s1", "side"), "idle");
  EXPECT_EQ(serve_error_code(call("DELETE", "/v1/sessions/s1/refs/main")), "main_ref");
  EXPECT_EQ(call("DELETE", "/v1/sessions/s1/refs/side").status, 200);
  EXPECT_EQ(serve_error_code(call("GET", "/v1/sessions/s1/refs/side")), "unknown_ref");
  EXPECT_EQ(call("POST", "/v1/sessions/s1/refs/side/prompt", Json{{"text", "say x"}}).status, 404);

  // Queues: nothing runs, so a steer is refused; next-run waits for the next run.
  EXPECT_EQ(serve_error_code(call("POST", "/v1/sessions/s1/refs/main/steer", Json{{"text", "faster"}})), "no_active_run");
  EXPECT_EQ(call("POST", "/v1/sessions/s1/refs/main/next-run", Json{{"text", "later"}}).status, 200);
  // Abort of an idle ref is a no-op, resume of one is refused.
  const Json aborted = call("POST", "/v1/sessions/s1/refs/main/abort").json();
  EXPECT_EQ(aborted["outcome"], "ok");
  EXPECT_TRUE(aborted["runId"].is_null());
  EXPECT_EQ(serve_error_code(call("POST", "/v1/sessions/s1/refs/main/resume")), "not_suspended");

  // Config: read, change, refuse what is unknown.
  const Json config = call("GET", "/v1/sessions/s1/refs/main/config").json();
  EXPECT_EQ(config["model"]["id"], "test");
  const ServeReply changed = call("PATCH", "/v1/sessions/s1/refs/main/config", Json{{"thinkingLevel", "high"}, {"activeTools", {"ls", "read"}}});
  ASSERT_EQ(changed.status, 200) << changed.body;
  EXPECT_EQ(changed.json()["thinkingLevel"], "high");
  EXPECT_EQ(changed.json()["activeTools"], Json({"ls", "read"}));
  EXPECT_EQ(serve_error_code(call("PATCH", "/v1/sessions/s1/refs/main/config", Json{{"activeTools", {"nope"}}})), "unknown_tool");
  EXPECT_EQ(serve_error_code(call("PATCH", "/v1/sessions/s1/refs/main/config", Json{{"model", "nope"}})), "invalid_argument");

  // Navigate back to the first user message: the leaf goes to its parent, its text comes back.
  const ServeReply navigated = call("POST", "/v1/sessions/s1/refs/main/navigate", Json{{"targetId", leaf}});
  ASSERT_EQ(navigated.status, 200) << navigated.body;
  EXPECT_EQ(navigated.json()["editorText"], "say hello there");
  EXPECT_EQ(serve_error_code(call("POST", "/v1/sessions/s1/refs/main/navigate", Json{{"targetId", "nope"}})), "unknown_entry");

  // The tree, the session, the models, a fork.
  const Json tree = call("GET", "/v1/sessions/s1/tree").json();
  EXPECT_GE(tree["entries"].size(), 4u);
  const Json session = call("GET", "/v1/sessions/s1").json();
  EXPECT_EQ(session["session"]["id"], "s1");
  EXPECT_EQ(session["cursor"], static_cast<std::int64_t>(records("s1").size()) - 1);
  const Json models = call("GET", "/v1/models").json();
  bool listed = false;
  for (const auto& model : models["models"]) listed |= model["id"] == models["default"] && model["available"] == true;
  EXPECT_TRUE(listed) << models.dump();
  EXPECT_EQ(models["default"], "custom/test");
  ServeReply forked = call("POST", "/v1/sessions/s1/fork", Json{{"id", "s2"}, {"entryId", leaf}});
  ASSERT_EQ(forked.status, 201) << forked.body;
  EXPECT_EQ(forked.json()["session"]["parentSession"], "s1");

  // Paging through the sessions, newest first.
  const Json first = call("GET", "/v1/sessions?limit=1").json();
  ASSERT_EQ(first["sessions"].size(), 1u);
  const Json second = call("GET", fmt::format("/v1/sessions?limit=1&after={}", first["next"].get<std::string>())).json();
  ASSERT_EQ(second["sessions"].size(), 1u);
  EXPECT_NE(first["sessions"][0]["id"], second["sessions"][0]["id"]);
  EXPECT_TRUE(second["next"].is_null());

  // A compaction is an operation like a run: accepted, then ended durably
  // (here with nothing to shed: the branch is short).
  const ServeReply compacted = call("POST", "/v1/sessions/s1/refs/main/compact");
  ASSERT_EQ(compacted.status, 202) << compacted.body;
  EXPECT_EQ(wait_settled("s1", "main"), "idle");
  EXPECT_EQ(records("s1").back()["type"], "operation_finished");
  EXPECT_EQ(records("s1").back()["runId"], compacted.json()["runId"]);

  // Deleting a session.
  EXPECT_EQ(call("DELETE", "/v1/sessions/s2").status, 200);
  EXPECT_EQ(call("GET", "/v1/sessions/s2").status, 404);

  // Metrics count what happened.
  const ServeReply metrics = call("GET", "/metrics");
  EXPECT_NE(metrics.body.find("cairn_runs_total{outcome=\"ok\"}"), std::string::npos) << metrics.body;
  EXPECT_NE(metrics.body.find("cairn_append_seconds_bucket{le=\"+Inf\"}"), std::string::npos) << metrics.body;
  EXPECT_EQ(metrics.body.find("cairn_append_seconds_count 0\n"), std::string::npos) << metrics.body;
}

// W3C Trace Context: a prompt sent with a traceparent runs in its caller's
// trace; one without (or with a malformed one) starts a trace of its own.
TEST_F(ServeTest, APromptWithATraceparentRunsInItsCallersTrace) {
  const auto trace_file = path("serve-trace.jsonl");
  start_server({"--trace", trace_file.string()});
  create_session("traced");
  const std::string caller_trace = "4bf92f3577b34da6a3ce929d0e0e4736", caller_span = "00f067aa0ba902b7";
  ASSERT_EQ(call("POST", "/v1/sessions/traced/refs/main/prompt", Json{{"text", "say one"}}.dump(),
                 {fmt::format("traceparent: 00-{}-{}-01", caller_trace, caller_span)})
                .status,
            202);
  EXPECT_EQ(wait_settled("traced", "main"), "idle");
  ASSERT_EQ(call("POST", "/v1/sessions/traced/refs/main/prompt", Json{{"text", "say two"}}.dump(),
                 {"traceparent: 00-not-a-trace-01"})
                .status,
            202);
  EXPECT_EQ(wait_settled("traced", "main"), "idle");

  // The sink writes off the run's thread: wait for both runs' ends.
  std::vector<Json> runs;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (runs.size() < 2) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << serve_slurp(trace_file);
    runs.clear();
    for (const auto& line : testing::lines_of(serve_slurp(trace_file))) {
      const Json event = Json::parse(line);
      if (event["name"] == "cairn.harness.run" && event["type"] == "start") runs.push_back(event);
    }
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(runs[0]["traceId"], caller_trace);
  EXPECT_EQ(runs[0]["parentSpanId"], caller_span);
  EXPECT_NE(runs[1]["traceId"], caller_trace);
  EXPECT_FALSE(runs[1].contains("parentSpanId"));
  // The model's request carried the run's trace on.
  const auto requests = model_.requests();
  ASSERT_GE(requests.size(), 1u);
  EXPECT_TRUE(requests[0].header("traceparent").value_or("").starts_with("00-" + caller_trace + "-"));
}

TEST_F(ServeTest, ARunningRefRefusesWhatWouldConflictAndAbortReturnsTheClearedQueue) {
  start_server();
  create_session("s1");
  const ServeReply started = call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", "wait"}});
  ASSERT_EQ(started.status, 202) << started.body;
  EXPECT_EQ(serve_error_code(call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", "say x"}})), "busy");
  EXPECT_EQ(call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", "say x"}}).status, 409);
  EXPECT_EQ(serve_error_code(call("DELETE", "/v1/sessions/s1")), "operation_open");
  EXPECT_EQ(serve_error_code(call("POST", "/v1/sessions/s1/refs/main/resume")), "busy");
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/follow-up", Json{{"text", "and then this"}}).status, 200);
  const Json status = ref_status("s1", "main");
  EXPECT_EQ(status["ref"]["status"], "running");
  EXPECT_EQ(status["ref"]["run"]["id"], started.json()["runId"]);
  const ServeReply aborted = call("POST", "/v1/sessions/s1/refs/main/abort");
  ASSERT_EQ(aborted.status, 200) << aborted.body;
  EXPECT_EQ(aborted.json()["runId"], started.json()["runId"]);
  ASSERT_EQ(aborted.json()["clearedFollowUp"].size(), 1u) << aborted.body;
  EXPECT_NE(aborted.json()["clearedFollowUp"][0].dump().find("and then this"), std::string::npos) << aborted.body;
  EXPECT_EQ(wait_settled("s1", "main"), "idle");
  EXPECT_EQ(records("s1").back()["outcome"], "aborted");
  EXPECT_EQ(call("DELETE", "/v1/sessions/s1").status, 200);
}

// A prompt sent with whileRunning starts a run on an idle ref and is queued
// on a running one: one request, never refused for the state the ref was in
// a moment before, however its runs end and start around it.
TEST_F(ServeTest, APromptWhileRunningIsQueuedAndOnAnIdleRefStartsARun) {
  start_server();
  create_session("s1");
  const std::string prompt = "/v1/sessions/s1/refs/main/prompt";
  EXPECT_EQ(serve_error_code(call("POST", prompt, Json{{"text", "say x"}, {"whileRunning", "later"}})), "invalid_argument");
  const auto last_text = [&] {
    const Json context = call("GET", "/v1/sessions/s1/refs/main/context").json();
    return context["messages"].back()["content"][0].value("text", "");
  };

  ASSERT_EQ(call("POST", prompt, Json{{"text", "say idle"}, {"whileRunning", "steer"}}).status, 202);
  EXPECT_EQ(wait_settled("s1", "main"), "idle");
  EXPECT_EQ(last_text(), "idle");

  ASSERT_EQ(call("POST", prompt, Json{{"text", "wait"}}).status, 202);
  const ServeReply steered = call("POST", prompt, Json{{"text", "steer:now"}, {"whileRunning", "steer"}});
  ASSERT_EQ(steered.status, 200) << steered.body;
  EXPECT_EQ(steered.json()["queued"], "steer");
  EXPECT_EQ(wait_settled("s1", "main"), "idle");
  EXPECT_EQ(last_text(), "steered now");

  ASSERT_EQ(call("POST", prompt, Json{{"text", "wait"}}).status, 202);
  const ServeReply followed = call("POST", prompt, Json{{"text", "say after"}, {"whileRunning", "followUp"}});
  ASSERT_EQ(followed.status, 200) << followed.body;
  EXPECT_EQ(followed.json()["queued"], "follow-up");
  EXPECT_EQ(wait_settled("s1", "main"), "idle");
  EXPECT_EQ(last_text(), "after");

  // Sent as a short run ends: each second message is taken once, as a
  // prompt or as a steer, and none is refused.
  for (int i = 0; i < 30; ++i) {
    ASSERT_EQ(call("POST", prompt, Json{{"text", "say quick"}}).status, 202);
    std::this_thread::sleep_for(std::chrono::milliseconds(i % 10));  // sometimes in the run, sometimes after it
    const ServeReply second = call("POST", prompt, Json{{"text", fmt::format("say second {}", i)}, {"whileRunning", "steer"}});
    ASSERT_TRUE(second.status == 202 || (second.status == 200 && second.json()["queued"] == "steer")) << second.body;
    EXPECT_EQ(wait_settled("s1", "main"), "idle");
    EXPECT_EQ(last_text(), fmt::format("second {}", i));
  }
  int taken = 0;
  const Json context = call("GET", "/v1/sessions/s1/refs/main/context").json();
  for (const auto& message : context["messages"]) taken += message.dump().find("say second 7") != std::string::npos;
  EXPECT_EQ(taken, 1) << context.dump();
}

TEST_F(ServeTest, BadRequestsAreRefusedWithTheirReason) {
  start_server();
  create_session("s1");
  const std::string prompt = "/v1/sessions/s1/refs/main/prompt";
  EXPECT_EQ(serve_error_code(call("POST", prompt, Json{{"text", "say x"}, {"color", "red"}})), "invalid_argument");
  EXPECT_NE(call("POST", prompt, Json{{"text", "say x"}, {"color", "red"}}).body.find("'color'"), std::string::npos);
  EXPECT_NE(call("POST", prompt, Json{{"text", 5}}).body.find("'text' must be a string"), std::string::npos);
  EXPECT_NE(call("POST", prompt, Json::object()).body.find("'text' is required"), std::string::npos);
  EXPECT_EQ(call("POST", prompt, std::string("{\"text\":")).status, 400);
  EXPECT_EQ(call("POST", prompt, std::string("[1]")).status, 400);
  EXPECT_EQ(call("POST", prompt, std::string("{\"text\":\"\xff\xfe\"}")).status, 400);
  EXPECT_EQ(call("POST", prompt, std::string(100000, '[') + std::string(100000, ']')).status, 400);
  EXPECT_EQ(serve_raw(port_, serve_request_text("POST", prompt, "text=x", {"Authorization: Bearer " + token_,
                                                                   "Content-Type: application/x-www-form-urlencoded"})).status, 415);
  EXPECT_EQ(call("PUT", prompt, Json{{"text", "x"}}).status, 405);
  EXPECT_EQ(call("GET", "/v1/nothing").status, 404);
  EXPECT_EQ(call("GET", "/v1/sessions/s1/refs/main/nothing").status, 404);
  for (const std::string bad : {"/v1/sessions/..", "/v1/sessions/%2e%2e", "/v1/sessions/a%2Fb", "/v1/sessions/%00x",
                                "/v1/sessions/%zz", "/v1/sessions/s1/refs/%0a"}) {
    const ServeReply reply = call("GET", bad);
    EXPECT_EQ(reply.status, 400) << bad << ": " << reply.body;
    EXPECT_EQ(serve_error_code(reply), "invalid_argument") << bad;
  }
  EXPECT_EQ(call("GET", "/v1/sessions/" + std::string(300, 'a')).status, 400);
  // Nothing of that reached the log.
  EXPECT_TRUE(records("s1").empty());
}

// ---- approvals ---------------------------------------------------------------------

TEST_F(ServeTest, AnApprovalWaitsDurablyAndIsAnsweredOverHttp) {
  start_server({"--approval", "ask"});
  create_session("s1");
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", "touch one"}}).status, 202);
  ASSERT_EQ(wait_settled("s1", "main"), "awaiting_input");
  Json inputs = call("GET", "/v1/sessions/s1/refs/main/inputs").json()["inputs"];
  ASSERT_EQ(inputs.size(), 1u) << inputs.dump();
  EXPECT_EQ(inputs[0]["toolName"], "bash");
  EXPECT_FALSE(std::filesystem::exists(path("work/ran.txt")));
  const std::string request_id = inputs[0]["id"];

  // A restart between the question and its answer loses nothing.
  kill_server();
  start_server({"--approval", "ask"});
  inputs = call("GET", "/v1/sessions/s1/refs/main/inputs").json()["inputs"];
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(inputs[0]["id"], request_id);
  EXPECT_EQ(ref_status("s1", "main")["ref"]["status"], "awaiting_input");

  EXPECT_EQ(serve_error_code(call("POST", "/v1/sessions/s1/refs/main/inputs/nope", Json{{"decision", "allow"}})), "unknown_input");
  EXPECT_EQ(serve_error_code(call("POST", "/v1/sessions/s1/refs/main/inputs/" + request_id, Json{{"decision", "maybe"}})), "invalid_argument");
  EXPECT_EQ(serve_error_code(call("POST", "/v1/sessions/s1/refs/main/inputs/" + request_id, Json{{"decision", "answer"}, {"answer", "x"}})), "invalid_response");
  const ServeReply allowed = call("POST", "/v1/sessions/s1/refs/main/inputs/" + request_id, Json{{"decision", "allow"}});
  ASSERT_EQ(allowed.status, 200) << allowed.body;
  EXPECT_TRUE(allowed.json()["resumed"].get<bool>());
  EXPECT_EQ(wait_settled("s1", "main"), "idle");
  EXPECT_EQ(serve_slurp(path("work/ran.txt")), "one\n");
  EXPECT_EQ(serve_error_code(call("POST", "/v1/sessions/s1/refs/main/inputs/" + request_id, Json{{"decision", "allow"}})), "unknown_input");

  // A question, answered.
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", "ask"}}).status, 202);
  ASSERT_EQ(wait_settled("s1", "main"), "awaiting_input");
  inputs = call("GET", "/v1/sessions/s1/refs/main/inputs").json()["inputs"];
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(inputs[0]["kind"], "question");
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/inputs/" + inputs[0]["id"].get<std::string>(),
                 Json{{"decision", "answer"}, {"answer", "green"}}).status, 200);
  EXPECT_EQ(wait_settled("s1", "main"), "idle");
  const Json context = call("GET", "/v1/sessions/s1/refs/main/context").json();
  EXPECT_NE(context["messages"].back().dump().find("got "), std::string::npos);
  EXPECT_NE(context["messages"].back().dump().find("green"), std::string::npos) << context["messages"].back().dump();
}

// ---- live streams ------------------------------------------------------------------

// The frames of a stream that carry a record: their seqs, and the records.
void serve_take_records(const ServeFrame& frame, std::vector<std::int64_t>& seqs, std::optional<std::int64_t>& last_id) {
  if (!frame.id) return;
  last_id = frame.id;
  if (frame.data.contains("record")) {
    EXPECT_EQ(frame.data["record"]["seq"], *frame.id);
    seqs.push_back(*frame.id);
  }
}

TEST_F(ServeTest, AStreamCutAtRandomPointsAndResumedByLastEventIdMissesNothingAndRepeatsNothing) {
  start_server();
  create_session("s1");
  std::mt19937 random(20261203);
  const int runs = testing::scaled(6);
  for (int run = 0; run < runs; ++run) {
    SCOPED_TRACE(fmt::format("run {}", run));
    auto stream = std::make_unique<ServeStreamClient>(port_, "/v1/sessions/s1/refs/main/events", token_);
    ASSERT_EQ(stream->status(), 200);
    auto snapshot = stream->next();
    ASSERT_TRUE(snapshot);
    ASSERT_EQ(snapshot->data["type"], "snapshot");
    const std::int64_t cursor = snapshot->data["cursor"];
    std::optional<std::int64_t> last_id = snapshot->id;
    std::vector<std::int64_t> seqs;
    ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", "loop 4"}}).status, 202);
    bool ended = false;
    int cuts = 0;
    while (!ended) {
      // Read a random number of frames, then cut the connection.
      const int frames = std::uniform_int_distribution<int>(0, 6)(random);
      for (int i = 0; i < frames && !ended; ++i) {
        auto frame = stream->next();
        ASSERT_TRUE(frame) << "the stream stalled (ended by the server: " << stream->ended() << ") after "
                           << last_id.value_or(-2) << "; seqs " << ::testing::PrintToString(seqs) << "\n"
                           << serve_slurp(err_) << call("GET", "/metrics").body;
        serve_take_records(*frame, seqs, last_id);
        // The run's end: its operation_finished, whether announced live
        // (run_end) or replayed from the log after a reconnect.
        ended = frame->data.contains("record") && frame->data["record"]["type"] == "operation_finished";
      }
      if (ended) break;
      stream->close();
      ++cuts;
      stream = std::make_unique<ServeStreamClient>(port_, "/v1/sessions/s1/refs/main/events", token_, last_id);
      ASSERT_EQ(stream->status(), 200);
    }
    // Exactly the log's records of the ref after the snapshot, in order, once each.
    std::vector<std::int64_t> expected;
    for (const auto& record : records("s1")) {
      if (record["seq"].get<std::int64_t>() > cursor && record.value("ref", "main") == "main") expected.push_back(record["seq"]);
    }
    EXPECT_EQ(seqs, expected) << "after " << cuts << " cuts";
    EXPECT_GT(cuts, 0);
  }
}

TEST_F(ServeTest, ASubagentsEventsReachItsParentsStreamAndItsSessionIsListedUnderTheParent) {
  start_server();
  create_session("s1");
  ServeStreamClient stream(port_, "/v1/sessions/s1/refs/main/events", token_);
  ASSERT_EQ(stream.status(), 200);
  ASSERT_TRUE(stream.next());  // the snapshot
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", "delegate hello there"}}).status, 202);
  std::set<std::string> inner;
  std::string child;
  for (;;) {
    auto frame = stream.next();
    ASSERT_TRUE(frame) << "the stream stalled";
    const std::string type = frame->data.value("type", "");
    if (type == "child_session_event") {
      EXPECT_FALSE(frame->id) << "a relayed event has no seq of the parent";
      child = frame->data["child"].value("session", "");
      inner.insert(frame->data["event"].value("type", ""));
    }
    if (type == "run_end") break;
  }
  EXPECT_TRUE(inner.count("run_start") && inner.count("message_end") && inner.count("run_end"));
  ASSERT_FALSE(child.empty());
  EXPECT_EQ(wait_settled("s1", "main"), "idle");
  Json listed = call("GET", "/v1/sessions").json();
  bool found = false;
  for (const auto& session : listed["sessions"]) {
    if (session["id"] == "s1") {
      EXPECT_EQ(session["children"], Json::array({child}));
      found = true;
    }
  }
  EXPECT_TRUE(found) << listed.dump();
  Json children = call("GET", "/v1/sessions?parent=s1").json();
  ASSERT_EQ(children["sessions"].size(), 1u) << children.dump();
  EXPECT_EQ(children["sessions"][0]["id"], child);
  EXPECT_EQ(children["sessions"][0]["parentSession"], "s1");
  bool answered = false;
  for (const auto& record : records("s1")) {
    if (record.value("type", "") == "message" && record["message"].value("role", "") == "assistant") {
      answered = answered || record.dump().find("delegated: hello there") != std::string::npos;
    }
  }
  EXPECT_TRUE(answered);
}

TEST_F(ServeTest, TheSessionStreamCarriesEveryRefsRecordsAndEphemeralEventsHaveNoId) {
  start_server();
  create_session("s1");
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs", Json{{"name", "b"}}).status, 201);
  ServeStreamClient stream(port_, "/v1/sessions/s1/events", token_);
  ASSERT_EQ(stream.status(), 200);
  auto snapshot = stream.next();
  ASSERT_TRUE(snapshot);
  EXPECT_EQ(snapshot->data["refs"].size(), 2u);
  const std::int64_t cursor = snapshot->data["cursor"];
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", "say one two three"}}).status, 202);
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/b/prompt", Json{{"text", "say four five six"}}).status, 202);
  std::vector<std::int64_t> seqs;
  std::optional<std::int64_t> last_id;
  int run_ends = 0;
  bool saw_update = false;
  std::vector<std::string> seen;  // what the stream said, for a failure's message
  while (run_ends < 2) {
    auto frame = stream.next();
    ASSERT_TRUE(frame) << (stream.ended() ? "the server ended the stream" : "the stream stalled") << " after "
                       << fmt::format("{}", fmt::join(seen, ", "));
    seen.push_back(frame->data.value("type", "?") == "stream_error" ? frame->data.dump() : frame->data.value("type", "?"));
    serve_take_records(*frame, seqs, last_id);
    const std::string type = frame->data.value("type", "");
    if (type == "message_update") {
      saw_update = true;
      EXPECT_FALSE(frame->id);
    }
    if (type == "run_end") ++run_ends;
  }
  EXPECT_TRUE(saw_update);
  std::vector<std::int64_t> expected;
  for (const auto& record : records("s1")) {
    if (record["seq"].get<std::int64_t>() > cursor) expected.push_back(record["seq"]);
  }
  EXPECT_EQ(seqs, expected);
  // ?after= does what Last-Event-ID does.
  ServeStreamClient replay(port_, fmt::format("/v1/sessions/s1/events?after={}", cursor), token_);
  std::vector<std::int64_t> replayed;
  while (replayed.size() < expected.size()) {
    auto frame = replay.next(5s);
    ASSERT_TRUE(frame);
    EXPECT_EQ(frame->data["type"], "record");
    serve_take_records(*frame, replayed, last_id);
  }
  EXPECT_EQ(replayed, expected);
}

// A client that does not read: its queue fills, its stream ends with
// stream_overflow and the cursor, and a reconnect from there misses nothing.
// The runs are never slowed by it.
TEST_F(ServeTest, ASlowClientsStreamEndsWithOverflowAndItsCursorResumesIt) {
  start_server({"--stream-queue", "8"});
  create_session("s1");
  const int fd = open_slow_stream("/v1/sessions/s1/refs/main/events");
  ASSERT_GE(fd, 0);
  // Runs that stream long texts, until the kernel's buffers are full and
  // the server counts this stream's queue overflowing (how much that takes
  // depends on the build: a slower server coalesces more of the deltas).
  bool overflowed = false;
  for (int run = 0; run < 40 && !overflowed; ++run) {
    ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", "chatter 200"}}).status, 202);
    ASSERT_EQ(wait_settled("s1", "main"), "idle");  // the run finished whatever the client did
    overflowed = call("GET", "/metrics").body.find("cairn_stream_overflows_total 0\n") == std::string::npos;
  }
  ASSERT_TRUE(overflowed) << "the stream never overflowed";
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", "loop 5"}}).status, 202);
  EXPECT_EQ(wait_settled("s1", "main"), "idle");
  // Now read it all: the frames that fitted, then the overflow with its cursor.
  const std::string raw = serve_read_all(fd, 10s);
  ::close(fd);
  const auto at = raw.find("\"type\":\"stream_overflow\"");
  ASSERT_NE(at, std::string::npos) << raw.substr(0, 2000);
  EXPECT_NE(call("GET", "/metrics").body.find("cairn_streams_ended_total{reason=\"ended_by_server\"} 1\n"), std::string::npos);
  const auto line_start = raw.rfind("data: ", at);
  const Json overflow = Json::parse(raw.substr(line_start + 6, raw.find('\n', at) - line_start - 6));
  const std::int64_t cursor = overflow["cursor"];
  // The frames received carried records up to the cursor, no further.
  std::vector<std::int64_t> seqs;
  for (const auto& line : testing::lines_of(raw)) {
    if (line.rfind("id: ", 0) == 0) seqs.push_back(std::stoll(line.substr(4)));
  }
  ASSERT_FALSE(seqs.empty());
  EXPECT_LE(seqs.back(), cursor);
  // Reconnected from the cursor: the rest, to the end of the log.
  ServeStreamClient again(port_, "/v1/sessions/s1/refs/main/events", token_, cursor);
  ASSERT_EQ(again.status(), 200);
  const std::int64_t last = static_cast<std::int64_t>(records("s1").size()) - 1;
  std::int64_t seen = cursor;
  while (seen < last) {
    auto frame = again.next(5s);
    ASSERT_TRUE(frame) << "stopped at " << seen << " of " << last;
    if (frame->id) {
      EXPECT_GT(*frame->id, seen);
      seen = *frame->id;
    }
  }
}

// A client that lags behind a streaming run: of the message_update events
// it has not yet taken, only the newest is sent (each carries the whole
// message so far), so it catches up instead of falling further behind.
// Nothing else is merged: no update it gets is shorter than the one before,
// the last is the final text, and every record arrives, once, in order.
TEST_F(ServeTest, ALaggingClientGetsTheNewestUpdateInPlaceOfTheOnesItMissed) {
  start_server();
  create_session("s1");
  const int fd = open_slow_stream("/v1/sessions/s1/refs/main/events");
  ASSERT_GE(fd, 0);
  // 200 updates of a growing text while this client reads nothing.
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", "chatter 200"}}).status, 202);
  ASSERT_EQ(wait_settled("s1", "main"), "idle");
  std::string raw;
  const auto run_end_whole = [&] {
    const auto at = raw.find("\"type\":\"run_end\"");
    return at != std::string::npos && raw.find("\n\n", at) != std::string::npos;
  };
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!run_end_whole() && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buffer[8192];
    const ssize_t got = ::recv(fd, buffer, sizeof(buffer), 0);
    if (got <= 0) break;
    raw.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(fd);
  ASSERT_TRUE(run_end_whole()) << raw.substr(0, 2000);
  raw.resize(raw.rfind("\n\n") + 2);  // whole frames only
  std::vector<std::size_t> update_lengths;
  std::size_t final_length = 0;
  std::int64_t cursor = -1;
  std::vector<std::int64_t> ids;
  for (const auto& line : testing::lines_of(raw)) {
    if (line.rfind("id: ", 0) == 0) ids.push_back(std::stoll(line.substr(4)));
    if (line.rfind("data: ", 0) != 0) continue;
    const Json data = Json::parse(line.substr(6));
    if (data["type"] == "snapshot") cursor = data["cursor"];
    const bool assistant = data.contains("message") && data["message"].value("role", "") == "assistant";
    if (data["type"] == "message_update" && assistant) update_lengths.push_back(serve_content_text(data["message"]["content"]).size());
    if (data["type"] == "message_end" && assistant) final_length = serve_content_text(data["message"]["content"]).size();
  }
  EXPECT_EQ(final_length, 20000u);
  ASSERT_FALSE(update_lengths.empty());
  EXPECT_LT(update_lengths.size(), 200u) << "a client that read nothing during the run got every update";
  // (The text's end repeats the whole text: lengths grow or stay.)
  for (std::size_t i = 1; i < update_lengths.size(); ++i) EXPECT_GE(update_lengths[i], update_lengths[i - 1]) << i;
  EXPECT_EQ(update_lengths.back(), final_length);
  EXPECT_EQ(call("GET", "/metrics").body.find("cairn_stream_updates_coalesced_total 0\n"), std::string::npos);
  // The records: exactly the log's after the snapshot, in order.
  std::vector<std::int64_t> expected;
  for (const Json& record : records("s1")) {
    if (record["seq"].get<std::int64_t>() > cursor && record.value("ref", "main") == "main") expected.push_back(record["seq"]);
  }
  EXPECT_EQ(ids, expected);
}

TEST_F(ServeTest, SigtermEndsEveryStreamWithAFinalEventAndExitsPromptly) {
  start_server();
  create_session("s1");
  ServeStreamClient stream(port_, "/v1/sessions/s1/refs/main/events", token_);
  ASSERT_TRUE(stream.next());
  const auto sent = std::chrono::steady_clock::now();
  ::kill(pid_, SIGTERM);
  auto frame = stream.next(5s);
  ASSERT_TRUE(frame);
  EXPECT_EQ(frame->data["type"], "server_shutdown");
  EXPECT_FALSE(stream.next(5s));
  EXPECT_TRUE(stream.ended());
  int status = 0;
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    ASSERT_LT(std::chrono::steady_clock::now() - sent, 5s);
    std::this_thread::sleep_for(10ms);
  }
  pid_ = -1;
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(ServeTest, ASessionAnotherProcessWritesIsReportedNotOpenedTwice) {
  start_server();
  create_session("s1");
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", "say one"}}).status, 202);
  ASSERT_EQ(wait_settled("s1", "main"), "idle");
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", "say two"}}).status, 202);
  ASSERT_EQ(wait_settled("s1", "main"), "idle");
  const int first_port = port_;
  const pid_t first = pid_;
  pid_ = -1;
  start_server();  // a second server on the same store
  const ServeReply reply = call("GET", "/v1/sessions/s1");
  EXPECT_EQ(reply.status, 409) << reply.body;
  EXPECT_EQ(serve_error_code(reply), "locked");
  EXPECT_NE(reply.body.find(std::to_string(first)), std::string::npos) << reply.body;  // names the holder
  // Watched from here: a limited snapshot, and the pages before it.
  {
    ServeStreamClient stream(port_, "/v1/sessions/s1/refs/main/events?transcript=1", token_);
    auto snapshot = stream.next();
    ASSERT_TRUE(snapshot);
    ASSERT_EQ(snapshot->data["transcript"].size(), 1u) << snapshot->data.dump();
    EXPECT_EQ(snapshot->data["transcriptOmitted"], 3);
    const std::string newest = snapshot->data["transcript"][0]["id"];
    const Json page = call("GET", fmt::format("/v1/sessions/s1/refs/main/branch?before={}&limit=2", newest)).json();
    ASSERT_EQ(page["entries"].size(), 2u) << page.dump();
    EXPECT_NE(page["entries"][1]["message"].dump().find("say two"), std::string::npos) << page.dump();
    const Json start = call("GET", fmt::format("/v1/sessions/s1/refs/main/branch?before={}", page["next"].get<std::string>())).json();
    ASSERT_EQ(start["entries"].size(), 1u) << start.dump();
    EXPECT_TRUE(start["next"].is_null());
    EXPECT_EQ(serve_error_code(call("GET", "/v1/sessions/s1/refs/nope/branch?before=" + newest)), "unknown_ref");
    EXPECT_EQ(serve_error_code(call("GET", "/v1/sessions/s1/refs/main/branch?before=nope")), "unknown_entry");
  }
  EXPECT_EQ(serve_raw(first_port, serve_request_text("GET", "/v1/sessions/s1", "", {"Authorization: Bearer " + token_})).status, 200);
  ::kill(first, SIGKILL);
  ::waitpid(first, nullptr, 0);
}

TEST_F(ServeTest, AnIdleSessionIsClosedAndAnotherProcessMayThenOpenIt) {
  start_server({"--idle-close", "0.2"});
  create_session("s1");
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", "say hi"}}).status, 202);
  ASSERT_EQ(wait_settled("s1", "main"), "idle");
  // A stream keeps it open however long it idles.
  {
    ServeStreamClient stream(port_, "/v1/sessions/s1/events", token_);
    ASSERT_TRUE(stream.next());
    std::this_thread::sleep_for(600ms);
    EXPECT_NE(call("GET", "/metrics").body.find("cairn_sessions_open 1"), std::string::npos);
  }
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (call("GET", "/metrics").body.find("cairn_sessions_open 0") == std::string::npos) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the session was never closed";
    std::this_thread::sleep_for(50ms);
  }
  // Closed means unlocked: a second server opens it, and the first gets 409 until that one lets go.
  const int first_port = port_;
  const pid_t first = pid_;
  pid_ = -1;
  start_server();
  EXPECT_EQ(call("GET", "/v1/sessions/s1").status, 200);
  EXPECT_EQ(serve_raw(first_port, serve_request_text("GET", "/v1/sessions/s1", "", {"Authorization: Bearer " + token_})).status, 409);
  ::kill(first, SIGKILL);
  ::waitpid(first, nullptr, 0);
}

// The sessions list says each session's state beside its header: live for the
// sessions this server has open, from the log for the others, which looking
// neither opens nor holds: another process may open them meanwhile, and
// what it appends shows at the next look.
TEST_F(ServeTest, TheSessionsListSaysEachSessionsStateWithoutOpeningIt) {
  const std::vector<std::string> options = {"--idle-close", "0.2", "--approval", "ask"};
  start_server(options);
  create_session("s1");
  create_session("s2");
  ASSERT_EQ(call("POST", "/v1/sessions/s2/refs/main/prompt", Json{{"text", "say hi"}}).status, 202);
  ASSERT_EQ(wait_settled("s2", "main"), "idle");
  const Json s2_last = records("s2").back();
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", "touch one"}}).status, 202);
  ASSERT_EQ(wait_settled("s1", "main"), "awaiting_input");
  auto summaries = [&] {
    const ServeReply reply = call("GET", "/v1/sessions");
    EXPECT_EQ(reply.status, 200) << reply.body;
    std::map<std::string, Json> by_id;
    const Json body = reply.json();
    for (const Json& session : body["sessions"]) by_id[session["id"].get<std::string>()] = session["summary"];
    return by_id;
  };
  auto open_count = [&] {
    const std::string metrics = call("GET", "/metrics").body;
    const auto at = metrics.find("\ncairn_sessions_open ");
    return at == std::string::npos ? -1 : std::stoi(metrics.substr(at + 21));
  };
  // The idle session closes; the one waiting for a human is left open until
  // it idles too (an operation waiting for an answer runs no thread).
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (open_count() != 0) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the sessions were never closed";
    std::this_thread::sleep_for(50ms);
  }

  for (int look = 0; look < 3; ++look) {
    auto listed = summaries();
    ASSERT_EQ(listed.size(), 2u);
    const Json& waiting = listed["s1"];
    EXPECT_EQ(waiting["open"], false) << waiting.dump();
    EXPECT_EQ(waiting["status"], "awaiting_input") << waiting.dump();
    const Json& done = listed["s2"];
    EXPECT_EQ(done["open"], false) << done.dump();
    EXPECT_EQ(done["status"], "idle");
    EXPECT_TRUE(done["name"].is_null());
    EXPECT_EQ(done["model"]["id"], "test") << done.dump();  // the model its answer came from
    EXPECT_EQ(done["activity"]["updatedAt"], s2_last["timestamp"]);
    EXPECT_EQ(open_count(), 0) << "looking at the list opened a session";
  }

  // Not held: a second server opens the waiting session and answers it.
  int other_port = port_;
  const pid_t first = pid_;
  pid_ = -1;
  start_server(options);
  const std::string request_id = call("GET", "/v1/sessions/s1/refs/main/inputs").json()["inputs"][0]["id"];
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/inputs/" + request_id, Json{{"decision", "allow"}}).status, 200);
  ASSERT_EQ(wait_settled("s1", "main"), "idle");
  const Json s1_last = records("s1").back();
  // The server that holds it says so from its live state.
  const Json held = summaries()["s1"];
  EXPECT_EQ(held["open"], true) << held.dump();
  EXPECT_EQ(held["status"], "idle") << held.dump();
  // The first server's list reads what the other appended.
  std::swap(port_, other_port);
  const Json read = summaries()["s1"];
  EXPECT_EQ(read["open"], false) << read.dump();
  EXPECT_EQ(read["status"], "idle") << read.dump();
  EXPECT_EQ(read["activity"]["updatedAt"], s1_last["timestamp"]);
  EXPECT_EQ(open_count(), 0);
  std::swap(port_, other_port);
  ::kill(first, SIGKILL);
  ::waitpid(first, nullptr, 0);
}

// ---- hostile clients ---------------------------------------------------------------

TEST_F(ServeTest, HostileRequestsNeverCrashTheServerNorChangeASession) {
  start_server({"--request-timeout", "0.3", "--max-body", "100000"});
  create_session("s1");
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", "say a"}}).status, 202);
  ASSERT_EQ(wait_settled("s1", "main"), "idle");
  const std::size_t before = records("s1").size();
  const std::string auth = "Authorization: Bearer " + token_;

  EXPECT_EQ(serve_raw(port_, "GARBAGE\r\n\r\n").status, 400);
  EXPECT_EQ(serve_raw(port_, "GET / HTTP/9.9\r\n\r\n").status, 400);
  EXPECT_EQ(serve_raw(port_, serve_request_text("POST", "/v1/sessions/s1/refs/main/prompt", std::string(200000, 'x'), {auth})).status, 413);
  EXPECT_EQ(serve_raw(port_, fmt::format("GET /healthz HTTP/1.1\r\nX-Big: {}\r\n\r\n", std::string(40000, 'a'))).status, 431);
  // Truncated: a body shorter than its length, then silence; the server gives up.
  const auto t0 = std::chrono::steady_clock::now();
  const ServeReply truncated = serve_raw(port_, fmt::format("POST /v1/sessions/s1/refs/main/prompt HTTP/1.1\r\n{}\r\n"
                                                             "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"text\"", auth), 10s);
  EXPECT_EQ(truncated.status, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 8s);

  // Slowloris: a header trickling in is cut off at the request timeout
  // while other clients are served.
  const int slow = connect_loopback(port_);
  ASSERT_GE(slow, 0);
  send_all_bytes(slow, "GET /healthz HTTP/1.1\r\n");
  bool cut = false;
  for (int i = 0; i < 40 && !cut; ++i) {
    cut = !send_all_bytes(slow, "X-A: b\r\n");
    EXPECT_EQ(serve_raw(port_, serve_request_text("GET", "/healthz", "", {})).status, 200);
    std::this_thread::sleep_for(100ms);
    pollfd p{slow, POLLIN, 0};
    if (::poll(&p, 1, 0) > 0) {
      char byte;
      cut = ::recv(slow, &byte, 1, MSG_DONTWAIT) == 0 || cut;
    }
  }
  ::close(slow);
  EXPECT_TRUE(cut) << "the slow client was never cut off";

  // Random damage to a valid request: whatever comes back, no 2xx means no change.
  std::mt19937 random(7);
  const std::string valid = serve_request_text("POST", "/v1/sessions/s1/refs/main/steer", Json{{"text", "x"}}.dump(),
                                         {auth, "Content-Type: application/json"});
  const int rounds = testing::scaled(300);
  for (int i = 0; i < rounds; ++i) {
    std::string mutated = valid;
    const int edits = std::uniform_int_distribution<int>(1, 4)(random);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = std::uniform_int_distribution<std::size_t>(0, mutated.size() - 1)(random);
      switch (std::uniform_int_distribution<int>(0, 2)(random)) {
        case 0: mutated[at] = static_cast<char>(random()); break;
        case 1: mutated.erase(at, 1); break;
        default: mutated.insert(at, 1, static_cast<char>(random())); break;
      }
    }
    const ServeReply reply = serve_raw(port_, mutated, 3s);
    EXPECT_FALSE(reply.status >= 200 && reply.status < 300 && reply.status != 0 && records("s1").size() != before);
  }
  EXPECT_EQ(serve_raw(port_, serve_request_text("GET", "/healthz", "", {})).status, 200);
  EXPECT_EQ(records("s1").size(), before);
}

// ---- A2A -------------------------------------------------------------------------

// The official JavaScript client (tests/a2a, installed by scripts/install-deps
// with npm ci) over each binding: discovery, blocking and streaming sends,
// steering, cancel, input required and answered, get, list, subscribe.
TEST_F(ServeTest, A2aConformanceThroughTheOfficialClientOverBothBindings) {
  ASSERT_TRUE(std::filesystem::exists(std::filesystem::path(CAIRN_A2A_DIR) / "node_modules" / "@a2a-js" / "sdk"))
      << "the A2A client is not installed: run scripts/install-deps (npm ci in tests/a2a)";
  start_server({"--approval", "ask"});
  for (const std::string binding : {"JSONRPC", "HTTP+JSON"}) {
    const auto out = path(fmt::format("a2a-{}.txt", binding == "JSONRPC" ? "jsonrpc" : "rest"));
    const std::string command = fmt::format("cd '{}' && node conformance.mjs {} {} '{}' > '{}' 2>&1", CAIRN_A2A_DIR, port_,
                                            token_, binding, out.string());
    const int status = std::system(command.c_str());
    EXPECT_EQ(status, 0) << serve_slurp(out) << serve_slurp(err_);
    // Every check ran and passed (a script that stopped early would say less).
    EXPECT_EQ(testing::lines_of(serve_slurp(out)).size(), 11u) << serve_slurp(out);
  }
}

// Our cursor extension: SubscribeToTask with Last-Event-ID goes on after
// that record, so a client cut off mid-task misses nothing and sees nothing twice.
TEST_F(ServeTest, A2aSubscribeResumesAfterLastEventId) {
  start_server();
  const std::string auth = "Authorization: Bearer " + token_;
  const Json send = {{"message", {{"messageId", "m1"}, {"role", "ROLE_USER"}, {"parts", {{{"text", "loop 4"}}}}}},
                     {"configuration", {{"returnImmediately", true}}}};
  const ServeReply sent = serve_raw(port_, serve_request_text("POST", "/a2a/rest/message:send", send.dump(),
                                                              {auth, "Content-Type: application/json", "A2A-Version: 1.0"}));
  ASSERT_EQ(sent.status, 200) << sent.body;
  const std::string task = sent.json()["task"]["id"];
  std::string encoded;
  for (char c : task) encoded += c == '/' ? std::string("%2F") : std::string(1, c);
  const std::string target = "/a2a/rest/tasks/" + encoded + ":subscribe";

  std::vector<std::int64_t> seen;
  std::optional<std::int64_t> last;
  std::string final_state;
  for (int attempt = 0; attempt < 50 && final_state.empty(); ++attempt) {
    ServeStreamClient stream(port_, target, token_, last);
    ASSERT_EQ(stream.status(), 200);
    auto first = stream.next();
    ASSERT_TRUE(first);
    ASSERT_TRUE(first->data.contains("task")) << first->data.dump();
    // Two updates at most per connection, then cut.
    for (int i = 0; i < 2 && final_state.empty(); ++i) {
      auto frame = stream.next();
      if (!frame) break;
      if (frame->id) {
        EXPECT_EQ(frame->data.begin().value()["metadata"]["cairn.seq"], *frame->id);
        seen.push_back(*frame->id);
        last = frame->id;
      }
      if (frame->data.contains("statusUpdate")) {
        const std::string state = frame->data["statusUpdate"]["status"]["state"];
        if (state != "TASK_STATE_WORKING") final_state = state;
      }
    }
  }
  EXPECT_EQ(final_state, "TASK_STATE_COMPLETED");
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end()) << "a record's event came twice";
  EXPECT_GE(seen.size(), 5u);  // four answers with calls, one with the text, and the end
}

// A task of a session the server has not open (here: after a restart) is
// read once the pool has opened it, on its own threads: the request names
// its session in its path (REST) or its params (JSON-RPC), and both share
// one open.
TEST_F(ServeTest, A2aTasksOfASessionNotOpenAreReadOnceThePoolHasOpenedIt) {
  start_server();
  const std::vector<std::string> headers = {"Content-Type: application/json", "A2A-Version: 1.0"};
  const Json send = {{"message", {{"messageId", "m1"}, {"role", "ROLE_USER"}, {"parts", {{{"text", "say hi"}}}}}}};
  const ServeReply sent = call("POST", "/a2a/rest/message:send", send.dump(), headers);
  ASSERT_EQ(sent.status, 200) << sent.body;
  const std::string task = sent.json()["task"]["id"];
  ASSERT_EQ(sent.json()["task"]["status"].value("state", ""), "TASK_STATE_COMPLETED") << sent.body;
  kill_server();
  start_server();

  std::string encoded;
  for (char c : task) encoded += c == '/' ? std::string("%2F") : std::string(1, c);
  const ServeReply rest = call("GET", "/a2a/rest/tasks/" + encoded, "", headers);
  ASSERT_EQ(rest.status, 200) << rest.body;
  EXPECT_EQ(rest.json()["status"].value("state", ""), "TASK_STATE_COMPLETED") << rest.body;
  const Json get = {{"jsonrpc", "2.0"}, {"id", 7}, {"method", "GetTask"}, {"params", {{"id", task}}}};
  const ServeReply rpc = call("POST", "/a2a/jsonrpc", get.dump(), headers);
  ASSERT_EQ(rpc.status, 200) << rpc.body;
  EXPECT_EQ(rpc.json()["result"]["status"].value("state", ""), "TASK_STATE_COMPLETED") << rpc.body;
  const ServeReply metrics = call("GET", "/metrics");
  EXPECT_NE(metrics.body.find("cairn_session_opens_total 1\n"), std::string::npos) << metrics.body;
  EXPECT_NE(metrics.body.find("route=\"/a2a/rest/tasks/{rest...}\",status=\"200\""), std::string::npos) << metrics.body;
}

// ---- crash -------------------------------------------------------------------------

TEST_F(ServeTest, AKilledServerResumesEveryRunAndRunsNoToolTwice) {
  start_server();
  create_session("s1");
  const int runs = std::max(4, testing::scaled(20));
  for (int i = 0; i < runs; ++i) {
    if (i > 0) {
      ASSERT_EQ(call("POST", "/v1/sessions/s1/refs", Json{{"name", fmt::format("r{}", i)}}).status, 201);
    }
  }
  for (int i = 0; i < runs; ++i) {
    const std::string ref = i == 0 ? "main" : fmt::format("r{}", i);
    ASSERT_EQ(call("POST", fmt::format("/v1/sessions/s1/refs/{}/prompt", ref),
                   Json{{"text", fmt::format("touch slowly t{}", i)}})
                  .status,
              202);
  }
  // Killed while the runs are at different points: some have started their
  // command (or ran it), others have not yet got their first answer. The
  // answer after the command streams for 1.2 s, so that however loaded the
  // machine, the kill lands before every run has finished (a run that
  // finished leaves nothing to resume, and the check below would fail).
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  for (;;) {
    int started = 0;
    for (const auto& record : records("s1")) started += record["type"] == "tool_started";
    if (started >= runs / 2) break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
  }
  kill_server();
  start_server();
  EXPECT_NE(serve_slurp(err_).find("resuming run"), std::string::npos) << serve_slurp(err_);
  for (int i = 0; i < runs; ++i) {
    const std::string ref = i == 0 ? "main" : fmt::format("r{}", i);
    EXPECT_EQ(wait_settled("s1", ref), "idle") << ref;
  }
  // Each command ran at most once; the ones killed mid-call were not run
  // again (their result says so), and every run finished.
  std::map<std::string, int> ran;
  for (const auto& line : testing::lines_of(serve_slurp(path("work/ran.txt")))) ++ran[line];
  for (const auto& [name, count] : ran) EXPECT_EQ(count, 1) << name;
  std::map<std::string, int> open;
  for (const auto& record : records("s1")) {
    if (record["type"] == "operation_started") ++open[record["id"]];
    if (record["type"] == "operation_finished") --open[record["runId"]];
  }
  for (const auto& [run, count] : open) EXPECT_EQ(count, 0) << run;
  kill_server();
  err_ = path("verify.err");
  const pid_t verify = spawn({"verify", "--store", store(), "s1"}, err_);
  int status = 0;
  ::waitpid(verify, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 0) << serve_slurp(err_) << serve_slurp(err_.string() + ".out");
}

// Two servers on one PostgreSQL database, as on two machines. Server A
// holds the session (it opened it to run); server B cannot open it (its
// requests are relayed to A), but its streams follow the records A appends — in seq order, each once, no gap,
// across a reconnect with Last-Event-ID — and its records route reads them.
TEST_F(ServeTest, AWatcherOnAnotherServerFollowsARunsRecordsInOrderWithNoGap) {
  std::string why;
  store_uri_ = testing::PgCluster::shared_database(&why);
  ASSERT_FALSE(store_uri_.empty()) << why;
  start_server();
  const pid_t server_a = std::exchange(pid_, -1);
  const int port_a = port_;
  start_server();
  const int port_b = port_;
  port_ = port_a;
  create_session("shared");
  ASSERT_EQ(call("POST", "/v1/sessions/shared/refs/main/prompt", Json{{"text", "say first"}}).status, 202);
  ASSERT_EQ(wait_settled("shared", "main"), "idle");
  const std::int64_t before = static_cast<std::int64_t>(records("shared").size()) - 1;

  port_ = port_b;
  // B cannot open it: a request for it is relayed to A, which answers it.
  const ServeReply relayed = call("GET", "/v1/sessions/shared/refs/main");
  EXPECT_EQ(relayed.status, 200) << relayed.body;
  EXPECT_EQ(relayed.headers.count("cairn-inbox-item"), 1u);
  auto stream = std::make_unique<ServeStreamClient>(port_b, "/v1/sessions/shared/refs/main/events", token_);
  ASSERT_EQ(stream->status(), 200);
  auto snapshot = stream->next();
  ASSERT_TRUE(snapshot);
  ASSERT_EQ(snapshot->data["type"], "snapshot") << snapshot->data.dump();
  EXPECT_EQ(snapshot->data["cursor"], before);
  EXPECT_EQ(snapshot->id, before);
  EXPECT_EQ(snapshot->data["transcript"].size(), 2u) << snapshot->data.dump();
  EXPECT_NE(snapshot->data.value("writer", "").find(fmt::format("pid {}", server_a)), std::string::npos)
      << snapshot->data.dump();
  ServeStreamClient whole(port_b, "/v1/sessions/shared/events", token_);
  ASSERT_EQ(whole.status(), 200);
  auto whole_snapshot = whole.next();
  ASSERT_TRUE(whole_snapshot);
  ASSERT_EQ(whole_snapshot->data["type"], "snapshot");
  ASSERT_EQ(whole_snapshot->data["refs"].size(), 1u);
  EXPECT_EQ(whole_snapshot->data["refs"][0]["name"], "main");

  port_ = port_a;
  ASSERT_EQ(call("POST", "/v1/sessions/shared/refs/main/prompt", Json{{"text", "loop 4"}}).status, 202);
  std::vector<std::int64_t> seqs;
  std::optional<std::int64_t> last_id = snapshot->id;
  int read = 0;
  for (bool ended = false; !ended;) {
    auto frame = stream->next();
    ASSERT_TRUE(frame) << "server B's stream stalled after seq " << last_id.value_or(-1);
    ASSERT_TRUE(frame->id) << "only records cross from server A: " << frame->data.dump();
    EXPECT_EQ(frame->data["type"], "record");
    serve_take_records(*frame, seqs, last_id);
    ended = frame->data["record"]["type"] == "operation_finished";
    if (++read == 3) {  // a cut: the reconnect goes on from the last id
      stream->close();
      stream = std::make_unique<ServeStreamClient>(port_b, "/v1/sessions/shared/refs/main/events", token_, last_id);
      ASSERT_EQ(stream->status(), 200);
    }
  }
  ASSERT_EQ(wait_settled("shared", "main"), "idle");
  const std::vector<Json> log = records("shared");
  std::vector<std::int64_t> expected;
  for (const auto& record : log) {
    if (record["seq"].get<std::int64_t>() > before) expected.push_back(record["seq"]);
  }
  EXPECT_EQ(seqs, expected);
  std::vector<std::int64_t> whole_seqs;
  std::optional<std::int64_t> whole_last;
  while (whole_seqs.size() < expected.size()) {
    auto frame = whole.next();
    ASSERT_TRUE(frame) << "the session stream stalled";
    serve_take_records(*frame, whole_seqs, whole_last);
  }
  EXPECT_EQ(whole_seqs, expected);

  port_ = port_b;
  EXPECT_EQ(records("shared"), log) << "server B reads the log from the store";
  ::kill(server_a, SIGTERM);
  int status = 0;
  ::waitpid(server_a, &status, 0);
  EXPECT_TRUE(WIFEXITED(status)) << status;
}

}  // namespace
}  // namespace cairn
