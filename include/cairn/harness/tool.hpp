// A tool the model may call. Implementations are code and do not persist;
// what persists is which tools are active on a branch, and for every call
// that began, a tool_started record with its effective arguments.
#pragma once

#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/json.hpp"
#include "cairn/log/message.hpp"

namespace cairn {

// May a call whose tool_started exists, but whose result does not, run again
// after a crash? `safe`: yes (reads, idempotent writes). `never`: the effect
// may have happened; recovery records a synthetic "interrupted" result.
enum class Replay { never, safe };
std::string_view to_string(Replay replay);

struct ToolResult {
  std::vector<UserBlock> content;
  std::optional<Json> details;
  bool is_error = false;

  static ToolResult text(std::string text, bool is_error = false);
};

using ToolUpdateSink = std::function<void(const ToolResult& partial)>;

struct Tool {
  std::string name;
  std::string description;
  Json parameters = Json::object();  // JSON schema of the arguments
  Replay replay = Replay::never;
  // May run at the same time as the other calls of its batch.
  bool parallel = true;
  // Runs the call. A stop request on `cancel` asks it to end promptly. An
  // exception becomes an error result.
  std::function<ToolResult(const Json& args, std::stop_token cancel, const ToolUpdateSink& update)> execute;
};

// Checks `args` against a tool's JSON schema (draft 7); the error names the
// offending argument.
class ArgumentValidator {
 public:
  // Fails with invalid_argument when the schema itself is not valid.
  static Result<ArgumentValidator> compile(const Json& schema);
  Status validate(const Json& args) const;

  ArgumentValidator(ArgumentValidator&&) noexcept;
  ArgumentValidator& operator=(ArgumentValidator&&) noexcept;
  ~ArgumentValidator();

 private:
  struct Compiled;
  explicit ArgumentValidator(std::unique_ptr<Compiled> compiled);
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace cairn
