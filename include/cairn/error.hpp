// Results, not exceptions: every expected failure in cairn is a value.
#pragma once

#include <expected>
#include <string>
#include <utility>

namespace cairn {

// A failure's stable code and a message a person can act on. Codes are part of
// the API; the list below is the complete set the log and store layers return.
//
//   invalid_argument  a caller passed something malformed (bad URI, bad option)
//   invalid_record    a record breaks its type's field rules or is not lossless JSON
//   unknown_type      a record type this build does not know, without "ignorable": true
//   duplicate_id      an id already used in the session
//   unknown_parent    parentId (or another reference) names no earlier entry
//   unknown_ref       a record names a ref that does not exist
//   ref_exists        ref_created for a ref that already exists
//   operation_open    operation_started while the ref already has an open operation
//   operation_not_open a record names a run that is not the ref's open operation
//   newer_version     the session header's format version is newer than this build
//   corrupt_log       a damaged record before the tail, a seq gap, a bad header
//   not_found         no session (or entry) with that id
//   ambiguous_id      a session id prefix matches several sessions
//   already_exists    create() with an id that is taken
//   locked            another writer holds the session
//   stale_writer      this writer's lock generation is no longer current
//   faulted           an earlier append failed; the session accepts no more
//   read_only         the session was opened for reading, or the store is one this user may only read
//   io_error          the operating system refused a read, write or sync
struct Error {
  std::string code;
  std::string message;
};

template <class T>
using Result = std::expected<T, Error>;
using Status = std::expected<void, Error>;

inline std::unexpected<Error> fail(std::string code, std::string message) {
  return std::unexpected<Error>(Error{std::move(code), std::move(message)});
}

}  // namespace cairn
