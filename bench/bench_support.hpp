// Shared bits of the Google Benchmark programs: a scratch folder removed at exit, and the
// experience-like inputs the hot paths see (a node spec, its args, a small state).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "oe/common/json.hpp"

namespace oe::bench {

// mkdtemp under /tmp; removed with everything in it when the program's benchmarks are done.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "oe-bench-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::abort();
    }
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A node as the benchmark generator writes it (bench/gen_experience.py).
inline Json benchNode(int i) {
  return Json{{"id", "n" + std::to_string(i)},
              {"kind", "tool"},
              {"impl", "./tools/bench_tool.so"},
              {"args", {{"out", "f" + std::to_string(i % 16)}, {"i", i}}},
              {"writes", Json::array({"f" + std::to_string(i % 16)})}};
}

}  // namespace oe::bench
