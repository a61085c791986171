#include "curl_support.hpp"

#include <pthread.h>
#include <time.h>

#include <fmt/format.h>

namespace cairn::curl {

std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

Status ensure_initialized() {
  static const CURLcode code = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (code != CURLE_OK) return fail(Errc::io_error, fmt::format("libcurl failed to initialise: {}", curl_easy_strerror(code)));
  return {};
}

namespace {

sigset_t sigpipe_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  return set;
}

bool sigpipe_pending() {
  sigset_t pending;
  sigemptyset(&pending);
  return sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
}

}  // namespace

SigpipeBlock::SigpipeBlock() {
  sigset_t pipe = sigpipe_set();
  if (pthread_sigmask(SIG_BLOCK, &pipe, &old_mask_) != 0) return;
  // If it was blocked before, or is pending for someone else, it is not ours
  // to swallow.
  active_ = sigismember(&old_mask_, SIGPIPE) == 0 && !sigpipe_pending();
  if (!active_) pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

SigpipeBlock::~SigpipeBlock() {
  if (!active_) return;
  if (sigpipe_pending()) {
    sigset_t pipe = sigpipe_set();
    timespec zero{};
    sigtimedwait(&pipe, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

}  // namespace cairn::curl
