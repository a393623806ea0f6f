// Length-prefixed frames over a stream socket: three native-endian uint32 lengths (head, a, b),
// then the bytes. Both ends are the same binary on the same machine, so no byte order is fixed.
#include "oe/plugins/plugin_wire.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace oe::plugins::wire {
namespace {
// A frame carries a writer's contents at most (256 MiB by default); anything far beyond is a
// broken stream, not a message.
constexpr uint64_t kMaxFrame = uint64_t{1} << 30;
constexpr size_t kReadChunk = 64 * 1024;
}  // namespace

bool Channel::send(const nlohmann::json& head, std::string_view a, std::string_view b) {
  const std::string text = head.dump();
  const uint32_t lengths[3] = {static_cast<uint32_t>(text.size()), static_cast<uint32_t>(a.size()),
                               static_cast<uint32_t>(b.size())};
  std::string out;
  out.reserve(sizeof(lengths) + text.size() + a.size() + b.size());
  out.append(reinterpret_cast<const char*>(lengths), sizeof(lengths));
  out.append(text);
  out.append(a);
  out.append(b);
  std::lock_guard lock(send_mutex_);
  size_t done = 0;
  while (done < out.size()) {
    // MSG_NOSIGNAL: a helper that died is a failed send, not a SIGPIPE for whoever embeds oe.
    const ssize_t n = ::send(fd_, out.data() + done, out.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

bool Channel::fill(size_t need) {
  if (in_pos_ > 0 && in_pos_ == in_.size()) {
    in_.clear();
    in_pos_ = 0;
  }
  while (in_.size() - in_pos_ < need) {
    const size_t old = in_.size();
    in_.resize(old + std::max(kReadChunk, need));
    const ssize_t n = ::read(fd_, in_.data() + old, in_.size() - old);
    if (n < 0 && errno == EINTR) {
      in_.resize(old);
      continue;
    }
    if (n <= 0) {
      in_.resize(old);
      return false;
    }
    in_.resize(old + static_cast<size_t>(n));
  }
  return true;
}

std::optional<Frame> Channel::receive() {
  uint32_t lengths[3];
  if (!fill(sizeof(lengths))) {
    return std::nullopt;
  }
  std::memcpy(lengths, in_.data() + in_pos_, sizeof(lengths));
  const uint64_t body = uint64_t{lengths[0]} + lengths[1] + lengths[2];
  if (body > kMaxFrame || !fill(sizeof(lengths) + body)) {
    return std::nullopt;
  }
  in_pos_ += sizeof(lengths);
  Frame frame;
  frame.head = nlohmann::json::parse(in_.data() + in_pos_, in_.data() + in_pos_ + lengths[0],
                                     nullptr, /*allow_exceptions=*/false);
  if (frame.head.is_discarded() || !frame.head.is_object()) {
    return std::nullopt;
  }
  in_pos_ += lengths[0];
  frame.a.assign(in_.data() + in_pos_, lengths[1]);
  in_pos_ += lengths[1];
  frame.b.assign(in_.data() + in_pos_, lengths[2]);
  in_pos_ += lengths[2];
  // Keep the buffer from growing with what was consumed.
  if (in_pos_ > kReadChunk && in_pos_ * 2 > in_.size()) {
    in_.erase(0, in_pos_);
    in_pos_ = 0;
  }
  return frame;
}

}  // namespace oe::plugins::wire
