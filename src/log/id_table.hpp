// SessionIndex's id → seq table: open addressing with linear probing over an
// array of (hash, seq) pairs. Ids are never removed (the log only grows), so
// there are no tombstones; the stored hash spares most probes a look at the
// record's id. A node-based map cost an allocation and a cache miss per id,
// which dominated opening a large session.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "log/index.hpp"

namespace cairn {

class SessionIndex::IdTable {
 public:
  static std::uint32_t hash(std::string_view id) {
    return static_cast<std::uint32_t>(std::hash<std::string_view>{}(id));
  }

  void reserve(std::size_t ids) {
    std::size_t capacity = 16;
    while (capacity < ids * 2) capacity *= 2;
    if (capacity > slots_.size()) rehash(capacity);
  }

  void prefetch(std::uint32_t h) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[h & mask_]);
  }

  // The seq holding `id` (whose hash is `h`), or -1.
  std::int32_t find(std::string_view id, std::uint32_t h, const std::vector<IndexedRecord>& records) const {
    if (slots_.empty()) return -1;
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.seq < 0) return -1;
      if (slot.hash == h && records[static_cast<std::size_t>(slot.seq)].id == id) return slot.seq;
    }
  }

  // The id (whose hash is `h`) is not in the table yet.
  void insert(std::uint32_t h, std::int32_t seq) {
    if ((count_ + 1) * 2 > slots_.size()) rehash(slots_.empty() ? 16 : slots_.size() * 2);
    place(Slot{h, seq});
    ++count_;
  }

 private:
  struct Slot {
    std::uint32_t hash = 0;
    std::int32_t seq = -1;  // -1: empty
  };

  void place(Slot slot) {
    std::size_t i = slot.hash & mask_;
    while (slots_[i].seq >= 0) i = (i + 1) & mask_;
    slots_[i] = slot;
  }

  void rehash(std::size_t capacity) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    for (const Slot& slot : old) {
      if (slot.seq >= 0) place(slot);
    }
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t count_ = 0;
};

}  // namespace cairn
