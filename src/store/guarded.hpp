// Runs a store's body, turning any exception (allocation failure, a library
// throwing) into an io_error naming `what`: no exception leaves a store.
#pragma once

#include <exception>
#include <string_view>

#include <fmt/format.h>

#include "cairn/error.hpp"

namespace cairn {

template <class Body>
auto guarded(std::string_view what, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::exception& e) {
    return fail(Errc::io_error, fmt::format("{}: {}", what, e.what()));
  } catch (...) {
    return fail(Errc::io_error, fmt::format("{}: unknown failure", what));
  }
}

}  // namespace cairn
