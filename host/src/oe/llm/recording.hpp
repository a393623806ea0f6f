// --llm-record / --llm-replay: exchanges keyed by a canonical hash of the request a node sent,
// in a JSONL file (one exchange per line, appended and flushed as each call ends, so a killed
// run keeps what it paid for).
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"

namespace oe::llm {

// SHA-256 of the request's canonical JSON (sorted keys, no spaces) as the node sent it, before
// the host fills in the default model: a replay does not depend on which keys or OE_*_MODEL the
// replaying machine has.
[[nodiscard]] std::string requestKey(const Json& request);

class Recorder {
 public:
  // Opens (creating parent folders) for appending: a resumed run adds to the same file.
  static Result<std::unique_ptr<Recorder>> open(const std::filesystem::path& path);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // One line {"key", "node_id", "provider", "model", "request", "response"}; thread-safe.
  Result<void> append(const std::string& key, std::string_view node_id,
                      std::string_view provider, const Json& request, const Json& response);

 private:
  Recorder(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  std::mutex mutex_;
  int fd_;
  std::filesystem::path path_;
};

class Replayer {
 public:
  // Loads every exchange. A malformed line is an error naming the file and the line; when a key
  // was recorded twice the first answer is served (a replay is deterministic).
  static Result<std::unique_ptr<Replayer>> load(const std::filesystem::path& path);

  struct Exchange {
    std::string provider;
    Json response;
  };
  [[nodiscard]] const Exchange* find(const std::string& key) const;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] size_t size() const { return exchanges_.size(); }

 private:
  std::filesystem::path path_;
  std::unordered_map<std::string, Exchange> exchanges_;
};

}  // namespace oe::llm
