// `cairn demo`: the durability story, offline, in a few seconds. A scripted
// model (the faux provider) asks the real coding tools to write a file and
// then to run a slow bash command; the demo kills the agent's process with
// SIGKILL while that command runs, reopens the session, shows the suspended
// run, resumes it, and tells from the log what was accepted, what was
// interrupted and what was never run again — and that `cairn verify` passes.
//
// The agent runs in a child process (the hidden `demo-agent` command, this
// same binary), so that the kill is a real one.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "agent/directories.hpp"
#include "agent_run.hpp"
#include "agent_setup.hpp"
#include "cairn/llm/faux.hpp"
#include "cairn/tools/coding_tools.hpp"
#include "cli.hpp"
#include "text.hpp"
#include "util/untrusted_text.hpp"


namespace cairn::cli {
namespace {

using namespace std::chrono_literals;

constexpr const char* kPrompt = "Write notes.txt with a line about this demo, then run the slow build step.";
constexpr const char* kSlowCommand = "echo started >> demo.log; sleep 30; echo finished >> demo.log";
constexpr const char* kNotes = "cairn demo: this file was written by the write tool before the crash.\n";

struct DemoOptions {
  std::string store;
  std::string dir;
};

struct DemoAgentOptions {
  std::string store;
  std::string dir;
  std::string session;
};

// The scripted model: what it answers depends only on where the
// conversation is, so the agent before the kill and after it agree.
FauxResponse demo_model(const LlmContext& context) {
  FauxResponse response;
  response.chunk_delay = 5ms;
  const LlmMessage* last = context.messages.empty() ? nullptr : &context.messages.back();
  const auto* result = last ? std::get_if<ToolResultMessage>(last) : nullptr;
  if (!result) {
    response.content.push_back(TextContent{.text = "I'll write the notes first."});
    response.then_tool_call("call_write", "write", Json{{"path", "notes.txt"}, {"content", kNotes}});
  } else if (result->tool_name == "write") {
    response.content.push_back(TextContent{.text = "Now the slow build step."});
    response.then_tool_call("call_bash", "bash", Json{{"command", kSlowCommand}});
  } else {
    std::string said;
    for (const auto& block : result->content) {
      if (const auto* text = std::get_if<TextContent>(&block)) said += text->text;
    }
    const bool interrupted = result->is_error && said.find("nterrupted") != std::string::npos;
    response.content.push_back(TextContent{
        .text = interrupted ? "The build step was interrupted while it ran, so it may have done part of its work: "
                              "demo.log says it started and never finished. I did not run it again; run it "
                              "yourself when you want it to complete. notes.txt is written."
                            : "Done: notes.txt is written and the build step ran."});
  }
  return response;
}

std::vector<Tool> demo_tools(const std::filesystem::path& dir, const std::string& session_id) {
  std::vector<Tool> tools;
  for (auto& tool : make_coding_tools(CodingToolsOptions{.cwd = dir, .spill_dir = agent::spill_dir_for(session_id)})) {
    if (tool.name == "write" || tool.name == "bash") tools.push_back(std::move(tool));
  }
  return tools;
}

Result<AgentHarness::Created> demo_harness(std::shared_ptr<Session> session, const std::filesystem::path& dir) {
  HarnessOptions options;
  const std::string id = session->id();
  options.session = std::move(session);
  options.model = FauxProvider::model("faux-demo");
  options.models.add(options.model, std::make_shared<FauxProvider>(demo_model));
  options.tools = demo_tools(dir, id);
  options.system_prompt = "You are the scripted model of cairn's demo.";
  return AgentHarness::create(std::move(options));
}

// ---- the agent process ------------------------------------------------------------

int run_demo_agent(const DemoAgentOptions& options) {
  auto store = open_store_for(options.store);
  if (!store) return store.error();
  auto session = open_session(**store, options.session, false);
  if (!session) return session.error();
  auto created = demo_harness(*session, options.dir);
  if (!created) return report(kFailure, created.error().message);
  AgentRef ref = created->harness.main();
  EventPrinter printer(created->harness, "main", PrintFormat::text_streamed);
  RunResult result = ref.prompt(kPrompt);
  return result.ok() ? kOk : kFailure;
}

// ---- the demo ----------------------------------------------------------------------

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int count_lines(const std::string& text, std::string_view line) {
  int count = 0;
  std::istringstream in(text);
  for (std::string each; std::getline(in, each);) count += each == line ? 1 : 0;
  return count;
}

// Kills what the killed agent left running (the bash tool's command runs in
// a process group of its own): as this process is their subreaper, they
// are its children now. A machine that goes down takes them along too.
void kill_orphans() {
  const pid_t self = ::getpid();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    pid_t parent = 0;
    rest >> state >> parent;
    if (parent != self) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    ::kill(-pid, SIGKILL);  // its group, when it leads one
    ::kill(pid, SIGKILL);
  }
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

// Runs this binary with `args`; its stdout and stderr go to `output`.
pid_t spawn_self(const std::vector<std::string>& args, int output_fd) {
  std::vector<std::string> argv_strings{"/proc/self/exe"};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(output_fd, 1);
    ::dup2(output_fd, 2);
    ::execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  return pid;
}

int wait_status(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Lines of `text`, each indented, for quoting another process's output
// (written to a file, so byte for byte: shown here as untrusted text).
void quote(const std::string& text, std::string_view indent = "    | ") {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) print_untrusted(stdout, "{}{}\n", indent, line);
}

int run_demo(const DemoOptions& options) {
  std::fflush(stdout);
  std::filesystem::path dir;
  std::error_code ec;
  if (options.dir.empty()) {
    std::string pattern = (std::filesystem::temp_directory_path() / "cairn-demo-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) return report(kFailure, "cannot create a temporary directory");
    dir = pattern;
  } else {
    dir = std::filesystem::absolute(options.dir, ec);
    std::filesystem::create_directories(dir, ec);
    if (ec) return report(kUsage, fmt::format("cannot create {}: {}", options.dir, ec.message()));
  }
  dir = std::filesystem::canonical(dir, ec);
  const std::string store_uri = options.store.empty() ? "jsonl:" + (dir / "sessions").string() : options.store;
  std::filesystem::remove(dir / "demo.log", ec);
  std::filesystem::remove(dir / "notes.txt", ec);

  auto store = open_store_for(store_uri);
  if (!store) return store.error();
  std::string id;
  {
    auto session = (*store)->create(CreateOptions{.cwd = dir.string()});
    if (!session) return report(session.error());
    id = (*session)->id();
  }  // let go of it: the agent process opens it next
  const std::string cli = fmt::format("--store {}", store_uri);
  print_untrusted(stdout,
                  "cairn demo: a run killed in the middle of a command, then resumed from its log.\n"
                  "  directory: {}\n  session:   {} ({})\n\n",
                  dir.string(), id, cli);

  // 1. The agent runs in its own process.
  fmt::print("1. The agent gets the prompt \"{}\"\n   Its process (output quoted):\n", kPrompt);
  std::fflush(stdout);
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  const auto agent_log = dir / "agent-output.txt";
  const int log_fd = ::open(agent_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) return report(kFailure, fmt::format("cannot write {}", agent_log.string()));
  const pid_t agent = spawn_self({"demo-agent", "--store", store_uri, "--dir", dir.string(), "--session", id}, log_fd);
  ::close(log_fd);
  if (agent < 0) return report(kFailure, "cannot start the agent process");

  // 2. Wait for the slow command to be under way, then kill the agent.
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (count_lines(read_file(dir / "demo.log"), "started") == 0) {
    if (std::chrono::steady_clock::now() > deadline || ::waitpid(agent, nullptr, WNOHANG) == agent) {
      quote(read_file(agent_log));
      kill_orphans();
      return report(kFailure, "the agent never started the slow command");
    }
    std::this_thread::sleep_for(10ms);
  }
  std::this_thread::sleep_for(100ms);
  ::kill(agent, SIGKILL);
  wait_status(agent);
  kill_orphans();
  quote(read_file(agent_log));
  print_untrusted(stdout,
                  "\n2. While bash ran `{}`, the agent's process was killed with SIGKILL (pid {}):\n"
                  "   no shutdown, no cleanup — as in a crash or a power cut. demo.log holds: {}\n\n",
                  kSlowCommand, agent, one_line(read_file(dir / "demo.log"), 60));

  // 3. Reopen: the log says a run is suspended.
  auto session = open_session(**store, id, false);
  if (!session) return session.error();
  auto created = demo_harness(*session, dir);
  if (!created) return report(kFailure, created.error().message);
  if (created->suspended.empty()) return report(kFailure, "the reopened session shows no suspended run");
  print_untrusted(stdout,
                  "3. Reopened, the session shows {}.\n   The log ends with bash's tool_started and no result "
                  "for it.\n\n",
                  describe_suspended(created->suspended.front()));

  // 4. Resume it.
  fmt::print("4. cairn resume: the run goes on from its log.\n");
  std::fflush(stdout);
  AgentRef ref = created->harness.main();
  RunResult resumed;
  {
    EventPrinter printer(created->harness, "main", PrintFormat::text_streamed, stdout);
    resumed = ref.resume();
  }
  std::fflush(stdout);
  if (!resumed.ok()) {
    return report(kFailure, fmt::format("the resumed run ended {}: {}", to_string(resumed.outcome),
                                        resumed.error ? resumed.error->message : std::string()));
  }

  // 5. What the log says.
  auto log = (*session)->get_log();
  if (!log) return report(log.error());
  std::int64_t prompt_seq = -1, first_request = -1, write_started = -1, bash_started = -1, write_result = -1, bash_result = -1;
  int bash_starts = 0;
  std::string bash_said;
  for (const LogLine& line : *log) {
    auto record = (*session)->get_record(line.seq);
    if (!record || !*record) continue;
    if (const auto* harness = std::get_if<HarnessRecord>(&(*record)->body)) {
      if (std::holds_alternative<GenerationStarted>(harness->body) && first_request < 0) first_request = line.seq;
      if (const auto* started = std::get_if<ToolStarted>(&harness->body)) {
        if (started->tool_name == "write") write_started = line.seq;
        if (started->tool_name == "bash") {
          bash_started = line.seq;
          ++bash_starts;
        }
      }
    } else if (const auto* entry = std::get_if<TreeEntry>(&(*record)->body)) {
      const auto* body = std::get_if<MessageBody>(&entry->body);
      if (!body) continue;
      if (std::holds_alternative<UserMessage>(body->message) && prompt_seq < 0) prompt_seq = line.seq;
      if (const auto* result = std::get_if<ToolResultMessage>(&body->message)) {
        if (result->tool_name == "write") write_result = line.seq;
        if (result->tool_name == "bash") {
          bash_result = line.seq;
          bash_said = message_text(AgentMessage(*result));
        }
      }
    }
  }
  const std::string demo_log = read_file(dir / "demo.log");
  const int started_lines = count_lines(demo_log, "started"), finished_lines = count_lines(demo_log, "finished");

  // 6. cairn verify, as a user would run it.
  const auto verify_output = dir / "verify-output.txt";
  const int verify_fd = ::open(verify_output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const pid_t verifier = spawn_self({"verify", id, "--store", store_uri}, verify_fd);
  ::close(verify_fd);
  const int verified = wait_status(verifier);

  print_untrusted(
      stdout,
      "\n5. The story, from the log ({} records):\n"
      "   accepted      the prompt was in the log (seq {}) before the first model request (seq {})\n"
      "   done          write notes.txt: started at seq {}, its result at seq {}; notes.txt is there ({})\n"
      "   interrupted   bash started at seq {} and had no result when the process died; bash's replay is\n"
      "                 \"never\", so on resume it got this result (seq {}) instead of a second run:\n"
      "                   \"{}\"\n"
      "   never re-run  bash was started {} time(s); demo.log has \"started\" {} time(s) and \"finished\" {} "
      "time(s)\n"
      "   answered      the model read the interrupted result and finished the run (outcome: completed)\n"
      "   verified      cairn verify {}: {}\n",
      log->size(), prompt_seq, first_request, write_started, write_result,
      std::filesystem::exists(dir / "notes.txt") ? "yes" : "no", bash_started, bash_result,
      one_line(bash_said, 90), bash_starts, started_lines, finished_lines, id,
      verified == 0 ? "passed" : fmt::format("FAILED (exit {})", verified));
  if (verified != 0) quote(read_file(verify_output));
  print_untrusted(stdout, "\n   See it yourself: cairn log {} {}   ·   cairn tree {} {}\n", id, cli, id, cli);

  const bool told = prompt_seq >= 0 && first_request > prompt_seq && write_result > write_started && bash_result > bash_started &&
                    bash_starts == 1 && started_lines == 1 && finished_lines == 0 && verified == 0;
  return told ? kOk : report(kFailure, "the demo did not go as told above");
}

}  // namespace

void register_agent_demo_command(CLI::App& app, Commands& commands) {
  {
    auto [sub, options] = add_command(app, commands,
        "demo",
        "Offline, in a few seconds: an agent (a scripted model, the real write and bash tools) is killed with "
        "SIGKILL while a command runs, then its session is reopened and resumed; prints what was accepted, what "
        "was interrupted, what was never run again, and cairn verify's verdict", run_demo);
    sub->add_option("--dir", options->dir, "Work in DIR (default: a new temporary directory, kept afterwards)")
        ->type_name("DIR");
    sub->add_option("--store", options->store, "Where the demo's session lives (default: jsonl:DIR/sessions)")
        ->type_name("URI");
  }
  {
    auto [sub, options] = add_command(app, commands, "demo-agent", "The demo's agent process", run_demo_agent);
    sub->group("");  // hidden: the demo runs it
    sub->add_option("--store", options->store)->required();
    sub->add_option("--dir", options->dir)->required();
    sub->add_option("--session", options->session)->required();
  }
}

}  // namespace cairn::cli
