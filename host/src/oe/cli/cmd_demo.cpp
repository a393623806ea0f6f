// `oe demo [name]`: a realistic run in seconds, offline and without a key. Each demo is an example
// shipped with oe (share/oe/examples) with the recording of its LLM calls and coding-CLI runs;
// it is copied to a temporary folder and run there by `oe run --llm-replay`, the normal path.
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>

#include <yaml-cpp/yaml.h>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/registry/registry.hpp"

extern char** environ;  // NOLINT(readability-redundant-declaration): for posix_spawn

namespace oe::cli {
namespace {

namespace fs = std::filesystem;
using registry::shippedDataDir;

constexpr std::string_view kRecording = "llm-recording.jsonl";

// The demos among the shipped examples (OE_DEMOS in host/CMakeLists.txt): an installed oe ships
// every example, and some that are not demos carry a recording of their own for the tests.
bool isDemo(std::string_view name) {
  std::string_view rest = OE_DEMO_NAMES;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    if (rest.substr(0, comma) == name) {
      return true;
    }
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  return false;
}

// name -> folder: the shipped demos, each an example that carries a recording.
std::map<std::string, fs::path> listDemos(const fs::path& root) {
  std::map<std::string, fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (entry.is_directory(ec) && isDemo(entry.path().filename().string()) &&
        fs::is_regular_file(entry.path() / "experience.yaml", ec) &&
        fs::is_regular_file(entry.path() / kRecording, ec)) {
      out.emplace(entry.path().filename().string(), entry.path());
    }
  }
  return out;
}

std::string demoDescription(const fs::path& folder) {
  try {
    const YAML::Node doc = YAML::LoadFile((folder / "experience.yaml").string());
    if (doc["description"] && doc["description"].IsScalar()) {
      std::string text = doc["description"].as<std::string>();
      text = text.substr(0, text.find('\n'));
      return text;
    }
  } catch (const YAML::Exception&) {
    // A demo without a readable description is still listed.
  }
  return "";
}

// The example, without any state a run in the source tree left in it.
std::optional<std::string> copyDemo(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to, ec);
  for (auto it = fs::recursive_directory_iterator(from, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->path().filename() == ".openexpertise") {
      it.disable_recursion_pending();
      continue;
    }
    const fs::path dest = to / it->path().lexically_relative(from);
    // fake-cli/ links to ../../scripted_cli.py, installed beside the demos: links stay links.
    if (it->is_symlink(ec)) {
      fs::copy_symlink(it->path(), dest, ec);
    } else if (it->is_directory(ec)) {
      fs::create_directories(dest, ec);
    } else {
      fs::copy_file(it->path(), dest, fs::copy_options::overwrite_existing, ec);
    }
    if (ec) {
      return "cannot copy " + it->path().string() + " to " + dest.string() + ": " + ec.message();
    }
  }
  if (ec) {
    return "cannot read " + from.string() + ": " + ec.message();
  }
  return std::nullopt;
}

// `oe run <folder> --llm-replay <recording> [--json]`, this same binary, on our stdout/stderr.
int runReplay(const fs::path& folder, bool json) {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    std::cerr << "oe: cannot find oe's own executable: " << ec.message() << '\n';
    return kExitFailed;
  }
  std::vector<std::string> args = {"oe", "run", folder.string(), "--llm-replay",
                                   (folder / kRecording).string()};
  if (json) {
    args.emplace_back("--json");
  }
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& arg : args) {
    argv.push_back(arg.data());
  }
  argv.push_back(nullptr);
  // oe ignores SIGPIPE (app.cpp); the child starts with the default, as from a shell.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, exe.c_str(), nullptr, &attributes, argv.data(), environ);
  posix_spawnattr_destroy(&attributes);
  if (rc != 0) {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): one thread
    std::cerr << "oe: cannot start " << exe.string() << ": " << std::strerror(rc) << '\n';
    return kExitFailed;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      return kExitFailed;
    }
  }
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status);
  }
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : kExitFailed;
}

}  // namespace

void addDemoCommand(CLI::App& app, int& exit_code) {
  struct Args {
    std::string name;
    bool json = false;
    bool keep = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd =
      app.add_subcommand("demo", "Replay a recorded example run offline (no key); no name lists");
  cmd->add_option("name", a->name, "The demo to run");
  cmd->add_flag("--json", a->json, "List, or print the run's summary, as JSON");
  // The folder is always kept now: the run's summary names it (`oe state ... --experience`,
  // the events file), and those hints must work. --keep stays accepted for old scripts.
  cmd->add_flag("--keep", a->keep, "(the default: the demo's folder is kept)")->group("");
  cmd->callback([a, &exit_code] {
    const auto data = shippedDataDir();
    const auto demos = data ? listDemos(*data / "examples") : std::map<std::string, fs::path>{};
    if (demos.empty()) {
      std::cerr << "oe: the demos are missing: they belong in " << OE_DATA_INSTALL_SUBDIR
                << "/examples next to oe's bin/ folder; reinstall oe (cmake --install)\n";
      exit_code = kExitFailed;
      return;
    }
    if (a->name.empty()) {
      if (a->json) {
        Json list = Json::array();
        for (const auto& [name, folder] : demos) {
          list.push_back({{"name", name}, {"description", demoDescription(folder)}});
        }
        std::cout << list.dump(2) << '\n';
      } else {
        for (const auto& [name, folder] : demos) {
          std::cout << name << "  " << demoDescription(folder) << '\n';
        }
        std::cout << "\nrun one: oe demo NAME (offline, from its recording; the tools need "
                     "Node.js)\n";
      }
      exit_code = kExitOk;
      return;
    }
    const auto chosen = demos.find(a->name);
    if (chosen == demos.end()) {
      std::string names;
      for (const auto& entry : demos) {
        names += (names.empty() ? "" : ", ") + entry.first;
      }
      std::cerr << "oe: no demo \"" << a->name << "\"; the demos are " << names << '\n';
      exit_code = kExitUsage;
      return;
    }
    std::string pattern = (fs::temp_directory_path() / "oe-demo-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      std::cerr << "oe: cannot create a temporary folder in " << fs::temp_directory_path() << '\n';
      exit_code = kExitFailed;
      return;
    }
    const fs::path scratch = pattern;
    const fs::path folder = scratch / a->name;
    // Where the copy's fake-cli/ links point (../../scripted_cli.py), when oe has it.
    std::error_code link_ec;
    fs::copy_file(chosen->second.parent_path() / "scripted_cli.py", scratch / "scripted_cli.py",
                  link_ec);
    if (auto error = copyDemo(chosen->second, folder)) {
      std::cerr << "oe: " << *error << '\n';
      std::error_code ec;
      fs::remove_all(scratch, ec);
      exit_code = kExitFailed;
      return;
    }
    std::cerr << "oe demo " << a->name << ": replaying " << kRecording
              << " (no network, no key) in " << folder.string() << '\n';
    exit_code = runReplay(folder, a->json);
    std::cerr << "the demo ran in " << folder.string() << " (oe inspect --last --experience "
              << folder.string() << "; remove it with rm -r " << scratch.string() << ")\n";
  });
}

}  // namespace oe::cli
