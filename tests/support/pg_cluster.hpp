// A private PostgreSQL cluster for the tests and benchmarks: Debian's postgresql-15 binaries,
// `initdb` into a temporary directory (as the `postgres` user when the tests
// run as root, since the server refuses root), listening on a Unix socket in
// that directory only: no TCP port, nothing shared with the machine. Started on
// first use, one per test process; stopped when the process exits, and by a
// watchdog when the process is killed.
#pragma once

#include <atomic>
#include <memory>
#include <string>

namespace cairn::testing {

class PgCluster {
 public:
  // The process's cluster, started on first call; null when it cannot be
  // started, and `why` says why. It runs with fsync off: the tests kill
  // clients and the server, never the machine's power.
  static PgCluster* shared(std::string* why = nullptr);
  // A cluster of the caller's own; `durable`: fsync on, as a real server runs
  // (for benchmarks). Null when it cannot be started, and `why` says why.
  static std::unique_ptr<PgCluster> start_new(bool durable, std::string* why);
  // A new, empty database on the shared cluster: its URI, or empty when
  // there is none, and `why` says why.
  static std::string shared_database(std::string* why);

  // A new, empty database and its postgres:// URI; empty on failure, and
  // `why` says why.
  std::string new_database(std::string* why = nullptr);
  // The URI of an existing database.
  std::string uri(const std::string& database) const;
  // The socket directory and port, for libpq's host= and port=.
  const std::string& socket_dir() const { return dir_; }
  int port() const { return port_; }
  // Runs pg_ctl with `arguments` (e.g. "restart -m immediate"); true on success.
  bool pg_ctl(const std::string& arguments) const;

  ~PgCluster();

 private:
  PgCluster() = default;
  bool start(bool durable, std::string& why);
  std::string as_server_user(const std::string& command) const;

  std::string bindir_;
  std::string dir_;   // holds data/, the socket and the server's log
  int port_ = 5432;   // names the socket file only
  std::atomic<int> databases_{0};
  bool started_ = false;
};

// Where Debian put the server's programs (initdb, pg_ctl): CAIRN_PG_BINDIR,
// else `pg_config --bindir`, else /usr/lib/postgresql/15/bin.
std::string pg_bindir();

}  // namespace cairn::testing
