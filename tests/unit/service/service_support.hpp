// What the service tests share: waiting for a condition with a deadline, and reading a run's
// event log.
#pragma once

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "oe/common/json.hpp"

namespace oe::service::test_support {

// Polls `done` until it holds or `timeout` passes (a condition with a deadline, never a fixed
// sleep standing in for one).
inline bool waitUntil(const std::function<bool()>& done,
                      std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// The events of run `run_id` of the experience in `exp`, in order.
inline std::vector<Json> logOf(const std::filesystem::path& exp, const std::string& run_id) {
  std::ifstream in(exp / ".openexpertise" / "runs" / (run_id + ".jsonl"));
  std::vector<Json> out;
  for (std::string line; std::getline(in, line);) {
    Json j = Json::parse(line, nullptr, false);
    if (!j.is_discarded()) {
      out.push_back(std::move(j));
    }
  }
  return out;
}

}  // namespace oe::service::test_support
