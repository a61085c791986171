#include "stream_redactor.hpp"

namespace cairn {

std::string StreamRedactor::pass(int index, std::string_view delta) {
  SecretStream& block = blocks_.try_emplace(index, secrets_).first->second;
  std::string text = block.feed(delta);
  revealed_ = revealed_ || block.revealed();
  return text;
}

std::string StreamRedactor::release(int index) {
  auto it = blocks_.find(index);
  if (it == blocks_.end()) return {};
  std::string text = it->second.finish();
  revealed_ = revealed_ || it->second.revealed();
  blocks_.erase(it);
  return text;
}

std::map<int, std::string> StreamRedactor::release_all() {
  std::map<int, std::string> out;
  for (auto& [index, block] : blocks_) {
    std::string text = block.finish();
    revealed_ = revealed_ || block.revealed();
    if (!text.empty()) out.emplace(index, std::move(text));
  }
  blocks_.clear();
  return out;
}

}  // namespace cairn
