// W3C Trace Context on the wire: a provider request made inside its
// cairn.llm.request span carries that span as its traceparent; with nobody
// listening nothing is added. And the span of a request the server refused
// with the key echoed back holds no key.
#include <gtest/gtest.h>

#include "cairn/llm/openai_completions.hpp"
#include "cairn/llm/wire_providers.hpp"
#include "llm/provider_test_support.hpp"
#include "llm/traced_stream.hpp"
#include "support/http_test_server.hpp"
#include "trace/span_collector.hpp"

namespace cairn::testing {
namespace {

constexpr const char* kPropagationKey = "sk-propagation-0123456789";

Model completions_model(const HttpTestServer& server) {
  Model model;
  model.provider = "openai";
  model.id = "gpt-4o";
  model.api = "openai-completions";
  model.base_url = server.url("/v1");
  return model;
}

ProviderResponse traced_request(const HttpTestServer& server) {
  auto provider = make_openai_completions_provider(kPropagationKey);
  return stream_traced(*provider, completions_model(server), hello_context(), StreamOptions{}, {}, {}, {},
                       Secrets({kPropagationKey}));
}

TEST(TracePropagation, AProviderRequestCarriesItsSpanAsTraceparent) {
  no_proxy_for_the_test_server();
  HttpTestServer server(sse_script("openai-completions/text.sse"));
  SpanCollector collector;
  collector.start();
  {
    trace::Span outer("caller");
    ASSERT_EQ(traced_request(server).message.stop_reason, StopReason::stop);
  }
  collector.stop();
  const SpanForest forest = SpanForest::from_events(collector.events());
  const TestSpan& request = forest.only("cairn.llm.request");
  EXPECT_EQ(forest.parent_of(request).name, "caller");
  EXPECT_EQ(request.attributes.at("gen_ai.usage.input_tokens"), 176);
  EXPECT_EQ(request.attributes.at("gen_ai.response.model"), "gpt-4o");
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].header("traceparent"), fmt::format("00-{}-{}-01", request.trace_id, request.id));
}

TEST(TracePropagation, NobodyListeningSendsNoTraceparent) {
  no_proxy_for_the_test_server();
  HttpTestServer server(sse_script("openai-completions/text.sse"));
  ASSERT_EQ(traced_request(server).message.stop_reason, StopReason::stop);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_FALSE(requests[0].header("traceparent"));
}

TEST(TracePropagation, ARefusedRequestIsAnErrorSpanWithoutTheKey) {
  no_proxy_for_the_test_server();
  HttpTestServer server(error_script(401, "Unauthorized",
                                     std::string(R"({"error":{"message":"Incorrect API key provided: )") +
                                         kPropagationKey + R"("}})"));
  SpanCollector collector;
  collector.start();
  const ProviderResponse response = traced_request(server);
  collector.stop();
  EXPECT_EQ(response.message.stop_reason, StopReason::error);
  const auto events = collector.events();
  const SpanForest forest = SpanForest::from_events(events);
  const TestSpan& request = forest.only("cairn.llm.request");
  ASSERT_TRUE(request.error);
  EXPECT_EQ(request.error->name, "provider_error");
  EXPECT_EQ(request.attributes.at("http.response.status_code"), 401);
  for (const auto& event : events) EXPECT_EQ(trace::to_json(event).dump().find(kPropagationKey), std::string::npos);
}

}  // namespace
}  // namespace cairn::testing
