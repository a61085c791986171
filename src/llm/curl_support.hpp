// What every use of libcurl needs: one global initialisation, handles that
// free themselves, and SIGPIPE kept away from the process.
#pragma once

#include <signal.h>

#include <memory>
#include <string>
#include <string_view>

#include <curl/curl.h>

#include "cairn/error.hpp"

namespace cairn::curl {

struct EasyDeleter {
  void operator()(CURL* easy) const { curl_easy_cleanup(easy); }
};
struct MultiDeleter {
  void operator()(CURLM* multi) const { curl_multi_cleanup(multi); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using Easy = std::unique_ptr<CURL, EasyDeleter>;
using Multi = std::unique_ptr<CURLM, MultiDeleter>;
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;

// An easy handle added to a multi handle for the lifetime of this object.
// curl_multi_cleanup requires its handles removed first; declared after both
// handles, this is destroyed before either.
class Attachment {
 public:
  Attachment(CURLM* multi, CURL* easy) : multi_(multi), easy_(easy), code_(curl_multi_add_handle(multi, easy)) {}
  ~Attachment() {
    if (code_ == CURLM_OK) curl_multi_remove_handle(multi_, easy_);
  }
  Attachment(const Attachment&) = delete;
  Attachment& operator=(const Attachment&) = delete;
  CURLMcode code() const { return code_; }

 private:
  CURLM* multi_;
  CURL* easy_;
  CURLMcode code_;
};

// curl_global_init, exactly once however many threads race to it. Its result
// is remembered: a failed initialisation fails every transfer alike.
Status ensure_initialized();

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
