// See draft.hpp.
#include "oe/ultra/draft.hpp"

#include <algorithm>
#include <fstream>
#include <set>

#include "oe/common/file.hpp"

namespace oe::ultra {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kYaml = "experience.yaml";
constexpr std::string_view kAnalysis = "analysis.json";
constexpr size_t kMaxFiles = 200;                        // a draft is a handful of files
constexpr uintmax_t kMaxFileBytes = uintmax_t{1} << 20;  // per file read back

// True when `inner` (a path that exists up to its parent) is `root` or below it once symlinks
// are resolved.
bool within(const fs::path& root, const fs::path& inner) {
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(root, ec);
  const fs::path real = fs::weakly_canonical(inner, ec);
  if (ec) {
    return false;
  }
  auto b = base.begin();
  auto r = real.begin();
  for (; b != base.end(); ++b, ++r) {
    if (r == real.end() || *b != *r) {
      return false;
    }
  }
  return true;
}

Result<void> writeFile(const fs::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!out) {
    return makeError("cannot write " + path.string());
  }
  return {};
}

}  // namespace

Json Synthesis::toJson() const {
  Json out = Json::object();
  out["experience_yaml"] = experience_yaml;
  Json list = Json::array();
  for (const auto& f : files) {
    list.push_back({{"path", f.path}, {"content", f.content}});
  }
  out["files"] = std::move(list);
  out["next_steps"] = next_steps;
  return out;
}

Synthesis Synthesis::fromJson(const Json& json) {
  Synthesis s;
  if (!json.is_object()) {
    return s;
  }
  s.experience_yaml = stringField(json, "experience_yaml");
  if (auto files = json.find("files"); files != json.end() && files->is_array()) {
    for (const auto& f : *files) {
      if (f.is_object()) {
        s.files.push_back({stringField(f, "path"), stringField(f, "content")});
      }
    }
  }
  if (auto steps = json.find("next_steps"); steps != json.end() && steps->is_array()) {
    for (const auto& step : *steps) {
      if (step.is_string()) {
        s.next_steps.push_back(step.get<std::string>());
      }
    }
  }
  return s;
}

Result<std::string> guardedPath(std::string_view path) {
  const std::string quoted = "\"" + std::string(path) + "\"";
  if (path.empty()) {
    return makeError("a file path is empty");
  }
  if (path.find('\0') != std::string_view::npos || path.find('\\') != std::string_view::npos) {
    return makeError("file path " + quoted + " holds a NUL or a backslash; use '/' separators");
  }
  const fs::path p(path);
  if (p.is_absolute() || path.starts_with("~")) {
    return makeError("file path " + quoted +
                     " is absolute; a draft's files are relative to the draft folder");
  }
  fs::path clean;
  for (const auto& part : p) {
    if (part == "..") {
      return makeError("file path " + quoted + " leaves the draft folder (\"..\")");
    }
    if (part.empty() || part == ".") {
      continue;
    }
    clean /= part;
  }
  if (clean.empty()) {
    return makeError("file path " + quoted + " names the draft folder itself, not a file");
  }
  const std::string text = clean.generic_string();
  if (text == kYaml || text == kAnalysis) {
    return makeError("file path " + quoted +
                     " is reserved: experience.yaml is the synthesis's "
                     "experience_yaml and analysis.json is written by oe");
  }
  if (text.starts_with(".openexpertise/") || text == ".openexpertise") {
    return makeError("file path " + quoted + " is inside .openexpertise/, which oe owns");
  }
  return text;
}

std::vector<std::string> pathProblems(const Synthesis& synthesis) {
  std::vector<std::string> problems;
  std::set<std::string> seen;
  if (synthesis.files.size() > kMaxFiles) {
    problems.push_back("the draft has " + std::to_string(synthesis.files.size()) +
                       " files; at most " + std::to_string(kMaxFiles) + " are written");
  }
  for (const auto& file : synthesis.files) {
    auto guarded = guardedPath(file.path);
    if (!guarded) {
      problems.push_back(guarded.error().message);
    } else if (!seen.insert(*guarded).second) {
      problems.push_back("file path \"" + file.path + "\" is listed twice");
    }
  }
  return problems;
}

Result<std::vector<std::string>> writeDraft(const fs::path& dir, const Synthesis& synthesis) {
  if (const auto problems = pathProblems(synthesis); !problems.empty()) {
    std::string text;
    for (const auto& p : problems) {
      text += (text.empty() ? "" : "; ") + p;
    }
    return makeError("the draft was not written to " + dir.string() + ": " + text);
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return makeError("cannot create the draft folder " + dir.string() + ": " + ec.message());
  }
  std::vector<std::string> written;
  if (auto ok = writeFile(dir / kYaml, synthesis.experience_yaml); !ok) {
    return ok.error();
  }
  written.emplace_back(kYaml);
  for (const auto& file : synthesis.files) {
    const std::string rel = *guardedPath(file.path);
    const fs::path target = dir / rel;
    fs::create_directories(target.parent_path(), ec);
    // A folder of the draft may be a symlink (a user's, or a previous draft's): the file must
    // still land inside the draft.
    if (ec || !within(dir, target.parent_path()) ||
        (fs::is_symlink(fs::symlink_status(target, ec)))) {
      return makeError("file path \"" + file.path + "\" resolves outside the draft folder " +
                       dir.string() + " (through a symlink); it was not written");
    }
    if (auto ok = writeFile(target, file.content); !ok) {
      return ok.error();
    }
    if (file.content.starts_with("#!")) {
      // A script the experience runs as a tool: the LLM cannot set modes, its shebang says.
      fs::permissions(target,
                      fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                      fs::perm_options::add, ec);
    }
    written.push_back(rel);
  }
  return written;
}

void pruneDraft(const fs::path& dir, const std::vector<std::string>& previous,
                const Synthesis& current) {
  std::set<std::string> keep = {std::string(kYaml), std::string(kAnalysis)};
  for (const auto& file : current.files) {
    if (auto guarded = guardedPath(file.path)) {
      keep.insert(*guarded);
    }
  }
  std::error_code ec;
  for (const auto& old : previous) {
    auto guarded = guardedPath(old);
    if (!guarded || keep.contains(*guarded)) {
      continue;
    }
    fs::path target = dir / *guarded;
    if (!within(dir, target)) {
      continue;
    }
    fs::remove(target, ec);
    for (fs::path parent = target.parent_path(); parent != dir && within(dir, parent);
         parent = parent.parent_path()) {
      if (!fs::is_empty(parent, ec) || ec) {
        break;
      }
      fs::remove(parent, ec);
    }
  }
}

Result<StoredDraft> readDraft(const fs::path& dir) {
  StoredDraft draft;
  const auto yaml = readFile(dir / kYaml);
  if (!yaml) {
    return makeError("no draft at " + dir.string() + ": " + (dir / kYaml).string() +
                     " does not exist or cannot be read; pass the folder `oe ultra` wrote");
  }
  draft.synthesis.experience_yaml = *yaml;
  std::error_code ec;
  std::vector<fs::path> found;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (it->is_directory(ec) &&
        (name == ".openexpertise" || name == ".git" || name == "node_modules")) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_symlink(ec) || !it->is_regular_file(ec)) {
      continue;  // recursive_directory_iterator does not follow directory symlinks either
    }
    const std::string rel = it->path().lexically_relative(dir).generic_string();
    if (rel == kYaml || rel == kAnalysis) {
      continue;
    }
    found.push_back(it->path());
  }
  if (ec) {
    return makeError("cannot list the draft folder " + dir.string() + ": " + ec.message());
  }
  if (found.size() > kMaxFiles) {
    return makeError("the draft folder " + dir.string() + " holds " + std::to_string(found.size()) +
                     " files; a draft has at most " + std::to_string(kMaxFiles));
  }
  std::sort(found.begin(), found.end());
  for (const auto& path : found) {
    const std::string rel = path.lexically_relative(dir).generic_string();
    if (auto guarded = guardedPath(rel); !guarded) {
      return makeError(guarded.error().message);
    }
    if (fs::file_size(path, ec) > kMaxFileBytes) {
      return makeError(path.string() +
                       " is over 1 MiB: a draft's files are text the reviser "
                       "reads; move it out of the draft folder");
    }
    auto content = readFile(path);
    if (!content) {
      return makeError("cannot read " + path.string());
    }
    draft.synthesis.files.push_back({rel, std::move(*content)});
  }
  if (auto text = readFile(dir / kAnalysis)) {
    draft.analysis = Json::parse(*text, nullptr, false);
    if (draft.analysis.is_discarded()) {
      return makeError((dir / kAnalysis).string() +
                       " is not JSON; delete it or restore the "
                       "one `oe ultra` wrote");
    }
  }
  return draft;
}

std::string slugify(std::string_view name) {
  std::string out;
  for (const char c : name) {
    const char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if ((lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9')) {
      out += lower;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') {
    out.pop_back();
  }
  if (out.size() > 60) {
    out.resize(60);
    while (!out.empty() && out.back() == '-') {
      out.pop_back();
    }
  }
  return out.empty() ? "draft" : out;
}

}  // namespace oe::ultra
