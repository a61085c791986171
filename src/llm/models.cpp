#include "cairn/llm/provider.hpp"

namespace cairn {

std::string_view to_string(ProviderEvent::Type type) {
  using T = ProviderEvent::Type;
  switch (type) {
    case T::start: return "start";
    case T::text_start: return "text_start";
    case T::text_delta: return "text_delta";
    case T::text_end: return "text_end";
    case T::thinking_start: return "thinking_start";
    case T::thinking_delta: return "thinking_delta";
    case T::thinking_end: return "thinking_end";
    case T::toolcall_start: return "toolcall_start";
    case T::toolcall_delta: return "toolcall_delta";
    case T::toolcall_end: return "toolcall_end";
    case T::done: return "done";
    case T::error: return "error";
  }
  return "unknown";
}

void Models::add(Model model, std::shared_ptr<Provider> provider) {
  for (auto& entry : entries_) {
    if (entry.model.provider == model.provider && entry.model.id == model.id) {
      entry = Entry{std::move(model), std::move(provider)};
      return;
    }
  }
  entries_.push_back(Entry{std::move(model), std::move(provider)});
}

const Models::Entry* Models::find(std::string_view provider, std::string_view id) const {
  for (const auto& entry : entries_) {
    if (entry.model.provider == provider && entry.model.id == id) return &entry;
  }
  return nullptr;
}

std::vector<Model> Models::list() const {
  std::vector<Model> models;
  for (const auto& entry : entries_) models.push_back(entry.model);
  return models;
}

Cost cost_of(const Usage& usage, const ModelPrices& prices) {
  Cost cost;
  cost.input = static_cast<double>(usage.input) * prices.input / 1e6;
  cost.output = static_cast<double>(usage.output) * prices.output / 1e6;
  cost.cache_read = static_cast<double>(usage.cache_read) * prices.cache_read / 1e6;
  cost.cache_write = static_cast<double>(usage.cache_write) * prices.cache_write / 1e6;
  cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write;
  return cost;
}

}  // namespace cairn
