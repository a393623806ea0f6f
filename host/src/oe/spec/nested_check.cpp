// Nested experiences in `oe validate` (nested_check.hpp).
#include "oe/spec/nested_check.hpp"

#include <algorithm>
#include <filesystem>

#include "oe/spec/loader.hpp"
#include "oe/spec/locate.hpp"

namespace oe::spec {

namespace fs = std::filesystem;

fs::path nestedExperiencePath(const fs::path& dir, const std::string& written) {
  fs::path path = written;
  if (path.is_relative()) {
    path = dir / path;
  }
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    path /= "experience.yaml";
  }
  return path.lexically_normal();
}

std::string nestedNotFound(const fs::path& path, const std::string& declared) {
  return "Sub-experience yaml not found: " + path.string() + " (declared as \"" + declared + "\")";
}

namespace {

const char* typeName(FieldType type) {
  switch (type) {
    case FieldType::kString:
      return "string";
    case FieldType::kNumber:
      return "number";
    case FieldType::kBoolean:
      return "boolean";
    case FieldType::kObject:
      return "object";
    case FieldType::kArray:
      return "array";
    case FieldType::kNull:
      return "null";
    default:
      return "any";
  }
}

const char* mergeName(MergeStrategy merge) {
  switch (merge) {
    case MergeStrategy::kArrayAppend:
      return "array_append";
    case MergeStrategy::kSetOnce:
      return "set_once";
    default:
      return "last_wins";
  }
}

const Json* at(const Json& node, const std::string& pointer) {
  if (pointer.empty() || pointer.front() != '/') {
    return nullptr;
  }
  try {
    const Json::json_pointer ptr(pointer);
    return node.contains(ptr) ? &node.at(ptr) : nullptr;
  } catch (const std::exception&) {
    return nullptr;  // a malformed pointer in a plugin's schema: nothing to follow
  }
}

// A shared child writes the parent's fields through the parent's checks: a type that differs
// would fail at run time, so it is reported now; a different merge rule only surprises (the
// parent's rule wins in the parent's store), so it is a warning.
void compareSchemas(const Experience& parent, const Experience& child, const std::string& where,
                    std::vector<Diagnostic>& out) {
  for (const FieldSpec& field : child.state.fields) {
    const FieldSpec* mine = parent.state.find(field.name);
    if (mine == nullptr) {
      continue;  // the child's own field: it stays in the child's store
    }
    if (mine->type != field.type && mine->type != FieldType::kAny &&
        field.type != FieldType::kAny) {
      out.push_back(diagnosticAt(
          parent, where,
          "state_scope shared: field \"" + field.name + "\" is " + typeName(field.type) + " in " +
              child.file.string() + " but " + typeName(mine->type) +
              " here; declare it with the same type in both, or use state_scope isolated"));
    } else if (mine->merge != field.merge) {
      out.push_back(diagnosticAt(
          parent, where,
          "state_scope shared: field \"" + field.name + "\" merges " + mergeName(field.merge) +
              " in " + child.file.string() + " but " + mergeName(mine->merge) +
              " here; the child's writes land here with " + mergeName(mine->merge),
          Severity::kWarning));
    }
  }
}

}  // namespace

std::string nestingChain(const std::vector<fs::path>& files, const fs::path& last) {
  std::string text;
  for (const fs::path& file : files) {
    text += file.string() + " -> ";
  }
  return text + last.string();
}

std::vector<Diagnostic> checkNested(const Experience& exp, const NodeSpec& node,
                                    const std::string& pointer, const Json& nests,
                                    const KindCatalog& kinds, bool strict, ProgramCheck missing_program,
                                    NestingTrail& trail) {
  std::vector<Diagnostic> out;
  const std::string path_pointer = nests.value("path", "/impl");
  const Json* written = at(node.raw, path_pointer);
  if (written == nullptr || !written->is_string() || written->get<std::string>().empty()) {
    return out;  // the kind's schema check reports a missing or empty path
  }
  const std::string declared = written->get<std::string>();
  const fs::path path = nestedExperiencePath(exp.dir, declared);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    out.push_back(diagnosticAt(exp, pointer + path_pointer, nestedNotFound(path, declared)));
    return out;
  }
  std::vector<fs::path> chain = trail.files;
  chain.push_back(fs::weakly_canonical(exp.file, ec));
  const fs::path child_file = fs::weakly_canonical(path, ec);
  if (std::find(chain.begin(), chain.end(), child_file) != chain.end()) {
    out.push_back(
        diagnosticAt(exp, pointer + path_pointer,
                     "nested experiences form a cycle: " + nestingChain(chain, child_file) +
                         "; an experience cannot include itself"));
    return out;
  }
  if (static_cast<int>(chain.size()) > kMaxNestingDepth) {
    out.push_back(
        diagnosticAt(exp, pointer + path_pointer,
                     "nested experiences go deeper than " + std::to_string(kMaxNestingDepth) +
                         " levels: " + nestingChain(chain, child_file) + "; flatten the nesting"));
    return out;
  }
  auto loaded = loadExperience(path);
  const bool first_time = trail.done.insert(child_file).second;
  if (first_time) {
    out.insert(out.end(), loaded.diagnostics.begin(), loaded.diagnostics.end());
  }
  if (!loaded.experience) {
    if (!first_time || loaded.diagnostics.empty()) {
      out.push_back(diagnosticAt(exp, pointer + path_pointer,
                                 "the nested experience " + path.string() + " does not load"));
    }
    return out;
  }
  if (first_time && !hasErrors(loaded.diagnostics)) {
    trail.files = chain;
    auto found = validateExperience(*loaded.experience, kinds, strict, /*check_files=*/true,
                                    missing_program, trail);
    trail.files.pop_back();
    out.insert(out.end(), std::make_move_iterator(found.begin()),
               std::make_move_iterator(found.end()));
  }
  const std::string scope_pointer = nests.value("state_scope", "");
  const Json* scope = scope_pointer.empty() ? nullptr : at(node.raw, scope_pointer);
  if (scope != nullptr && scope->is_string() && *scope == "shared") {
    compareSchemas(exp, *loaded.experience, pointer + scope_pointer, out);
  }
  return out;
}

}  // namespace oe::spec
