// How far apart two names are, for "did you mean …?" suggestions (model
// names, slash commands): one measure, so that every layer suggests alike.
#pragma once

#include <cstddef>
#include <string_view>

namespace cairn {

// The Levenshtein distance between `a` and `b`, counted in bytes: the fewest
// single-byte insertions, deletions and substitutions that turn one into the
// other.
std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace cairn
