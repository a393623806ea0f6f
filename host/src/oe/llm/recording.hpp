// --llm-record / --llm-replay: exchanges keyed by a canonical hash of the request a node sent,
// in a JSONL file (one exchange per line, appended and flushed as each call ends, so a killed
// run keeps what it paid for). Two kinds of lines share the file: oe.llm/1 exchanges (no
// "type") and coding CLI runs ("type": "cli", oe.cli-replay/1-draft), each in a key space of
// its own.
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "oe/secrets/secret_set.hpp"

namespace oe::llm {

// SHA-256 of the request's canonical JSON (sorted keys, no spaces) as the node sent it, before
// the host fills in the default model: a replay does not depend on which keys or OE_*_MODEL the
// replaying machine has.
[[nodiscard]] std::string requestKey(const Json& request);

// The key of a CLI run (oe.cli-replay/1-draft): the same hash of the plugin's request (provider,
// argv, workdir relative to the experience, the node's env, stdin), invalid UTF-8 hashed as
// U+FFFD rather than refused.
[[nodiscard]] std::string cliRequestKey(const Json& request);

// The "type" of a CLI run's line in a recording ("cli"); an LLM exchange's line has none.
inline constexpr const char* kCliEntry = "cli";

class Recorder {
 public:
  // Opens (creating parent folders) for appending: a resumed run adds to the same file.
  static Result<std::unique_ptr<Recorder>> open(const std::filesystem::path& path);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // One line {"key", "node_id", "provider", "model", "request", "response"}; thread-safe.
  Result<void> append(const std::string& key, std::string_view node_id, std::string_view provider,
                      const Json& request, const Json& response);
  // One line {"type": "cli", "key", "node_id", "provider", "request", "response": outcome}. The
  // outcome goes under "response" so that an oe which knows only LLM lines still loads the file.
  Result<void> appendCli(const std::string& key, std::string_view node_id,
                         std::string_view provider, const Json& request, const Json& outcome);
  // The run's secrets (docs/policy.md, "Secrets"): every line written from here on shows
  // «secret:NAME» where a value was (a prompt that uses one, a CLI that echoes one).
  void setSecrets(std::shared_ptr<const secrets::SecretSet> secrets) {
    std::lock_guard lock(mutex_);
    secrets_ = std::move(secrets);
  }

 private:
  Result<void> writeLine(const Json& line);
  Recorder(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  std::mutex mutex_;
  int fd_;
  std::filesystem::path path_;
  std::shared_ptr<const secrets::SecretSet> secrets_;  // under mutex_; null: nothing to redact
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

  // [thread-safe] The next recorded outcome of a CLI run with this key. A key recorded several
  // times (a run that failed and was retried) serves its outcomes in recorded order, then the
  // last again: a replay meets the same failure and then the same success. Null when none.
  [[nodiscard]] const Json* nextCliOutcome(const std::string& key);
  [[nodiscard]] size_t cliRuns() const { return cli_runs_.size(); }

 private:
  struct CliRuns {
    std::vector<Json> outcomes;
    size_t served = 0;
  };
  std::filesystem::path path_;
  std::unordered_map<std::string, Exchange> exchanges_;
  std::mutex cli_mutex_;
  std::unordered_map<std::string, CliRuns> cli_runs_;
};

}  // namespace oe::llm
