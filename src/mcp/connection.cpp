#include "connection.hpp"

#include "mcp/messages.hpp"

#include <fmt/format.h>

namespace cairn::mcp {

namespace {

// What of a server's error is worth a person's reading: its message, its
// code, a little of its data.
std::string describe_rpc_error(const Json& error) {
  if (!error.is_object()) return "a malformed error";
  const auto message = error.find("message");
  std::string text = message != error.end() && message->is_string() ? message->get<std::string>() : "no message";
  if (auto code = error.find("code"); code != error.end() && code->is_number_integer()) {
    text += fmt::format(" (code {})", code->get<std::int64_t>());
  }
  if (auto data = error.find("data"); data != error.end() && !data->is_null()) {
    std::string more = data->is_string() ? data->get<std::string>() : data->dump();
    if (more.size() > 300) more = more.substr(0, 300) + "…";
    text += ": " + more;
  }
  return text;
}

}  // namespace

Result<std::shared_ptr<Connection>> Connection::open(std::unique_ptr<Transport> transport, std::string server,
                                                     Callbacks callbacks) {
  std::shared_ptr<Connection> connection(new Connection(std::move(transport), std::move(server), std::move(callbacks)));
  // The transport's threads hold the connection weakly: a connection that
  // is being destroyed gets no message.
  std::weak_ptr<Connection> weak = connection;
  auto opened = connection->transport_->open(
      [weak](Json message) {
        if (auto self = weak.lock()) self->on_message(std::move(message));
      },
      [weak](std::string why) {
        if (auto self = weak.lock()) self->on_transport_closed(std::move(why));
      });
  if (!opened) return std::unexpected(opened.error());
  return connection;
}

Connection::~Connection() { close(); }

void Connection::close() {
  if (closing_.exchange(true)) return;
  transport_->close();
  std::lock_guard lock(mu_);
  if (!closed_) {
    closed_ = true;
    closed_reason_ = "the connection was closed";
  }
  answered_.notify_all();
}

bool Connection::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

std::string Connection::closed_reason() const {
  std::lock_guard lock(mu_);
  return closed_reason_;
}

Error Connection::unavailable() const {
  return Error(Errc::server_unavailable, fmt::format("MCP server '{}': {}", server_, closed_reason_));
}

void Connection::set_protocol_version(const std::string& version) { transport_->set_protocol_version(version); }

Status Connection::notify(const std::string& method, Json params) {
  Json message = {{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) message["params"] = std::move(params);
  return transport_->send(message);
}

Result<Json> Connection::request(const std::string& method, Json params, std::chrono::milliseconds timeout,
                                 std::stop_token cancel, std::function<void(const CallProgress&)> progress) {
  std::int64_t id;
  const bool wants_progress = static_cast<bool>(progress);
  {
    std::lock_guard lock(mu_);
    if (closed_) return std::unexpected(unavailable());
    id = next_id_++;
    pending_[id].progress = std::move(progress);
  }
  if (!params.is_object()) params = Json::object();
  // The request's id is its progress token: notifications/progress names it.
  if (wants_progress) params["_meta"]["progressToken"] = id;
  Json message = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
  if (auto sent = transport_->send(message); !sent) {
    std::lock_guard lock(mu_);
    pending_.erase(id);
    return std::unexpected(Error(Errc::server_unavailable,
                                 fmt::format("MCP server '{}': {}", server_, sent.error().message)));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // A stop request wakes the wait at once.
  std::stop_callback on_cancel(cancel, [this] {
    std::lock_guard lock(mu_);
    answered_.notify_all();
  });
  std::unique_lock lock(mu_);
  const bool ended = answered_.wait_until(lock, deadline, [&] {
    return closed_ || cancel.stop_requested() || pending_[id].answered;
  });
  // A progress callback of this call still running: it ends before we
  // return (and no other starts once the entry is gone).
  answered_.wait(lock, [&] { return pending_[id].progress_running == 0; });
  const bool answered = pending_[id].answered;
  Json response = std::move(pending_[id].response);
  pending_.erase(id);
  if (answered) {
    lock.unlock();
    if (auto error = response.find("error"); error != response.end()) {
      if (is_lost_answer(*error)) {
        // Not the server's answer: the transport's word that none came.
        const auto why = error->find("message");
        return std::unexpected(Error(Errc::server_unavailable,
                                     fmt::format("MCP server '{}' gave no answer to {}: {}", server_, method,
                                                 why->is_string() ? why->get<std::string>() : "no reason")));
      }
      return std::unexpected(Error(Errc::server_error, fmt::format("MCP server '{}' answered {} with an error: {}",
                                                                   server_, method, describe_rpc_error(*error))));
    }
    if (auto result = response.find("result"); result != response.end() && result->is_object()) {
      return std::move(*result);
    }
    return std::unexpected(
        Error(Errc::server_error, fmt::format("MCP server '{}' answered {} without a result object", server_, method)));
  }
  if (closed_) return std::unexpected(unavailable());
  lock.unlock();
  // Timed out or cancelled: the server is told, and the answer, if it
  // still comes, is dropped (its id is no longer pending).
  const bool cancelled = ended && cancel.stop_requested();
  (void)notify("notifications/cancelled",
               {{"requestId", id}, {"reason", cancelled ? "the user aborted the call" : "the call timed out"}});
  if (cancelled) {
    return std::unexpected(Error(Errc::cancelled, fmt::format("MCP server '{}': {} was cancelled", server_, method)));
  }
  return std::unexpected(Error(Errc::timed_out, fmt::format("MCP server '{}' did not answer {} within {} s", server_,
                                                            method, static_cast<double>(timeout.count()) / 1000)));
}

void Connection::on_message(Json message) {
  if (!message.is_object()) return;
  const auto method = message.find("method");
  const auto id = message.find("id");
  if (method == message.end()) {
    // A response: to a request of ours still waiting, or dropped.
    if (id == message.end() || !id->is_number_integer()) return;
    std::lock_guard lock(mu_);
    if (auto it = pending_.find(id->get<std::int64_t>()); it != pending_.end()) {
      it->second.response = std::move(message);
      it->second.answered = true;
      answered_.notify_all();
    }
    return;
  }
  if (!method->is_string()) return;
  if (id != message.end()) {
    answer_server_request(message);
    return;
  }
  const std::string name = method->get<std::string>();
  const Json params = message.value("params", Json::object());
  if (name == "notifications/progress" && params.is_object()) {
    const auto token = params.find("progressToken");
    if (token == params.end() || !token->is_number_integer()) return;
    const std::int64_t call = token->get<std::int64_t>();
    CallProgress update;
    if (auto value = params.find("progress"); value != params.end() && value->is_number()) update.progress = value->get<double>();
    if (auto total = params.find("total"); total != params.end() && total->is_number()) update.total = total->get<double>();
    if (auto text = params.find("message"); text != params.end() && text->is_string()) update.message = text->get<std::string>();
    std::function<void(const CallProgress&)> progress;
    {
      std::lock_guard lock(mu_);
      auto it = pending_.find(call);
      if (it == pending_.end() || !it->second.progress) return;
      progress = it->second.progress;
      ++it->second.progress_running;
    }
    // Ended however it ends: the waiting request is released.
    struct Done {
      Connection& self;
      std::int64_t call;
      ~Done() {
        std::lock_guard lock(self.mu_);
        if (auto it = self.pending_.find(call); it != self.pending_.end()) --it->second.progress_running;
        self.answered_.notify_all();
      }
    } done{*this, call};
    progress(update);
  } else if (name == "notifications/tools/list_changed") {
    if (callbacks_.on_tools_changed) callbacks_.on_tools_changed();
  }
  // Other notifications (logging, resources) are not ours to act on.
}

// This client declares no capabilities (no sampling, roots or elicitation),
// so a server's request other than ping is refused, as JSON-RPC says.
void Connection::answer_server_request(const Json& message) {
  Json reply = {{"jsonrpc", "2.0"}, {"id", message["id"]}};
  if (message["method"] == "ping") {
    reply["result"] = Json::object();
  } else {
    reply["error"] = {{"code", -32601}, {"message", "cairn does not offer this capability"}};
  }
  (void)transport_->send(reply);  // a server that cannot be written to is found by its transport's end
}

void Connection::on_transport_closed(std::string why) {
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;
    closed_reason_ = std::move(why);
    answered_.notify_all();
  }
  if (callbacks_.on_closed) callbacks_.on_closed(closed_reason());
}

}  // namespace cairn::mcp
