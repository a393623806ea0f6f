// Files and unsupported values a node's kind schema points out; see file_check.hpp.
#include "oe/spec/file_check.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>

#include "oe/spec/schema_check.hpp"

namespace oe::spec {

namespace {

namespace fs = std::filesystem;

// Deep enough for any kind schema; a hostile one cannot recurse without end.
constexpr int kMaxSchemaDepth = 16;

constexpr const char* kProgram = "x-oe-program";
constexpr const char* kReadsFile = "x-oe-reads-file";

// What a walk looks at: everything (`oe validate`), the programs only (a spec snapshot's run),
// or the files read (the cache key).
enum class Mode { kAll, kPrograms, kReadFiles };

// True when `schema` uses the annotation `name` anywhere.
bool marks(const Json& schema, const char* name) {
  if (schema.is_object()) {
    if (schema.contains(name)) {
      return true;
    }
    for (const auto& [key, value] : schema.items()) {
      if (value.is_structured() && marks(value, name)) {
        return true;
      }
    }
  } else if (schema.is_array()) {
    for (const Json& value : schema) {
      if (marks(value, name)) {
        return true;
      }
    }
  }
  return false;
}

// Where `program` would run from: itself when it names a path (relative to `dir`), else the
// first directory of `search_path` (`:`-separated; an empty entry is the working directory)
// holding an executable regular file of that name.
bool programFound(const std::string& program, const std::string& search_path, const fs::path& dir) {
  std::error_code ec;
  auto executable = [&ec](const fs::path& path) {
    const fs::file_status status = fs::status(path, ec);
    return fs::is_regular_file(status) &&
           (status.permissions() & (fs::perms::owner_exec | fs::perms::group_exec |
                                    fs::perms::others_exec)) != fs::perms::none;
  };
  if (program.find('/') != std::string::npos) {
    const fs::path given(program);
    return executable(given.is_absolute() ? given : dir / given);
  }
  size_t start = 0;
  for (;;) {
    const size_t end = search_path.find(':', start);
    const std::string entry = search_path.substr(start, end - start);
    if (executable(fs::path(entry.empty() ? "." : entry) / program)) {
      return true;
    }
    if (end == std::string::npos) {
      return false;
    }
    start = end + 1;
  }
}

std::string processPath() {
  const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): read only
  return path != nullptr ? path : "";
}

// "/env/PATH" -> "env.PATH", as a user writes the field.
std::string dotted(const std::string& pointer) {
  std::string out = pointer.starts_with('/') ? pointer.substr(1) : pointer;
  std::replace(out.begin(), out.end(), '/', '.');
  return out;
}

class Walker {
 public:
  Walker(const fs::path& dir, bool has_predecessors, std::vector<FileFinding>& out,
         const Json& node, ProgramCheck missing_program, ProgramCache& programs,
         Mode mode = Mode::kAll, std::vector<std::string>* read_files = nullptr)
      : dir_(dir),
        has_predecessors_(has_predecessors),
        out_(out),
        node_(node),
        missing_program_(missing_program),
        programs_(programs),
        mode_(mode),
        read_files_(read_files) {}

  void walk(const Json& schema, const Json& value, const std::string& pointer, int depth) {
    if (depth > kMaxSchemaDepth || !schema.is_object()) {
      return;
    }
    annotated(schema, value, pointer);
    if (auto props = schema.find("properties");
        props != schema.end() && props->is_object() && value.is_object()) {
      for (const auto& [key, sub] : props->items()) {
        if (auto it = value.find(key); it != value.end()) {
          std::string child = pointer;
          appendPointerSegment(child, key);
          walk(sub, *it, child, depth + 1);
        }
      }
    }
    if (auto all = schema.find("allOf"); all != schema.end() && all->is_array()) {
      for (const Json& entry : *all) {
        if (!entry.is_object()) {
          continue;
        }
        auto condition = entry.find("if");
        if (condition == entry.end()) {
          walk(entry, value, pointer, depth + 1);
          continue;
        }
        const char* branch = holds(*condition, value) ? "then" : "else";
        if (auto next = entry.find(branch); next != entry.end()) {
          walk(*next, value, pointer, depth + 1);
        }
      }
    }
  }

 private:
  // An `if` schema holds for the value (compiled once per schema object).
  bool holds(const Json& condition, const Json& value) {
    auto cached = conditions_.find(&condition);
    if (cached == conditions_.end()) {
      auto compiled = SchemaChecker::compile(condition);
      std::unique_ptr<SchemaChecker> checker;
      if (compiled) {
        checker = std::make_unique<SchemaChecker>(std::move(compiled.value()));
      }
      cached = conditions_.emplace(&condition, std::move(checker)).first;
    }
    return cached->second != nullptr && cached->second->check(value).empty();
  }

  void annotated(const Json& schema, const Json& value, const std::string& pointer) {
    if (mode_ != Mode::kPrograms) {
      if (auto reads = schema.find(kReadsFile); reads != schema.end()) {
        readFile(*reads, pointer);
      }
    }
    if (mode_ == Mode::kReadFiles) {
      return;
    }
    if (auto program = schema.find(kProgram); program != schema.end()) {
      checkProgram(*program, value, pointer);
    }
    if (mode_ == Mode::kPrograms) {
      return;
    }
    if (auto unsupported = schema.find("x-oe-unsupported");
        unsupported != schema.end() && unsupported->is_object() && value.is_string()) {
      if (auto why = unsupported->find(value.get<std::string>());
          why != unsupported->end() && why->is_string()) {
        out_.push_back(FileFinding{
            pointer,
            "\"" + value.get<std::string>() + "\" is not supported: " + why->get<std::string>(),
            Severity::kError});
      }
    }
    auto kind = schema.find("x-oe-path");
    if (kind == schema.end() || !kind->is_string() || !value.is_string()) {
      return;
    }
    const std::string& declared = value.get_ref<const std::string&>();
    // Empty (the schema check says so), a state path or a URL: nothing to look for now.
    if (declared.empty() || declared.front() == '$' || declared.find("://") != std::string::npos) {
      return;
    }
    checkPath(kind->get<std::string>(), declared, pointer);
  }

  // x-oe-reads-file: collected for the key, or checked like an input-file for `oe validate`.
  void readFile(const Json& annotation, const std::string& pointer) {
    auto one = [&](const Json& entry) {
      if (!entry.is_string() || entry.get_ref<const std::string&>().empty()) {
        return;
      }
      const std::string& file = entry.get_ref<const std::string&>();
      if (read_files_ != nullptr) {
        if (std::find(read_files_->begin(), read_files_->end(), file) == read_files_->end()) {
          read_files_->push_back(file);
        }
        return;
      }
      checkPath("input-file", file, pointer, /*read_by_kind=*/true);
    };
    if (annotation.is_array()) {
      for (const Json& entry : annotation) {
        one(entry);
      }
    } else {
      one(annotation);
    }
  }

  void checkProgram(const Json& annotation, const Json& value, const std::string& pointer) {
    if (!missing_program_ || !annotation.is_object() || !value.is_string()) {
      return;
    }
    auto programs = annotation.find("programs");
    if (programs == annotation.end() || !programs->is_object()) {
      return;
    }
    auto program = programs->find(value.get<std::string>());
    if (program == programs->end() || !program->is_string() ||
        program->get_ref<const std::string&>().empty()) {
      return;
    }
    const std::string& name = program->get_ref<const std::string&>();
    std::string search_path = processPath();
    std::string where = "PATH";
    std::string override_field;
    if (auto at = annotation.find("search_path"); at != annotation.end() && at->is_string()) {
      override_field = dotted(at->get<std::string>());
      const Json::json_pointer ptr = [&]() {
        try {
          return Json::json_pointer(at->get<std::string>());
        } catch (const Json::exception&) {
          return Json::json_pointer();
        }
      }();
      if (!ptr.empty() && node_.contains(ptr) && node_.at(ptr).is_string()) {
        search_path = node_.at(ptr).get<std::string>();
        where = "the node's " + override_field;
      }
    }
    auto [cached, inserted] = programs_.try_emplace({name, search_path}, false);
    if (inserted) {
      cached->second = programFound(name, search_path, dir_);
    }
    if (cached->second) {
      return;
    }
    std::string message = "\"" + value.get<std::string>() + "\" runs the program `" + name +
                          "`, which is not on " + where + " (" +
                          (search_path.empty() ? std::string("empty") : search_path) +
                          "). Install it, or put the directory that holds it on PATH";
    if (!override_field.empty()) {
      message += " (or in the node's " + override_field + ")";
    }
    out_.push_back(FileFinding{pointer, std::move(message), *missing_program_});
  }

  // `read_by_kind`: the kind reads the file (x-oe-reads-file) though the node does not name it.
  void checkPath(const std::string& kind, const std::string& declared, const std::string& pointer,
                 bool read_by_kind = false) {
    const fs::path given(declared);
    const fs::path path = (given.is_absolute() ? given : dir_ / given).lexically_normal();
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    const std::string quoted =
        read_by_kind ? "the node reads \"" + declared + "\", which" : "\"" + declared + "\"";
    if (!fs::exists(status)) {
      if (kind == "input-file") {
        const Severity severity = has_predecessors_ ? Severity::kWarning : Severity::kError;
        out_.push_back(FileFinding{
            pointer,
            quoted + " does not exist (looked for " + path.string() + ")" +
                (has_predecessors_
                     ? "; the node fails when it runs unless an earlier node writes it"
                 : read_by_kind
                     ? "; nothing runs before this node, so it would fail. Create the file"
                     : "; nothing runs before this node, so it would fail. Create the file, "
                       "or fix the path (relative to the experience folder)"),
            severity});
        return;
      }
      out_.push_back(FileFinding{pointer,
                                 quoted + " does not exist (looked for " + path.string() +
                                     "). Create it, or fix the path (relative to the "
                                     "experience folder)",
                                 Severity::kError});
      return;
    }
    const bool is_dir = fs::is_directory(status);
    if (kind == "directory" && !is_dir) {
      out_.push_back(FileFinding{
          pointer, quoted + " is a file (" + path.string() + "); a directory is expected here",
          Severity::kError});
    } else if ((kind == "file" || kind == "input-file") && is_dir) {
      out_.push_back(FileFinding{
          pointer, quoted + " is a directory (" + path.string() + "); a file is expected here",
          Severity::kError});
    }
  }

  const fs::path& dir_;
  bool has_predecessors_;
  std::vector<FileFinding>& out_;
  const Json& node_;
  ProgramCheck missing_program_;
  ProgramCache& programs_;
  Mode mode_;
  std::vector<std::string>* read_files_;  // Mode::kReadFiles: where the files go
  std::map<const Json*, std::unique_ptr<SchemaChecker>> conditions_;
};

}  // namespace

std::vector<FileFinding> checkFileFields(const Json* kind_schema, const Json& node,
                                         const fs::path& dir, bool has_predecessors,
                                         ProgramCheck missing_program, ProgramCache& programs) {
  std::vector<FileFinding> out;
  if (!node.is_object() || kind_schema == nullptr) {
    return out;
  }
  Walker(dir, has_predecessors, out, node, missing_program, programs)
      .walk(*kind_schema, node, "", 0);
  return out;
}

std::vector<FileFinding> checkPrograms(const Json& kind_schema, const Json& node,
                                       const fs::path& dir, ProgramCache& programs) {
  std::vector<FileFinding> out;
  if (node.is_object()) {
    Walker(dir, false, out, node, Severity::kError, programs, Mode::kPrograms)
        .walk(kind_schema, node, "", 0);
  }
  return out;
}

bool marksPrograms(const Json& kind_schema) { return marks(kind_schema, kProgram); }

std::vector<std::string> readFiles(const Json& kind_schema, const Json& node) {
  std::vector<std::string> files;
  if (node.is_object()) {
    std::vector<FileFinding> unused;
    ProgramCache no_programs;
    Walker(fs::path(), false, unused, node, std::nullopt, no_programs, Mode::kReadFiles, &files)
        .walk(kind_schema, node, "", 0);
  }
  return files;
}

bool marksReadFiles(const Json& kind_schema) { return marks(kind_schema, kReadsFile); }

}  // namespace oe::spec
