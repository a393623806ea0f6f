// Live progress on stderr; see progress.hpp.
#include "oe/cli/progress.hpp"

#include <unistd.h>

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

// The live view's nodes: the experience's, with their phases' titles (reference §10 groups the
// dashboard by phase).
std::vector<view::NodeInfo> viewNodes(const spec::Experience& experience) {
  std::vector<view::NodeInfo> nodes;
  nodes.reserve(experience.nodes.size());
  for (const auto& node : experience.nodes) {
    view::NodeInfo info{node.id, node.kind, node.phase.value_or(""), "", node.for_each.has_value()};
    for (const auto& phase : experience.phases) {
      if (phase.id == info.phase) {
        info.phase_title = phase.title.value_or(phase.id);
        break;
      }
    }
    nodes.push_back(std::move(info));
  }
  return nodes;
}

std::string secondsText(int64_t ms) {
  const int64_t s = ms / 1000;
  return s < 120 ? std::to_string(s) + " s"
                 : std::to_string(s / 60) + " min " + std::to_string(s % 60) + " s";
}

}  // namespace

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

RunDisplay::RunDisplay(const spec::Experience& experience, bool quiet, bool tui, bool no_tui) {
  if (!quiet && !no_tui && (tui || view::LiveView::wanted(STDERR_FILENO))) {
    auto started = view::LiveView::start(STDERR_FILENO, view::Dashboard(viewNodes(experience)));
    if (started) {
      live_ = std::move(*started);
    } else if (tui) {
      std::cerr << "oe: warning: --tui: " << started.error().message
                << "; showing plain progress lines\n";
    }
  }
  if (!live_ && !quiet) {
    progress_ = std::make_unique<Progress>();
  }
}

void RunDisplay::say(const std::string& line) {
  if (live_) {
    live_->printAbove(line);
  } else {
    std::cerr << line << '\n';
  }
}

void RunDisplay::attach(run::RunOptions& options, ops::StderrLog& log_sink) {
  if (live_) {
    options.on_event = [v = live_.get()](const events::Event& event) { v->onEvent(event); };
    log_sink.divertTo([v = live_.get()](std::string line) { v->printAbove(std::move(line)); });
    options.on_lock_wait = [v = live_.get()](const std::string& holder) {
      v->printAbove("oe: waiting for " + holder + " to finish with this state store (--wait)");
    };
  } else if (progress_) {
    options.on_event = [p = progress_.get()](const events::Event& event) { p->onEvent(event); };
  }
}

void RunDisplay::finish(ops::StderrLog& log_sink) {
  if (live_) {
    live_->finish();  // the final frame stays above the summary
    log_sink.divertTo(nullptr);
  }
  progress_.reset();  // no "still running" line after the summary
}

}  // namespace oe::cli
