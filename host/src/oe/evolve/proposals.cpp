// Proposals gated (diff applied to a scratch copy, then `oe validate`'s checks), reported as
// upstream's markdown plus verdict lines, kept in a JSON sidecar, and applied with backups.
#include "oe/evolve/proposals.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "oe/common/file.hpp"
#include "oe/evolve/unified_diff.hpp"
#include "oe/spec/loader.hpp"

namespace oe::evolve {
namespace fs = std::filesystem;

namespace {

std::string stringMember(const Json& value, const char* key) {
  if (!value.is_object()) {
    return {};
  }
  auto it = value.find(key);
  return it != value.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string joined(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const auto& part : parts) {
    out += (out.empty() ? "" : std::string(separator)) + part;
  }
  return out;
}

// The folder's one `kind: dataset` node with a local json/jsonl file: where JSON rows go.
Result<std::pair<std::string, std::string>> datasetFile(const fs::path& yaml_path) {
  auto loaded = spec::loadExperience(yaml_path);
  if (!loaded.experience) {
    return makeError(yaml_path.string() + " does not load, so its dataset cannot be found");
  }
  std::vector<std::pair<std::string, std::string>> found;  // uri, format
  std::vector<std::string> names;
  for (const auto& node : loaded.experience->nodes) {
    if (node.kind != "dataset" || !node.raw.is_object()) {
      continue;
    }
    const Json source = node.raw.value("source", Json::object());
    if (!source.is_object() || stringField(source, "type") != "file") {
      continue;
    }
    std::string uri = stringMember(source, "uri");
    std::string format = stringMember(source, "format");
    if (format.empty()) {
      std::string ext = fs::path(uri).extension().string();
      std::transform(ext.begin(), ext.end(), ext.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      format = ext == ".json" ? "json" : ext == ".jsonl" || ext == ".ndjson" ? "jsonl" : ext;
    }
    names.push_back(node.id + " (" + uri + ")");
    found.emplace_back(uri, format);
  }
  if (found.size() != 1) {
    return makeError(
        "the diff is a JSON array of rows, which goes to the experience's file "
        "dataset, but it has " +
        std::to_string(found.size()) + " file dataset nodes" +
        (names.empty() ? std::string() : " (" + joined(names, ", ") + ")") +
        "; a unified diff against the data file says where the rows go");
  }
  auto [uri, format] = found.front();
  if (uri.starts_with("./")) {
    uri = uri.substr(2);
  }
  if (!safeRelativePath(uri)) {
    return makeError("the dataset file " + uri + " is outside the experience folder");
  }
  if (format != "json" && format != "jsonl") {
    return makeError("the dataset file " + uri + " is " + format +
                     "; JSON rows can be appended to a json or jsonl file only (give a unified "
                     "diff against it instead)");
  }
  return std::pair{uri, format};
}

Result<std::vector<FileChange>> appendRows(const Json& rows, const fs::path& yaml_path,
                                           std::vector<std::string>& notes) {
  auto target = datasetFile(yaml_path);
  if (!target) {
    return target.error();
  }
  const auto& [uri, format] = *target;
  const auto path = yaml_path.parent_path() / uri;
  const std::optional<std::string> text = readFile(path);
  if (!text) {
    return makeError("the dataset file " + uri + " does not exist or cannot be read");
  }
  std::string out;
  if (format == "json") {
    Json existing = Json::parse(*text, nullptr, false);
    if (existing.is_discarded() || !existing.is_array()) {
      return makeError("the dataset file " + uri + " does not hold a JSON array");
    }
    for (const auto& row : rows) {
      existing.push_back(row);
    }
    out = existing.dump(2) + "\n";
  } else {
    out = *text;
    if (!out.empty() && out.back() != '\n') {
      out += '\n';
    }
    for (const auto& row : rows) {
      out += row.dump() + "\n";
    }
  }
  notes.push_back(std::to_string(rows.size()) + " row(s) appended to " + uri);
  return std::vector<FileChange>{{uri, std::move(out)}};
}

// The diff text without a surrounding ``` fence (models add one).
std::string_view unfenced(std::string_view text) {
  while (!text.empty() && (text.front() == '\n' || text.front() == ' ' || text.front() == '\r')) {
    text.remove_prefix(1);
  }
  if (text.starts_with("```")) {
    const size_t nl = text.find('\n');
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const size_t close = text.rfind("```");
    if (close != std::string_view::npos) {
      text = text.substr(0, close);
    }
  }
  return text;
}

void copyTree(const fs::path& from, const fs::path& to, std::error_code& ec) {
  fs::create_directories(to, ec);
  for (auto it = fs::directory_iterator(from, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const auto name = it->path().filename();
    if (name == ".openexpertise" || name == ".git") {
      continue;  // the run's history and the repository are not part of the experience
    }
    if (it->is_directory(ec) && !it->is_symlink(ec)) {
      copyTree(it->path(), to / name, ec);
    } else {
      fs::copy(it->path(), to / name, fs::copy_options::copy_symlinks, ec);
    }
  }
}

std::string replaceAll(std::string text, const std::string& from, const std::string& to) {
  if (from.empty()) {
    return text;
  }
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

}  // namespace

Proposal Proposal::fromJson(const Json& value) {
  return {stringMember(value, "operation"), stringMember(value, "confidence"),
          stringMember(value, "title"), stringMember(value, "rationale"),
          stringMember(value, "diff")};
}

Json Proposal::toJson() const {
  Json out = Json::object();
  out["operation"] = operation;
  out["confidence"] = confidence;
  out["title"] = title;
  out["rationale"] = rationale;
  out["diff"] = diff;
  return out;
}

std::string_view toString(VerdictStatus status) {
  switch (status) {
    case VerdictStatus::kValid:
      return "valid";
    case VerdictStatus::kInvalid:
      return "invalid";
    case VerdictStatus::kDoesNotApply:
    default:
      return "does_not_apply";
  }
}

std::string Verdict::line() const {
  std::string text;
  switch (status) {
    case VerdictStatus::kValid:
      text = "applies cleanly and passes `oe validate`";
      if (!files.empty()) {
        text += " (changes " + joined(files, ", ") + ")";
      }
      break;
    case VerdictStatus::kInvalid:
      text = "applies but fails `oe validate`: " + joined(reasons, "; ");
      break;
    case VerdictStatus::kDoesNotApply:
    default:
      text = "does not apply: " + joined(reasons, "; ");
      break;
  }
  if (!notes.empty()) {
    text += " [" + joined(notes, "; ") + "]";
  }
  // One line in the report, whatever the messages hold.
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

Json Verdict::toJson() const {
  return Json{
      {"status", toString(status)}, {"reasons", reasons}, {"notes", notes}, {"files", files}};
}

Verdict Verdict::fromJson(const Json& value) {
  Verdict v;
  const std::string status = stringMember(value, "status");
  v.status = status == "valid"     ? VerdictStatus::kValid
             : status == "invalid" ? VerdictStatus::kInvalid
                                   : VerdictStatus::kDoesNotApply;
  auto strings = [&](const char* key) {
    std::vector<std::string> out;
    if (value.is_object() && value.contains(key) && value[key].is_array()) {
      for (const auto& item : value[key]) {
        if (item.is_string()) {
          out.push_back(item.get<std::string>());
        }
      }
    }
    return out;
  };
  v.reasons = strings("reasons");
  v.notes = strings("notes");
  v.files = strings("files");
  return v;
}

Result<std::vector<FileChange>> planChanges(const Proposal& proposal, const fs::path& yaml_path,
                                            std::vector<std::string>& notes) {
  const std::string_view text = unfenced(proposal.diff);
  if (proposal.operation == "add-dataset-case") {
    Json rows = Json::parse(text, nullptr, false);
    if (!rows.is_discarded()) {
      if (!rows.is_array()) {
        return makeError("the diff is JSON but not an array of rows");
      }
      return appendRows(rows, yaml_path, notes);
    }
  }
  auto patches = parseUnifiedDiff(text);
  if (!patches) {
    return makeError("the diff is not a unified diff: " + patches.error().message);
  }
  const fs::path dir = yaml_path.parent_path();
  std::map<std::string, std::optional<std::string>> staged;  // later patches see earlier ones
  for (const auto& patch : *patches) {
    std::string target = patch.target();
    if (target.starts_with("./")) {
      target = target.substr(2);
    }
    if (!safeRelativePath(target)) {
      return makeError("the diff names " + target +
                       ", which is not a path inside the experience folder");
    }
    if (fs::path(target).begin()->string() == ".openexpertise") {
      return makeError("the diff changes " + target + ", inside .openexpertise/ (run history)");
    }
    std::optional<std::string> current;
    if (auto it = staged.find(target); it != staged.end()) {
      current = it->second;
    } else {
      current = readFile(dir / target);
    }
    auto applied = applyFilePatch(patch, current);
    if (!applied) {
      return applied.error();
    }
    notes.insert(notes.end(), applied->notes.begin(), applied->notes.end());
    staged[target] = std::move(applied->text);
  }
  std::vector<FileChange> changes;
  for (auto& [path, content] : staged) {
    changes.push_back({path, std::move(content)});
  }
  return changes;
}

Result<void> writeCandidate(const std::vector<FileChange>& changes, const fs::path& yaml_path,
                            const fs::path& folder) {
  std::error_code ec;
  fs::remove_all(folder, ec);
  ec.clear();
  copyTree(yaml_path.parent_path(), folder, ec);
  for (const auto& change : changes) {
    if (ec) {
      break;
    }
    const fs::path target = folder / change.path;
    if (!change.text) {
      fs::remove(target, ec);
      continue;
    }
    fs::create_directories(target.parent_path(), ec);
    if (!ec) {
      if (auto written = writeTextFile(target, *change.text); !written) {
        return written.error();
      }
    }
  }
  if (ec) {
    return makeError("cannot make a copy of the experience in " + folder.string() + ": " +
                     ec.message());
  }
  return {};
}

Verdict gate(const Proposal& proposal, const fs::path& yaml_path, const spec::KindCatalog& kinds,
             const fs::path& scratch) {
  Verdict verdict;
  auto changes = planChanges(proposal, yaml_path, verdict.notes);
  if (!changes) {
    verdict.status = VerdictStatus::kDoesNotApply;
    verdict.reasons.push_back(changes.error().message);
    return verdict;
  }
  for (const auto& change : *changes) {
    verdict.files.push_back(change.path);
  }
  std::error_code ec;
  if (auto written = writeCandidate(*changes, yaml_path, scratch); !written) {
    fs::remove_all(scratch, ec);
    verdict.status = VerdictStatus::kDoesNotApply;
    verdict.reasons.push_back(written.error().message);
    return verdict;
  }
  const fs::path scratch_yaml = scratch / yaml_path.filename();
  const auto loaded = spec::loadExperience(scratch_yaml);
  const auto diagnostics = spec::checkLoaded(loaded, kinds, /*strict=*/false);
  // Messages name the files as the experience has them, not the scratch copy.
  const std::string scratch_prefix = scratch.string() + "/";
  for (const auto& d : diagnostics) {
    if (d.severity == Severity::kError) {
      verdict.reasons.push_back(replaceAll(d.format(), scratch_prefix, ""));
    }
  }
  verdict.status = verdict.reasons.empty() ? VerdictStatus::kValid : VerdictStatus::kInvalid;
  fs::remove_all(scratch, ec);
  return verdict;
}

std::string renderMarkdown(const std::vector<Proposal>& proposals, std::string_view run_id,
                           const std::vector<Verdict>* verdicts,
                           const std::vector<std::string>* evaluations) {
  std::vector<std::string> lines = {
      "# Evolution Proposals for run `" + std::string(run_id) + "`", "",
      "Generated by OpenExpertise EvolutionAdvisor. Review each suggestion",
      "and `git apply` the diff blocks you accept; runtime never auto-applies.", ""};
  auto join = [&] {
    std::string out;
    for (size_t i = 0; i < lines.size(); ++i) {
      out += (i == 0 ? "" : "\n") + lines[i];
    }
    return out;
  };
  if (proposals.empty()) {
    lines.emplace_back("_No proposals generated for this run._");
    return join() + "\n";
  }
  for (size_t i = 0; i < proposals.size(); ++i) {
    const Proposal& p = proposals[i];
    lines.push_back("## " + std::to_string(i + 1) + ". " + p.title + " _(" + p.operation +
                    ", confidence: " + p.confidence + ")_");
    lines.emplace_back("");
    lines.push_back(p.rationale);
    lines.emplace_back("");
    lines.emplace_back("```diff");
    lines.push_back(p.diff);
    lines.emplace_back("```");
    if (verdicts != nullptr && i < verdicts->size()) {
      lines.push_back(std::string(kVerdictPrefix) + (*verdicts)[i].line());
    }
    if (evaluations != nullptr && i < evaluations->size() && !(*evaluations)[i].empty()) {
      lines.push_back(std::string(kEvaluationPrefix) + (*evaluations)[i]);
    }
    lines.emplace_back("");
  }
  return join();
}

fs::path evolutionDir(const fs::path& experience_dir) {
  return experience_dir / ".openexpertise" / "evolution";
}

fs::path reportPath(const fs::path& experience_dir, std::string_view run_id) {
  return evolutionDir(experience_dir) / (std::string(run_id) + ".md");
}

fs::path sidecarPath(const fs::path& experience_dir, std::string_view run_id) {
  return evolutionDir(experience_dir) / (std::string(run_id) + ".json");
}

Result<Json> readSidecar(const fs::path& path) {
  const auto text = readFile(path);
  if (!text) {
    return makeError("cannot read " + path.string());
  }
  Json value = Json::parse(*text, nullptr, false);
  if (value.is_discarded() || !value.is_object() || !value.contains("proposals") ||
      !value["proposals"].is_array()) {
    return makeError(path.string() + " is not an oe evolution sidecar (no proposals array)");
  }
  return value;
}

Result<void> writeTextFile(const fs::path& path, std::string_view text) {
  // Beside the target, then renamed over it: a reader never sees half a file.
  const fs::path tmp = path.string() + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!out.flush()) {
      std::error_code ignored;
      fs::remove(tmp, ignored);
      return makeError("cannot write " + path.string());
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return makeError("cannot write " + path.string() + ": " + ec.message());
  }
  return {};
}

Result<ApplyOutcome> applyChanges(const std::vector<FileChange>& changes,
                                  const fs::path& experience_dir, std::string_view stamp) {
  ApplyOutcome outcome;
  for (const auto& change : changes) {
    const fs::path target = experience_dir / change.path;
    std::error_code ec;
    if (fs::exists(target, ec)) {
      // Never over an earlier backup (two applies within one second).
      std::string backup = change.path + ".bak-" + std::string(stamp);
      for (int k = 2; fs::exists(experience_dir / backup, ec); ++k) {
        backup = change.path + ".bak-" + std::string(stamp) + "-" + std::to_string(k);
      }
      fs::copy_file(target, experience_dir / backup, fs::copy_options::none, ec);
      if (ec) {
        return makeError("cannot keep " + change.path + " as " + backup + ": " + ec.message() +
                         "; nothing more was changed");
      }
      outcome.backups.push_back(backup);
    }
    if (!change.text) {
      fs::remove(target, ec);
    } else {
      fs::create_directories(target.parent_path(), ec);
      if (auto written = writeTextFile(target, *change.text); !written) {
        return written.error();
      }
    }
    if (ec) {
      return makeError("cannot change " + change.path + ": " + ec.message());
    }
    outcome.files.push_back(change.path);
  }
  return outcome;
}

}  // namespace oe::evolve
