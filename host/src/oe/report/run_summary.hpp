// What `oe run` and `oe resume` print about a run, as text and JSON: the summary of a finished
// run (its counts, its failed and cancelled calls, warnings, LLM usage, how to continue it, the
// final state), what a resume says about the definition changes since the run it continues; and
// the pieces other commands print alike: the one-line cut of a long message, the LLM usage line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/run/run.hpp"
#include "oe/spec/experience.hpp"

namespace oe::report {

// The first line of `text`, cut to `max` bytes (on a UTF-8 boundary) with "..." when longer:
// a stack trace or a long provider body stays one line on the terminal.
[[nodiscard]] std::string oneLine(std::string_view text, size_t max = 300);

// "llm: N calls, I in + O out tokens, $C.CCCC": what a command's LLM calls spent.
[[nodiscard]] std::string usageLine(const llm::Usage& usage);

// ` --experience PATH` when the command was not run in the experience's folder (`path`: as the
// user named it; "." or empty: none), quoted for a POSIX shell when it needs to be, so that a
// printed command can be pasted.
[[nodiscard]] std::string experienceFlag(const std::string& path);

// A resume's account of the experience against the pinned definition of run `run_id`
// (run::diffPins' {changed, added, removed}): unchanged, or which nodes changed and what a
// resume does with them. One line, without the "oe: " a front end puts before it.
[[nodiscard]] std::string definitionChangesText(const std::string& run_id, const Json& diff);

// What a resume does with a node whose definition changed, once the chain's landed writes are
// known: runs it with its new definition, or keeps what had landed (and how to run it again
// entirely). One line, without "oe: ".
[[nodiscard]] std::string changedNodeNote(const run::ChangedNode& node, const std::string& path);

// The summary `oe run` prints on stdout: "run <id>: <status> in <ms> ms (counts)", the failed
// and cancelled calls (a for_each's items that ended alike share a line), warnings, the
// concurrency note, LLM usage, why it stopped and how to continue it, the event log, and the
// final state (each value on one line, a long one cut: `oe state FIELD` prints it whole).
// `path`: the experience as the user named it.
[[nodiscard]] std::string runSummaryText(const run::RunSummary& summary,
                                         const spec::Experience& experience,
                                         const std::string& path, int64_t ms);

// `oe run --json`: {run_id, status, final_state, nodes, failures, cancelled, warnings} and,
// when they apply, reason, signal, chain_id, usage and (a resume's) definition_changes.
[[nodiscard]] Json runSummaryJson(const run::RunSummary& summary, const Json& changes);

}  // namespace oe::report
