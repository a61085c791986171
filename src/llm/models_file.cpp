// models.json: reading, and checking every field before anything uses it.
// Errors carry the JSON path of the offending field and what it should have
// been, never the value found there: apiKey, headers and even a misplaced
// field may hold a credential.
#include "cairn/llm/models_file.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "cairn/llm/model_catalog.hpp"

namespace cairn {
namespace {

bool is_identifier_like(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool is_env_name(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

std::string member(const std::string& parent, const std::string& key) {
  std::string step = is_identifier_like(key) ? key : "[" + Json(key).dump() + "]";
  if (parent.empty() || step.front() == '[') return parent + step;
  return parent + "." + step;
}

std::string element(const std::string& parent, std::size_t index) { return fmt::format("{}[{}]", parent, index); }

template <class Words>
std::string joined(const Words& words) {
  std::string text;
  for (auto word : words) {
    if (!text.empty()) text += ", ";
    text += word;
  }
  return text;
}

// Walks one parsed file, stopping at the first problem.
class FileParser {
 public:
  explicit FileParser(std::string path) : path_(std::move(path)) {}

  Result<ModelsFile> parse(const Json& root) {
    ModelsFile file{path_, {}};
    if (!root.is_object()) return wrong("", "expected an object with a \"providers\" object", root);
    if (auto status = only_fields(root, "", {"providers"}); !status) return std::unexpected(status.error());
    auto providers = root.find("providers");
    if (providers == root.end()) return file;
    if (!providers->is_object()) return wrong("providers", "expected an object of providers by name", *providers);
    for (auto it = providers->begin(); it != providers->end(); ++it) {
      auto entry = parse_provider(it.key(), it.value());
      if (!entry) return std::unexpected(entry.error());
      file.providers.push_back(std::move(*entry));
    }
    return file;
  }

 private:
  std::unexpected<Error> fail(const std::string& at, std::string_view what) const {
    if (at.empty()) return cairn::fail(Errc::invalid_config, fmt::format("{}: {}", path_, what));
    return cairn::fail(Errc::invalid_config, fmt::format("{}: {}: {}", path_, at, what));
  }

  std::unexpected<Error> wrong(const std::string& at, std::string_view expected, const Json& found) const {
    return fail(at, fmt::format("{}, found {}", expected, found.type_name()));
  }

  Status only_fields(const Json& object, const std::string& at, std::initializer_list<std::string_view> known) const {
    for (auto it = object.begin(); it != object.end(); ++it) {
      bool is_known = false;
      for (auto field : known) is_known = is_known || it.key() == field;
      if (!is_known) return fail(member(at, it.key()), fmt::format("unknown field (known: {})", joined(known)));
    }
    return {};
  }

  Result<std::string> string_field(const Json& value, const std::string& at) const {
    if (!value.is_string()) return wrong(at, "expected a string", value);
    const auto& text = value.get_ref<const std::string&>();
    if (text.empty()) return fail(at, "must not be empty");
    return text;
  }

  Result<std::int64_t> positive_integer(const Json& value, const std::string& at) const {
    if (!value.is_number_integer()) return wrong(at, "expected a positive integer", value);
    if (value.is_number_unsigned()) {
      const auto n = value.get<std::uint64_t>();
      if (n == 0 || n > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return fail(at, "expected a positive integer");
      }
      return static_cast<std::int64_t>(n);
    }
    const auto n = value.get<std::int64_t>();
    if (n <= 0) return fail(at, "expected a positive integer");
    return n;
  }

  Result<double> price(const Json& value, const std::string& at) const {
    if (!value.is_number()) return wrong(at, "expected a price in dollars per million tokens", value);
    const double n = value.get<double>();
    if (n < 0) return fail(at, "a price cannot be negative");
    return n;
  }

  Result<std::map<std::string, std::string>> headers(const Json& value, const std::string& at) const {
    if (!value.is_object()) return wrong(at, "expected an object of header names to values", value);
    std::map<std::string, std::string> result;
    for (auto it = value.begin(); it != value.end(); ++it) {
      const std::string here = member(at, it.key());
      if (it.key().empty()) return fail(here, "a header name cannot be empty");
      if (!it.value().is_string()) return wrong(here, "expected a string", it.value());
      result[it.key()] = it.value().get<std::string>();
    }
    return result;
  }

  Result<std::string> base_url(const Json& value, const std::string& at) const {
    auto url = string_field(value, at);
    if (!url) return url;
    if (!url->starts_with("http://") && !url->starts_with("https://")) {
      return fail(at, "expected an http:// or https:// URL");
    }
    while (url->ends_with("/")) url->pop_back();
    return url;
  }

  Result<std::string> api(const Json& value, const std::string& at) const {
    auto kind = string_field(value, at);
    if (!kind) return kind;
    if (!is_known_api(*kind)) return fail(at, fmt::format("unknown API kind (known: {})", joined(known_apis())));
    return kind;
  }

  Result<ProviderEntry> parse_provider(const std::string& name, const Json& value) {
    const std::string at = member("providers", name);
    if (name.empty()) return fail(at, "a provider name cannot be empty");
    if (name.find('/') != std::string::npos) return fail(at, "a provider name cannot contain '/'");
    if (!value.is_object()) return wrong(at, "expected an object", value);
    if (auto status = only_fields(value, at, {"baseUrl", "api", "apiKey", "apiKeyEnv", "headers", "models"});
        !status) {
      return std::unexpected(status.error());
    }
    ProviderEntry entry;
    entry.name = name;
    if (auto it = value.find("baseUrl"); it != value.end()) {
      auto url = base_url(*it, member(at, "baseUrl"));
      if (!url) return std::unexpected(url.error());
      entry.base_url = std::move(*url);
    }
    if (auto it = value.find("api"); it != value.end()) {
      auto kind = api(*it, member(at, "api"));
      if (!kind) return std::unexpected(kind.error());
      entry.api = std::move(*kind);
    }
    const auto key = value.find("apiKey");
    const auto key_env = value.find("apiKeyEnv");
    if (key != value.end() && key_env != value.end()) {
      return fail(at, "give either apiKey or apiKeyEnv, not both");
    }
    if (key != value.end()) {
      auto secret = string_field(*key, member(at, "apiKey"));
      if (!secret) return std::unexpected(secret.error());
      entry.api_key = std::move(*secret);
    }
    if (key_env != value.end()) {
      auto variable = string_field(*key_env, member(at, "apiKeyEnv"));
      if (!variable) return std::unexpected(variable.error());
      // A key pasted here by mistake is not a variable name; saying so
      // without echoing it keeps it out of the terminal.
      if (!is_env_name(*variable)) {
        return fail(member(at, "apiKeyEnv"),
                    "expected the name of an environment variable (letters, digits and _), not the key itself");
      }
      entry.api_key_env = std::move(*variable);
    }
    if (auto it = value.find("headers"); it != value.end()) {
      auto parsed = headers(*it, member(at, "headers"));
      if (!parsed) return std::unexpected(parsed.error());
      entry.headers = std::move(*parsed);
    }
    if (auto it = value.find("models"); it != value.end()) {
      const std::string models_at = member(at, "models");
      if (!it->is_array()) return wrong(models_at, "expected an array of models", *it);
      std::map<std::string, std::size_t> seen;
      for (std::size_t i = 0; i < it->size(); ++i) {
        auto model = parse_model((*it)[i], element(models_at, i));
        if (!model) return std::unexpected(model.error());
        if (auto [previous, fresh] = seen.emplace(model->id, i); !fresh) {
          return fail(member(element(models_at, i), "id"),
                      fmt::format("the same id as {}", element(models_at, previous->second)));
        }
        entry.models.push_back(std::move(*model));
      }
    }
    // A provider cairn does not know must say where it is and what it serves.
    if (!find_builtin_provider(name)) {
      if (!entry.base_url) return fail(at, "a custom provider needs baseUrl");
      if (!entry.api) return fail(at, fmt::format("a custom provider needs api (one of: {})", joined(known_apis())));
      if (entry.models.empty()) return fail(at, "a custom provider needs at least one model");
    }
    return entry;
  }

  Result<ModelEntry> parse_model(const Json& value, const std::string& at) {
    if (!value.is_object()) return wrong(at, "expected an object", value);
    if (auto status = only_fields(value, at,
                                  {"id", "name", "contextWindow", "maxTokens", "reasoning", "input", "cost", "compat",
                                   "headers"});
        !status) {
      return std::unexpected(status.error());
    }
    ModelEntry model;
    auto id = value.find("id");
    if (id == value.end()) return fail(at, "a model needs an id");
    auto id_text = string_field(*id, member(at, "id"));
    if (!id_text) return std::unexpected(id_text.error());
    model.id = std::move(*id_text);
    if (auto it = value.find("name"); it != value.end() && !it->is_string()) {
      return wrong(member(at, "name"), "expected a string", *it);
    }
    if (auto it = value.find("contextWindow"); it != value.end()) {
      auto n = positive_integer(*it, member(at, "contextWindow"));
      if (!n) return std::unexpected(n.error());
      model.context_window = *n;
    }
    if (auto it = value.find("maxTokens"); it != value.end()) {
      auto n = positive_integer(*it, member(at, "maxTokens"));
      if (!n) return std::unexpected(n.error());
      model.max_tokens = *n;
    }
    if (auto it = value.find("reasoning"); it != value.end()) {
      if (!it->is_boolean()) return wrong(member(at, "reasoning"), "expected true or false", *it);
      model.reasoning = it->get<bool>();
    }
    if (auto it = value.find("input"); it != value.end()) {
      const std::string input_at = member(at, "input");
      if (!it->is_array() || it->empty()) return wrong(input_at, "expected a non-empty array of input kinds", *it);
      std::vector<std::string> kinds;
      for (std::size_t i = 0; i < it->size(); ++i) {
        const Json& kind = (*it)[i];
        if (!kind.is_string() || (kind != "text" && kind != "image")) {
          return fail(element(input_at, i), "expected \"text\" or \"image\"");
        }
        kinds.push_back(kind.get<std::string>());
      }
      model.input = std::move(kinds);
    }
    if (auto it = value.find("cost"); it != value.end()) {
      auto status = parse_cost(*it, member(at, "cost"), model);
      if (!status) return std::unexpected(status.error());
    }
    if (auto it = value.find("compat"); it != value.end()) {
      if (!it->is_object()) return wrong(member(at, "compat"), "expected an object", *it);
      model.compat = *it;
    }
    if (auto it = value.find("headers"); it != value.end()) {
      auto parsed = headers(*it, member(at, "headers"));
      if (!parsed) return std::unexpected(parsed.error());
      model.headers = std::move(*parsed);
    }
    return model;
  }

  Status parse_cost(const Json& value, const std::string& at, ModelEntry& model) const {
    if (!value.is_object()) return wrong(at, "expected an object of prices", value);
    if (auto status = only_fields(value, at, {"input", "output", "cacheRead", "cacheWrite"}); !status) return status;
    const std::pair<const char*, std::optional<double>*> fields[] = {
        {"input", &model.cost_input},
        {"output", &model.cost_output},
        {"cacheRead", &model.cost_cache_read},
        {"cacheWrite", &model.cost_cache_write},
    };
    for (const auto& [name, slot] : fields) {
      auto it = value.find(name);
      if (it == value.end()) continue;
      auto parsed = price(*it, member(at, name));
      if (!parsed) return std::unexpected(parsed.error());
      *slot = *parsed;
    }
    return {};
  }

  std::string path_;
};

// "line L, column C" of a byte offset, 1-based.
std::string position_of(std::string_view text, std::size_t byte) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return fmt::format("line {}, column {}", line, column);
}

}  // namespace

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (!value) return std::nullopt;
    return std::string(value);
  };
}

Result<ModelsFile> parse_models_file(std::string_view text, const std::string& path) {
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::parse_error& error) {
    // The library's own message quotes the text it last read, which may be a
    // key; only the position is passed on.
    // `byte` counts from 1; one past the end means the text stopped early.
    if (error.byte > text.size()) return fail(Errc::invalid_config, fmt::format("{}: not valid JSON: it ends too soon", path));
    const std::size_t at = error.byte > 0 ? error.byte - 1 : 0;
    return fail(Errc::invalid_config, fmt::format("{}: not valid JSON at {}", path, position_of(text, at)));
  } catch (const Json::exception&) {
    return fail(Errc::invalid_config, fmt::format("{}: not valid JSON", path));
  }
  return FileParser(path).parse(root);
}

Result<std::optional<ModelsFile>> load_models_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (ec) return fail(Errc::io_error, fmt::format("cannot read {}: {}", path.string(), ec.message()));
    return std::optional<ModelsFile>{};
  }
  if (std::filesystem::is_directory(path, ec)) {
    return fail(Errc::io_error, fmt::format("cannot read {}: it is a directory", path.string()));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(Errc::io_error, fmt::format("cannot read {}: {}", path.string(), std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return fail(Errc::io_error, fmt::format("cannot read {}", path.string()));
  auto parsed = parse_models_file(text.str(), path.string());
  if (!parsed) return std::unexpected(parsed.error());
  return std::optional<ModelsFile>(std::move(*parsed));
}

std::optional<std::filesystem::path> default_models_file(const EnvLookup& env) {
  if (auto xdg = env("XDG_CONFIG_HOME"); xdg && !xdg->empty()) {
    return std::filesystem::path(*xdg) / "cairn" / "models.json";
  }
  if (auto home = env("HOME"); home && !home->empty()) {
    return std::filesystem::path(*home) / ".config" / "cairn" / "models.json";
  }
  return std::nullopt;
}

}  // namespace cairn
