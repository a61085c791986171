// What the two SQL stores (sqlite:, postgres://) share beyond their
// databases: the session row each keeps beside the records, the headers made
// of it (the one list() shows, the one open() takes, the one repair writes in
// place of a damaged one), and the order an open keeps.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "cairn/store/session.hpp"
#include "cairn/store/store.hpp"
#include "log/index.hpp"

namespace cairn {

struct SessionRow {
  std::string id;
  std::int64_t version = 0;  // the column (0 when empty): a newer writer may have raised it past the header's
  std::string timestamp;
  std::string cwd;
  std::optional<std::string> parent_session;
  std::string header;  // the header's JSON, as stored
};

// Decoded; or, when it is damaged (open() refuses it), what the columns say,
// so that the session still lists.
SessionHeader listed_header(const SessionRow& row);

// Refused when the header is not a JSON object, does not decode or names
// another session (corrupt_log), and when its format is newer than this
// build's (newer_version: said before the header is judged by this build's
// rules). `where` names the store and the session.
Result<SessionHeader> opened_header(const SessionRow& row, std::string_view where);

// Why a record's stored line cannot be trusted beside the index columns its
// row was opened from, or nullopt when it can: its checksum fails, or is
// missing where `checksums` says the session's format needs one, or (a
// record from before checksums) it does not scan or disagrees with its
// columns.
std::optional<std::string> payload_damage(const RecordMeta& columns, std::string_view payload, bool checksums);

// The calls both stores take alike: each runs guarded (no exception leaves
// a store), named by the store or the session it is about.
class SqlStore : public Store {
 public:
  Result<std::vector<SessionHeader>> list() final;
  Result<std::shared_ptr<Session>> create(const CreateOptions& options) final;
  Result<std::shared_ptr<Session>> create_with_log(const SessionHeader& header, const std::vector<LogLine>& log) final;
  Result<std::shared_ptr<Session>> open(std::string_view id, const OpenOptions& options) final;
  Status remove(std::string_view id) final;
  Result<RepairReport> repair(std::string_view id) final;
  Result<std::string> log_stamp(std::string_view id) final;

 protected:
  // What they do, in each store.
  virtual Result<std::vector<SessionHeader>> list_sessions() = 0;
  virtual Result<std::shared_ptr<Session>> create_session(const CreateOptions& options) = 0;
  virtual Result<std::shared_ptr<Session>> create_session_with_log(const SessionHeader& header,
                                                                   const std::vector<LogLine>& log) = 0;
  virtual Result<std::shared_ptr<Session>> open_session(const std::string& id, const OpenOptions& options) = 0;
  virtual Status remove_session(const std::string& id) = 0;
  virtual Result<RepairReport> repair_session(const std::string& id) = 0;
  virtual Result<std::string> stamp_of(const std::string& id) = 0;

  // "sqlite file F", "postgres store URI": what errors about the store name.
  virtual std::string name() const = 0;

  // The session's row; not_found when there is none. The caller holds mu_.
  virtual Result<SessionRow> read_row(const std::string& id) = 0;
  // What errors about a session name: the store and the session.
  virtual std::string where(std::string_view id) const = 0;
  virtual Error not_found(std::string_view id) const = 0;

  // The header open() takes. The caller holds mu_.
  Result<SessionHeader> read_header(const std::string& id);
  // Refuses a session that cannot be opened (a bad id, none, a header
  // open() refuses) before the right to write it is taken, so that nothing
  // is locked or leased for it. Takes mu_.
  Status check_openable(const std::string& id);
  // The header repair starts from: the stored one, or, when that is
  // damaged, one rebuilt from the row's columns, which `rebuilt` then holds
  // and `report` mentions. Anything else wrong with it stops repair. The
  // caller holds mu_.
  Result<SessionHeader> header_to_repair(const std::string& id, RepairReport& report,
                                         std::optional<SessionHeader>& rebuilt);

  std::mutex mu_;  // guards the store's own connection
};

}  // namespace cairn
