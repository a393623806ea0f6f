// Live progress on stderr; see progress.hpp.
#include "oe/cli/progress.hpp"

#include <algorithm>
#include <cstdlib>
#include <iostream>

namespace oe::cli {

namespace {

// One write(2) per line: stderr is unbuffered, so each `<<` would be a system call of its own
// (three per node for "  ok      <node>\n", most of what the plain progress cost a run).
void say(const std::string& line) {
  std::cerr.write(line.data(), static_cast<std::streamsize>(line.size()));
}

std::string secondsText(int64_t ms) {
  const int64_t s = ms / 1000;
  return s < 120 ? std::to_string(s) + " s"
                 : std::to_string(s / 60) + " min " + std::to_string(s % 60) + " s";
}

}  // namespace

std::string oneLine(std::string_view text, size_t max) {
  size_t end = text.find('\n');
  const bool more_lines = end != std::string_view::npos;
  end = std::min(more_lines ? end : text.size(), max);
  while (end > 0 && end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) {
    --end;  // not in the middle of a UTF-8 sequence
  }
  std::string line(text.substr(0, end));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) {
    line.pop_back();
  }
  return end < text.size() ? line + " ..." : line;
}

Progress::Progress() {
  interval_ms_ = 30'000;
  if (const char* env = std::getenv("OE_STILL_RUNNING_INTERVAL_MS"); env != nullptr && *env) {
    interval_ms_ = std::atoll(env);
  }
  if (interval_ms_ > 0) {
    notifier_ = std::thread([this] { notifyLoop(); });
  }
}

Progress::~Progress() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (notifier_.joinable()) {
    notifier_.join();
  }
}

void Progress::onEvent(const events::Event& event) {
  const std::string_view type = event.type();
  if (type == "node.ready" || type == "state.write" || !type.starts_with("node.")) {
    return;  // the most frequent lines print nothing: no copy, no lock
  }
  // An item of a for_each, pipeline or loop shows its index: `ok      square [3]`.
  std::string node(event.nodeId());
  if (event.item() >= 0) {
    node += " [" + std::to_string(event.item()) + "]";
  }
  std::lock_guard lock(mutex_);
  if (type == "node.started") {
    open_[node].push_back(std::chrono::steady_clock::now());
  } else if (type == "node.finished") {
    // A cache replay logs node.finished without node.started; an engine that says so
    // (`cached`) is believed over the pairing, which a for_each's interleaving can blur.
    const bool started = closeCall(node) && !event.cached();
    say((started ? "  ok      " : "  cached  ") + node + '\n');
    return;
  }
  // The rare types below print a field of the event: only they parse it.
  if (type == "node.failed") {
    closeCall(node);
    // Stopped by the run (Ctrl-C, fail_run elsewhere, the budget), not failed.
    const bool cancelled = event.json().value("cancelled", false);
    say((cancelled ? "  cancelled " : "  FAILED  ") + node + ": " +
        stringField(event.json(), "error") + '\n');
  } else if (type == "node.skipped") {
    say("  skipped " + node + " (" + stringField(event.json(), "reason") + ")\n");
  } else if (type == "node.retry") {
    const Json& retry = event.json();
    say("  retry   " + node + " after attempt " + std::to_string(retry.value("attempt", 0)) +
        " in " + std::to_string(retry.value("delay_ms", 0)) +
        " ms: " + oneLine(stringField(retry, "error")) + '\n');
  } else if (type == "node.activity") {
    printOnce(node, "          " + node + ": ", stringField(event.json(), "activity"));
  } else if (type == "node.log") {
    if (node.empty()) {
      say("  warning " + stringField(event.json(), "message") + '\n');
    } else {
      printOnce(node, "  log     " + node + ": ", stringField(event.json(), "message"));
    }
  }
}

bool Progress::closeCall(const std::string& node) {
  auto it = open_.find(node);
  if (it == open_.end() || it->second.empty()) {
    return false;
  }
  it->second.pop_front();
  if (it->second.empty()) {
    open_.erase(it);
  }
  return true;
}

void Progress::printOnce(const std::string& node, const std::string& prefix,
                         const std::string& text) {
  auto [it, inserted] = last_text_.try_emplace(node, text);
  if (!inserted) {
    if (it->second == text) {
      return;
    }
    it->second = text;
  }
  say(prefix + text + '\n');
}

void Progress::notifyLoop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::milliseconds(interval_ms_), [this] { return stopping_; });
    if (stopping_ || open_.empty()) {
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    std::string text;
    size_t listed = 0;
    for (const auto& [node, starts] : open_) {
      if (++listed > 8) {
        text += ", and " + std::to_string(open_.size() - 8) + " more";
        break;
      }
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - starts.front());
      text += (text.empty() ? "" : ", ") + node;
      if (starts.size() > 1) {
        text += " (" + std::to_string(starts.size()) + " calls)";
      }
      text += " for " + secondsText(ms.count());
    }
    say("  still running: " + text + '\n');
  }
}

}  // namespace oe::cli
