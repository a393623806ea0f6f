// `oe init`'s templates (see templates.hpp).
#include "oe/registry/templates.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>

#include "oe/common/file.hpp"

namespace oe::registry {

namespace fs = std::filesystem;

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

namespace {

std::string replaceAll(std::string text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

}  // namespace

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

}  // namespace oe::registry
