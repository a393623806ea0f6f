// Helpers for the ABI suite: run a real subprocess (posix_spawn) capturing stdout and stderr
// apart, a self-removing temp directory, and the dynamic symbols a shared library exports.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace oe::abi_test {

struct ProcessResult {
  int exit_code = -1;  // valid when exited
  bool exited = false;
  int signal = 0;  // the signal that killed it, when !exited
  bool timed_out = false;
  std::string out;
  std::string err;

  // For failure messages: how it ended, then both streams.
  [[nodiscard]] std::string describe() const;
};

struct ProcessOptions {
  // Variables to set (or, with std::nullopt, to remove) on top of this process's environment.
  std::map<std::string, std::optional<std::string>> env;
  std::filesystem::path cwd;
  std::chrono::seconds timeout{60};
};

// Runs argv[0] (looked up in PATH when it has no '/') and waits for it. Never throws for a
// failing child; a child that cannot be started reports exit code 127, like a shell.
ProcessResult runProcess(const std::vector<std::string>& argv, const ProcessOptions& options = {});

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The names of the symbols a shared library defines in its dynamic table (nm -D --defined-only).
std::vector<std::string> exportedSymbols(const std::filesystem::path& library,
                                         std::string* error = nullptr);

void writeFile(const std::filesystem::path& path, const std::string& text);

}  // namespace oe::abi_test
