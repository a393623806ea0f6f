// Unified diffs: the parser (lenient about counts, strict about syntax) and the exact-context
// applier with offsets. See unified_diff.hpp for the rules.
#include "oe/evolve/unified_diff.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <filesystem>

namespace oe::evolve {
namespace {

// `strip_cr`: a diff's CRLF lines read as LF ones; a file's lines keep their CR (its own line
// ending survives the patch, see applyFilePatch).
std::vector<std::string_view> splitLines(std::string_view text, bool strip_cr) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    std::string_view line = text.substr(start, end - start);
    if (strip_cr && !line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

std::string_view trimRight(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

// A short, one-line rendering of a line for messages.
std::string shown(std::string_view line) {
  constexpr size_t kShown = 80;
  std::string out = "`";
  out += line.substr(0, kShown);
  if (line.size() > kShown) {
    out += "...";
  }
  return out + "`";
}

// "--- a/experience.yaml\t2024-..." -> "experience.yaml".
std::string headerPath(std::string_view rest) {
  if (const size_t tab = rest.find('\t'); tab != std::string_view::npos) {
    rest = rest.substr(0, tab);
  }
  rest = trimRight(rest);
  while (!rest.empty() && rest.front() == ' ') {
    rest.remove_prefix(1);
  }
  if (rest.size() > 2 && (rest.starts_with("a/") || rest.starts_with("b/"))) {
    rest.remove_prefix(2);
  }
  return std::string(rest);
}

bool readNumber(std::string_view& s, size_t& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || end == s.data()) {
    return false;
  }
  s.remove_prefix(static_cast<size_t>(end - s.data()));
  return true;
}

// "-12,3" or "-12" (count 1), after the sign.
bool readRange(std::string_view& s, char sign, size_t& start, size_t& count) {
  if (s.empty() || s.front() != sign) {
    return false;
  }
  s.remove_prefix(1);
  if (!readNumber(s, start)) {
    return false;
  }
  count = 1;
  if (!s.empty() && s.front() == ',') {
    s.remove_prefix(1);
    return readNumber(s, count);
  }
  return true;
}

bool parseHunkHeader(std::string_view line, Hunk& hunk) {
  std::string_view s = line;
  if (!s.starts_with("@@ ")) {
    return false;
  }
  s.remove_prefix(3);
  if (!readRange(s, '-', hunk.old_start, hunk.old_count) || !s.starts_with(' ')) {
    return false;
  }
  s.remove_prefix(1);
  if (!readRange(s, '+', hunk.new_start, hunk.new_count)) {
    return false;
  }
  return s.starts_with(" @@");
}

bool startsFilePatch(const std::vector<std::string_view>& lines, size_t i) {
  return lines[i].starts_with("--- ") && i + 1 < lines.size() && lines[i + 1].starts_with("+++ ");
}

std::string lineRef(size_t index) { return "line " + std::to_string(index + 1); }

}  // namespace

bool safeRelativePath(std::string_view path) {
  if (path.empty() || path.find('\0') != std::string_view::npos) {
    return false;
  }
  const std::filesystem::path p{std::string(path)};
  if (p.is_absolute() || p.has_root_name() || p.has_root_directory()) {
    return false;
  }
  return std::none_of(p.begin(), p.end(), [](const auto& part) { return part == ".."; });
}

Result<std::vector<FilePatch>> parseUnifiedDiff(std::string_view text) {
  if (text.size() > kMaxDiffBytes) {
    return makeError("the diff is " + std::to_string(text.size()) + " bytes; at most " +
                     std::to_string(kMaxDiffBytes) + " are accepted");
  }
  std::vector<std::string_view> lines = splitLines(text, /*strip_cr=*/true);
  // A model often wraps the diff in a ```diff fence; the markdown report adds its own.
  size_t first = 0;
  while (first < lines.size() && trimRight(lines[first]).empty()) {
    ++first;
  }
  size_t last = lines.size();
  while (last > first && trimRight(lines[last - 1]).empty()) {
    --last;
  }
  if (first < last && lines[first].starts_with("```")) {
    ++first;
    if (last > first && trimRight(lines[last - 1]) == "```") {
      --last;
    }
  }
  lines = std::vector<std::string_view>(lines.begin() + static_cast<std::ptrdiff_t>(first),
                                        lines.begin() + static_cast<std::ptrdiff_t>(last));

  std::vector<FilePatch> patches;
  size_t hunk_total = 0;
  size_t i = 0;
  while (i < lines.size()) {
    if (!lines[i].starts_with("--- ")) {
      if (lines[i].starts_with("@@") && patches.empty()) {
        return makeError(lineRef(i) + ": a hunk before any file header; a unified diff names " +
                         "its file first (`--- a/experience.yaml`, `+++ b/experience.yaml`)");
      }
      ++i;  // `diff --git`, `index`, prose between files
      continue;
    }
    if (!startsFilePatch(lines, i)) {
      return makeError(lineRef(i) + ": " + shown(lines[i]) +
                       " is not followed by a `+++ ` line naming the new file");
    }
    FilePatch patch;
    patch.old_path = headerPath(lines[i].substr(4));
    patch.new_path = headerPath(lines[i + 1].substr(4));
    if (patch.old_path.empty() || patch.new_path.empty()) {
      return makeError(lineRef(i) + ": a file header without a file name");
    }
    i += 2;
    while (i < lines.size() && lines[i].starts_with("@@")) {
      Hunk hunk;
      hunk.header = std::string(trimRight(lines[i]));
      if (!parseHunkHeader(lines[i], hunk)) {
        return makeError(lineRef(i) + ": malformed hunk header " + shown(lines[i]) +
                         "; expected `@@ -<start>,<count> +<start>,<count> @@`");
      }
      if (++hunk_total > kMaxHunks) {
        return makeError("more than " + std::to_string(kMaxHunks) + " hunks");
      }
      const size_t header_line = i;
      ++i;
      size_t old_lines = 0;
      for (; i < lines.size(); ++i) {
        const std::string_view line = lines[i];
        if (line.starts_with("@@") || line.starts_with("diff ") || startsFilePatch(lines, i)) {
          break;
        }
        if (line.starts_with('\\')) {  // "\ No newline at end of file"
          if (hunk.lines.empty()) {
            return makeError(lineRef(i) + ": `\\` marker before any line of the hunk");
          }
          const char op = hunk.lines.back().op;
          hunk.old_no_newline = hunk.old_no_newline || op != '+';
          hunk.new_no_newline = hunk.new_no_newline || op != '-';
          continue;
        }
        if (line.empty()) {  // a context line whose leading space was lost
          hunk.lines.push_back({' ', ""});
          ++old_lines;
          continue;
        }
        const char op = line.front();
        if (op != ' ' && op != '-' && op != '+') {
          return makeError(lineRef(i) + ": in hunk " + shown(hunk.header) + " of " +
                           patch.target() + ", " + shown(line) +
                           " starts with neither ' ' (context), '-' (removed) nor '+' (added)");
        }
        hunk.lines.push_back({op, std::string(line.substr(1))});
        old_lines += op != '+' ? 1 : 0;
      }
      // Blank lines after the last hunk of a file are separators, not context, unless the
      // header counts them.
      while (!hunk.lines.empty() && hunk.lines.back().op == ' ' && hunk.lines.back().text.empty() &&
             old_lines > hunk.old_count) {
        hunk.lines.pop_back();
        --old_lines;
      }
      if (hunk.lines.empty()) {
        return makeError(lineRef(header_line) + ": hunk " + shown(hunk.header) + " of " +
                         patch.target() + " has no lines");
      }
      patch.hunks.push_back(std::move(hunk));
    }
    if (patch.hunks.empty()) {
      return makeError(lineRef(i < lines.size() ? i : lines.size() - 1) + ": the patch of " +
                       patch.target() + " has no hunk (expected a `@@ -a,b +c,d @@` line)");
    }
    patches.push_back(std::move(patch));
  }
  if (patches.empty()) {
    return makeError(
        "no file patch found: a unified diff starts with `--- a/<file>` and `+++ b/<file>` "
        "lines, followed by `@@ -a,b +c,d @@` hunks");
  }
  return patches;
}

Result<AppliedFile> applyFilePatch(const FilePatch& patch,
                                   const std::optional<std::string>& original) {
  const std::string& name = patch.target();
  if (patch.createsFile() && original && !original->empty()) {
    return makeError("the patch creates " + name + ", which exists already");
  }
  if (!patch.createsFile() && !original) {
    return makeError(name + " does not exist");
  }
  const std::string_view base = original ? std::string_view(*original) : std::string_view();
  std::vector<std::string_view> lines = splitLines(base, /*strip_cr=*/false);
  auto sameLine = [](std::string_view file_line, std::string_view hunk_line) {
    if (file_line.ends_with('\r')) {
      file_line.remove_suffix(1);
    }
    return file_line == hunk_line;
  };
  bool ends_with_newline = base.empty() || base.back() == '\n';

  AppliedFile applied;
  std::vector<std::string_view> out;
  size_t cursor = 0;  // next original line not yet copied
  size_t number = 0;
  for (const Hunk& hunk : patch.hunks) {
    ++number;
    std::vector<std::string_view> old_side;
    for (const HunkLine& line : hunk.lines) {
      if (line.op != '+') {
        old_side.emplace_back(line.text);
      }
    }
    const size_t expected =
        old_side.empty() || hunk.old_start == 0 ? hunk.old_start : hunk.old_start - 1;
    auto matchesAt = [&](size_t at) {
      if (at < cursor || at > lines.size() || old_side.size() > lines.size() - at) {
        return false;
      }
      // std::equal hands the predicate (hunk line, file line): sameLine takes the file's first.
      return std::equal(old_side.begin(), old_side.end(),
                        lines.begin() + static_cast<std::ptrdiff_t>(at),
                        [&](std::string_view hunk_line, std::string_view file_line) {
                          return sameLine(file_line, hunk_line);
                        });
    };
    std::optional<size_t> found;
    if (matchesAt(expected)) {
      found = expected;
    } else if (old_side.size() <= lines.size()) {
      // The nearest match at or after the previous hunk: every place the hunk fits, once (a
      // header's line number may be anything, so it does not bound the search).
      size_t best_distance = SIZE_MAX;
      for (size_t at = cursor; at + old_side.size() <= lines.size(); ++at) {
        const size_t distance = at > expected ? at - expected : expected - at;
        if (distance < best_distance && matchesAt(at)) {
          found = at;
          best_distance = distance;
        }
      }
    }
    const std::string label =
        "hunk " + std::to_string(number) + " (" + hunk.header + ") of " + name;
    if (!found) {
      std::string why;
      if (expected < cursor) {
        why = "it overlaps the previous hunk";
      } else if (old_side.empty() || expected >= lines.size()) {
        why = "it starts at line " + std::to_string(hunk.old_start) + " but the file has " +
              std::to_string(lines.size()) + " lines";
      } else {
        size_t k = 0;
        while (k < old_side.size() && expected + k < lines.size() &&
               sameLine(lines[expected + k], old_side[k])) {
          ++k;
        }
        if (k == old_side.size()) {
          // Cannot happen while matchesAt and this loop compare alike; never read past k.
          why = "its context matches at line " + std::to_string(expected + 1) +
                " only, where it cannot apply";
        } else if (expected + k >= lines.size()) {
          why = "the file has " + std::to_string(lines.size()) + " lines; the hunk expects " +
                shown(old_side[k]) + " at line " + std::to_string(expected + k + 1);
        } else {
          why = "line " + std::to_string(expected + k + 1) + " is " + shown(lines[expected + k]) +
                ", the hunk expects " + shown(old_side[k]);
        }
      }
      return makeError(label + " does not apply: " + why +
                       ", and its context is found nowhere else after the previous hunk");
    }
    if (*found != expected) {
      const std::string offset = *found > expected ? "+" + std::to_string(*found - expected)
                                                   : "-" + std::to_string(expected - *found);
      applied.notes.push_back(label + " applied at line " + std::to_string(*found + 1) +
                              " (offset " + offset + " lines)");
    }
    out.insert(out.end(), lines.begin() + static_cast<std::ptrdiff_t>(cursor),
               lines.begin() + static_cast<std::ptrdiff_t>(*found));
    size_t at = *found;
    for (const HunkLine& line : hunk.lines) {
      if (line.op == '+') {
        out.emplace_back(line.text);
      } else {
        if (line.op == ' ') {
          out.push_back(lines[at]);  // the file's own text (and line ending) for context
        }
        ++at;
      }
    }
    cursor = at;
    if (cursor == lines.size()) {
      ends_with_newline = !hunk.new_no_newline;
    }
  }
  out.insert(out.end(), lines.begin() + static_cast<std::ptrdiff_t>(cursor), lines.end());
  if (patch.deletesFile()) {
    if (!out.empty()) {
      return makeError("the patch deletes " + name + " but leaves " + std::to_string(out.size()) +
                       " of its lines");
    }
    return applied;  // text stays nullopt
  }
  std::string text;
  for (size_t k = 0; k < out.size(); ++k) {
    text += out[k];
    if (k + 1 < out.size() || ends_with_newline) {
      text += '\n';
    }
  }
  applied.text = std::move(text);
  return applied;
}

}  // namespace oe::evolve
