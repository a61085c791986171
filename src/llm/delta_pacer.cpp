#include "delta_pacer.hpp"

namespace cairn::wire {

bool DeltaPacer::add(int index, std::string_view fragment, Clock::time_point now) {
  auto [it, first] = gathered_.try_emplace(index, Gathered{.since = now});
  Gathered& block = it->second;
  block.text += fragment;
  streamed_ += fragment.size();
  if (streamed_ <= kSmallMessage) return true;
  // The message held streamed_ - gathered bytes before these: due when
  // these are half as many.
  const std::size_t gathered = block.text.size();
  if (2 * gathered >= streamed_ - gathered) return true;
  return now - block.since >= kMaxQuiet;
}

std::string DeltaPacer::take(int index) {
  auto it = gathered_.find(index);
  if (it == gathered_.end()) return {};
  std::string text = std::move(it->second.text);
  gathered_.erase(it);
  return text;
}

}  // namespace cairn::wire
