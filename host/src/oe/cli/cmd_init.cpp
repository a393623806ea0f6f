// `oe init [name] --template T` and `--list-templates`: scaffolds an experience folder from one
// of the templates installed with oe (host/templates/ in the source tree), ready to validate
// and run as it is.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/common/file.hpp"

namespace oe::cli {
namespace {

namespace fs = std::filesystem;

// Replaced by the experience's name in every file of a template.
constexpr std::string_view kNameToken = "__NAME__";

// Where the templates are: next to the executable's bin/, as plugins are (share/oe/templates in
// an install, the same path in the build tree, where the build copies them).
std::optional<fs::path> templateRoot() {
  std::error_code ec;
  const auto exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    return std::nullopt;
  }
  fs::path root = exe.parent_path().parent_path() / OE_TEMPLATE_INSTALL_SUBDIR;
  if (!fs::is_directory(root, ec)) {
    return std::nullopt;
  }
  return root;
}

// name -> folder, in name order.
std::map<std::string, fs::path> listTemplates(const fs::path& root) {
  std::map<std::string, fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (entry.is_directory(ec) && fs::is_regular_file(entry.path() / "experience.yaml", ec)) {
      out.emplace(entry.path().filename().string(), entry.path());
    }
  }
  return out;
}

std::string templateDescription(const fs::path& folder) {
  try {
    const YAML::Node doc = YAML::LoadFile((folder / "experience.yaml").string());
    if (doc["description"] && doc["description"].IsScalar()) {
      std::string text = doc["description"].as<std::string>();
      while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
        text.pop_back();
      }
      return text;
    }
  } catch (const YAML::Exception&) {
    // A template without a readable description is still listed.
  }
  return "";
}

// Letters, digits, `_`, `-` and `.`, not starting with `-` or `.`: safe unquoted in YAML and
// JSON, and a valid folder name.
bool plainName(std::string_view name) {
  auto word = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  };
  return !name.empty() && word(name.front()) && std::all_of(name.begin(), name.end(), [&](char c) {
    return word(c) || c == '-' || c == '.';
  });
}

std::string replaceAll(std::string text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// Copies the template into `target` (which exists and is empty), naming the experience `name`.
// The message says which file could not be written.
std::optional<std::string> scaffold(const fs::path& from, const fs::path& target,
                                    const std::string& name, std::vector<fs::path>& written) {
  std::error_code ec;
  std::vector<fs::path> sources;
  for (auto it = fs::recursive_directory_iterator(from, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->path().filename() == ".openexpertise") {
      it.disable_recursion_pending();
      continue;
    }
    sources.push_back(it->path());
  }
  if (ec) {
    return "cannot read the template at " + from.string() + ": " + ec.message();
  }
  std::sort(sources.begin(), sources.end());
  for (const fs::path& source : sources) {
    const fs::path dest = target / fs::relative(source, from);
    if (fs::is_directory(source, ec)) {
      fs::create_directories(dest, ec);
      if (ec) {
        return "cannot create " + dest.string() + ": " + ec.message();
      }
      continue;
    }
    auto text = readFile(source);
    if (!text) {
      return "cannot read the template file " + source.string();
    }
    std::ofstream out(dest, std::ios::binary | std::ios::trunc);
    out << replaceAll(std::move(*text), kNameToken, name);
    out.close();
    if (!out) {
      return "cannot write " + dest.string();
    }
    fs::permissions(dest, fs::status(source, ec).permissions(), ec);
    written.push_back(fs::relative(dest, target));
  }
  // The folders an experience grows into, even where the template has nothing in them yet.
  for (const char* folder : {"tools", "prompts"}) {
    fs::create_directories(target / folder, ec);
  }
  return std::nullopt;
}

}  // namespace

void addInitCommand(CLI::App& app, int& exit_code) {
  struct Args {
    std::string name;
    std::string template_name = "tool-only";
    bool list = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("init", "Create an experience folder from a template");
  cmd->add_option("name", a->name, "The folder to create; its last part names the experience");
  cmd->add_option("-t,--template", a->template_name,
                  "tool-only, agent, cli-agent or full-pipeline (--list-templates)")
      ->capture_default_str();
  cmd->add_flag("--list-templates", a->list, "List the templates and what each holds");
  cmd->callback([a, &exit_code] {
    const auto root = templateRoot();
    if (!root) {
      std::cerr << "oe: the templates are missing: they belong in " << OE_TEMPLATE_INSTALL_SUBDIR
                << " next to oe's bin/ folder; reinstall oe (cmake --install)\n";
      exit_code = kExitFailed;
      return;
    }
    const auto templates = listTemplates(*root);
    if (a->list) {
      for (const auto& [name, folder] : templates) {
        std::cout << name << "  " << templateDescription(folder) << '\n';
      }
      exit_code = kExitOk;
      return;
    }
    if (a->name.empty()) {
      std::cerr << "oe: missing required argument: name (oe init NAME [--template T]; "
                   "oe init --list-templates lists the templates)\n";
      exit_code = kExitUsage;
      return;
    }
    auto chosen = templates.find(a->template_name);
    if (chosen == templates.end()) {
      std::string names;
      for (const auto& entry : templates) {
        names += (names.empty() ? "" : ", ") + entry.first;
      }
      std::cerr << "oe: no template \"" << a->template_name << "\"; the templates are " << names
                << '\n';
      exit_code = kExitUsage;
      return;
    }
    const fs::path target = fs::path(a->name).lexically_normal();
    std::string name = (target.has_filename() ? target : target.parent_path()).filename().string();
    if (name == "." || name == "..") {
      name = fs::absolute(target).lexically_normal().parent_path().filename().string();
    }
    // The name goes into experience.yaml and package.json unquoted: keep it a plain word.
    if (!plainName(name)) {
      std::cerr << "oe: \"" << name << "\" cannot name an experience: use letters, digits, `_`, "
                << "`-` and `.` (e.g. my-flow)\n";
      exit_code = kExitUsage;
      return;
    }
    std::error_code ec;
    if (fs::exists(target, ec)) {
      if (!fs::is_directory(target, ec)) {
        std::cerr << "oe: " << target.string()
                  << " exists and is not a folder; pick another name\n";
        exit_code = kExitFailed;
        return;
      }
      if (!fs::is_empty(target, ec)) {
        std::cerr << "oe: " << target.string()
                  << " already exists and is not empty; oe init only writes into a new or "
                     "empty folder (pick another name, or move its files away)\n";
        exit_code = kExitFailed;
        return;
      }
    }
    fs::create_directories(target, ec);
    if (ec) {
      std::cerr << "oe: cannot create " << target.string() << ": " << ec.message() << '\n';
      exit_code = kExitFailed;
      return;
    }
    std::vector<fs::path> written;
    if (auto error = scaffold(chosen->second, target, name, written)) {
      std::cerr << "oe: " << *error << '\n';
      exit_code = kExitFailed;
      return;
    }
    std::cout << "created " << target.string() << " from the " << chosen->first << " template:\n";
    for (const fs::path& file : written) {
      std::cout << "  " << file.string() << '\n';
    }
    std::cout << "next: oe validate " << target.string() << ", then see "
              << (target / "README.md").string() << " to run it\n";
    exit_code = kExitOk;
  });
}

}  // namespace oe::cli
