// OtlpOptions::from_environment (trace_sinks.hpp): the OpenTelemetry
// exporter variables, as the OTLP exporter specification spells them.
// Header values are credentials, so an error about them names the
// variable and the position of the fault, never what it holds.
#include <cctype>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cairn/trace_sinks.hpp"

namespace cairn::trace {
namespace {

using OtlpPairs = std::vector<std::pair<std::string, std::string>>;

// A variable's value; unset and empty are the same (the specification's rule).
std::optional<std::string> otlp_env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::string_view otlp_trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

std::string otlp_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

int otlp_hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> otlp_percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int high = otlp_hex_digit(text[i + 1]), low = otlp_hex_digit(text[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

// "k=v,k2=v2" (the W3C Baggage shape, without properties). `secret`: the
// values are not to be quoted in an error.
Result<OtlpPairs> otlp_parse_pairs(const char* variable, std::string_view text, bool secret) {
  OtlpPairs pairs;
  std::size_t index = 0;
  while (true) {
    const std::size_t comma = text.find(',');
    const std::string_view item = otlp_trim(text.substr(0, comma));
    ++index;
    if (!item.empty()) {
      const std::size_t equals = item.find('=');
      const std::string_view raw_key = equals == std::string_view::npos ? item : otlp_trim(item.substr(0, equals));
      auto key = otlp_percent_decode(raw_key);
      if (equals == std::string_view::npos || raw_key.empty() || !key) {
        return fail(Errc::invalid_argument,
                    secret ? fmt::format("{}: entry {} is not key=value", variable, index)
                           : fmt::format("{}: '{}' is not key=value", variable, item));
      }
      auto value = otlp_percent_decode(otlp_trim(item.substr(equals + 1)));
      if (!value) {
        return fail(Errc::invalid_argument,
                    secret ? fmt::format("{}: the value of '{}' has a malformed percent escape", variable, *key)
                           : fmt::format("{}: '{}' has a malformed percent escape", variable, item));
      }
      pairs.emplace_back(std::move(*key), std::move(*value));
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return pairs;
}

Status otlp_check_url(const char* variable, const std::string& url) {
  const std::string lower = otlp_lower(url);
  if ((lower.starts_with("http://") && lower.size() > 7) || (lower.starts_with("https://") && lower.size() > 8)) {
    return {};
  }
  // The URL may carry a credential in its query or user part: name only the variable.
  return fail(Errc::invalid_argument, fmt::format("{}: not an http:// or https:// URL", variable));
}

Status otlp_check_protocol(const char* variable) {
  const auto value = otlp_env(variable);
  if (!value || otlp_trim(*value) == "http/json") return {};
  return fail(Errc::invalid_argument,
              fmt::format("{}={}: only http/json is supported (OTLP over HTTP with JSON bodies)", variable, *value));
}

bool otlp_disabled(const char* variable) {
  const auto value = otlp_env(variable);
  return value && otlp_lower(otlp_trim(*value)) == "none";
}

// The base endpoint with the signal's path: exactly one slash between them.
std::string otlp_signal_url(std::string base, std::string_view path) {
  while (base.ends_with('/')) base.pop_back();
  return base + std::string(path);
}

Result<OtlpPairs> otlp_headers_from(const char* variable) {
  const auto value = otlp_env(variable);
  if (!value) return OtlpPairs{};
  return otlp_parse_pairs(variable, *value, true);
}

}  // namespace

Result<std::optional<OtlpOptions>> OtlpOptions::from_environment() {
  if (otlp_disabled("OTEL_TRACES_EXPORTER")) return std::optional<OtlpOptions>{};
  const auto base = otlp_env("OTEL_EXPORTER_OTLP_ENDPOINT");
  const auto traces_endpoint = otlp_env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  if (!base && !traces_endpoint) return std::optional<OtlpOptions>{};

  OtlpOptions options;
  if (auto ok = otlp_check_protocol("OTEL_EXPORTER_OTLP_PROTOCOL"); !ok) return fail(ok.error());
  if (auto ok = otlp_check_protocol("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"); !ok) return fail(ok.error());
  if (base) {
    if (auto ok = otlp_check_url("OTEL_EXPORTER_OTLP_ENDPOINT", *base); !ok) return fail(ok.error());
  }
  if (traces_endpoint) {
    if (auto ok = otlp_check_url("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", *traces_endpoint); !ok) return fail(ok.error());
    options.traces_url = *traces_endpoint;
  } else {
    options.traces_url = otlp_signal_url(*base, "/v1/traces");
  }

  if (!otlp_disabled("OTEL_METRICS_EXPORTER")) {
    if (auto metrics_endpoint = otlp_env("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")) {
      auto ok = otlp_check_url("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", *metrics_endpoint);
      if (!ok) return fail(ok.error());
      options.metrics_url = *metrics_endpoint;
    } else if (base) {
      options.metrics_url = otlp_signal_url(*base, "/v1/metrics");
    }
    if (!options.metrics_url.empty()) {
      if (auto ok = otlp_check_protocol("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"); !ok) return fail(ok.error());
    }
  }

  auto headers = otlp_headers_from("OTEL_EXPORTER_OTLP_HEADERS");
  if (!headers) return fail(headers.error());
  options.headers = std::move(*headers);
  auto traces_headers = otlp_headers_from("OTEL_EXPORTER_OTLP_TRACES_HEADERS");
  if (!traces_headers) return fail(traces_headers.error());
  options.traces_headers = std::move(*traces_headers);
  auto metrics_headers = otlp_headers_from("OTEL_EXPORTER_OTLP_METRICS_HEADERS");
  if (!metrics_headers) return fail(metrics_headers.error());
  options.metrics_headers = std::move(*metrics_headers);

  if (auto timeout = otlp_env("OTEL_EXPORTER_OTLP_TIMEOUT")) {
    const std::string_view text = otlp_trim(*timeout);
    long long ms = 0;
    bool digits = !text.empty() && text.size() <= 9;
    for (char c : text) {
      digits = digits && c >= '0' && c <= '9';
      if (digits) ms = ms * 10 + (c - '0');
    }
    if (!digits || ms <= 0) {
      return fail(Errc::invalid_argument,
                  fmt::format("OTEL_EXPORTER_OTLP_TIMEOUT={}: not a positive number of milliseconds", *timeout));
    }
    options.export_timeout = std::chrono::milliseconds(ms);
  }

  if (auto attributes = otlp_env("OTEL_RESOURCE_ATTRIBUTES")) {
    auto pairs = otlp_parse_pairs("OTEL_RESOURCE_ATTRIBUTES", *attributes, false);
    if (!pairs) return fail(pairs.error());
    for (auto& [key, value] : *pairs) {
      if (key == "service.name") {
        options.service_name = std::move(value);
      } else {
        options.resource_attributes.emplace_back(std::move(key), std::move(value));
      }
    }
  }
  if (auto service = otlp_env("OTEL_SERVICE_NAME")) options.service_name = std::string(otlp_trim(*service));
  return std::optional<OtlpOptions>(std::move(options));
}

}  // namespace cairn::trace
