#include "support/pg_cluster.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>

#include <fmt/format.h>
#include "store/pg_conn.hpp"

namespace cairn::testing {

namespace {

std::string read_command(const std::string& command) {
  std::string out;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[512];
    while (std::fgets(buffer, sizeof buffer, pipe)) out += buffer;
    ::pclose(pipe);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string tail_of(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > 2000 ? text.substr(text.size() - 2000) : text;
}

}  // namespace

std::string pg_bindir() {
  if (const char* dir = std::getenv("CAIRN_PG_BINDIR"); dir && *dir) return dir;
  const std::string configured = read_command("pg_config --bindir 2>/dev/null");
  if (!configured.empty() && std::filesystem::exists(configured + "/initdb")) return configured;
  return "/usr/lib/postgresql/15/bin";
}

std::string PgCluster::shared_database(std::string* why) {
  PgCluster* cluster = shared(why);
  return cluster ? cluster->new_database(why) : std::string();
}

PgCluster* PgCluster::shared(std::string* why) {
  static std::once_flag once;
  static std::unique_ptr<PgCluster> cluster;  // stopped at exit, after every test
  static std::string failure;
  std::call_once(once, [] { cluster = start_new(/*durable=*/false, &failure); });
  if (!cluster && why) *why = failure;
  return cluster.get();
}

std::unique_ptr<PgCluster> PgCluster::start_new(bool durable, std::string* why) {
  std::unique_ptr<PgCluster> cluster(new PgCluster());
  std::string failure;
  if (cluster->start(durable, failure)) return cluster;
  if (why) *why = "cannot start a private PostgreSQL cluster: " + failure;
  return nullptr;
}

std::string PgCluster::as_server_user(const std::string& command) const {
  if (::geteuid() != 0) return command;
  return fmt::format("runuser -u postgres -- {}", command);
}

bool PgCluster::start(bool durable, std::string& why) {
  bindir_ = pg_bindir();
  if (!std::filesystem::exists(bindir_ + "/initdb")) {
    why = fmt::format("no initdb in {} (install Debian's postgresql-15)", bindir_);
    return false;
  }
  std::string pattern = (std::filesystem::temp_directory_path() / "cairn-pg-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    why = "mkdtemp failed";
    return false;
  }
  dir_ = pattern;
  if (::geteuid() == 0) {
    const passwd* user = ::getpwnam("postgres");
    if (!user) {
      why = "running as root and there is no postgres user to run the server as";
      return false;
    }
    if (::chown(dir_.c_str(), user->pw_uid, user->pw_gid) != 0) {
      why = "cannot hand the cluster's directory to the postgres user";
      return false;
    }
  }
  ::chmod(dir_.c_str(), 0755);
  const std::string data = dir_ + "/data";
  const std::string initdb = as_server_user(
      fmt::format("{}/initdb -D {} -U cairn --auth=trust -E UTF8 --no-sync --locale=C.UTF-8 >{}/initdb.log 2>&1", bindir_,
                  data, dir_));
  if (std::system(initdb.c_str()) != 0) {
    why = fmt::format("initdb failed: {}", tail_of(dir_ + "/initdb.log"));
    return false;
  }
  // No TCP at all; the socket lives in the cluster's directory.
  if (!pg_ctl(fmt::format("start -w -t 60 -l {}/server.log -o \"-k {} -c listen_addresses='' -p {} -c fsync={} "
                          "-c max_connections=200 -c shared_buffers=32MB\"",
                          dir_, dir_, port_, durable ? "on" : "off"))) {
    why = fmt::format("the server did not start: {}", tail_of(dir_ + "/server.log"));
    return false;
  }
  started_ = true;
  // A watchdog stops the server if this process dies without running its
  // destructors (a SIGKILL, a timeout).
  const std::string watchdog = fmt::format(
      "(while kill -0 {} 2>/dev/null; do sleep 1; done; {} >/dev/null 2>&1; rm -rf {}) </dev/null >/dev/null 2>&1 &",
      ::getpid(), as_server_user(fmt::format("{}/pg_ctl -D {}/data stop -m immediate", bindir_, dir_)), dir_);
  (void)std::system(watchdog.c_str());
  return true;
}

bool PgCluster::pg_ctl(const std::string& arguments) const {
  const std::string command =
      as_server_user(fmt::format("{}/pg_ctl -D {}/data {} >>{}/pg_ctl.log 2>&1", bindir_, dir_, arguments, dir_));
  return std::system(command.c_str()) == 0;
}

PgCluster::~PgCluster() {
  if (started_) pg_ctl("stop -m immediate");
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string PgCluster::uri(const std::string& database) const {
  return fmt::format("postgresql:///{}?host={}&port={}&user=cairn", database, dir_, port_);
}

std::string PgCluster::new_database(std::string* why) {
  const std::string name = fmt::format("t{}_{}", ::getpid(), ++databases_);
  auto connection = pg::Connection::connect(uri("postgres"));
  if (!connection) {
    if (why) *why = "cannot connect to the test cluster: " + connection.error().message;
    return {};
  }
  if (auto created = connection->run(fmt::format("CREATE DATABASE {}", name)); !created) {
    if (why) *why = fmt::format("cannot create database {}: {}", name, created.error().message);
    return {};
  }
  return uri(name);
}

}  // namespace cairn::testing
