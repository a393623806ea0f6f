// The lookups of the read routes: experiences under the root, a run by id or prefix, the API's
// run status. Every path a request reaches is checked against the root after symlinks.
#include "oe/service/read_context.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <system_error>

#include "oe/run/run.hpp"
#include "oe/spec/loader.hpp"
#include "oe/spec/workspace.hpp"
#include "oe/state/store_lock.hpp"

namespace oe::service {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxDepth = 3;
constexpr size_t kMaxExperiences = 500;
constexpr size_t kShownCandidates = 10;

// Run ids are UUIDs: a prefix of one is hex digits and dashes. Anything else (a `/`, `..`) is
// refused before any file is looked at.
bool plausibleRunId(std::string_view id) {
  return !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' ||
           c == '_';
  });
}

std::optional<ExperienceRef> parseExperience(const fs::path& root, const fs::path& yaml) {
  auto loaded = spec::loadExperience(yaml);
  const spec::Experience* model =
      loaded.experience ? &*loaded.experience : (loaded.partial ? &*loaded.partial : nullptr);
  if (model == nullptr || model->name.empty()) {
    return std::nullopt;
  }
  ExperienceRef ref;
  ref.name = model->name;
  ref.description = model->description;
  ref.dir = yaml.parent_path();
  ref.yaml = yaml;
  ref.rel = ref.dir.lexically_relative(root).string();
  ref.nodes = model->nodes.size();
  if (model->raw.is_object() && model->raw.contains("triggers") &&
      model->raw["triggers"].is_array()) {
    ref.triggers = model->raw["triggers"];
  }
  return ref;
}

}  // namespace

bool confinedTo(const fs::path& path, const fs::path& root) {
  std::error_code ec;
  const fs::path real = fs::weakly_canonical(path, ec);
  if (ec) {
    return false;
  }
  auto r = root.begin();
  auto p = real.begin();
  for (; r != root.end(); ++r, ++p) {
    if (r->empty()) {
      continue;  // a trailing separator of the root
    }
    if (p == real.end() || *p != *r) {
      return false;
    }
  }
  return true;
}

std::optional<ExperienceRef> ExperienceIndex::describe(const fs::path& root, const fs::path& dir) {
  std::error_code ec;
  const fs::path yaml = fs::canonical(dir / spec::kDefaultExperienceFile, ec);
  if (ec || !confinedTo(yaml, root)) {
    return std::nullopt;
  }
  struct stat info {};
  if (::stat(yaml.c_str(), &info) != 0) {
    return std::nullopt;
  }
  const auto size = static_cast<uint64_t>(info.st_size);
  const int64_t mtime_ns = int64_t{info.st_mtim.tv_sec} * 1000000000 + info.st_mtim.tv_nsec;
  {
    const std::lock_guard lock(mutex_);
    auto it = entries_.find(yaml);
    if (it != entries_.end() && it->second.size == size && it->second.mtime_ns == mtime_ns) {
      return it->second.ref;
    }
  }
  auto ref = parseExperience(root, yaml);
  const std::lock_guard lock(mutex_);
  entries_[yaml] = Entry{size, mtime_ns, ref};
  return ref;
}

std::vector<ExperienceRef> listExperiences(const ReadContext& context) {
  if (context.index) {
    return context.index->list(context.root);
  }
  ExperienceIndex fresh;
  return fresh.list(context.root);
}

std::vector<runs::RunRecord> runsOf(const ReadContext& context, const ExperienceRef& experience,
                                   bool details) {
  const fs::path runs_dir = spec::workspaceDir(experience.yaml) / "runs";
  return context.run_lists ? context.run_lists->list(runs_dir, details)
                           : runs::listRuns(runs_dir, details);
}

std::vector<ExperienceRef> ExperienceIndex::list(const fs::path& root) {
  std::vector<ExperienceRef> found;
  std::error_code ec;
  if (fs::is_regular_file(root / spec::kDefaultExperienceFile, ec)) {
    if (auto ref = describe(root, root)) {
      found.push_back(std::move(*ref));
    }
  }
  // Directory symlinks are not followed (the iterator's default): a link out of the root is
  // never walked.
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator() && found.size() < kMaxExperiences;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code type_ec;
    if (!it->is_directory(type_ec) || name.starts_with('.') || name == "node_modules") {
      it.disable_recursion_pending();
      continue;
    }
    if (it.depth() >= kMaxDepth - 1) {
      it.disable_recursion_pending();
    }
    if (fs::is_regular_file(it->path() / spec::kDefaultExperienceFile, type_ec)) {
      if (auto ref = describe(root, it->path())) {
        found.push_back(std::move(*ref));
      }
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return a.name != b.name ? a.name < b.name : a.rel < b.rel;
  });
  return found;
}

Found<ExperienceRef> findExperience(const ReadContext& context, std::string_view name) {
  std::vector<ExperienceRef> matches;
  for (auto& ref : listExperiences(context)) {
    if (ref.name == name) {
      matches.push_back(std::move(ref));
    }
  }
  if (matches.empty()) {
    return httpd::problem(404, "experience-not-found", "No such experience",
                          "no experience named \"" + std::string(name) + "\" under " +
                              context.root.string() +
                              "; GET /api/experiences lists them by the `name:` of their "
                              "experience.yaml");
  }
  if (matches.size() > 1) {
    std::string where;
    for (const auto& ref : matches) {
      where += (where.empty() ? "" : ", ") + ref.yaml.string();
    }
    return httpd::problem(409, "experience-ambiguous", "Two experiences share a name",
                          "\"" + std::string(name) + "\" is the name of " + where +
                              "; give each experience.yaml its own `name:`");
  }
  return std::move(matches.front());
}

Found<RunRef> findRunUnderRoot(const ReadContext& context, std::string_view id) {
  if (!plausibleRunId(id)) {
    return httpd::problem(400, "bad-run-id", "Not a run id",
                          "\"" + std::string(id) +
                              "\" is not a run id: give a run's id or a unique prefix of it "
                              "(letters, digits and dashes), as GET /api/runs lists them");
  }
  std::vector<RunRef> matches;
  bool exact = false;
  for (auto& experience : listExperiences(context)) {
    for (auto& record : runsOf(context, experience, /*details=*/false)) {
      if (record.id == id) {
        // An exact id wins over longer ids it prefixes, as runs::findRun has it.
        matches.clear();
        matches.push_back({std::move(record), experience});
        exact = true;
        break;
      }
      if (record.id.starts_with(id)) {
        matches.push_back({std::move(record), experience});
      }
    }
    if (exact) {
      break;
    }
  }
  if (matches.empty()) {
    return httpd::problem(404, "run-not-found", "No such run",
                          "no run \"" + std::string(id) + "\" under " + context.root.string() +
                              "; GET /api/runs lists the runs (a queued run has no log yet: "
                              "wait for it to start)");
  }
  if (matches.size() > 1) {
    std::string text = "\"" + std::string(id) + "\" matches " + std::to_string(matches.size()) +
                       " runs; give more of the id:";
    for (size_t i = 0; i < matches.size() && i < kShownCandidates; ++i) {
      text += " " + matches[i].record.id;
    }
    return httpd::problem(409, "run-ambiguous", "Ambiguous run id prefix", text);
  }
  if (!confinedTo(matches.front().record.log, context.root)) {
    return httpd::problem(403, "outside-root", "Outside the served root",
                          "the log of run " + matches.front().record.id + " resolves outside " +
                              context.root.string() +
                              " (a symlink); move it under the root to serve it");
  }
  return std::move(matches.front());
}

StatusOracle::StatusOracle(const ReadContext& context) : context_(context) {
  if (context.queue) {
    queue_ = context.queue();
  }
}

void StatusOracle::know(const ExperienceRef& experience,
                        const std::vector<runs::RunRecord>& runs) {
  Resumers& resumers = resumers_[experience.yaml];
  resumers.clear();
  // Newest first: the first resumer seen of a run is its newest.
  for (const auto& run : runs) {
    if (!run.resumed_from.empty()) {
      resumers.emplace(run.resumed_from, run.id);
    }
  }
}

const StatusOracle::Resumers& StatusOracle::resumersOf(const ExperienceRef& experience) {
  if (resumers_.find(experience.yaml) == resumers_.end()) {
    know(experience, runsOf(context_, experience, /*details=*/false));
  }
  return resumers_[experience.yaml];
}

std::string StatusOracle::resumedBy(const runs::RunRecord& record,
                                    const ExperienceRef& experience) {
  const Resumers& resumers = resumersOf(experience);
  const auto it = resumers.find(record.id);
  return it == resumers.end() ? std::string() : it->second;
}

std::string StatusOracle::statusOf(const runs::RunRecord& record, const ExperienceRef& experience) {
  const std::string& status = record.status;
  if (status == "success") {
    return "succeeded";
  }
  if (!resumedBy(record, experience).empty()) {
    return "resumed";
  }
  // partial: some node failed and the run went on to its end. Neither a success (a dashboard or
  // a filter would count it as one) nor a failure of the run.
  if (status == "partial" || status == "failed" || status == "interrupted" || status == "waiting" ||
      status == "cancelled") {
    return status;
  }
  for (const auto& entry : queue_) {
    if (entry.id == record.id) {
      return entry.status;
    }
  }
  auto it = holders_.find(experience.yaml);
  if (it == holders_.end()) {
    std::string holder;
    auto loaded = spec::loadExperience(experience.yaml);
    if (loaded.experience) {
      if (auto held = state::StoreLock::holder(run::statePath(*loaded.experience))) {
        holder = held->run_id;
      }
    }
    it = holders_.emplace(experience.yaml, std::move(holder)).first;
  }
  return it->second == record.id ? "running" : "interrupted";
}

Found<size_t> listLimit(const httpd::Request& request) {
  constexpr size_t kDefault = 50;
  constexpr size_t kMax = 500;
  const auto text = request.queryParam("limit");
  if (!text) {
    return kDefault;
  }
  size_t value = 0;
  const auto* end = text->data() + text->size();
  const auto parsed = std::from_chars(text->data(), end, value);
  if (parsed.ec != std::errc() || parsed.ptr != end || value < 1 || value > kMax) {
    return httpd::problem(400, "bad-limit", "Bad limit",
                          "limit=" + std::string(*text) + " is not a whole number from 1 to " +
                              std::to_string(kMax) + "; leave it out for " +
                              std::to_string(kDefault));
  }
  return value;
}

}  // namespace oe::service
