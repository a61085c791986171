#include "whole_session.hpp"

namespace cairn {

Result<WholeSession> create_whole_session(Store& store, const CreateOptions& options,
                                          const std::function<Result<std::int64_t>(Session& scratch)>& fill) {
  auto scratch_store = make_memory_store(StoreOptions{.sync = SyncPolicy::none});
  auto scratch = scratch_store->create(options);
  if (!scratch) return std::unexpected(scratch.error());
  auto filled = fill(**scratch);
  if (!filled) return std::unexpected(filled.error());
  // The lines exactly as the scratch session stored them: a record is
  // encoded once, by the append that checked it.
  auto log = (*scratch)->get_log();
  if (!log) return std::unexpected(log.error());
  auto created = store.create_with_log((*scratch)->header(), *log);
  if (!created) return std::unexpected(created.error());
  return WholeSession{std::move(*created), *filled};
}

}  // namespace cairn
