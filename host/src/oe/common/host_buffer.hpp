// What every oe_host_buf the host hands out points at, and how host->release finds it again,
// whichever service filled it, so the ABI keeps one release function (docs/abi.md, Ownership).
// Text is the common case; a buffer that also holds something (a runtime.limits slot) derives
// and gives it back in its destructor.
//
// A buffer's `opaque` is not a pointer but a ticket into a table: slot and generation. Release
// takes the buffer out of its slot and moves the slot to its next generation, so a second release
// of the same ticket (a copy of the oe_host_buf, or the buffer released twice) finds nothing and
// does nothing, as the ABI promises, instead of freeing twice; so does a ticket the host never
// handed out.
#pragma once

#include <oe/types.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace oe {

class HostBuffer {
 public:
  HostBuffer() = default;
  explicit HostBuffer(std::string text) : text_(std::move(text)) {}
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  virtual ~HostBuffer() = default;

  [[nodiscard]] const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// The buffers handed out and not yet released. One per process (a function-local static, below):
// a buffer may be given out by one part of the host and released through any host table.
class HostBufferTable {
 public:
  // The ticket of `buffer`, now held by the table.
  void* put(std::unique_ptr<HostBuffer> buffer) {
    std::lock_guard lock(mutex_);
    uint32_t index = 0;
    if (free_.empty()) {
      index = static_cast<uint32_t>(slots_.size());
      slots_.emplace_back();
    } else {
      index = free_.back();
      free_.pop_back();
    }
    Slot& slot = slots_[index];
    slot.buffer = std::move(buffer);
    return ticket(index, slot.generation);
  }

  // The buffer of `opaque`, taken out of the table; nullptr for a ticket already released or
  // never handed out.
  std::unique_ptr<HostBuffer> take(const void* opaque) {
    const auto value = reinterpret_cast<uintptr_t>(opaque);
    const auto index = static_cast<uint32_t>(value & kIndexMask);
    const auto generation = static_cast<uint32_t>(value >> kIndexBits);
    if (index == 0) {
      return nullptr;
    }
    std::lock_guard lock(mutex_);
    if (index - 1 >= slots_.size()) {
      return nullptr;
    }
    Slot& slot = slots_[index - 1];
    if (slot.buffer == nullptr || slot.generation != generation) {
      return nullptr;
    }
    ++slot.generation;
    free_.push_back(index - 1);
    return std::move(slot.buffer);
  }

 private:
  // Tickets pack a 1-based slot number (never 0, so no ticket is NULL) under a generation.
  static_assert(sizeof(uintptr_t) == 8, "host buffer tickets need 64-bit pointers");
  static constexpr unsigned kIndexBits = 32;
  static constexpr uintptr_t kIndexMask = (uintptr_t{1} << kIndexBits) - 1;

  static void* ticket(uint32_t index, uint32_t generation) {
    return reinterpret_cast<void*>((uintptr_t{generation} << kIndexBits) | (uintptr_t{index} + 1));
  }

  struct Slot {
    std::unique_ptr<HostBuffer> buffer;
    uint32_t generation = 0;
  };
  std::mutex mutex_;
  std::deque<Slot> slots_;
  std::vector<uint32_t> free_;
};

inline HostBufferTable& hostBuffers() {
  static HostBufferTable table;  // process-wide by nature: see HostBufferTable
  return table;
}

// Hands `owned` to the plugin as `out` (ptr/len: its text; freed by host->release).
inline void giveBuffer(std::unique_ptr<HostBuffer> owned, oe_host_buf* out) {
  out->ptr = owned->text().data();
  out->len = owned->text().size();
  out->opaque = hostBuffers().put(std::move(owned));
}

inline void giveBuffer(std::string text, oe_host_buf* out) {
  giveBuffer(std::make_unique<HostBuffer>(std::move(text)), out);
}

// host->release: frees what giveBuffer handed out, once; nullptr-safe, and a second release of
// the same buffer (or of a copy of it) does nothing.
inline void releaseBuffer(oe_host_buf* buf) {
  if (buf == nullptr) {
    return;
  }
  std::unique_ptr<HostBuffer> owned = hostBuffers().take(buf->opaque);
  *buf = oe_host_buf{nullptr, 0, nullptr};
  owned.reset();  // outside the table's lock: a limits slot's destructor gives its slot back
}

}  // namespace oe
