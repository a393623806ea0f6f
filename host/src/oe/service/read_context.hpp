// What the read side of `oe serve`'s API (docs/serve.md, "Reading runs") works from: the root it
// serves, the store, the run queue's entries; and the lookups every read route shares: the
// experiences under the root, an experience by name, a run by id or unique prefix, each confined
// to the root (symlinks resolved) and each failure an HTTP problem that says what to do.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/httpd/http.hpp"
#include "oe/runs/run_history.hpp"

namespace oe::service {

// A run the queue holds that may have no log yet (queued), whose log is being written (running),
// or that was cancelled before it started (cancelled: it never has a log). The write side's run
// queue (run_queue.hpp) provides them.
struct QueueEntry {
  std::string id;
  std::string experience;  // the experience's name, as GET /api/experiences lists it
  std::string status;      // "queued", "running" or "cancelled"
  int priority = 5;
  std::string queued_at;     // ISO-8601 UTC
  int64_t cancelled_ms = 0;  // cancelled: when, in ms since the epoch
};
using QueueLister = std::function<std::vector<QueueEntry>()>;

class ExperienceIndex;

struct ReadContext {
  // A constructor, not aggregate initialisation, so that members added later need no change
  // where a context is made: ReadContext{root, store_url, queue}.
  ReadContext(std::filesystem::path root_dir = {}, std::string store = {},  // NOLINT
              QueueLister queue_lister = {})
      : root(std::move(root_dir)), store_url(std::move(store)), queue(std::move(queue_lister)) {}

  std::filesystem::path root;  // --root; made absolute and canonical by addReadRoutes
  std::string store_url;       // --store: a PostgreSQL URL, or empty for the SQLite files
  QueueLister queue;           // may be empty: no queue (nothing queued)
  // What each experience.yaml under the root says, kept while the file is unchanged; made by
  // addReadRoutes when null.
  std::shared_ptr<ExperienceIndex> index;
  // Each runs folder's records, a log read again only when it changed; made by addReadRoutes
  // when null.
  std::shared_ptr<runs::RunListCache> run_lists;
};

// An experience under the root: its name is the `name:` of its experience.yaml.
struct ExperienceRef {
  std::string name;
  std::string description;
  std::filesystem::path dir;   // canonical, under the root
  std::filesystem::path yaml;  // dir / experience.yaml
  std::string rel;             // dir relative to the root ("." for the root itself)
  size_t nodes = 0;
  Json triggers = Json::array();  // the `triggers:` list as written, [] without one
};

// Either a value or the problem response that says why there is none.
template <typename T>
class Found {
 public:
  Found(T value) : value_(std::move(value)) {}                    // NOLINT(google-explicit-*)
  Found(httpd::Response problem) : value_(std::move(problem)) {}  // NOLINT(google-explicit-*)
  [[nodiscard]] bool ok() const { return std::holds_alternative<T>(value_); }
  T& operator*() { return std::get<T>(value_); }
  T* operator->() { return &std::get<T>(value_); }
  httpd::Response& problem() { return std::get<httpd::Response>(value_); }

 private:
  std::variant<T, httpd::Response> value_;
};

// True when `path` (resolved: symlinks of every existing part, `..`) is `root` or below it.
[[nodiscard]] bool confinedTo(const std::filesystem::path& path, const std::filesystem::path& root);

// The experiences under `root` (its own experience.yaml and folders up to 3 levels down, hidden
// folders and node_modules skipped, at most 500), sorted by name. A YAML whose real path is
// outside the root (a symlink) or that does not parse is left out. Each request walks the
// folders again (a new experience is seen at once), but a YAML is parsed again only when its
// size or mtime changed. Thread-safe.
class ExperienceIndex {
 public:
  [[nodiscard]] std::vector<ExperienceRef> list(const std::filesystem::path& root);

 private:
  struct Entry {
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    std::optional<ExperienceRef> ref;  // nullopt: not an experience to serve
  };
  std::optional<ExperienceRef> describe(const std::filesystem::path& root,
                                        const std::filesystem::path& dir);
  std::mutex mutex_;
  std::map<std::filesystem::path, Entry> entries_;
};

// context.index's list (a fresh index when it has none).
[[nodiscard]] std::vector<ExperienceRef> listExperiences(const ReadContext& context);

// The runs of `experience` (runs::listRuns: newest first), through context.run_lists when set.
[[nodiscard]] std::vector<runs::RunRecord> runsOf(const ReadContext& context,
                                                 const ExperienceRef& experience, bool details);

// The experience named `name` (404 when none, 409 when two folders use that name).
[[nodiscard]] Found<ExperienceRef> findExperience(const ReadContext& context,
                                                  std::string_view name);

// A run found under the root: its record (details filled) and its experience.
struct RunRef {
  runs::RunRecord record;
  ExperienceRef experience;
};

// The run `id` names (its full id or a unique prefix, as `oe inspect` takes it) among the runs
// of every experience under the root: 404 when none, 409 (with the candidates) when the prefix is
// ambiguous, 400 for an id that cannot be one. The log's real path must be under the root.
[[nodiscard]] Found<RunRef> findRunUnderRoot(const ReadContext& context, std::string_view id);

// A run's status in the API's words (docs/serve.md): succeeded (the engine's success), partial,
// failed, interrupted, waiting; a log without run.finished is running when the queue says so or
// a process holds the experience's state store for that run (a run started in a terminal), else
// interrupted. A run that did not succeed and that a later run of its chain resumed (`oe
// resume`, an approval's continuation) is `resumed`: the question it parked on, or the work it
// left, is the later run's now. Asks the queue once, each store's lock once and lists each
// experience's runs once.
class StatusOracle {
 public:
  explicit StatusOracle(const ReadContext& context);
  // `record.status` is the engine's (runs::listRuns with details, or the log's analysis).
  [[nodiscard]] std::string statusOf(const runs::RunRecord& record,
                                     const ExperienceRef& experience);
  // The run that resumed `record` (the newest of them), or empty.
  [[nodiscard]] std::string resumedBy(const runs::RunRecord& record,
                                      const ExperienceRef& experience);
  // `runs`: every run of `experience` (runsOf), when the caller has listed them already.
  void know(const ExperienceRef& experience, const std::vector<runs::RunRecord>& runs);
  [[nodiscard]] const std::vector<QueueEntry>& queue() const { return queue_; }

 private:
  using Resumers = std::map<std::string, std::string, std::less<>>;  // resumed_from -> run
  const Resumers& resumersOf(const ExperienceRef& experience);

  const ReadContext& context_;
  std::vector<QueueEntry> queue_;
  std::map<std::filesystem::path, std::string> holders_;  // yaml -> the run holding its store
  std::map<std::filesystem::path, Resumers> resumers_;    // yaml -> its runs' resumers
};

// `limit` of a list (default 50, 1 to 500), or a 400 problem.
[[nodiscard]] Found<size_t> listLimit(const httpd::Request& request);

}  // namespace oe::service
