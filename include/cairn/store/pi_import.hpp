// Import of pi coding-agent session files (format versions 1 to 3).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/json.hpp"
#include "cairn/store/store.hpp"

namespace cairn {

struct [[nodiscard]] PiImportResult {
  std::shared_ptr<Session> session;
  std::int64_t version = 0;    // the file's format version
  std::int64_t imported = 0;   // entries written
  std::vector<std::string> notes;  // what migration changed, lines skipped and why
};

// Reads a pi session file's lines (header first), migrating v1 → v2 → v3 as pi
// does, into JSON entries ready for Session::append_json. Pure: touches no store.
// Lines that are not JSON are skipped with a note, as pi skips them; what pi
// cannot have written stops the reading with invalid_argument naming the
// line: a path that is not a regular file (a device or a pipe need never
// end), a line that is not text (not UTF-8, or a NUL byte), a line longer
// than 64 MiB.
Result<std::vector<Json>> read_pi_entries(const std::string& path, Json* header_out,
                                          std::vector<std::string>* notes);

// Imports the file into a new session of `store`, whole or not at all (see
// Store::create_with_log). The new session has a fresh id and the pi
// header's cwd and timestamp; its header records where it came from as
// "importedFrom": {"format":"pi","id":…,"path":…}.
Result<PiImportResult> import_pi_session(Store& store, const std::string& path);

}  // namespace cairn
