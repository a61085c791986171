// What every use of libcurl needs: the library itself, loaded on first use;
// one global initialisation; handles that free themselves; and SIGPIPE kept
// away from the process.
//
// libcurl is opened with dlopen when the first request is made, not linked:
// it pulls in some thirty libraries (TLS, Kerberos, LDAP, SSH...) whose
// loading cost every cairn process 5 ms at start, the reads that never speak
// HTTP included. <curl/curl.h> still gives the types and constants.
#pragma once

#include <signal.h>

#include <memory>
#include <string>
#include <string_view>

#include <curl/curl.h>

#include "cairn/error.hpp"

namespace cairn::curl {

// The libcurl functions cairn calls, resolved from the loaded library.
struct Api {
  CURLcode (*global_init)(long flags);
  CURL* (*easy_init)();
  void (*easy_cleanup)(CURL*);
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...);
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...);
  const char* (*easy_strerror)(CURLcode);
  CURLM* (*multi_init)();
  CURLMcode (*multi_cleanup)(CURLM*);
  CURLMcode (*multi_add_handle)(CURLM*, CURL*);
  CURLMcode (*multi_remove_handle)(CURLM*, CURL*);
  CURLMcode (*multi_perform)(CURLM*, int*);
  CURLMcode (*multi_poll)(CURLM*, curl_waitfd*, unsigned int, int, int*);
  CURLMcode (*multi_wakeup)(CURLM*);
  CURLMsg* (*multi_info_read)(CURLM*, int*);
  const char* (*multi_strerror)(CURLMcode);
  curl_slist* (*slist_append)(curl_slist*, const char*);
  void (*slist_free_all)(curl_slist*);
};

// Loads libcurl and runs curl_global_init, exactly once however many threads
// race to it. The outcome is remembered: a library that cannot be loaded or
// initialised fails every transfer alike, with the reason.
Status ensure_initialized();
// The loaded functions. Only after ensure_initialized() has succeeded.
const Api& api();

// curl_easy_setopt with one argument of the option's type.
template <class Value>
CURLcode setopt(CURL* easy, CURLoption option, Value value) {
  return api().easy_setopt(easy, option, value);
}

struct EasyDeleter {
  void operator()(CURL* easy) const { api().easy_cleanup(easy); }
};
struct MultiDeleter {
  void operator()(CURLM* multi) const { api().multi_cleanup(multi); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const { api().slist_free_all(list); }
};
using Easy = std::unique_ptr<CURL, EasyDeleter>;
using Multi = std::unique_ptr<CURLM, MultiDeleter>;
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;

// An easy handle added to a multi handle for the lifetime of this object.
// curl_multi_cleanup requires its handles removed first; declared after both
// handles, this is destroyed before either.
class Attachment {
 public:
  Attachment(CURLM* multi, CURL* easy) : multi_(multi), easy_(easy), code_(api().multi_add_handle(multi, easy)) {}
  ~Attachment() {
    if (code_ == CURLM_OK) api().multi_remove_handle(multi_, easy_);
  }
  Attachment(const Attachment&) = delete;
  Attachment& operator=(const Attachment&) = delete;
  CURLMcode code() const { return code_; }

 private:
  CURLM* multi_;
  CURL* easy_;
  CURLMcode code_;
};

// Blocks SIGPIPE on this thread while alive, and swallows one raised in that
// time. A write to a connection the peer closed raises SIGPIPE, whose default
// action kills the process; libcurl avoids it on plain sockets but not on
// every TLS path, and a library must not change the process's signal
// dispositions. (The technique is libpq's.)
class SigpipeBlock {
 public:
  SigpipeBlock();
  ~SigpipeBlock();
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t old_mask_;
  bool active_ = false;  // false when SIGPIPE was blocked or pending already
};

// ASCII letters lowered, every other byte kept: HTTP header names compare so.
std::string ascii_lower(std::string_view text);

}  // namespace cairn::curl
