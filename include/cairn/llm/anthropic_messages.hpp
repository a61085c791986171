// The `anthropic-messages` provider: Anthropic's Messages API (POST
// {base_url}/messages with "stream": true), and every server that speaks it.
//
// A request carries the system prompt and the last user message marked for
// prompt caching, replays thinking blocks with their signatures (redacted
// thinking as its opaque data), and maps the thinking level to a thinking
// token budget. The stream's events become ProviderEvents as they arrive.
//
// StreamOptions::extra may hold:
//   "idleTimeoutMs"     the longest silence on the stream (default 300000)
//   "connectTimeoutMs"  name resolution, connect and TLS together (default 10000)
//   "thinkingBudgets"   thinking budgets replacing pi's defaults, e.g. {"medium": 4000}
#pragma once

#include <memory>
#include <string>

#include "cairn/llm/http.hpp"
#include "cairn/llm/provider.hpp"

namespace cairn {

// The key is sent as x-api-key and never appears in a message, an event or
// an error text the provider produces.
std::shared_ptr<Provider> make_anthropic_messages_provider(std::string api_key, HttpClient client = {});

}  // namespace cairn
