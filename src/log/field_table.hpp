// The known fields of a JSON object, listed once and read both ways.
//
// Each record body, message and content block has one table (kFields<T>) of
// its fields in the order they are written: write_fields encodes a value into
// an object with it, read_fields decodes one through an ObjectReader. How a
// kind of field is written and checked (a required string, an optional one
// omitted or written as null, a count, a closed set's name, a nested object
// with its unknown keys) is said once, here, instead of once per field and
// direction in every codec; what no rule fits is a Custom field, written by
// hand in its place in the table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

#include "cairn/json.hpp"
#include "cairn/log/message.hpp"
#include "closed_sets.hpp"
#include "json_reader.hpp"

namespace cairn::detail {

// What a field's C++ type does not say about it.
enum class Rule : std::uint8_t {
  plain,
  nullable,    // an optional that is always written, as null when empty; reading requires the key
  object,      // an optional JSON value that must be an object (a required Json always must)
  count,       // an integer that must not be negative
  omit_empty,  // a list written only when not empty, and read as empty when absent
};

// How a value of a type the rules below do not cover is written and read:
// specialised by the codec that has such a field (a message, an intent, a
// provisioned entry). NestedObject is the specialisation of a struct with a
// table of its own.
template <class M>
struct FieldCodec;

// A struct's table, specialised beside its codec: a std::tuple of fields.
template <class T>
inline constexpr int kFields = 0;

template <class T>
concept HasExtra = requires(T value) { value.extra = Json(); };
// A message (message.hpp), which ends with its timestamp when it has one.
template <class T>
concept HasTimestamp = requires(T value) {
  value.has_timestamp = true;
  value.timestamp = std::int64_t{0};
};

std::vector<std::string> read_strings(ObjectReader& r, std::string_view key, bool required);

template <class M>
void write_value(Json& out, std::string_view key, const M& value, Rule rule);
template <class M>
void read_value(ObjectReader& r, std::string_view key, M& value, Rule rule);

// A member of T, under `key`.
template <class T, class M>
struct Field {
  std::string_view key;
  M T::*member;
  Rule rule = Rule::plain;

  void write(Json& out, const T& value) const { write_value(out, key, value.*member, rule); }
  void read(ObjectReader& r, T& value) const { read_value(r, key, value.*member, rule); }
};

template <class T, class M>
constexpr Field<T, M> field(std::string_view key, M T::*member, Rule rule = Rule::plain) {
  return {key, member, rule};
}

// What a rule cannot say: a value whose absence and null differ, a key whose
// mere presence is kept. Written and read by hand, in its place in the table.
template <class T>
struct ByHand {
  void (*writer)(Json& out, const T& value);
  void (*reader)(ObjectReader& r, T& value);

  void write(Json& out, const T& value) const { writer(out, value); }
  void read(ObjectReader& r, T& value) const { reader(r, value); }
};

// The fields of a member's own table, in the same object (a placeholder's
// damage report sits beside the placeholder's other fields).
template <class T, class S>
struct Inline {
  S T::*member;

  void write(Json& out, const T& value) const;
  void read(ObjectReader& r, T& value) const;
};

template <class T, class Table>
void write_fields(Json& out, const T& value, const Table& table) {
  std::apply([&](const auto&... fields) { (fields.write(out, value), ...); }, table);
}

template <class T, class Table>
void read_fields(ObjectReader& r, T& value, const Table& table) {
  std::apply([&](const auto&... fields) { (fields.read(r, value), ...); }, table);
}

template <class T, class S>
void Inline<T, S>::write(Json& out, const T& value) const {
  write_fields(out, value.*member, kFields<S>);
}

template <class T, class S>
void Inline<T, S>::read(ObjectReader& r, T& value) const {
  read_fields(r, value.*member, kFields<S>);
}

// An object of T's table, then a message's timestamp, then the unknown keys
// it keeps (when it keeps any). The timestamp is written when the message had
// one, and read leniently: absent in older or hand-written pi files, but of
// the right type when present.
template <class T>
void write_object(Json& out, const T& value) {
  write_fields(out, value, kFields<T>);
  if constexpr (HasTimestamp<T>) {
    if (value.has_timestamp) out["timestamp"] = value.timestamp;
  }
  if constexpr (HasExtra<T>) append_extra(out, value.extra);
}

template <class T>
void read_object(ObjectReader& r, T& value) {
  read_fields(r, value, kFields<T>);
  if constexpr (HasTimestamp<T>) {
    value.has_timestamp = r.has("timestamp");
    if (value.has_timestamp) value.timestamp = r.integer("timestamp");
    r.skip("timestamp");
  }
  if constexpr (HasExtra<T>) value.extra = r.extra();
}

// Alternative `index` of a variant, read with its own table: the record body
// of a type, the intent of a kind, the message of a role.
template <class Variant, std::size_t I = 0>
Variant read_alternative(std::size_t index, ObjectReader& r) {
  if constexpr (I < std::variant_size_v<Variant>) {
    if (index != I) return read_alternative<Variant, I + 1>(index, r);
    std::variant_alternative_t<I, Variant> value{};
    read_object(r, value);
    return value;
  } else {
    r.fail_at("type", "no such alternative");  // callers pass an index of the variant
    return Variant{};
  }
}

// A required nested object with a table of its own.
template <class T>
struct NestedObject {
  static void write(Json& out, std::string_view key, const T& value) {
    Json object = Json::object();
    write_object(object, value);
    out[std::string(key)] = std::move(object);
  }
  static void read(ObjectReader& r, std::string_view key, T& value) {
    r.nested(key, ObjectReader::Presence::required, [&](ObjectReader& inner) { read_object(inner, value); });
  }
};

template <class M>
inline constexpr bool kIsOptional = false;
template <class M>
inline constexpr bool kIsOptional<std::optional<M>> = true;

template <class M>
void write_value(Json& out, std::string_view key, const M& value, Rule rule) {
  if constexpr (kIsOptional<M>) {
    if (value) {
      write_value(out, key, *value, Rule::plain);
    } else if (rule == Rule::nullable) {
      out[std::string(key)] = nullptr;
    }
  } else if constexpr (std::is_same_v<M, std::vector<std::string>>) {
    if (rule != Rule::omit_empty || !value.empty()) out[std::string(key)] = value;
  } else if constexpr (std::is_same_v<M, double>) {
    out[std::string(key)] = number_json(value);  // as pi writes it
  } else if constexpr (ClosedSet<M>) {
    out[std::string(key)] = name_of(value);
  } else if constexpr (std::is_same_v<M, std::string> || std::is_same_v<M, std::int64_t> || std::is_same_v<M, bool> ||
                       std::is_same_v<M, Json>) {
    out[std::string(key)] = value;
  } else {
    FieldCodec<M>::write(out, key, value);
  }
}

template <class M>
void read_value(ObjectReader& r, std::string_view key, M& value, Rule rule) {
  if constexpr (std::is_same_v<M, std::string>) {
    value = r.string(key);
  } else if constexpr (std::is_same_v<M, std::optional<std::string>>) {
    value = rule == Rule::nullable ? r.nullable_string(key) : r.optional_string(key);
  } else if constexpr (std::is_same_v<M, std::int64_t>) {
    value = rule == Rule::count ? r.count(key) : r.integer(key);
  } else if constexpr (std::is_same_v<M, double>) {
    value = r.number(key);
  } else if constexpr (std::is_same_v<M, bool>) {
    value = r.boolean(key);
  } else if constexpr (std::is_same_v<M, std::optional<bool>>) {
    value = r.optional_boolean(key);
  } else if constexpr (std::is_same_v<M, Json>) {
    value = r.object(key);
  } else if constexpr (std::is_same_v<M, std::optional<Json>>) {
    value = rule == Rule::object ? r.optional_object(key) : r.optional_value(key);
  } else if constexpr (std::is_same_v<M, std::vector<std::string>>) {
    value = read_strings(r, key, rule != Rule::omit_empty);
  } else if constexpr (ClosedSet<M>) {
    value = r.one_of<M>(key);
  } else {
    FieldCodec<M>::read(r, key, value);
  }
}

// User and custom message content: a string, or an array of text and image blocks.
template <>
struct FieldCodec<UserContent> {
  static void write(Json& out, std::string_view key, const UserContent& content);
  static void read(ObjectReader& r, std::string_view key, UserContent& content);
};

}  // namespace cairn::detail
