#include "named_model.hpp"

#include <fmt/format.h>

namespace cairn::agent {

Result<std::optional<ConfiguredModel>> named_model(const ModelRegistry& registry, const AgentOptions& options) {
  if (!options.api.empty() || !options.base_url.empty()) {
    if (options.api.empty() || options.base_url.empty() || options.model.empty()) {
      return fail(Errc::invalid_argument, "an ad-hoc endpoint needs all of --api KIND, --base-url URL and --model ID");
    }
    AdHocEndpoint endpoint{.api = options.api, .base_url = options.base_url, .model_id = options.model,
                           .api_key = options.api_key};
    auto configured = registry.ad_hoc(endpoint);
    if (!configured) return std::unexpected(configured.error());
    return std::optional<ConfiguredModel>(std::move(*configured));
  }
  if (options.model.empty()) {
    if (options.api_key) return fail(Errc::invalid_argument, "--api-key needs --model or an --api endpoint");
    return std::optional<ConfiguredModel>();
  }
  auto found = registry.find(options.model);
  if (!found) return std::unexpected(found.error());
  ConfiguredModel configured = **found;
  if (options.api_key) {
    configured.api_key = ApiKey(*options.api_key);
    configured.key_source = KeySource{KeySource::Kind::command_line, {}};
  }
  if (!configured.available()) {
    const std::string where = configured.key_source.kind == KeySource::Kind::environment
                                  ? fmt::format("set {} or pass --api-key", configured.key_source.env_var)
                                  : "pass --api-key";
    return fail(Errc::invalid_argument, fmt::format("model {} has no key: {}", configured.qualified_id(), where));
  }
  return std::optional<ConfiguredModel>(std::move(configured));
}

}  // namespace cairn::agent
