#include "support/http_test_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include <fmt/format.h>

namespace cairn::testing {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string trim(const std::string& s) {
  std::size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return {};
  std::size_t end = s.find_last_not_of(" \t\r\n");
  return s.substr(begin, end - begin + 1);
}

// Sends everything or gives up quietly: a client that left is what some tests want.
bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t sent = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (sent <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(sent));
  }
  return true;
}

ReceivedRequest parse_head(const std::string& head) {
  ReceivedRequest request;
  std::size_t line_end = head.find("\r\n");
  std::string first = head.substr(0, line_end);
  std::size_t space = first.find(' ');
  request.method = first.substr(0, space);
  request.target = first.substr(space + 1, first.rfind(' ') - space - 1);
  std::size_t pos = line_end + 2;
  while (pos < head.size()) {
    std::size_t next = head.find("\r\n", pos);
    if (next == std::string::npos) next = head.size();
    std::string line = head.substr(pos, next - pos);
    if (std::size_t colon = line.find(':'); colon != std::string::npos) {
      request.headers.emplace_back(lower(trim(line.substr(0, colon))), trim(line.substr(colon + 1)));
    }
    pos = next + 2;
  }
  return request;
}

}  // namespace

std::optional<std::string> ReceivedRequest::header(const std::string& name) const {
  for (const auto& [key, value] : headers) {
    if (key == name) return value;
  }
  return std::nullopt;
}

HttpTestServer::HttpTestServer(ScriptedResponse response)
    : HttpTestServer(std::vector<ScriptedResponse>{std::move(response)}) {}

HttpTestServer::HttpTestServer(Responder responder) : responses_{ScriptedResponse{}}, responder_(std::move(responder)) {
  start();
}

HttpTestServer::HttpTestServer(std::vector<ScriptedResponse> responses) : responses_(std::move(responses)) {
  if (responses_.empty()) std::abort();
  start();
}

void HttpTestServer::start() {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) std::abort();
  wake_read_ = pipe_fds[0];
  wake_write_ = pipe_fds[1];

  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) std::abort();
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(listen_fd_, 128) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    std::abort();
  }
  port_ = ntohs(address.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

HttpTestServer::~HttpTestServer() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  char byte = 1;
  (void)!::write(wake_write_, &byte, 1);
  acceptor_.join();
  for (auto& connection : connections_) connection.thread.join();
  ::close(listen_fd_);
  ::close(wake_read_);
  ::close(wake_write_);
}

std::string HttpTestServer::url(const std::string& path) const {
  return fmt::format("http://127.0.0.1:{}{}", port_, path);
}

void HttpTestServer::open_gate() {
  {
    std::lock_guard lock(mu_);
    gate_open_ = true;
  }
  changed_.notify_all();
}

std::vector<ReceivedRequest> HttpTestServer::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

bool HttpTestServer::wait_for_client_close(std::chrono::milliseconds timeout, std::size_t count) const {
  std::unique_lock lock(mu_);
  return changed_.wait_for(lock, timeout, [&] { return client_closes_.size() >= count; });
}

std::optional<std::chrono::steady_clock::time_point> HttpTestServer::first_client_close() const {
  std::lock_guard lock(mu_);
  if (client_closes_.empty()) return std::nullopt;
  return client_closes_.front();
}

int HttpTestServer::closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    std::abort();
  }
  ::close(fd);  // bound but never listening: connects to it are refused
  return ntohs(address.sin_port);
}

void HttpTestServer::accept_loop() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_read_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::list<Connection> ended;
    {
      std::lock_guard lock(mu_);
      for (auto it = connections_.begin(); it != connections_.end();) {
        auto next = std::next(it);
        if (it->done) ended.splice(ended.end(), connections_, it);
        it = next;
      }
      Connection& connection = connections_.emplace_back();
      connection.thread = std::thread([this, fd, &connection] {
        serve(fd);
        std::lock_guard done_lock(mu_);
        connection.done = true;
      });
    }
    for (auto& connection : ended) connection.thread.join();
  }
}

bool HttpTestServer::wait_readable(int fd, std::chrono::milliseconds timeout) const {
  pollfd fds[2] = {{fd, POLLIN, 0}, {wake_read_, POLLIN, 0}};
  int ready = ::poll(fds, 2, static_cast<int>(timeout.count()));
  return ready > 0 && fds[1].revents == 0;
}

bool HttpTestServer::pause(std::chrono::milliseconds delay) const {
  if (delay.count() <= 0) return true;
  pollfd wake = {wake_read_, POLLIN, 0};
  return ::poll(&wake, 1, static_cast<int>(delay.count())) == 0;
}

void HttpTestServer::wait_for_close(int fd) {
  char buffer[4096];
  for (;;) {
    pollfd fds[2] = {{fd, POLLIN, 0}, {wake_read_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0) return;  // the server is shutting down
    ssize_t got = ::recv(fd, buffer, sizeof(buffer), 0);
    if (got <= 0) {
      {
        std::lock_guard lock(mu_);
        client_closes_.push_back(std::chrono::steady_clock::now());
      }
      changed_.notify_all();
      return;
    }
  }
}

void HttpTestServer::serve(int fd) {
  // The request: a head, then a body as long as Content-Length says.
  std::string received;
  std::size_t head_end = std::string::npos;
  std::optional<ReceivedRequest> request;
  std::size_t body_length = 0;
  char buffer[4096];
  for (;;) {
    if (request && received.size() >= head_end + 4 + body_length) break;
    if (!wait_readable(fd, std::chrono::seconds(30))) {
      ::close(fd);
      return;
    }
    ssize_t got = ::recv(fd, buffer, sizeof(buffer), 0);
    if (got <= 0) {
      ::close(fd);
      return;
    }
    received.append(buffer, static_cast<std::size_t>(got));
    if (!request && (head_end = received.find("\r\n\r\n")) != std::string::npos) {
      request = parse_head(received.substr(0, head_end));
      if (auto length = request->header("content-length")) body_length = std::stoul(*length);
    }
  }
  request->body = received.substr(head_end + 4, body_length);
  std::size_t index;
  {
    std::lock_guard lock(mu_);
    index = std::min(requests_.size(), responses_.size() - 1);
    requests_.push_back(*request);
  }
  changed_.notify_all();

  const ScriptedResponse script = responder_ ? responder_(*request) : responses_[index];
  if (script.close_before_response) {
    ::close(fd);
    return;
  }
  if (script.stall_before_response) {
    wait_for_close(fd);
    ::close(fd);
    return;
  }

  bool chunked = script.framing == ScriptedResponse::Framing::chunked;
  std::string head = fmt::format("HTTP/1.1 {} {}\r\n", script.status, script.reason);
  for (const auto& [name, value] : script.headers) head += fmt::format("{}: {}\r\n", name, value);
  if (chunked) {
    head += "Transfer-Encoding: chunked\r\n";
  } else {
    std::size_t length = 0;
    for (const auto& piece : script.body) length += piece.bytes.size();
    // An unfinished body is one that promised a byte more than it sends.
    if (script.end != ScriptedResponse::End::finish) ++length;
    head += fmt::format("Content-Length: {}\r\n", length);
  }
  head += "\r\n";
  bool alive = send_all(fd, head);

  for (const auto& piece : script.body) {
    if (!alive) break;
    if (!pause(piece.delay)) break;
    if (piece.gated) {
      std::unique_lock lock(mu_);
      changed_.wait(lock, [&] { return gate_open_ || stopping_; });
      if (stopping_) break;
    }
    if (chunked) {
      alive = send_all(fd, fmt::format("{:x}\r\n", piece.bytes.size())) && send_all(fd, piece.bytes) &&
              send_all(fd, "\r\n");
    } else {
      alive = send_all(fd, piece.bytes);
    }
  }

  switch (script.end) {
    case ScriptedResponse::End::finish:
      if (alive && chunked) send_all(fd, "0\r\n\r\n");
      wait_for_close(fd);
      break;
    case ScriptedResponse::End::stall:
      wait_for_close(fd);
      break;
    case ScriptedResponse::End::close:
      break;
    case ScriptedResponse::End::reset: {
      linger abortive{1, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abortive, sizeof(abortive));
      break;
    }
  }
  ::close(fd);
}

}  // namespace cairn::testing
