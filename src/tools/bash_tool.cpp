// bash: runs a command with `bash -c` in the working directory, in its own
// process group (see process.hpp), and returns the tail of its merged
// stdout/stderr with every secret redacted as it streams (so the result, the
// updates and the spill file never hold one). Replay never: a command may
// have had its effect when a crash interrupted it; settle ends what an
// interrupted call left running.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <random>
#include <system_error>

#include <fmt/format.h>

#include "process.hpp"
#include "log/secret_stream.hpp"
#include "tool_call_processes.hpp"
#include "tool_environment.hpp"
#include "tool_support.hpp"
#include "tools.hpp"

namespace cairn::tools {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr double kDefaultTimeoutSeconds = 180;
constexpr auto kUpdateInterval = std::chrono::milliseconds(100);

// Keeps everything while the output is within the limits; past them, spills
// all of it to a file and keeps only a rolling tail in memory.
class OutputCollector {
 public:
  OutputCollector(fs::path spill_dir, std::string name_hint)
      : spill_dir_(std::move(spill_dir)), name_hint_(std::move(name_hint)) {}
  OutputCollector(const OutputCollector&) = delete;
  OutputCollector& operator=(const OutputCollector&) = delete;
  ~OutputCollector() {
    if (spill_fd_ >= 0) ::close(spill_fd_);
  }

  void append(std::string_view chunk) {
    if (chunk.empty()) return;
    total_bytes_ += chunk.size();
    newlines_ += static_cast<std::size_t>(std::count(chunk.begin(), chunk.end(), '\n'));
    ends_with_newline_ = chunk.back() == '\n';
    kept_.append(chunk);
    if (spilling_) {
      write_spill(chunk);
      // The tail view never needs more than kMaxBytes; trim in big steps.
      if (kept_.size() > 4 * kMaxBytes) kept_.erase(0, kept_.size() - 2 * kMaxBytes);
    } else if (total_bytes_ > kMaxBytes || total_lines() > kMaxLines) {
      spilling_ = true;
      open_spill();
      write_spill(kept_);
    }
  }

  std::size_t total_lines() const { return total_bytes_ == 0 ? 0 : newlines_ + (ends_with_newline_ ? 0 : 1); }
  bool has_output() const { return total_bytes_ > 0; }

  // The output as the model sees it, with a note when it is cut.
  std::string view(Json* details) {
    Truncation tail = truncate_tail(kept_);
    std::string text = clean_output(tail.text);
    if (!spilling_) return text;
    const std::string where = spill_path_.empty() ? fmt::format("full output could not be saved: {}", spill_error_)
                                                  : fmt::format("Full output: {}", spill_path_);
    const std::size_t total = total_lines();
    const std::size_t first = total - tail.shown_lines + 1;
    if (tail.partial_line) {
      text += fmt::format("\n\n[Showing the last {} of line {}. {}]", format_size(tail.text.size()), total, where);
    } else if (tail.by_bytes) {
      text += fmt::format("\n\n[Showing lines {}-{} of {} ({} limit). {}]", first, total, total, format_size(kMaxBytes), where);
    } else {
      text += fmt::format("\n\n[Showing lines {}-{} of {}. {}]", first, total, total, where);
    }
    if (details != nullptr) {
      (*details)["truncated"] = true;
      (*details)["totalLines"] = total;
      (*details)["totalBytes"] = total_bytes_;
      if (!spill_path_.empty()) (*details)["fullOutputPath"] = spill_path_;
    }
    return text;
  }

 private:
  void open_spill() {
    std::error_code ec;
    fs::create_directories(spill_dir_, ec);
    if (ec) {
      spill_error_ = fmt::format("cannot create {}: {}", spill_dir_.string(), ec.message());
      return;
    }
    std::random_device random;
    for (int attempt = 0; attempt < 16 && spill_fd_ < 0; ++attempt) {
      const fs::path path = spill_dir_ / fmt::format("bash-{}-{:08x}.log", name_hint_, random());
      spill_fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (spill_fd_ >= 0) spill_path_ = path.string();
      else if (errno != EEXIST) break;
    }
    if (spill_fd_ < 0) spill_error_ = fmt::format("cannot create a file in {}: {}", spill_dir_.string(), std::strerror(errno));
  }

  void write_spill(std::string_view bytes) {
    while (spill_fd_ >= 0 && !bytes.empty()) {
      const ssize_t n = ::write(spill_fd_, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        spill_error_ = fmt::format("writing {} failed: {}", spill_path_, std::strerror(errno));
        spill_path_.clear();
        ::close(spill_fd_);
        spill_fd_ = -1;
        return;
      }
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
  }

  fs::path spill_dir_;
  std::string name_hint_;
  std::string kept_;
  std::size_t total_bytes_ = 0;
  std::size_t newlines_ = 0;
  bool ends_with_newline_ = false;
  bool spilling_ = false;
  int spill_fd_ = -1;
  std::string spill_path_;
  std::string spill_error_;
};

// A file-name-safe piece of the tool call id.
std::string name_hint(const std::string& call_id) {
  std::string out;
  for (char c : call_id) {
    if (out.size() >= 32) break;
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') out += c;
  }
  return out.empty() ? "call" : out;
}

// Whether a failed command's output reads like the sandbox refused it: the
// messages of EACCES, EPERM and EROFS, as programs print them.
bool looks_denied(std::string_view output) {
  for (std::string_view denial : {"Permission denied", "Operation not permitted", "Read-only file system"}) {
    if (output.find(denial) != std::string_view::npos) return true;
  }
  return false;
}

// The one line cairn adds to a sandboxed command that failed that way.
std::string sandbox_note(const SandboxPolicy& policy) {
  const bool writes = policy.mode == SandboxMode::workspace_write;
  return fmt::format("[cairn] this command ran in the sandbox ({}): {}, ~/.ssh and other hidden paths are empty{}; "
                     "the user can choose `--sandbox off`",
                     describe_sandbox(policy.record()),
                     writes ? "writes outside the workspace and $TMPDIR, and into .git/hooks and .cairn, are refused"
                            : "writes outside $TMPDIR are refused",
                     policy.network ? "" : ", the network is off (a command that needs it can say \"network\": true; "
                                           "it gets the network when the user approves that call)");
}

std::string format_seconds(double seconds) {
  return seconds == std::floor(seconds) ? fmt::format("{}", static_cast<long long>(seconds)) : fmt::format("{}", seconds);
}

}  // namespace

Tool make_bash_tool(const CodingToolsOptions& options) {
  Json timeout = parameter("number", "Timeout in seconds (default 180; 0 disables the timeout)");
  timeout["minimum"] = 0;
  Tool tool = coding_tool(
      "bash",
      fmt::format("Execute a bash command in the current working directory. Returns stdout and stderr merged; stdin is "
                  "empty. Output is cut to the last {} lines or {} (whichever is hit first); when cut, the full output "
                  "is saved to a file whose path is given. A non-zero exit code is reported as an error. Timeout "
                  "defaults to {} seconds; pass timeout in seconds for a longer limit, or 0 for none. Background "
                  "processes the command leaves running are stopped when it exits.",
                  kMaxLines, format_size(kMaxBytes), format_seconds(kDefaultTimeoutSeconds)),
      object_schema({{"command", parameter("string", "Bash command to execute")},
                     {"timeout", std::move(timeout)},
                     {"network", parameter("boolean", "true when the command needs the network (a download, a package "
                                                      "install, git fetch): where the sandbox keeps the network off, "
                                                      "the user is asked, and the command gets it only if they allow")}},
                    {"command"}),
      "command");
  tool.network_argument = "network";
  tool.replay = Replay::never;
  tool.parallel = false;
  tool.settle = settle_call_processes(options.report);
  tool.execute = [cwd = options.cwd, spill_dir = options.spill_dir, policy = options.environment,
                  secrets = options.secrets, sandbox = options.sandbox](const Json& args,
                                                                        const ToolContext& context) -> ToolResult {
    const auto command = string_arg(args, "command");
    if (!command || command->empty()) return error_result("bash: the command argument is required");
    double timeout_seconds = kDefaultTimeoutSeconds;
    if (args.is_object() && args.contains("timeout") && !args["timeout"].is_null()) {
      if (!args["timeout"].is_number() || !std::isfinite(args["timeout"].get<double>()) || args["timeout"].get<double>() < 0) {
        return error_result("bash: timeout must be a number of seconds, 0 or more");
      }
      timeout_seconds = args["timeout"].get<double>();
    }
    std::error_code ec;
    if (!fs::is_directory(cwd, ec)) {
      return error_result(fmt::format("bash: the working directory {} does not exist", cwd.string()));
    }

    OutputCollector output(spill_dir.empty() ? fs::temp_directory_path(ec) : spill_dir, name_hint(context.tool_call_id));
    auto last_update = Clock::now() - kUpdateInterval;
    bool dirty = false;
    const auto send_update = [&](bool force) {
      if (!context.update || !dirty) return;
      if (!force && Clock::now() - last_update < kUpdateInterval) return;
      dirty = false;
      last_update = Clock::now();
      Json details = Json::object();
      ToolResult partial = ToolResult::text(output.view(&details));
      if (!details.empty()) partial.details = std::move(details);
      context.update(partial);
    };

    SecretStream redactor(secrets);
    ProcessSpec spec;
    spec.argv = {"bash", "-c", *command};
    spec.cwd = cwd;
    spec.environment = tool_environment(policy, tool_call_marker(context.run_id, context.tool_call_id));
    spec.cancel = context.cancel;
    spec.sandbox = sandbox;
    if (context.sandbox) {  // the policy the call's tool_started records
      spec.sandbox.mode = context.sandbox->mode;
      spec.sandbox.network = context.sandbox->network;
    }
    if (timeout_seconds > 0) {
      spec.timeout = std::chrono::milliseconds(static_cast<long long>(std::min(timeout_seconds, 1e9) * 1000));
    }
    spec.on_output = [&](std::string_view chunk) {
      output.append(redactor.feed(chunk));
      dirty = true;
      send_update(false);
      return true;
    };
    spec.on_tick = [&] { send_update(false); };
    const ProcessOutcome outcome = run_process(spec);
    if (outcome.end == ProcessOutcome::End::spawn_failed) return error_result(fmt::format("bash: {}", outcome.error));
    if (std::string rest = redactor.finish(); !rest.empty()) {
      output.append(rest);
      dirty = true;
    }
    send_update(true);

    Json details = Json::object();
    std::string text = output.view(&details);
    const auto with_status = [&](std::string status) {
      std::string_view shown = text;
      while (!shown.empty() && shown.back() == '\n') shown.remove_suffix(1);
      return shown.empty() ? status : fmt::format("{}\n\n{}", shown, status);
    };
    bool is_error = true;
    switch (outcome.end) {
      case ProcessOutcome::End::exited:
        details["exitCode"] = outcome.exit_code;
        if (outcome.exit_code == 0) {
          is_error = false;
          if (!output.has_output()) text = "(no output)";
        } else {
          const bool denied = spec.sandbox.enabled() && looks_denied(text);
          text = with_status(fmt::format("Command exited with code {}", outcome.exit_code));
          if (denied) {
            text += "\n" + sandbox_note(spec.sandbox);
            details["sandbox"] = describe_sandbox(spec.sandbox.record());
          }
        }
        break;
      case ProcessOutcome::End::signaled:
        details["exitCode"] = nullptr;
        details["signal"] = outcome.signal;
        text = with_status(fmt::format("Command was killed by signal {} ({})", outcome.signal, ::strsignal(outcome.signal)));
        break;
      case ProcessOutcome::End::timed_out:
        details["exitCode"] = nullptr;
        details["timedOut"] = true;
        text = with_status(fmt::format("Command timed out after {} seconds", format_seconds(timeout_seconds)));
        break;
      case ProcessOutcome::End::cancelled:
      case ProcessOutcome::End::stopped:
      case ProcessOutcome::End::spawn_failed:
        details["exitCode"] = nullptr;
        details["cancelled"] = true;
        text = with_status("Command aborted");
        break;
    }
    ToolResult result = ToolResult::text(std::move(text), is_error);
    result.details = std::move(details);
    return result;
  };
  return tool;
}

}  // namespace cairn::tools
