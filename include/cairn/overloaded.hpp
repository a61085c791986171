// The visitor for cairn's closed sums (std::variant): one lambda per
// alternative, std::visit(Overloaded{[](const A&) {...}, [](const B&) {...}}, v).
#pragma once

namespace cairn {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};

}  // namespace cairn
