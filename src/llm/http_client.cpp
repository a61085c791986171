#include <algorithm>
#include <charconv>
#include <exception>

#include <fmt/format.h>

#include "cairn/llm/http.hpp"
#include "cairn/trace.hpp"
#include "curl_support.hpp"

namespace cairn {
namespace {

using Clock = std::chrono::steady_clock;

// What the transfer's callbacks share with the loop that drives it. Everything
// here is touched on the calling thread only: curl runs its callbacks inside
// curl_multi_perform.
struct Transfer {
  const HttpClient::OnHeaders* on_headers = nullptr;
  const HttpClient::OnBody* on_body = nullptr;
  std::stop_token cancel;
  int status = 0;
  HttpHeaders headers;
  bool headers_delivered = false;
  bool connected = false;
  Clock::time_point last_activity;
  curl_off_t uploaded = 0;
  std::exception_ptr exception;  // thrown by a callback; rethrown once curl is out of the way
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

// "HTTP/1.1 429 Too Many Requests", "HTTP/2 200": the number after the first space.
int parse_status(std::string_view line) {
  std::size_t space = line.find(' ');
  if (space == std::string_view::npos) return 0;
  std::string_view rest = line.substr(space + 1);
  int status = 0;
  std::from_chars(rest.data(), rest.data() + rest.size(), status);
  return status;
}

// curl hands over one whole header line per call: the status line of every
// response (1xx interim ones, too), the fields, the blank line ending them,
// and trailers after a chunked body.
std::size_t on_header_line(char* data, std::size_t size, std::size_t count, void* user) {
  auto& transfer = *static_cast<Transfer*>(user);
  std::size_t bytes = size * count;
  transfer.last_activity = Clock::now();
  transfer.connected = true;
  if (transfer.headers_delivered) return bytes;  // trailers: not part of the API

  std::string_view raw(data, bytes);
  std::string_view line = trim(raw);
  if (raw.starts_with("HTTP/")) {
    transfer.status = parse_status(line);
    transfer.headers.clear();
  } else if (line.empty()) {
    if (transfer.status >= 100 && transfer.status < 200) return bytes;  // 100 Continue and the like
    transfer.headers_delivered = true;
    try {
      (*transfer.on_headers)(transfer.status, transfer.headers);
    } catch (...) {
      transfer.exception = std::current_exception();
      return 0;
    }
  } else if ((raw.front() == ' ' || raw.front() == '\t') && !transfer.headers.empty()) {
    // An obsolete folded continuation of the previous field.
    transfer.headers.back().second += ' ';
    transfer.headers.back().second += line;
  } else if (std::size_t colon = line.find(':'); colon != std::string_view::npos) {
    transfer.headers.emplace_back(curl::ascii_lower(trim(line.substr(0, colon))), std::string(trim(line.substr(colon + 1))));
  }
  return bytes;
}

std::size_t on_body_bytes(char* data, std::size_t size, std::size_t count, void* user) {
  auto& transfer = *static_cast<Transfer*>(user);
  std::size_t bytes = size * count;
  transfer.last_activity = Clock::now();
  if (transfer.cancel.stop_requested()) return 0;  // a short count fails the transfer
  try {
    (*transfer.on_body)(std::string_view(data, bytes));
  } catch (...) {
    transfer.exception = std::current_exception();
    return 0;
  }
  return bytes;
}

// Called often while the transfer runs: the request body's progress counts as
// activity (a large upload is not a silence), and a stop request aborts.
int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t uploaded) {
  auto& transfer = *static_cast<Transfer*>(user);
  if (uploaded != transfer.uploaded) {
    transfer.uploaded = uploaded;
    transfer.last_activity = Clock::now();
  }
  return transfer.cancel.stop_requested() ? 1 : 0;
}

HttpFailure classify(CURLcode code) {
  switch (code) {
    case CURLE_OK:
      return HttpFailure::none;
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:  // only the connect timeout is set
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_PROXY:
      return HttpFailure::connect_failed;
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_HTTP3:
      return HttpFailure::connection_reset;
    default:
      return HttpFailure::other;
  }
}

// curl's own description; it names hosts and ports but never the request's
// headers or body, and not the URL's query, where some APIs put their keys.
std::string describe(CURLcode code, const char* error_buffer) {
  if (error_buffer[0] != '\0') return fmt::format("{} ({})", error_buffer, static_cast<int>(code));
  return fmt::format("{} ({})", curl::api().easy_strerror(code), static_cast<int>(code));
}

HttpResult failed(HttpFailure failure, std::string message) {
  HttpResult result;
  result.failure = failure;
  result.message = std::move(message);
  return result;
}

// One header line as curl takes it; "Name;" is its spelling for an empty value.
std::string header_line(const std::pair<std::string, std::string>& header) {
  if (header.second.empty()) return header.first + ";";
  return header.first + ": " + header.second;
}

}  // namespace

std::optional<std::string_view> find_header(const HttpHeaders& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (key == name) return value;
  }
  return std::nullopt;
}

std::string_view to_string(HttpFailure failure) {
  switch (failure) {
    case HttpFailure::none: return "none";
    case HttpFailure::connect_failed: return "connect_failed";
    case HttpFailure::connection_reset: return "connection_reset";
    case HttpFailure::idle_timeout: return "idle_timeout";
    case HttpFailure::cancelled: return "cancelled";
    case HttpFailure::other: return "other";
  }
  return "other";
}

HttpResult HttpClient::stream(const HttpRequest& request, const OnHeaders& on_headers, const OnBody& on_body,
                              std::stop_token cancel) const {
  if (auto init = curl::ensure_initialized(); !init) return failed(HttpFailure::other, init.error().message);
  if (cancel.stop_requested()) return failed(HttpFailure::cancelled, "cancelled before the request was sent");

  curl::Easy easy(curl::api().easy_init());
  curl::Multi multi(curl::api().multi_init());
  if (!easy || !multi) return failed(HttpFailure::other, "libcurl could not allocate a handle");

  // A line break in a header would let it smuggle in others.
  for (const auto& [name, value] : request.headers) {
    if (name.find_first_of("\r\n:") != std::string::npos || value.find_first_of("\r\n") != std::string::npos) {
      return failed(HttpFailure::other, fmt::format("request header '{}' holds a line break (or its name a colon)",
                                                    name.find_first_of("\r\n") == std::string::npos ? name : "?"));
    }
  }

  curl::Slist header_list;
  auto add_header = [&](const std::string& line) {
    curl_slist* grown = curl::api().slist_append(header_list.get(), line.c_str());
    if (grown == nullptr) return false;
    if (!header_list) header_list.reset(grown);  // later appends keep the same head
    return true;
  };
  for (const auto& header : request.headers) {
    if (!add_header(header_line(header))) return failed(HttpFailure::other, "out of memory building the request headers");
  }
  // W3C Trace Context: a request made inside a span (a provider request
  // in cairn.llm.request) carries it, unless the caller set its own.
  if (!find_header(request.headers, "traceparent")) {
    if (std::string parent = trace::traceparent(); !parent.empty() && !add_header("traceparent: " + parent)) {
      return failed(HttpFailure::other, "out of memory building the request headers");
    }
  }
  // curl would otherwise wait up to a second for "100 Continue" before
  // sending a large body, which LLM requests often are.
  if (!add_header("Expect:")) return failed(HttpFailure::other, "out of memory building the request headers");

  Transfer transfer;
  transfer.on_headers = &on_headers;
  transfer.on_body = &on_body;
  transfer.cancel = cancel;
  char error_buffer[CURL_ERROR_SIZE] = {};

  CURL* e = easy.get();
  CURLcode set = CURLE_OK;
  auto check = [&set](CURLcode code) {
    if (set == CURLE_OK) set = code;
  };
  check(curl::setopt(e, CURLOPT_URL, request.url.c_str()));
  check(curl::setopt(e, CURLOPT_PROTOCOLS_STR, "http,https"));
  check(curl::setopt(e, CURLOPT_HTTPHEADER, header_list.get()));
  // Signals are no way to time out a resolver in a threaded program.
  check(curl::setopt(e, CURLOPT_NOSIGNAL, 1L));
  // Whatever encodings this libcurl can decode; on_body sees plain bytes.
  check(curl::setopt(e, CURLOPT_ACCEPT_ENCODING, ""));
  // The defaults, stated: a model API is never reached without checking whom.
  check(curl::setopt(e, CURLOPT_SSL_VERIFYPEER, 1L));
  check(curl::setopt(e, CURLOPT_SSL_VERIFYHOST, 2L));
  // A proxy's "200 Connection established" is not the response.
  check(curl::setopt(e, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L));
  // Streams stay silent for long stretches; keep NAT tables from forgetting them.
  check(curl::setopt(e, CURLOPT_TCP_KEEPALIVE, 1L));
  check(curl::setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(request.connect_timeout.count())));
  check(curl::setopt(e, CURLOPT_ERRORBUFFER, error_buffer));
  check(curl::setopt(e, CURLOPT_HEADERFUNCTION, on_header_line));
  check(curl::setopt(e, CURLOPT_HEADERDATA, &transfer));
  check(curl::setopt(e, CURLOPT_WRITEFUNCTION, on_body_bytes));
  check(curl::setopt(e, CURLOPT_WRITEDATA, &transfer));
  check(curl::setopt(e, CURLOPT_NOPROGRESS, 0L));
  check(curl::setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress));
  check(curl::setopt(e, CURLOPT_XFERINFODATA, &transfer));
  if (request.method == "GET") {
    check(curl::setopt(e, CURLOPT_HTTPGET, 1L));
  } else if (request.method == "HEAD") {
    check(curl::setopt(e, CURLOPT_NOBODY, 1L));
  } else {
    // `request` outlives the transfer, so curl may read the body in place.
    check(curl::setopt(e, CURLOPT_POSTFIELDS, request.body.data()));
    check(curl::setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size())));
    if (request.method != "POST") check(curl::setopt(e, CURLOPT_CUSTOMREQUEST, request.method.c_str()));
  }
  if (set != CURLE_OK) return failed(HttpFailure::other, describe(set, error_buffer));

  curl::Attachment attachment(multi.get(), e);
  if (attachment.code() != CURLM_OK) return failed(HttpFailure::other, curl::api().multi_strerror(attachment.code()));
  // A stop request wakes curl_multi_poll at once, wherever the transfer
  // waits: for DNS, a connection, or the server's next byte. Destroyed first,
  // so it never wakes a multi handle that is gone.
  std::stop_callback wake_on_stop(cancel, [m = multi.get()] { curl::api().multi_wakeup(m); });
  curl::SigpipeBlock no_sigpipe;

  transfer.last_activity = Clock::now();
  std::optional<CURLcode> done;
  HttpResult result;
  for (;;) {
    if (cancel.stop_requested()) {
      result = failed(HttpFailure::cancelled, "cancelled");
      break;
    }
    int running = 0;
    if (CURLMcode code = curl::api().multi_perform(multi.get(), &running); code != CURLM_OK) {
      result = failed(HttpFailure::other, curl::api().multi_strerror(code));
      break;
    }
    if (transfer.exception) break;
    if (running == 0) {
      int left = 0;
      while (CURLMsg* message = curl::api().multi_info_read(multi.get(), &left)) {
        if (message->msg == CURLMSG_DONE) done = message->data.result;
      }
      if (!done) result = failed(HttpFailure::other, "libcurl ended the transfer without a result");
      break;
    }

    Clock::time_point now = Clock::now();
    if (!transfer.connected) {
      // The idle clock starts once the connection is up; until then the
      // connect timeout is the one that applies.
      curl_off_t pretransfer_us = 0;
      curl::api().easy_getinfo(e, CURLINFO_PRETRANSFER_TIME_T, &pretransfer_us);
      if (pretransfer_us > 0) {
        transfer.connected = true;
        transfer.last_activity = now;
      }
    }
    auto wait = std::chrono::milliseconds(1000);
    if (transfer.connected) {
      Clock::time_point deadline = transfer.last_activity + request.idle_timeout;
      if (now >= deadline) {
        result = failed(HttpFailure::idle_timeout,
                        fmt::format("no bytes from the server for {} ms", request.idle_timeout.count()));
        break;
      }
      wait = std::min(wait, std::chrono::ceil<std::chrono::milliseconds>(deadline - now));
    }
    // Returns early when a socket is ready, curl's own timers are due, or
    // wake_on_stop fires.
    if (CURLMcode code = curl::api().multi_poll(multi.get(), nullptr, 0, static_cast<int>(wait.count()), nullptr);
        code != CURLM_OK) {
      result = failed(HttpFailure::other, curl::api().multi_strerror(code));
      break;
    }
  }
  if (transfer.exception) std::rethrow_exception(transfer.exception);

  if (done) {
    if (*done != CURLE_OK && cancel.stop_requested()) {
      // The progress or write callback aborted for the stop request.
      result = failed(HttpFailure::cancelled, "cancelled");
    } else if (*done != CURLE_OK) {
      result = failed(classify(*done), describe(*done, error_buffer));
    }
  }
  if (transfer.headers_delivered) {
    result.status = transfer.status;
    result.headers = std::move(transfer.headers);
  }
  return result;
}

}  // namespace cairn
