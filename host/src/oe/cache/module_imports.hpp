// The local import graph of a JavaScript or Python module, for the cache key (D4): the files of
// the experience a tool's code loads besides its `impl`, found by a static scan of the text.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace oe::cache {

enum class ModuleLanguage { kNone, kJavaScript, kPython };

// By extension: .mjs, .js, .cjs -> JavaScript; .py -> Python; anything else is not scanned.
[[nodiscard]] ModuleLanguage moduleLanguage(const std::filesystem::path& file);

// The specifiers of a JavaScript module's static imports, as written: `import ... from 'x'`,
// `export ... from 'x'`, `import 'x'`, `import('x')` and `require('x')` with a literal string
// ('', "" or `` without ${}). Comments and strings are not told apart from code: an import that
// is commented out still counts, which can only add a file to a key, never leave one out.
[[nodiscard]] std::vector<std::string> jsImportSpecifiers(std::string_view source);

// One Python import statement: `from ..pkg.mod import a, b` is {2, "pkg.mod", {"a", "b"}};
// `import x.y` is {0, "x.y", {}}.
struct PyImport {
  int level = 0;       // leading dots of a relative import
  std::string module;  // dotted, may be empty (`from . import x`)
  std::vector<std::string> names;

  bool operator==(const PyImport&) const = default;
};

// Every `import ...` and `from ... import ...` statement, at any indentation (inside a function
// or a try block too), with parenthesised and backslash-continued lists. `#` comments are
// skipped; text in other strings may count, as for JavaScript.
[[nodiscard]] std::vector<PyImport> pyImports(std::string_view source);

// The existing regular files inside `root` that `module` imports directly, given its text.
// JavaScript: relative and absolute specifiers (./x, ../x, /abs/x) resolved as Node.js does for
// files: the path as written, then with .js, .mjs, .cjs or .json added, then the folder's
// index.js, index.mjs or index.cjs; bare package names (`lodash`, `node:fs`) are not followed.
// Python: a relative import from the module's package; an absolute one from `script_dir`, the
// folder of the script Python runs (sys.path[0]): each package's __init__.py on the way, the
// module (`m.py` or `m/__init__.py`) and, for `from m import n`, the submodule n if it is one.
// Standard library and installed packages are not inside `root`, so they never count. Paths
// under `root`/.openexpertise are left out (oe's own stores).
[[nodiscard]] std::vector<std::filesystem::path> localImports(
    const std::filesystem::path& module, std::string_view source,
    const std::filesystem::path& script_dir, const std::filesystem::path& root);

// True when `path` (absolute, lexically normal) lies inside `root` (absolute, lexically
// normal) and not under its .openexpertise folder.
[[nodiscard]] bool insideExperience(const std::filesystem::path& path,
                                    const std::filesystem::path& root);

}  // namespace oe::cache
