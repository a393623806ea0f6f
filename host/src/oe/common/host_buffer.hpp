// What every oe_host_buf the host hands out points at (its `opaque`): host->release deletes it,
// whichever service filled it, so the ABI keeps one release function (docs/abi.md, Ownership).
// Text is the common case; a buffer that also holds something (a runtime.limits slot) derives
// and gives it back in its destructor.
#pragma once

#include <oe/types.h>

#include <memory>
#include <string>
#include <utility>

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

// Hands `owned` to the plugin as `out` (ptr/len: its text; freed by host->release).
inline void giveBuffer(std::unique_ptr<HostBuffer> owned, oe_host_buf* out) {
  out->ptr = owned->text().data();
  out->len = owned->text().size();
  out->opaque = owned.release();
}

inline void giveBuffer(std::string text, oe_host_buf* out) {
  giveBuffer(std::make_unique<HostBuffer>(std::move(text)), out);
}

// host->release: frees what giveBuffer handed out (nullptr-safe).
inline void releaseBuffer(oe_host_buf* buf) {
  if (buf == nullptr) {
    return;
  }
  delete static_cast<HostBuffer*>(buf->opaque);  // NOLINT(cppcoreguidelines-owning-memory)
  *buf = oe_host_buf{nullptr, 0, nullptr};
}

}  // namespace oe
