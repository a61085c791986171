// Lease owners of the PostgreSQL store (lease_holder.hpp).
#include "lease_holder.hpp"

#include <sys/types.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>

#include <fmt/format.h>

namespace cairn::pg {
namespace {

std::string first_line(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// The kernel's id of this boot: two machines (or one rebooted) never share it.
const std::string& boot_id() {
  static const std::string id = first_line("/proc/sys/kernel/random/boot_id");
  return id;
}

// This process's PID namespace ("4026531836"): a pid means a process only
// within one.
const std::string& pid_namespace() {
  static const std::string ns = [] {
    std::error_code ec;
    const std::string link = std::filesystem::read_symlink("/proc/self/ns/pid", ec).string();  // "pid:[4026531836]"
    const auto open = link.find('['), close = link.rfind(']');
    if (ec || open == std::string::npos || close == std::string::npos || close < open) return std::string();
    return link.substr(open + 1, close - open - 1);
  }();
  return ns;
}

struct ProcessState {
  char state = '?';
  std::string start;  // clock ticks after boot, as /proc says it
};

// Fields 3 (state) and 22 (start time) of /proc/PID/stat; nullopt when no
// such process. They follow the command name, which is in parentheses and
// may hold anything, so counting starts after its last ')'.
std::optional<ProcessState> process_state(std::string_view pid) {
  const std::string stat = first_line(fmt::format("/proc/{}/stat", pid));
  const auto name_end = stat.rfind(')');
  if (name_end == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(name_end + 1));
  ProcessState process;
  fields >> process.state;
  std::string field;
  for (int i = 4; i <= 22 && fields >> field; ++i) {
    if (i == 22) process.start = field;
  }
  if (process.start.empty()) return std::nullopt;
  return process;
}

// The word after `key ` in an owner, or empty.
std::string_view field_of(std::string_view owner, std::string_view key) {
  const std::string marker = fmt::format(" {} ", key);
  const auto at = owner.find(marker);
  if (at == std::string_view::npos) return {};
  const auto begin = at + marker.size();
  return owner.substr(begin, owner.find(' ', begin) - begin);
}

}  // namespace

const std::string& this_owner() {
  static const std::string owner = [] {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    std::random_device random;
    const std::uint64_t nonce = (static_cast<std::uint64_t>(random()) << 32) ^ random();
    const std::string pid = std::to_string(::getpid());
    const auto self = process_state(pid);
    // Without all three, holder_is_gone never says gone of this process.
    const bool known = !boot_id().empty() && !pid_namespace().empty() && self;
    return fmt::format("{} pid {} #{:016x}{}", host[0] ? host : "unknown-host", pid, nonce,
                       known ? fmt::format(" boot {} pidns {} start {}", boot_id(), pid_namespace(), self->start)
                             : std::string());
  }();
  return owner;
}

std::string describe_owner(std::string_view owner) {
  // "HOST pid PID #NONCE ..." -> "pid PID on HOST"
  const auto pid = owner.find(" pid ");
  const auto nonce = owner.find(" #");
  if (pid == std::string_view::npos || nonce == std::string_view::npos || nonce < pid) return std::string(owner);
  return fmt::format("pid {} on {}", owner.substr(pid + 5, nonce - pid - 5), owner.substr(0, pid));
}

bool holder_is_gone(std::string_view owner) {
  const std::string_view boot = field_of(owner, "boot"), ns = field_of(owner, "pidns"),
                         start = field_of(owner, "start"), pid = field_of(owner, "pid");
  if (boot.empty() || ns.empty() || start.empty() || pid.empty()) return false;
  if (boot != boot_id() || ns != pid_namespace()) return false;
  int number = 0;
  if (std::from_chars(pid.data(), pid.data() + pid.size(), number).ec != std::errc{} || number <= 0) return false;
  const auto process = process_state(pid);
  return !process || process->start != start || process->state == 'Z' || process->state == 'X';
}

}  // namespace cairn::pg
