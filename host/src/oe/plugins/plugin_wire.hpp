// The framing between oe and a plugin helper process (`oe plugin-host`, docs/trust.md,
// "Process isolation"): each message is a small JSON head (what to do, ids, statuses) and two
// raw byte strings (request, response and error texts, which are JSON or prose already and are
// never parsed on the way through).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace oe::plugins::wire {

struct Frame {
  nlohmann::json head;
  std::string a;
  std::string b;
};

// One end of the socket. send() may be called from any thread (a frame is written whole, under
// a lock); receive() from one reading thread only.
class Channel {
 public:
  explicit Channel(int fd) : fd_(fd) {}
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // False once the other end is gone.
  bool send(const nlohmann::json& head, std::string_view a = {}, std::string_view b = {});
  // The next frame, or nullopt at the end of the stream (the other process closed it or died)
  // or on a frame that cannot be one of ours (the stream is then unusable).
  std::optional<Frame> receive();
  [[nodiscard]] int fd() const { return fd_; }

 private:
  bool fill(size_t need);

  int fd_;
  std::mutex send_mutex_;
  std::string in_;  // read but not yet taken
  size_t in_pos_ = 0;
};

}  // namespace oe::plugins::wire
