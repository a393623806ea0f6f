// Files and unsupported values a node's kind schema points out; see file_check.hpp.
#include "oe/spec/file_check.hpp"

#include <map>
#include <memory>

#include "oe/spec/schema_check.hpp"

namespace oe::spec {

namespace {

namespace fs = std::filesystem;

// Deep enough for any kind schema; a hostile one cannot recurse without end.
constexpr int kMaxSchemaDepth = 16;

class Walker {
 public:
  Walker(const fs::path& dir, bool has_predecessors, std::vector<FileFinding>& out)
      : dir_(dir), has_predecessors_(has_predecessors), out_(out) {}

  void walk(const Json& schema, const Json& value, const std::string& pointer, int depth) {
    if (depth > kMaxSchemaDepth || !schema.is_object()) {
      return;
    }
    annotated(schema, value, pointer);
    if (auto props = schema.find("properties"); props != schema.end() && props->is_object() &&
                                                 value.is_object()) {
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
    if (auto unsupported = schema.find("x-oe-unsupported");
        unsupported != schema.end() && unsupported->is_object() && value.is_string()) {
      if (auto why = unsupported->find(value.get<std::string>());
          why != unsupported->end() && why->is_string()) {
        out_.push_back(FileFinding{pointer,
                                   "\"" + value.get<std::string>() + "\" is not supported: " +
                                       why->get<std::string>(),
                                   Severity::kError});
      }
    }
    auto kind = schema.find("x-oe-path");
    if (kind == schema.end() || !kind->is_string() || !value.is_string()) {
      return;
    }
    const std::string& declared = value.get_ref<const std::string&>();
    // Empty (the schema check says so), a state path or a URL: nothing to look for now.
    if (declared.empty() || declared.front() == '$' ||
        declared.find("://") != std::string::npos) {
      return;
    }
    checkPath(kind->get<std::string>(), declared, pointer);
  }

  void checkPath(const std::string& kind, const std::string& declared,
                 const std::string& pointer) {
    const fs::path given(declared);
    const fs::path path = (given.is_absolute() ? given : dir_ / given).lexically_normal();
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    const std::string quoted = "\"" + declared + "\"";
    if (!fs::exists(status)) {
      if (kind == "input-file") {
        const Severity severity = has_predecessors_ ? Severity::kWarning : Severity::kError;
        out_.push_back(FileFinding{
            pointer,
            quoted + " does not exist (looked for " + path.string() + ")" +
                (has_predecessors_
                     ? "; the node fails when it runs unless an earlier node writes it"
                     : "; nothing runs before this node, so it would fail. Create the file, or "
                       "fix the path (relative to the experience folder)"),
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
      out_.push_back(FileFinding{pointer,
                                 quoted + " is a file (" + path.string() +
                                     "); a directory is expected here",
                                 Severity::kError});
    } else if ((kind == "file" || kind == "input-file") && is_dir) {
      out_.push_back(FileFinding{pointer,
                                 quoted + " is a directory (" + path.string() +
                                     "); a file is expected here",
                                 Severity::kError});
    }
  }

  const fs::path& dir_;
  bool has_predecessors_;
  std::vector<FileFinding>& out_;
  std::map<const Json*, std::unique_ptr<SchemaChecker>> conditions_;
};

}  // namespace

std::vector<FileFinding> checkFileFields(const Json* kind_schema, const Json& node,
                                         const fs::path& dir, bool has_predecessors) {
  std::vector<FileFinding> out;
  if (!node.is_object() || kind_schema == nullptr) {
    return out;
  }
  Walker(dir, has_predecessors, out).walk(*kind_schema, node, "", 0);
  return out;
}

}  // namespace oe::spec
