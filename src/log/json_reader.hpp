// Reading the fields of one JSON object for the record and message decoders.
//
// nlohmann's accessors throw on a type mismatch, and a log line is untrusted
// input, so every access goes through a check here. The reader keeps the first
// failure and turns later accesses into no-ops returning defaults: a decoder
// reads all its fields straight through and asks for the status once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/json.hpp"
#include "closed_sets.hpp"

namespace cairn::detail {

// "a.b" (or "b" at the top level) and "a[3]": the field paths errors name.
std::string join_path(std::string_view base, std::string_view key);
std::string index_path(std::string_view base, std::size_t index);

inline std::unexpected<Error> invalid(std::string_view path, std::string_view what) {
  return fail(Errc::invalid_record, std::string(path) + ": " + std::string(what));
}

// The JSON text pi (JavaScript) writes for a number: integral values without a
// fraction, so that 0 stays 0 and does not become 0.0.
Json number_json(double value);

// Appends the keys of `extra` that `out` does not already hold. A known field
// always wins over an extra key of the same name, which keeps keys unique.
void append_extra(Json& out, const Json& extra);

class ObjectReader {
 public:
  // `path` names the object itself; the top level of a record is "".
  ObjectReader(const Json& value, std::string path);

  bool ok() const { return !error_.has_value(); }
  Status status() const;
  const std::string& path() const { return path_; }
  std::string field(std::string_view key) const { return join_path(path_, key); }

  // Records a failure at `key` (only the first failure is kept).
  void fail_at(std::string_view key, std::string_view what);
  // Takes a nested decoder's result, recording its failure.
  template <class T>
  T take(Result<T> result) {
    if (result) return std::move(*result);
    if (ok()) error_ = std::move(result.error());
    return T{};
  }
  void take(const Status& status) {
    if (!status && ok()) error_ = status.error();
  }

  // Marks `key` as known without reading it (it is read elsewhere).
  void skip(std::string_view key);
  bool has(std::string_view key) const;

  std::string string(std::string_view key);
  std::optional<std::string> optional_string(std::string_view key);
  // The key must be present; null reads as absent.
  std::optional<std::string> nullable_string(std::string_view key);
  std::int64_t integer(std::string_view key);
  std::int64_t count(std::string_view key);  // a non-negative integer
  std::optional<std::int64_t> optional_integer(std::string_view key);
  double number(std::string_view key);
  bool boolean(std::string_view key);
  std::optional<bool> optional_boolean(std::string_view key);
  // A required string naming a value of a closed set (closed_sets.hpp);
  // any other string fails as an unknown value, naming the set's values.
  template <ClosedSet E>
  E one_of(std::string_view key) {
    const std::string text = string(key);
    if (!ok()) return E{};
    const auto value = parse_name<E>(text);
    if (!value) fail_at(key, unknown_value<E>(text));
    return value.value_or(E{});
  }
  Json object(std::string_view key);
  std::optional<Json> optional_object(std::string_view key);
  std::optional<Json> optional_value(std::string_view key);  // any JSON, null included
  // The raw value of a required key (nullptr when missing, failure recorded).
  const Json* required(std::string_view key);
  // The raw value of an optional key (nullptr when absent).
  const Json* optional(std::string_view key);

  // The keys no accessor asked for, in their original order.
  Json extra() const;

  // Reads the object at `key` with `read(ObjectReader&)`, a reader of its
  // own whose failure becomes this one's. A missing key is a failure when
  // `required`; false when the key was missing.
  enum class Presence { required, optional };
  template <class Read>
  bool nested(std::string_view key, Presence presence, Read&& read) {
    const Json* value = presence == Presence::required ? required(key) : optional(key);
    if (value == nullptr) return false;
    ObjectReader inner(*value, field(key));
    read(inner);
    take(inner.status());
    return true;
  }

 private:
  const Json* lookup(std::string_view key);

  const Json& value_;
  std::string path_;
  std::vector<std::string> known_;
  std::optional<Error> error_;
};

}  // namespace cairn::detail
