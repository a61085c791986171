#include "json_reader.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace cairn::detail {

std::string join_path(std::string_view base, std::string_view key) {
  if (base.empty()) return std::string(key);
  return fmt::format("{}.{}", base, key);
}

std::string index_path(std::string_view base, std::size_t index) { return fmt::format("{}[{}]", base, index); }

Json number_json(double value) {
  // 2^53: beyond it a double no longer holds every integer, and JavaScript
  // switches to exponent notation anyway.
  constexpr double kExactLimit = 9007199254740992.0;
  if (std::isfinite(value) && std::trunc(value) == value && std::fabs(value) <= kExactLimit) {
    return static_cast<std::int64_t>(value);
  }
  return value;
}

void append_extra(Json& out, const Json& extra) {
  if (!extra.is_object()) return;
  for (const auto& [key, value] : extra.items()) {
    if (!out.contains(key)) out[key] = value;
  }
}

ObjectReader::ObjectReader(const Json& value, std::string path) : value_(value), path_(std::move(path)) {
  if (!value_.is_object()) error_ = invalid(path_.empty() ? "record" : path_, "expected an object").error();
}

Status ObjectReader::status() const {
  if (error_) return std::unexpected(*error_);
  return {};
}

void ObjectReader::fail_at(std::string_view key, std::string_view what) {
  if (ok()) error_ = invalid(field(key), what).error();
}

void ObjectReader::skip(std::string_view key) {
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.emplace_back(key);
}

bool ObjectReader::has(std::string_view key) const {
  return value_.is_object() && value_.find(key) != value_.end();
}

const Json* ObjectReader::lookup(std::string_view key) {
  skip(key);
  if (!ok()) return nullptr;
  auto it = value_.find(key);
  return it == value_.end() ? nullptr : &*it;
}

const Json* ObjectReader::required(std::string_view key) {
  const Json* value = lookup(key);
  if (value == nullptr) fail_at(key, "missing");
  return ok() ? value : nullptr;
}

const Json* ObjectReader::optional(std::string_view key) { return lookup(key); }

std::string ObjectReader::string(std::string_view key) {
  const Json* value = required(key);
  if (value == nullptr) return {};
  if (!value->is_string()) {
    fail_at(key, "expected a string");
    return {};
  }
  return value->get<std::string>();
}

std::optional<std::string> ObjectReader::optional_string(std::string_view key) {
  const Json* value = optional(key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_string()) {
    fail_at(key, "expected a string");
    return std::nullopt;
  }
  return value->get<std::string>();
}

std::optional<std::string> ObjectReader::nullable_string(std::string_view key) {
  const Json* value = required(key);
  if (value == nullptr || value->is_null()) return std::nullopt;
  if (!value->is_string()) {
    fail_at(key, "expected a string or null");
    return std::nullopt;
  }
  return value->get<std::string>();
}

namespace {

// An int64 from a JSON integer; nlohmann reads positive numbers as unsigned,
// so the range is checked before converting.
std::optional<std::int64_t> as_int64(const Json& value) {
  if (value.is_number_unsigned()) {
    auto number = value.get<std::uint64_t>();
    if (number > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
    return static_cast<std::int64_t>(number);
  }
  if (value.is_number_integer()) return value.get<std::int64_t>();
  return std::nullopt;
}

}  // namespace

std::int64_t ObjectReader::integer(std::string_view key) {
  const Json* value = required(key);
  if (value == nullptr) return 0;
  auto number = as_int64(*value);
  if (!number) fail_at(key, "expected an integer");
  return number.value_or(0);
}

std::int64_t ObjectReader::count(std::string_view key) {
  const Json* value = required(key);
  if (value == nullptr) return 0;
  auto number = as_int64(*value);
  if (!number || *number < 0) {
    fail_at(key, "expected a non-negative integer");
    return 0;
  }
  return *number;
}

std::optional<std::int64_t> ObjectReader::optional_integer(std::string_view key) {
  const Json* value = optional(key);
  if (value == nullptr) return std::nullopt;
  auto number = as_int64(*value);
  if (!number) fail_at(key, "expected an integer");
  return number;
}

double ObjectReader::number(std::string_view key) {
  const Json* value = required(key);
  if (value == nullptr) return 0;
  if (!value->is_number()) {
    fail_at(key, "expected a number");
    return 0;
  }
  return value->get<double>();
}

bool ObjectReader::boolean(std::string_view key) {
  const Json* value = required(key);
  if (value == nullptr) return false;
  if (!value->is_boolean()) {
    fail_at(key, "expected a boolean");
    return false;
  }
  return value->get<bool>();
}

std::optional<bool> ObjectReader::optional_boolean(std::string_view key) {
  const Json* value = optional(key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_boolean()) {
    fail_at(key, "expected a boolean");
    return std::nullopt;
  }
  return value->get<bool>();
}

Json ObjectReader::object(std::string_view key) {
  const Json* value = required(key);
  if (value == nullptr) return Json::object();
  if (!value->is_object()) {
    fail_at(key, "expected an object");
    return Json::object();
  }
  return *value;
}

std::optional<Json> ObjectReader::optional_object(std::string_view key) {
  const Json* value = optional(key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_object()) {
    fail_at(key, "expected an object");
    return std::nullopt;
  }
  return *value;
}

std::optional<Json> ObjectReader::optional_value(std::string_view key) {
  const Json* value = optional(key);
  if (value == nullptr) return std::nullopt;
  return *value;
}

Json ObjectReader::extra() const {
  Json extra;  // null while there are none (message.hpp says why)
  if (!value_.is_object()) return extra;
  for (const auto& [key, value] : value_.items()) {
    if (std::find(known_.begin(), known_.end(), key) == known_.end()) extra[key] = value;
  }
  return extra;
}

}  // namespace cairn::detail
