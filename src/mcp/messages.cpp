#include "mcp/messages.hpp"

#include "mcp/transport.hpp"

namespace cairn::mcp {

bool is_request(const Json& message) {
  return message.is_object() && message.contains("method") && message.contains("id") && !message["id"].is_null();
}

bool is_response(const Json& message) {
  return message.is_object() && !message.contains("method") && message.contains("id") &&
         (message.contains("result") || message.contains("error"));
}

std::string method_of(const Json& message) {
  if (!message.is_object()) return {};
  auto method = message.find("method");
  return method != message.end() && method->is_string() ? method->get<std::string>() : std::string();
}

Json lost_answer_response(const Json& id, const std::string& message) {
  return Json{{"jsonrpc", "2.0"},
              {"id", id},
              {"error", {{"code", -32000}, {"message", message}, {"data", {{"cairn", kLostAnswerMark}}}}}};
}

bool is_lost_answer(const Json& error) {
  if (!error.is_object() || !error.contains("message")) return false;
  const auto data = error.find("data");
  if (data == error.end() || !data->is_object()) return false;
  const auto mark = data->find("cairn");
  return mark != data->end() && mark->is_string() && mark->get<std::string>() == kLostAnswerMark;
}

}  // namespace cairn::mcp
