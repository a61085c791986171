// See bench_store.hpp.
#include "bench_store.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "bench_process.hpp"
#include "cairn/store/pi_import.hpp"
#include "cairn/store/store.hpp"

namespace cairn::bench {

std::optional<Imported> import_pi(const std::string& uri, const std::string& pi_file) {
  Imported result;
  {
    auto store = open_store(uri, {SyncPolicy::none});
    if (!store) {
      std::fprintf(stderr, "%s: %s\n", uri.c_str(), store.error().message.c_str());
      return std::nullopt;
    }
    auto imported = import_pi_session(**store, pi_file);
    if (!imported) {
      std::fprintf(stderr, "import into %s: %s\n", uri.c_str(), imported.error().message.c_str());
      return std::nullopt;
    }
    result.id = imported->session->id();
  }
  if (uri.starts_with("sqlite:")) {
    // Fold the WAL into the database, as a closed database is.
    auto store = open_store(uri);
    if (store) (void)(*store)->list();
    result.file = uri.substr(7);
    result.bytes = file_bytes(result.file) + file_bytes(result.file + "-wal");
  } else if (uri.starts_with("jsonl:")) {
    for (const auto& item : std::filesystem::directory_iterator(uri.substr(6))) {
      if (item.path().extension() == ".jsonl" && item.path().stem() == result.id) result.file = item.path();
    }
    if (result.file.empty()) {
      for (const auto& item : std::filesystem::directory_iterator(uri.substr(6))) {
        if (item.path().extension() == ".jsonl") result.file = item.path();
      }
    }
    result.bytes = file_bytes(result.file);
  }
  return result;
}

int open_once_main(const std::string& uri, const std::string& id) {
  const auto start = std::chrono::steady_clock::now();
  auto store = open_store(uri);
  if (!store) {
    std::fprintf(stderr, "%s\n", store.error().message.c_str());
    return 1;
  }
  auto session = (*store)->open(id, {.read_only = true});
  if (!session) {
    std::fprintf(stderr, "%s\n", session.error().message.c_str());
    return 1;
  }
  auto context = (*session)->build_context();
  if (!context) {
    std::fprintf(stderr, "%s\n", context.error().message.c_str());
    return 1;
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("%.3f %zu %ld\n", ms, context->messages.size(), own_peak_kib());
  return 0;
}

}  // namespace cairn::bench
