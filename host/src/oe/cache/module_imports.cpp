// Static scans of JavaScript and Python imports, and their resolution to the experience's files.
#include "oe/cache/module_imports.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <system_error>

namespace oe::cache {

namespace {

namespace fs = std::filesystem;

bool jsIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$';
}

bool space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

size_t skipSpace(std::string_view s, size_t i) {
  while (i < s.size() && space(s[i])) {
    ++i;
  }
  return i;
}

// The string literal starting at s[i] (its quote), if it is a plain one on one line.
std::optional<std::string> literalAt(std::string_view s, size_t i, bool backtick_ok) {
  if (i >= s.size()) {
    return std::nullopt;
  }
  const char quote = s[i];
  if (quote != '\'' && quote != '"' && !(backtick_ok && quote == '`')) {
    return std::nullopt;
  }
  const size_t end = s.find(quote, i + 1);
  if (end == std::string_view::npos) {
    return std::nullopt;
  }
  const std::string_view text = s.substr(i + 1, end - i - 1);
  if (text.empty() || text.find_first_of("\n\\") != std::string_view::npos ||
      (quote == '`' && text.find("${") != std::string_view::npos)) {
    return std::nullopt;
  }
  return std::string(text);
}

bool regularFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

void addIfLocal(const fs::path& candidate, const fs::path& root, std::vector<fs::path>& out) {
  const fs::path p = candidate.lexically_normal();
  if (insideExperience(p, root) && regularFile(p) &&
      std::find(out.begin(), out.end(), p) == out.end()) {
    out.push_back(p);
  }
}

void resolveJs(const fs::path& module, const std::string& specifier, const fs::path& root,
               std::vector<fs::path>& out) {
  std::string spec = specifier.substr(0, specifier.find_first_of("?#"));
  fs::path base;
  if (spec.starts_with("./") || spec.starts_with("../") || spec == "." || spec == "..") {
    base = module.parent_path() / spec;
  } else if (spec.starts_with("/")) {
    base = spec;
  } else {
    return;  // a package (`lodash`, `node:fs`): not a file of the experience
  }
  base = base.lexically_normal();
  if (!insideExperience(base, root)) {
    return;
  }
  // Node's order for a file: as written, then with an extension, then a folder's index.
  static constexpr std::array<std::string_view, 4> kExtensions = {".js", ".mjs", ".cjs", ".json"};
  static constexpr std::array<std::string_view, 3> kIndexes = {"index.js", "index.mjs",
                                                               "index.cjs"};
  if (regularFile(base)) {
    addIfLocal(base, root, out);
    return;
  }
  for (std::string_view ext : kExtensions) {
    fs::path with = base;
    with += ext;
    if (regularFile(with)) {
      addIfLocal(with, root, out);
      return;
    }
  }
  for (std::string_view index : kIndexes) {
    if (regularFile(base / index)) {
      addIfLocal(base / index, root, out);
      return;
    }
  }
}

std::vector<std::string> splitDotted(std::string_view dotted) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= dotted.size()) {
    const size_t dot = dotted.find('.', start);
    const std::string_view part =
        dotted.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (!part.empty()) {
      parts.emplace_back(part);
    }
    if (dot == std::string_view::npos) {
      break;
    }
    start = dot + 1;
  }
  return parts;
}

// `base/a/b/c` for "a.b.c": every package's __init__.py on the way and the module itself (a file
// or a package); returns the module's folder path (for submodules of `from m import n`).
fs::path addPythonModule(const fs::path& base, const std::vector<std::string>& parts,
                         const fs::path& root, std::vector<fs::path>& out) {
  fs::path cur = base;
  for (size_t i = 0; i < parts.size(); ++i) {
    cur /= parts[i];
    if (i + 1 < parts.size()) {
      addIfLocal(cur / "__init__.py", root, out);
    }
  }
  if (!parts.empty()) {
    fs::path file = cur;
    file += ".py";
    addIfLocal(file, root, out);
    addIfLocal(cur / "__init__.py", root, out);
  }
  return cur;
}

void resolvePython(const fs::path& module, const PyImport& imp, const fs::path& script_dir,
                   const fs::path& root, std::vector<fs::path>& out) {
  fs::path base = imp.level == 0 ? script_dir : module.parent_path();
  for (int up = 1; up < imp.level; ++up) {
    base = base.parent_path();
  }
  if (imp.level > 0) {
    addIfLocal(base / "__init__.py", root, out);
  }
  const fs::path package = addPythonModule(base, splitDotted(imp.module), root, out);
  for (const std::string& name : imp.names) {
    if (name == "*") {
      continue;
    }
    fs::path file = package / name;
    file += ".py";
    addIfLocal(file, root, out);
    addIfLocal(package / name / "__init__.py", root, out);
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && space(s.front())) {
    s.remove_prefix(1);
  }
  while (!s.empty() && space(s.back())) {
    s.remove_suffix(1);
  }
  return s;
}

bool pyIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}

// `name [as alias]` -> name (dotted for `import a.b as c`); empty when it is not one.
std::string importedName(std::string_view item) {
  item = trim(item);
  size_t end = 0;
  while (end < item.size() && (pyIdentChar(item[end]) || item[end] == '.' || item[end] == '*')) {
    ++end;
  }
  return std::string(item.substr(0, end));
}

std::vector<std::string> commaList(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    std::string name = importedName(text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (!name.empty()) {
      out.push_back(std::move(name));
    }
    if (comma == std::string_view::npos) {
      break;
    }
    start = comma + 1;
  }
  return out;
}

bool startsWithWord(std::string_view s, std::string_view word) {
  return s.starts_with(word) && (s.size() == word.size() || space(s[word.size()]) ||
                                 (word == "import" && s[word.size()] == '('));
}

void parsePyStatement(std::string_view stmt, std::vector<PyImport>& out) {
  stmt = trim(stmt);
  if (startsWithWord(stmt, "import")) {
    for (std::string& name : commaList(stmt.substr(6))) {
      out.push_back(PyImport{0, std::move(name), {}});
    }
    return;
  }
  if (!startsWithWord(stmt, "from")) {
    return;
  }
  std::string_view rest = trim(stmt.substr(4));
  PyImport imp;
  while (!rest.empty() && rest.front() == '.') {
    ++imp.level;
    rest.remove_prefix(1);
  }
  size_t end = 0;
  while (end < rest.size() && (pyIdentChar(rest[end]) || rest[end] == '.')) {
    ++end;
  }
  imp.module = std::string(rest.substr(0, end));
  rest = trim(rest.substr(end));
  if (!startsWithWord(rest, "import")) {
    return;
  }
  rest = trim(rest.substr(6));
  if (!rest.empty() && rest.front() == '(') {
    rest.remove_prefix(1);
  }
  if (const size_t close = rest.find(')'); close != std::string_view::npos) {
    rest = rest.substr(0, close);
  }
  imp.names = commaList(rest);
  if (imp.level == 0 && imp.module.empty()) {
    return;
  }
  out.push_back(std::move(imp));
}

// The line without its `#` comment (a `#` inside a quoted string on the line is kept).
std::string_view withoutComment(std::string_view line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote != 0) {
      if (c == '\\') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#') {
      return line.substr(0, i);
    }
  }
  return line;
}

}  // namespace

ModuleLanguage moduleLanguage(const fs::path& file) {
  const std::string ext = file.extension().string();
  if (ext == ".mjs" || ext == ".js" || ext == ".cjs") {
    return ModuleLanguage::kJavaScript;
  }
  if (ext == ".py") {
    return ModuleLanguage::kPython;
  }
  return ModuleLanguage::kNone;
}

std::vector<std::string> jsImportSpecifiers(std::string_view s) {
  static constexpr std::array<std::string_view, 3> kKeywords = {"from", "import", "require"};
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if ((c != 'f' && c != 'i' && c != 'r') || (i > 0 && jsIdentChar(s[i - 1]))) {
      continue;
    }
    for (std::string_view keyword : kKeywords) {
      if (s.substr(i, keyword.size()) != keyword) {
        continue;
      }
      size_t j = i + keyword.size();
      if (j < s.size() && jsIdentChar(s[j])) {
        break;
      }
      j = skipSpace(s, j);
      const bool call = j < s.size() && s[j] == '(' && keyword != "from";
      if (call) {
        j = skipSpace(s, j + 1);
      } else if (keyword == "require") {
        break;
      }
      if (auto literal = literalAt(s, j, call)) {
        out.push_back(std::move(*literal));
      }
      break;
    }
  }
  return out;
}

std::vector<PyImport> pyImports(std::string_view source) {
  // A parenthesised `from m import (...)` list ends within this many lines, or it is not one.
  constexpr int kMaxListLines = 200;
  std::vector<PyImport> out;
  std::vector<std::string_view> lines;
  for (size_t start = 0; start <= source.size();) {
    size_t end = source.find('\n', start);
    if (end == std::string_view::npos) {
      end = source.size();
    }
    lines.push_back(withoutComment(source.substr(start, end - start)));
    start = end + 1;
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    // `a = 1; import b`: each statement of the line may be one.
    std::vector<std::string_view> statements;
    for (std::string_view rest = lines[i]; !rest.empty();) {
      const size_t semi = rest.find(';');
      statements.push_back(trim(rest.substr(0, semi)));
      rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
    }
    for (size_t k = 0; k < statements.size(); ++k) {
      const std::string_view head = statements[k];
      if (!startsWithWord(head, "import") && !startsWithWord(head, "from")) {
        continue;
      }
      std::string logical(head);
      if (k + 1 == statements.size()) {
        // Backslash continuations, then the rest of an open `import (` list.
        while (!logical.empty() && logical.back() == '\\' && i + 1 < lines.size()) {
          logical.pop_back();
          logical += ' ';
          logical += trim(lines[++i]);
        }
        const size_t open = logical.find('(');
        if (open != std::string::npos && logical.find(')', open) == std::string::npos) {
          for (int n = 0; n < kMaxListLines && i + 1 < lines.size(); ++n) {
            logical += ' ';
            logical += trim(lines[++i]);
            if (logical.find(')', open) != std::string::npos) {
              break;
            }
          }
        }
      }
      parsePyStatement(logical, out);
    }
  }
  return out;
}

std::vector<fs::path> localImports(const fs::path& module, std::string_view source,
                                   const fs::path& script_dir, const fs::path& root) {
  std::vector<fs::path> out;
  switch (moduleLanguage(module)) {
    case ModuleLanguage::kJavaScript:
      for (const std::string& specifier : jsImportSpecifiers(source)) {
        resolveJs(module, specifier, root, out);
      }
      break;
    case ModuleLanguage::kPython:
      for (const PyImport& imp : pyImports(source)) {
        resolvePython(module, imp, script_dir, root, out);
      }
      break;
    default:
      break;
  }
  // A module that imports itself (`from . import x` inside x's package) is not its own import.
  std::erase(out, module.lexically_normal());
  return out;
}

bool insideExperience(const fs::path& path, const fs::path& root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p) {
    if (r->empty() && std::next(r) == root.end()) {
      break;  // a root written with a trailing slash
    }
    if (p == path.end() || *p != *r) {
      return false;
    }
  }
  if (p == path.end() || p->empty()) {
    return false;  // the folder itself ("dir/." normalises to "dir/")
  }
  return *p != ".openexpertise" && *p != "..";
}

}  // namespace oe::cache
