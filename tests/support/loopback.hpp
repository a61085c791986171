// A plain TCP client on 127.0.0.1, for tests and benchmarks that speak HTTP
// byte by byte (truncated, malformed or slow requests; streams cut mid-frame).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace cairn::testing {

// A connected socket, or -1.
int connect_loopback(int port);
// Sends all of `bytes`; false when the peer is gone.
bool send_all_bytes(int fd, std::string_view bytes);
// What the peer sends until it closes, or until `timeout`.
std::string read_until_closed(int fd, std::chrono::milliseconds timeout);

}  // namespace cairn::testing
