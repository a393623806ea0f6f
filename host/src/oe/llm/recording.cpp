// Record and replay of LLM exchanges; see recording.hpp.
#include "oe/llm/recording.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "oe/cache/cache_store.hpp"

namespace oe::llm {

std::string requestKey(const Json& request) { return cache::sha256Hex(request.dump()); }

std::string cliRequestKey(const Json& request) {
  return cache::sha256Hex(request.dump(-1, ' ', false, Json::error_handler_t::replace));
}

Result<std::unique_ptr<Recorder>> Recorder::open(const std::filesystem::path& path) {
  std::error_code ec;
  if (path.has_parent_path()) {
    std::filesystem::create_directories(path.parent_path(), ec);
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return makeError("--llm-record " + path.string() +
                     ": cannot open for writing: " + std::strerror(errno));
  }
  return std::unique_ptr<Recorder>(new Recorder(fd, path));
}

Recorder::~Recorder() { ::close(fd_); }

Result<void> Recorder::append(const std::string& key, std::string_view node_id,
                              std::string_view provider, const Json& request,
                              const Json& response) {
  return writeLine({{"key", key},
                    {"node_id", node_id},
                    {"provider", provider},
                    {"model", stringField(response, "model", stringField(request, "model"))},
                    {"request", request},
                    {"response", response}});
}

Result<void> Recorder::appendCli(const std::string& key, std::string_view node_id,
                                 std::string_view provider, const Json& request,
                                 const Json& outcome) {
  return writeLine({{"type", kCliEntry},
                    {"key", key},
                    {"node_id", node_id},
                    {"provider", provider},
                    {"request", request},
                    {"response", outcome}});
}

Result<void> Recorder::writeLine(const Json& line) {
  // A CLI's stdout is whatever it printed: invalid UTF-8 is kept as U+FFFD, not a throw.
  std::string text = line.dump(-1, ' ', false, Json::error_handler_t::replace);
  text += '\n';
  std::lock_guard lock(mutex_);
  if (secrets_) {
    secrets_->redact(text);
  }
  // One write(2) of the whole line on an O_APPEND descriptor: a kill tears at most this line.
  const char* data = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, data, left);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return makeError("--llm-record " + path_.string() +
                       ": write failed: " + std::strerror(errno));
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  return {};
}

Result<std::unique_ptr<Replayer>> Replayer::load(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) {
    return makeError("--llm-replay " + path.string() +
                     ": cannot read the recording (does it exist? record one with --llm-record)");
  }
  auto replayer = std::make_unique<Replayer>();
  replayer->path_ = path;
  std::string text;
  size_t line_no = 0;
  while (std::getline(in, text)) {
    ++line_no;
    if (text.find_first_not_of(" \t\r") == std::string::npos) {
      continue;
    }
    Json line = Json::parse(text, nullptr, false);
    if (line.is_discarded() || !line.is_object() || !line.contains("key") ||
        !line["key"].is_string() || !line.contains("response") || !line["response"].is_object()) {
      // getline hit the end before a newline: the last line of a killed recording run.
      const bool torn = in.eof();
      if (torn && line.is_discarded()) {
        continue;  // a torn last line from a killed recording run: its call is simply missing
      }
      return makeError(path.string() + ":" + std::to_string(line_no) +
                       ": not a recorded exchange (expected a JSON object with \"key\" and "
                       "\"response\"); re-record with --llm-record");
    }
    if (line.value("type", Json()) == kCliEntry) {
      replayer->cli_runs_[line["key"].get<std::string>()].outcomes.push_back(
          std::move(line["response"]));
      continue;
    }
    replayer->exchanges_.try_emplace(line["key"].get<std::string>(),
                                     Exchange{stringField(line, "provider"), line["response"]});
  }
  return replayer;
}

const Replayer::Exchange* Replayer::find(const std::string& key) const {
  auto it = exchanges_.find(key);
  return it == exchanges_.end() ? nullptr : &it->second;
}

const Json* Replayer::nextCliOutcome(const std::string& key) {
  std::lock_guard lock(cli_mutex_);
  auto it = cli_runs_.find(key);
  if (it == cli_runs_.end() || it->second.outcomes.empty()) {
    return nullptr;
  }
  CliRuns& runs = it->second;
  const size_t at = std::min(runs.served, runs.outcomes.size() - 1);
  ++runs.served;
  return &runs.outcomes[at];
}

}  // namespace oe::llm
