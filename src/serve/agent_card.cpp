// GET /.well-known/agent-card.json: who this agent is and how to reach it
// (A2A v1.0).
#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "a2a_protocol.hpp"
#include "cairn/version.hpp"
#include "routes.hpp"

namespace cairn::serve {

Reply get_agent_card(RouteCall& call) {
  std::string host = call.request.header("host").value_or("127.0.0.1");
  // A Host header is the client's: only what a host name may hold goes into the card.
  if (host.empty() || host.size() > 255 ||
      !std::all_of(host.begin(), host.end(), [](unsigned char c) { return std::isalnum(c) || c == '.' || c == '-' || c == ':' || c == '[' || c == ']'; })) {
    host = "127.0.0.1";
  }
  const std::string base = fmt::format("http://{}", host);
  Json card = {
      {"name", "cairn"},
      {"description", "A durable coding agent: every decision is in a session log before it acts, so a task survives "
                      "crashes and restarts, and no effect happens twice."},
      {"version", CAIRN_VERSION_STRING},
      {"supportedInterfaces", Json::array({{{"url", base + "/a2a/jsonrpc"}, {"protocolBinding", "JSONRPC"}, {"protocolVersion", "1.0"}},
                                           {{"url", base + "/a2a/rest"}, {"protocolBinding", "HTTP+JSON"}, {"protocolVersion", "1.0"}}})},
      {"capabilities",
       {{"streaming", true},
        {"pushNotifications", false},
        {"extendedAgentCard", false},
        {"extensions", Json::array({{{"uri", kSeqExtension},
                                     {"description", "Each update of a stream announces one log record: its seq is in "
                                                     "metadata[\"cairn.seq\"] and is the update's SSE id; a task object's "
                                                     "metadata[\"cairn.snapshotSeq\"] is the newest record it reflects. "
                                                     "SubscribeToTask with Last-Event-ID: SEQ gives the task as the log "
                                                     "says at SEQ, then its updates after it"},
                                     {"required", false}}})}}},
      {"securitySchemes", {{"bearer", {{"httpAuthSecurityScheme", {{"scheme", "Bearer"}, {"description", "a token of cairn serve's token file"}}}}}}},
      {"securityRequirements", Json::array({{{"schemes", {{"bearer", {{"list", Json::array()}}}}}}})},
      {"defaultInputModes", {"text/plain", "application/json"}},
      {"defaultOutputModes", {"text/plain", "application/json"}},
      {"skills", Json::array({{{"id", "coding"},
                               {"name", "Coding agent"},
                               {"description", "Reads, edits and runs code in the session's directory, asking before it acts where its approval policy says so"},
                               {"tags", {"coding", "durable"}}}})}};
  return json_reply(card);
}

}  // namespace cairn::serve
