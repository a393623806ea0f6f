// Subprocess, temp directory and symbol-table helpers for the ABI suite (see process.hpp).
#include "abi/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;  // NOLINT: POSIX declares it only in <unistd.h> with _GNU_SOURCE

namespace oe::abi_test {

namespace {

std::vector<std::string> buildEnvironment(
    const std::map<std::string, std::optional<std::string>>& overrides) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string item(*entry);
    const std::string name = item.substr(0, item.find('='));
    if (overrides.find(name) == overrides.end()) {
      env.push_back(item);
    }
  }
  for (const auto& [name, value] : overrides) {
    if (value) {
      env.push_back(name + "=" + *value);
    }
  }
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) {
    out.push_back(s.data());
  }
  out.push_back(nullptr);
  return out;
}

class Pipe {
 public:
  Pipe() {
    if (::pipe2(fds_.data(), O_CLOEXEC) != 0) {
      throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
    }
  }
  ~Pipe() {
    closeRead();
    closeWrite();
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  [[nodiscard]] int readEnd() const { return fds_[0]; }
  [[nodiscard]] int writeEnd() const { return fds_[1]; }
  void closeRead() { closeFd(fds_[0]); }
  void closeWrite() { closeFd(fds_[1]); }

 private:
  static void closeFd(int& fd) {
    if (fd >= 0) {
      ::close(fd);
      fd = -1;
    }
  }
  std::array<int, 2> fds_{-1, -1};
};

}  // namespace

std::string ProcessResult::describe() const {
  std::ostringstream text;
  if (timed_out) {
    text << "timed out and was killed";
  } else if (exited) {
    text << "exited with code " << exit_code;
  } else {
    text << "killed by signal " << signal;
  }
  text << "\n--- stdout ---\n" << out << "\n--- stderr ---\n" << err << "\n---";
  return text.str();
}

ProcessResult runProcess(const std::vector<std::string>& argv, const ProcessOptions& options) {
  std::vector<std::string> args = argv;
  std::vector<char*> arg_ptrs = pointers(args);
  std::vector<std::string> env = buildEnvironment(options.env);
  std::vector<char*> env_ptrs = pointers(env);

  Pipe out_pipe;
  Pipe err_pipe;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe.writeEnd(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe.writeEnd(), STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  if (!options.cwd.empty()) {
    posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());
  }
  pid_t pid = -1;
  const int spawn_error =
      argv.front().find('/') == std::string::npos
          ? posix_spawnp(&pid, args.front().c_str(), &actions, nullptr, arg_ptrs.data(),
                         env_ptrs.data())
          : posix_spawn(&pid, args.front().c_str(), &actions, nullptr, arg_ptrs.data(),
                        env_ptrs.data());
  posix_spawn_file_actions_destroy(&actions);
  out_pipe.closeWrite();
  err_pipe.closeWrite();

  ProcessResult result;
  if (spawn_error != 0) {
    result.exited = true;
    result.exit_code = 127;
    result.err = "cannot start " + argv.front() + ": " + std::strerror(spawn_error);
    return result;
  }

  // Drain both pipes together, so a child filling one of them never blocks.
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  std::array<pollfd, 2> fds{pollfd{out_pipe.readEnd(), POLLIN, 0},
                            pollfd{err_pipe.readEnd(), POLLIN, 0}};
  std::array<std::string*, 2> sinks{&result.out, &result.err};
  int open_streams = 2;
  std::array<char, 65536> buffer{};
  while (open_streams > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) {
        continue;
      }
      const ssize_t n = ::read(fds[i].fd, buffer.data(), buffer.size());
      if (n > 0) {
        sinks[i]->append(buffer.data(), static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;  // EOF; the Pipe closes the descriptor
        --open_streams;
      }
    }
  }

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    result.exited = true;
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "oe-abi-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<std::string> exportedSymbols(const std::filesystem::path& library, std::string* error) {
  const ProcessResult nm = runProcess({OE_NM, "-D", "--defined-only", library.string()});
  std::vector<std::string> names;
  if (!nm.exited || nm.exit_code != 0) {
    if (error != nullptr) {
      *error = "nm failed: " + nm.describe();
    }
    return names;
  }
  // Lines look like "0000000000001139 T oe_plugin_entry_v1"; the name is the last field.
  std::istringstream lines(nm.out);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t space = line.find_last_of(' ');
    if (!line.empty() && space != std::string::npos) {
      names.push_back(line.substr(space + 1));
    }
  }
  return names;
}

void writeFile(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) {
    throw std::runtime_error("cannot write " + path.string());
  }
}

}  // namespace oe::abi_test
