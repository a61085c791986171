// A log state layered over another, every change journalled so that it can
// be rolled back: a group commit validates each batch against the state the
// batches before it leave (session.cpp), and repair tries a placeholder
// against the records that follow it (store/repair.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "log/index.hpp"

namespace cairn {

// The state a group's earlier batches leave behind, layered over the index.
// Every change is journalled so that a rejected batch can be rolled back.
class StagedState final : public MutableLogState {
 public:
  explicit StagedState(const LogStateView& base) : base_(base), next_seq_(base.next_seq()) {}

  std::int64_t next_seq() const override { return next_seq_; }
  std::optional<RecordType> type_of_id(std::string_view id) const override {
    if (auto it = ids_.find(id); it != ids_.end()) return it->second;
    return base_.type_of_id(id);
  }
  const RefSlot* ref(std::string_view name) const override {
    if (auto it = refs_.find(name); it != refs_.end()) return it->second ? &*it->second : nullptr;
    return base_.ref(name);
  }
  void put_id(std::string_view id, RecordType type) override {
    // check_invariants refused duplicates, so the id is new.
    ids_.emplace(std::string(id), type);
    journal_.push_back(Undo{std::string(id), true, std::nullopt});
  }
  // Copy on write: the first change to a ref copies the base's slot here.
  RefSlot& mutable_ref(std::string_view name) override {
    auto it = refs_.find(name);
    if (it == refs_.end()) {
      journal_.push_back(Undo{std::string(name), false, std::nullopt});
      it = refs_.emplace(std::string(name), *base_.ref(name)).first;
    } else {
      journal_.push_back(Undo{std::string(name), false, it->second});
    }
    return *it->second;
  }
  void create_ref(std::string_view name, std::optional<std::string> leaf) override {
    set_ref(name, RefSlot{std::move(leaf), std::nullopt});
  }
  void erase_ref(std::string_view name) override { set_ref(name, std::nullopt); }
  void advance() { ++next_seq_; }

  // A checkpoint to roll back to when a later record of the same batch fails.
  struct Mark {
    std::size_t journal;
    std::int64_t next_seq;
  };
  Mark mark() const { return Mark{journal_.size(), next_seq_}; }
  void restore(Mark mark) {
    while (journal_.size() > mark.journal) {
      Undo& undo = journal_.back();
      if (undo.is_id) {
        ids_.erase(undo.key);
      } else if (undo.slot) {
        refs_.insert_or_assign(undo.key, std::move(*undo.slot));
      } else {
        refs_.erase(undo.key);
      }
      journal_.pop_back();
    }
    next_seq_ = mark.next_seq;
  }

 private:
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  template <class T>
  using Map = std::unordered_map<std::string, T, StringHash, std::equal_to<>>;

  void set_ref(std::string_view name, std::optional<RefSlot> slot) {
    auto it = refs_.find(name);
    if (it == refs_.end()) {
      journal_.push_back(Undo{std::string(name), false, std::nullopt});
      refs_.emplace(std::string(name), std::move(slot));
    } else {
      journal_.push_back(Undo{std::string(name), false, it->second});
      it->second = std::move(slot);
    }
  }

  // How to undo one change: an id to forget, or a staged ref slot to put back
  // (`slot` empty: the ref had no staged slot before).
  struct Undo {
    std::string key;
    bool is_id;
    std::optional<std::optional<RefSlot>> slot;
  };

  const LogStateView& base_;
  std::int64_t next_seq_;
  Map<RecordType> ids_;
  Map<std::optional<RefSlot>> refs_;
  std::vector<Undo> journal_;
};

}  // namespace cairn
