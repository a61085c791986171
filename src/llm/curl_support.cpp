#include "curl_support.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#include <cassert>
#include <optional>
#include <type_traits>

#include <fmt/format.h>

namespace cairn::curl {

std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

namespace {

// The soname of libcurl's ABI 4, which every Debian libcurl package provides.
constexpr const char* kLibrary = "libcurl.so.4";

Api loaded;

// Opens the library and resolves every function; the reason when it cannot.
std::optional<std::string> load() {
  // Never closed: its functions are called until the process ends.
  void* library = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    return fmt::format("cannot load {} (install libcurl4): {}", kLibrary, ::dlerror());
  }
  std::optional<std::string> missing;
  auto resolve = [&](auto& function, const char* name) {
    function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(::dlsym(library, name));
    if (function == nullptr && !missing) missing = fmt::format("{} has no function {}", kLibrary, name);
  };
  resolve(loaded.global_init, "curl_global_init");
  resolve(loaded.easy_init, "curl_easy_init");
  resolve(loaded.easy_cleanup, "curl_easy_cleanup");
  resolve(loaded.easy_setopt, "curl_easy_setopt");
  resolve(loaded.easy_getinfo, "curl_easy_getinfo");
  resolve(loaded.easy_strerror, "curl_easy_strerror");
  resolve(loaded.multi_init, "curl_multi_init");
  resolve(loaded.multi_cleanup, "curl_multi_cleanup");
  resolve(loaded.multi_add_handle, "curl_multi_add_handle");
  resolve(loaded.multi_remove_handle, "curl_multi_remove_handle");
  resolve(loaded.multi_perform, "curl_multi_perform");
  resolve(loaded.multi_poll, "curl_multi_poll");
  resolve(loaded.multi_wakeup, "curl_multi_wakeup");
  resolve(loaded.multi_info_read, "curl_multi_info_read");
  resolve(loaded.multi_strerror, "curl_multi_strerror");
  resolve(loaded.slist_append, "curl_slist_append");
  resolve(loaded.slist_free_all, "curl_slist_free_all");
  if (missing) return missing;
  if (const CURLcode code = loaded.global_init(CURL_GLOBAL_DEFAULT); code != CURLE_OK) {
    return fmt::format("libcurl failed to initialise: {}", loaded.easy_strerror(code));
  }
  return std::nullopt;
}

}  // namespace

Status ensure_initialized() {
  static const std::optional<std::string> failure = load();
  if (failure) return fail(Errc::io_error, *failure);
  return {};
}

const Api& api() {
  assert(loaded.easy_init != nullptr && "curl::api() before ensure_initialized()");
  return loaded;
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
