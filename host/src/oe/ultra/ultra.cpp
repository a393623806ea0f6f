// See ultra.hpp. One Session per author/reviseDraft call holds the LLM context, the options and
// the loop's record; the loop itself (critique -> revise, keep-best, the gates) is shared.
#include "oe/ultra/ultra.hpp"

#include <chrono>
#include <fstream>

#include "oe/common/file.hpp"
#include "oe/llm/host_call.hpp"
#include "oe/spec/schema_check.hpp"
#include "oe/ultra/schemas.hpp"

namespace oe::ultra {
namespace fs = std::filesystem;

namespace {

constexpr int kAnalyzeTokens = 8192;  // upstream's max_tokens per phase
constexpr int kSynthesisTokens = 16384;
constexpr int kCritiqueTokens = 8192;
constexpr size_t kExemplarCount = 2;

// A draft the loop has seen, with what is known of it.
struct Candidate {
  Synthesis synthesis;
  DraftCheck check;
  std::optional<Critique> critique;
  double composite = 0;
  bool critiqued = false;  // `composite` comes from a critic's score (its own, or its parent's)
  int round = 0;
  [[nodiscard]] Scored scored() const { return {check.valid, composite}; }
};

class Session {
 public:
  Session(const Context& context, const Options& options)
      : context_(context),
        options_(options),
        call_(context.llm, "ultra", context.log, options.cancel) {}

  [[nodiscard]] bool cancelled() const { return call_.isCancelled(); }

  // start/done events around `work` (which returns a Result); done carries `detail(result)`.
  template <class Work, class Detail>
  auto phase(const std::string& name, int round, Work&& work, Detail&& detail) -> decltype(work()) {
    emit({name, "start", 0, round, {}});
    const auto start = std::chrono::steady_clock::now();
    auto result = work();
    const int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - start)
                           .count();
    if (result) {
      emit({name, "done", ms, round, detail(*result)});
    } else {
      emit({name, "failed", ms, round, result.error().message});
    }
    return result;
  }

  // One structured_output call: the answer's tool input, checked against `schema`.
  Result<Json> ask(const std::string& phase_name, const std::string& system, const Json& user,
                   const Json& schema, int max_tokens, const std::string& model) {
    if (cancelled()) {
      return makeError(phase_name + ": cancelled");
    }
    Json request = Json::object();
    if (!model.empty()) {
      request["model"] = model;
    }
    request["system"] = system;
    request["max_tokens"] = max_tokens;
    // Upstream sends JSON.stringify(x, null, 2) (the task alone for analyze).
    request["messages"] =
        Json::array({{{"role", "user"},
                      {"content", user.is_string() ? user.get<std::string>() : user.dump(2)}}});
    request["tools"] =
        Json::array({{{"name", "structured_output"},
                      {"description", "Return the " + phase_name + " result as the tool's input"},
                      {"input_schema", schema}}});
    std::string out;
    if (const oe_status status = call_.llmComplete(request.dump(), out); status != OE_OK) {
      return makeError(phase_name + ": " + out);
    }
    const Json response = Json::parse(out, nullptr, false);
    const Json* input = nullptr;
    if (response.is_object() && response.contains("tool_calls") &&
        response["tool_calls"].is_array()) {
      for (const auto& c : response["tool_calls"]) {
        if (stringField(c, "name") == "structured_output" && c.contains("input")) {
          input = &c["input"];
          break;
        }
      }
    }
    if (input == nullptr) {
      const std::string text = response.is_object() ? stringField(response, "text") : out;
      return makeError(phase_name + ": the LLM did not return a structured_output tool call" +
                       (text.empty() ? "" : " (it answered: " + text.substr(0, 200) + ")"));
    }
    if (input->is_object() && input->contains("_raw")) {
      return makeError(phase_name + ": the structured_output arguments are not JSON: " +
                       (*input)["_raw"].dump().substr(0, 200));
    }
    auto checker = spec::SchemaChecker::compile(schema);
    if (!checker) {
      return checker.error();
    }
    const auto issues = checker->check(*input);
    if (!issues.empty()) {
      std::string text;
      for (const auto& issue : issues) {
        text += (text.empty() ? "" : "; ") + (issue.pointer.empty() ? "/" : issue.pointer) + ": " +
                issue.message;
      }
      return makeError(phase_name + ": the answer does not match its schema: " + text);
    }
    return *input;
  }

  Result<Json> analyze(const std::string& task) {
    return phase(
        "analyze", 0,
        [&] {
          return ask("analyze", context_.prompts.analyzer, Json(task), analysisSchema(),
                     kAnalyzeTokens, options_.model);
        },
        [](const Json& a) {
          return stringField(a, "name") + ": " + std::to_string(a["node_sketches"].size()) +
                 " node(s)";
        });
  }

  void pickExemplarsFor(const Json& analysis) {
    if (options_.exemplars) {
      exemplars_ = *options_.exemplars;
    } else if (options_.corpus) {
      emit({"exemplars", "start", 0, 0, {}});
      exemplars_ = pickExemplars(analysis, scanCorpus(*options_.corpus), kExemplarCount);
      std::string names;
      for (const auto& e : exemplars_) {
        names += (names.empty() ? "" : ", ") + e.name;
      }
      emit({"exemplars", "done", 0, 0, names.empty() ? "none matched" : names});
    }
  }

  void addExemplars(Json& user) const {
    if (exemplars_.empty()) {
      return;
    }
    Json list = Json::array();
    for (const auto& e : exemplars_) {
      list.push_back(e.toJson());
    }
    user["exemplars"] = std::move(list);
  }

  Result<Synthesis> synthesize(const std::string& task, const Json& analysis) {
    return phase(
        "synthesize", 0,
        [&]() -> Result<Synthesis> {
          Json u = Json::object();
          u["task"] = task;
          u["analysis"] = analysis;
          addExemplars(u);
          auto answer = ask("synthesize", context_.prompts.synthesizer, orderedUser(u),
                            synthesisSchema(), kSynthesisTokens, options_.model);
          if (!answer) {
            return answer.error();
          }
          return Synthesis::fromJson(*answer);
        },
        [](const Synthesis& s) { return std::to_string(s.files.size() + 1) + " file(s)"; });
  }

  Candidate check(Synthesis synthesis, int round, const fs::path& scratch) {
    emit({"check", "start", 0, round, {}});
    const auto start = std::chrono::steady_clock::now();
    Candidate c;
    // A folder of its own per check: the tool plugin's Node.js worker outlives a run and caches
    // each module by its path, so a revised tool at the same path would not be loaded again.
    c.check = checkDraft(synthesis, scratch / ("check-" + std::to_string(++checks_)),
                         context_.registry, context_.kinds, options_.check);
    c.synthesis = std::move(synthesis);
    c.round = round;
    const int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - start)
                           .count();
    emit({"check", c.check.valid ? "done" : "invalid", ms, round,
          c.check.valid
              ? (c.check.smoke_ran ? "valid, smoke run " + c.check.smoke_status
                                   : std::string("valid"))
              : std::to_string(c.check.errors.size() + c.check.preflight.size()) + " error(s): " +
                    (c.check.preflight.empty() ? c.check.errors.front()
                                               : c.check.preflight.front())});
    return c;
  }

  // The critic soft-fails: any failure is "no critique" (upstream returns null).
  std::optional<Critique> critique(const std::string& task, const Json& analysis,
                                   const Candidate& c, int round) {
    Json u = Json::object();
    u["task"] = task;
    u["analysis"] = analysis;
    u["draft"] = c.synthesis.toJson();
    u["preflight"] = {{"ok", c.check.preflight_ok}, {"issues", c.check.preflight}};
    u["validation"] = c.check.validationJson();
    addExemplars(u);
    auto answer = phase(
        "critique", round,
        [&] {
          return ask("critique", context_.prompts.critic, orderedUser(u), critiqueSchema(),
                     kCritiqueTokens,
                     options_.critic_model.empty() ? options_.model : options_.critic_model);
        },
        [](const Json& a) {
          return "score " + a["score"].dump() + ", " + std::to_string(a["findings"].size()) +
                 " finding(s) before the anchor filter";
        });
    if (!answer) {
      return std::nullopt;
    }
    Critique out;
    out.score = (*answer)["score"].get<double>();
    std::vector<Finding> findings;
    for (const auto& f : (*answer)["findings"]) {
      findings.push_back(Finding::fromJson(f));
    }
    out.findings = filterAnchors(std::move(findings), draftNames(c.synthesis));
    return out;
  }

  Result<Synthesis> revise(const std::string& task, const Json& analysis, const Candidate& c,
                           const std::vector<Finding>& findings, int round) {
    return phase(
        "revise", round,
        [&]() -> Result<Synthesis> {
          Json u = Json::object();
          u["task"] = task;
          u["analysis"] = analysis;
          u["current_draft"] = c.synthesis.toJson();
          Json list = Json::array();
          for (const auto& f : findings) {
            list.push_back(f.toJson());
          }
          u["findings"] = std::move(list);
          u["validation_errors"] = c.check.errors;
          addExemplars(u);
          auto answer = ask("revise", context_.prompts.reviser, orderedUser(u), synthesisSchema(),
                            kSynthesisTokens, options_.model);
          if (!answer) {
            return answer.error();
          }
          return Synthesis::fromJson(*answer);
        },
        [](const Synthesis& s) { return std::to_string(s.files.size() + 1) + " file(s)"; });
  }

  // The critique -> revise loop from `start` (reference §8.2 step 5, with oe's fix rounds).
  // `directives`: findings placed ahead of the critic's in the first revise (ultra-revise's
  // feedback); `must_revise`: at least one revise happens; `accept_ties`: a valid revision
  // that ties the best replaces it.
  Candidate loop(const std::string& task, const Json& analysis, Candidate start,
                 const std::vector<Finding>& directives, bool must_revise, bool accept_ties,
                 const fs::path& scratch) {
    Candidate best = start;
    Candidate current = std::move(start);
    for (int round = 1;; ++round) {
      if (cancelled()) {
        break;
      }
      const bool critique_round = round <= options_.max_rounds;
      const bool forced = must_revise && round == 1;
      const bool fixing =
          !current.check.valid && round <= options_.max_rounds + options_.fix_rounds;
      if (!critique_round && !forced && !fixing) {
        break;
      }
      std::optional<Critique> critic;
      if (critique_round) {
        critic = critique(task, analysis, current, round);
        if (critic) {
          current.critique = critic;
          current.composite = composite(current.check, &*critic);
          current.critiqued = true;
          Json record = critic->toJson();
          record["round"] = round;
          report_.critiques.push_back(std::move(record));
          if (best.round == current.round || better(current.scored(), best.scored())) {
            best = current;
          }
        }
      }
      if (current.check.valid && !forced) {
        // Upstream's stops: no critique, nothing to fix, or good enough.
        if (!critic || critic->findings.empty() ||
            goodEnough(current.check, *critic, current.composite, options_.score_bar)) {
          break;
        }
      }
      std::vector<Finding> findings = round == 1 ? directives : std::vector<Finding>{};
      if (critic) {
        findings.insert(findings.end(), critic->findings.begin(), critic->findings.end());
      }
      const std::vector<Finding> own = checkFindings(current.check);
      findings.insert(findings.end(), own.begin(), own.end());
      auto revised = revise(task, analysis, current, findings, round);
      report_.rounds_run = round;
      if (!revised) {
        break;  // a reviser error ends the loop with what is best so far
      }
      Candidate next = check(std::move(*revised), round, scratch);
      if (critic) {
        const Critique clean{critic->score, {}};
        next.composite = composite(next.check, &clean);
        next.critiqued = true;
      }
      if (best.check.valid && !next.check.valid) {
        // The monotonicity gate: an invalid revision of a valid draft is not accepted.
        emit({"revise", "rejected", 0, round,
              "the revision does not validate; the valid draft of round " +
                  std::to_string(best.round) + " is kept"});
        break;
      }
      if (better(next.scored(), best.scored(), accept_ties)) {
        best = next;
      } else {
        emit({"revise", "rejected", 0, round,
              "the revision scores lower than round " + std::to_string(best.round) +
                  "'s draft, which is kept"});
      }
      current = std::move(next);
    }
    if (best.critiqued) {
      report_.final_score = best.composite;
    }
    return best;
  }

  LoopReport finish() {
    report_.usage = call_.usage();
    return report_;
  }

 private:
  // Upstream's key order for the user message (task, analysis, draft, ...): insertion order.
  static Json orderedUser(const Json& u) {
    nlohmann::ordered_json ordered;
    for (const char* key : {"task", "analysis", "draft", "current_draft", "findings", "preflight",
                            "validation", "validation_errors", "exemplars"}) {
      if (u.contains(key)) {
        ordered[key] = u[key];
      }
    }
    return Json(ordered.dump(2));
  }

  void emit(const PhaseEvent& e) const {
    if (options_.on_phase) {
      options_.on_phase(e);
    }
  }

  const Context& context_;
  const Options& options_;
  llm::HostCall call_;
  std::vector<Exemplar> exemplars_;
  LoopReport report_;
  int checks_ = 0;
};

Result<void> writeAnalysis(const fs::path& dir, const Json& analysis) {
  std::ofstream out(dir / "analysis.json", std::ios::trunc);
  out << analysis.dump(2) << '\n';
  if (!out) {
    return makeError("cannot write " + (dir / "analysis.json").string());
  }
  return {};
}

}  // namespace

Result<Prompts> loadPrompts(const fs::path& shipped_dir,
                            const std::optional<fs::path>& override_dir) {
  Prompts prompts;
  const std::pair<const char*, std::string*> files[] = {{"analyzer.md", &prompts.analyzer},
                                                        {"synthesizer.md", &prompts.synthesizer},
                                                        {"critic.md", &prompts.critic},
                                                        {"reviser.md", &prompts.reviser}};
  for (const auto& [name, slot] : files) {
    std::optional<std::string> text;
    if (override_dir) {
      text = readFile(*override_dir / name);
    }
    if (!text) {
      text = readFile(shipped_dir / name);
    }
    if (!text) {
      return makeError("the ultra prompt " + std::string(name) + " is missing: it belongs in " +
                       shipped_dir.string() +
                       (override_dir ? " (or in " + override_dir->string() + ")" : "") +
                       "; reinstall oe or pass --prompts DIR");
    }
    *slot = std::move(*text);
  }
  return prompts;
}

Json LoopReport::toJson() const {
  Json out = Json::object();
  out["rounds_run"] = rounds_run;
  out["final_score"] = final_score ? Json(*final_score) : Json();
  out["critiques"] = critiques;
  out["tokens"] = {{"input", usage.input_tokens}, {"output", usage.output_tokens}};
  out["cost_usd"] = usage.cost_usd;
  out["llm_calls"] = usage.calls;
  return out;
}

Json UltraResult::toJson(bool with_contents) const {
  Json out = Json::object();
  out["stopped"] = stopped;
  out["analysis"] = analysis;
  if (stopped) {
    out["loop"] = loop.toJson();
    return out;
  }
  out["slug"] = slug;
  out["draft_dir"] = draft_dir.string();
  if (with_contents) {
    out["synthesis"] = synthesis.toJson();
  } else {
    Json paths = Json::array();
    for (const auto& f : synthesis.files) {
      paths.push_back(f.path);
    }
    out["synthesis"] = {{"file_paths", paths}, {"next_steps", synthesis.next_steps}};
  }
  out["validation"] = check.validationJson();
  out["check"] = check.toJson();
  out["files_written"] = files_written;
  out["accepted_revision"] = accepted_revision;
  out["loop"] = loop.toJson();
  return out;
}

Result<UltraResult> author(const Context& context, const std::string& task,
                           const fs::path& root_dir, const std::string& draft_slug,
                           bool stop_after_analyze, const Options& options) {
  Session session(context, options);
  UltraResult result;
  auto analysis = session.analyze(task);
  if (!analysis) {
    return analysis.error();
  }
  result.analysis = std::move(*analysis);
  if (stop_after_analyze) {
    result.stopped = true;
    result.loop = session.finish();
    return result;
  }
  result.slug = draft_slug.empty() ? slugify(stringField(result.analysis, "name")) : draft_slug;
  if (auto guarded = guardedPath(result.slug);
      !guarded || guarded->find('/') != std::string::npos) {
    return makeError("the draft slug \"" + result.slug +
                     "\" is not a single folder name; pass --slug with letters, digits and '-'");
  }
  session.pickExemplarsFor(result.analysis);
  auto synthesis = session.synthesize(task, result.analysis);
  if (!synthesis) {
    return synthesis.error();
  }
  const fs::path scratch = root_dir / (".ultra-scratch-" + result.slug);
  Candidate first = session.check(std::move(*synthesis), 0, scratch);
  Candidate best = session.loop(task, result.analysis, std::move(first), {},
                                /*must_revise=*/false, /*accept_ties=*/false, scratch);
  std::error_code ec;
  fs::remove_all(scratch, ec);
  if (session.cancelled()) {
    return makeError("cancelled; no draft was written");
  }
  result.draft_dir = root_dir / result.slug;
  auto written = writeDraft(result.draft_dir, best.synthesis);
  if (!written) {
    return written.error();
  }
  if (auto ok = writeAnalysis(result.draft_dir, result.analysis); !ok) {
    return ok.error();
  }
  result.files_written = std::move(*written);
  result.synthesis = std::move(best.synthesis);
  result.check = std::move(best.check);
  result.loop = session.finish();
  return result;
}

Result<UltraResult> reviseDraft(const Context& context, const fs::path& draft_dir,
                                const std::string& feedback, const Options& options) {
  auto stored = readDraft(draft_dir);
  if (!stored) {
    return stored.error();
  }
  Session session(context, options);
  UltraResult result;
  result.analysis = stored->analysis.is_null() ? Json::object() : stored->analysis;
  result.slug = draft_dir.filename().string();
  result.draft_dir = draft_dir;
  const std::string task = stringField(result.analysis, "description");
  std::vector<std::string> previous;
  for (const auto& f : stored->synthesis.files) {
    previous.push_back(f.path);
  }
  const fs::path scratch = draft_dir.parent_path() / (".ultra-scratch-" + result.slug);
  Candidate original = session.check(std::move(stored->synthesis), 0, scratch);
  const std::vector<Finding> directives = {
      {"decomposition", "high", Json::object(), "user directive", feedback}};
  Candidate best = session.loop(task, result.analysis, std::move(original), directives,
                                /*must_revise=*/true, /*accept_ties=*/true, scratch);
  std::error_code ec;
  fs::remove_all(scratch, ec);
  if (session.cancelled()) {
    return makeError("cancelled; the draft in " + draft_dir.string() + " is unchanged");
  }
  result.accepted_revision = best.round > 0;
  auto written = writeDraft(draft_dir, best.synthesis);
  if (!written) {
    return written.error();
  }
  pruneDraft(draft_dir, previous, best.synthesis);
  result.files_written = std::move(*written);
  result.synthesis = std::move(best.synthesis);
  result.check = std::move(best.check);
  result.loop = session.finish();
  return result;
}

}  // namespace oe::ultra
