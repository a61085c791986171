// Argument validation with valijson (Debian libvalijson-dev): tool schemas are
// ordinary JSON Schema, and a hand-written subset would accept what the model
// was told it may not send.
// g++ 12 at -O3 misreads a string replace inlined from valijson's JSON-pointer
// code as an overlapping copy of more than PTRDIFF_MAX bytes
// (-Wstringop-overflow, -Wrestrict: known false positives of that release);
// they are silenced for these headers only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#pragma GCC diagnostic ignored "-Wrestrict"
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>
#pragma GCC diagnostic pop

#include <fmt/format.h>

#include "cairn/harness/tool.hpp"

namespace cairn {

ToolResult ToolResult::text(std::string text, bool is_error) {
  return ToolResult{.content = {TextContent{.text = std::move(text)}}, .is_error = is_error};
}

struct ArgumentValidator::Compiled {
  nlohmann::json document;  // valijson's adapter reads nlohmann::json, not ordered_json
  valijson::Schema schema;
};

ArgumentValidator::ArgumentValidator(std::unique_ptr<Compiled> compiled) : compiled_(std::move(compiled)) {}
ArgumentValidator::ArgumentValidator(ArgumentValidator&&) noexcept = default;
ArgumentValidator& ArgumentValidator::operator=(ArgumentValidator&&) noexcept = default;
ArgumentValidator::~ArgumentValidator() = default;

Result<ArgumentValidator> ArgumentValidator::compile(const Json& schema) {
  auto compiled = std::make_unique<Compiled>();
  try {
    compiled->document = nlohmann::json::parse(schema.dump());
    valijson::SchemaParser parser;
    valijson::adapters::NlohmannJsonAdapter adapter(compiled->document);
    parser.populateSchema(adapter, compiled->schema);
  } catch (const std::exception& e) {
    return fail(Errc::invalid_argument, fmt::format("tool schema is not a valid JSON schema: {}", e.what()));
  }
  return ArgumentValidator(std::move(compiled));
}

Status ArgumentValidator::validate(const Json& args) const {
  nlohmann::json document = nlohmann::json::parse(args.dump());
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter adapter(document);
  if (validator.validate(compiled_->schema, adapter, &results)) return {};
  std::string message;
  valijson::ValidationResults::Error error;
  while (results.popError(error)) {
    std::string where;
    for (const auto& part : error.context) where += part;
    if (!message.empty()) message += "; ";
    message += fmt::format("{}: {}", where, error.description);
  }
  return fail(Errc::invalid_arguments, message);
}

}  // namespace cairn
