// experience.yaml -> JSON (one pass over yaml-cpp's parse events, recording positions) ->
// structural check -> typed model. See loader.hpp.
#include "oe/spec/loader.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <istream>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <streambuf>

#include "oe/common/file.hpp"
#include "oe/expr/js_value.hpp"
#include "oe/spec/file_check.hpp"
#include "oe/spec/locate.hpp"
#include "oe/spec/schema_check.hpp"

namespace oe::spec {

namespace {

bool isDigits(std::string_view s, bool (*digit)(char)) {
  return !s.empty() && std::all_of(s.begin(), s.end(), digit);
}
bool isDec(char c) { return c >= '0' && c <= '9'; }
bool isOct(char c) { return c >= '0' && c <= '7'; }
bool isHex(char c) { return isDec(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// A float of the YAML 1.2 core schema: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool isCoreFloat(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) {
    ++i;
  }
  size_t int_digits = 0;
  while (i < s.size() && isDec(s[i])) {
    ++i;
    ++int_digits;
  }
  size_t frac_digits = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && isDec(s[i])) {
      ++i;
      ++frac_digits;
    }
  }
  if (int_digits == 0 && frac_digits == 0) {
    return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) {
      ++i;
    }
    size_t exp_digits = 0;
    while (i < s.size() && isDec(s[i])) {
      ++i;
      ++exp_digits;
    }
    if (exp_digits == 0) {
      return false;
    }
  }
  return i == s.size();
}

// A plain scalar resolved with the YAML 1.2 core schema, as upstream's `yaml` library does:
// `0.1.0` stays a string, `3` is an integer, `1.5` a number, `~`/`null`/empty is null.
Json resolvePlain(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") {
    return Json(nullptr);
  }
  if (s == "true" || s == "True" || s == "TRUE") {
    return Json(true);
  }
  if (s == "false" || s == "False" || s == "FALSE") {
    return Json(false);
  }
  std::string_view v(s);
  const char first = v[0];
  if (isDec(first) || first == '-' || first == '+' || first == '.') {
    std::string_view body = (first == '-' || first == '+') ? v.substr(1) : v;
    if (isDigits(body, isDec)) {
      int64_t i = 0;
      auto r = std::from_chars(body.data(), body.data() + body.size(), i);
      if (r.ec == std::errc() && r.ptr == body.data() + body.size()) {
        return Json(first == '-' ? -i : i);
      }
      // Too large for 64 bits: a JS number (double), as upstream.
      double d = std::strtod(s.c_str(), nullptr);
      return Json(d);
    }
    if (v.size() > 2 && v[0] == '0' && v[1] == 'x' && isDigits(v.substr(2), isHex)) {
      uint64_t u = 0;
      std::from_chars(v.data() + 2, v.data() + v.size(), u, 16);
      return Json(u);
    }
    if (v.size() > 2 && v[0] == '0' && v[1] == 'o' && isDigits(v.substr(2), isOct)) {
      uint64_t u = 0;
      std::from_chars(v.data() + 2, v.data() + v.size(), u, 8);
      return Json(u);
    }
    if (isCoreFloat(v)) {
      return Json(std::strtod(s.c_str(), nullptr));
    }
    std::string_view rest = body;
    if (rest == ".inf" || rest == ".Inf" || rest == ".INF") {
      return Json(first == '-' ? -std::numeric_limits<double>::infinity()
                               : std::numeric_limits<double>::infinity());
    }
    if (v == ".nan" || v == ".NaN" || v == ".NAN") {
      return Json(std::numeric_limits<double>::quiet_NaN());
    }
  }
  return Json(s);
}

// The length of the valid UTF-8 sequence at s[i], or 0 when it is not one.
size_t utf8SequenceLength(std::string_view s, size_t i) {
  auto at = [&](size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u; };
  auto cont = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) {
    return at(k) >= lo && at(k) <= hi;
  };
  const unsigned c = at(i);
  if (c < 0x80) {
    return 1;
  }
  if (c >= 0xC2 && c <= 0xDF) {
    return cont(i + 1) ? 2 : 0;
  }
  if (c >= 0xE0 && c <= 0xEF) {
    const unsigned lo = c == 0xE0 ? 0xA0 : 0x80;
    const unsigned hi = c == 0xED ? 0x9F : 0xBF;
    return cont(i + 1, lo, hi) && cont(i + 2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    const unsigned lo = c == 0xF0 ? 0x90 : 0x80;
    const unsigned hi = c == 0xF4 ? 0x8F : 0xBF;
    return cont(i + 1, lo, hi) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  }
  return 0;
}

// Invalid UTF-8 becomes U+FFFD, as when upstream reads the file as UTF-8 text; every string of
// the experience is then valid UTF-8, which JSON output (events, cache keys) relies on.
// nullopt when the text is valid already (the usual case: no copy).
std::optional<std::string> sanitizedUtf8(std::string_view text) {
  std::optional<std::string> out;
  size_t i = 0;
  while (i < text.size()) {
    size_t n = utf8SequenceLength(text, i);
    if (n == 0) {
      if (!out) {
        out.emplace();
        out->reserve(text.size() + 16);
        out->append(text.substr(0, i));
      }
      *out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    if (out) {
      out->append(text.substr(i, n));
    }
    i += n;
  }
  return out;
}

// An input stream over text in memory, without the copy std::istringstream makes.
class ViewBuffer : public std::streambuf {
 public:
  explicit ViewBuffer(std::string_view text) {
    char* begin = const_cast<char*>(text.data());  // read-only: the get area is never written
    setg(begin, begin, begin + text.size());
  }
};

Json resolveScalar(const std::string& tag, const std::string& value) {
  // yaml-cpp tags quoted and block scalars "!", plain ones "?".
  if (tag == "!" || tag == "tag:yaml.org,2002:str") {
    return Json(value);
  }
  return resolvePlain(value);
}

// A LoadLimits bound crossed while building. Thrown from inside yaml-cpp's event callbacks,
// the only way to stop its parser mid-document; loadExperienceText turns it into a diagnostic.
class LimitExceeded : public std::runtime_error {
 public:
  LimitExceeded(Mark at, const std::string& message) : std::runtime_error(message), mark(at) {}
  Mark mark;
};

std::string mebibytes(size_t bytes) {
  const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  char text[32];
  std::snprintf(text, sizeof text, mib < 10 ? "%.1f MiB" : "%.0f MiB", mib);
  return text;
}

// The bytes of JSON text a value takes beyond its own text: quotes, a separator and a colon or
// brackets; an estimate, exact for a string in a list or a short key.
constexpr size_t kJsonBytesPerValue = 3;

// Builds the JSON value from yaml-cpp's parse events and records where each value (and each
// mapping key) is, by JSON pointer, in the same pass. Counts what it builds against `limits`.
class JsonBuilder final : public YAML::EventHandler {
 public:
  JsonBuilder(Experience& exp, std::string_view text, std::vector<Diagnostic>& diagnostics,
              const LoadLimits& limits)
      : exp_(exp), text_(text), diagnostics_(diagnostics), limits_(limits) {}

  Json take() { return std::move(root_); }

  void OnDocumentStart(const YAML::Mark& /*mark*/) override {}
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    scalar(mark, Json(nullptr), "", anchor);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) {
      scalar(mark, Json(nullptr), "", 0);
      return;
    }
    const Anchored& anchored = it->second;
    // Checked before the copy is made: the copy is what a bomb makes huge.
    charge(anchored.nodes, anchored.bytes, toMark(mark));
    const int depth = static_cast<int>(stack_.size()) + anchored.height;
    if (depth > limits_.max_depth) {
      throw tooDeep(mark, "this alias");
    }
    nodes_ += anchored.nodes;
    bytes_ += anchored.bytes;
    placed(anchored.height);
    Json value = anchored.value;
    std::string text = value.is_string() ? value.get<std::string>() : expr::stringify(value);
    placeScalar(mark, std::move(value), text, 0);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    if (expectingKey()) {
      scalar(mark, Json(), value, anchor);
      return;
    }
    scalar(mark, resolveScalar(tag, value), value, anchor);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value /*style*/) override {
    open(mark, Json::array(), anchor);
  }
  void OnSequenceEnd() override { close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value /*style*/) override {
    open(mark, Json::object(), anchor);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Frame {
    Json* container = nullptr;
    size_t nodes_at_open = 0;  // nodes_ and bytes_ when it opened: its anchor's size
    size_t bytes_at_open = 0;
    int height = 1;  // levels of mappings and sequences in it, itself included
    Mark open_mark;
    size_t pointer_len = 0;  // pointer_ of this container
    bool is_map = false;
    bool want_key = true;  // map: the next node is a key
    bool is_key = false;   // this container is itself a (complex) mapping key
    std::string key;       // map: the member being read
    Mark key_mark;
    YAML::anchor_t anchor = 0;
    // map: a complex key under construction. On the heap: the key's own frame points at it
    // while stack_ grows, and growing stack_ moves this Frame.
    std::unique_ptr<Json> key_holder;
    size_t next_index = 0;
  };

  static Mark toMark(const YAML::Mark& m) { return Mark{m.line + 1, m.column + 1}; }

  // Where a scalar's content starts: after an opening quote, or on the first line of a block.
  Mark contentMark(const YAML::Mark& m) const {
    Mark out = toMark(m);
    if (m.pos < 0 || static_cast<size_t>(m.pos) >= text_.size()) {
      return out;
    }
    char c = text_[static_cast<size_t>(m.pos)];
    if (c == '"' || c == '\'') {
      out.column += 1;
    } else if (c == '|' || c == '>') {
      size_t eol = text_.find('\n', static_cast<size_t>(m.pos));
      if (eol != std::string_view::npos) {
        size_t start = eol + 1;
        size_t first = text_.find_first_not_of(' ', start);
        if (first != std::string_view::npos) {
          out.line += 1;
          out.column = static_cast<int>(first - start) + 1;
        }
      }
    }
    return out;
  }

  [[nodiscard]] bool expectingKey() const {
    return !stack_.empty() && stack_.back().is_map && stack_.back().want_key;
  }

  // Places the next value: the root, an array element or the value of the pending map key.
  Json* slot(Mark mark) {
    if (stack_.empty()) {
      record("", mark);
      return &root_;
    }
    Frame& f = stack_.back();
    pointer_.resize(f.pointer_len);
    if (f.is_map) {
      appendPointerSegment(pointer_, f.key);
      if (key_depth_ == 0) {
        exp_.key_marks.emplace(pointer_, f.key_mark);
      }
      record(pointer_, mark);
      f.want_key = true;
      return &(*f.container)[f.key];
    }
    appendPointerSegment(pointer_, std::to_string(f.next_index++));
    record(pointer_, mark);
    f.container->push_back(nullptr);
    return &f.container->back();
  }

  void record(const std::string& pointer, Mark mark) {
    if (key_depth_ == 0) {
      exp_.marks.emplace(pointer, mark);
    }
  }

  void setKey(std::string key, Mark mark) {
    Frame& f = stack_.back();
    f.want_key = false;
    if (f.container->contains(key)) {
      // Upstream's `yaml` library rejects this; yaml-cpp would silently keep the last one.
      Diagnostic d;
      d.file = exp_.source_name;
      d.line = mark.line;
      d.column = mark.column;
      d.message = "YAML parse error: Map keys must be unique; \"" + key + "\" is repeated";
      diagnostics_.push_back(std::move(d));
    }
    f.key = std::move(key);
    f.key_mark = mark;
  }

  // What an anchor holds, for its aliases: the value and what copying it costs.
  struct Anchored {
    Json value;
    size_t nodes = 0;
    size_t bytes = 0;
    int height = 0;
  };

  LimitExceeded tooDeep(const YAML::Mark& mark, const char* what) const {
    return LimitExceeded(toMark(mark),
                         std::string(what) + " nests mappings and sequences more than " +
                             std::to_string(limits_.max_depth) +
                             " levels deep; oe refuses deeper YAML so that a hostile file "
                             "cannot exhaust the stack. Flatten the document");
  }

  // Anchors and aliases copy trees; their copies are bounded, whatever the document's size: in
  // values, and in bytes as JSON text (each value's text and about kJsonBytesPerValue of quotes,
  // separators and brackets), which is what a run holds of the document and what its spec
  // snapshot stores. Counting only the scalars' text let 813 bytes of short strings aliased
  // under the node bound expand to a 21 MB spec snapshot and a run of 340 MB.
  void charge(size_t nodes, size_t bytes, Mark mark) {
    copied_nodes_ += nodes;
    copied_bytes_ += bytes + kJsonBytesPerValue * nodes;
    if (copied_nodes_ > limits_.max_alias_nodes) {
      throw LimitExceeded(mark, "alias expansion exceeds " +
                                    std::to_string(limits_.max_alias_nodes) +
                                    " nodes (a \"billion laughs\" document?); write the repeated "
                                    "parts out, or alias fewer and smaller anchors");
    }
    if (copied_bytes_ > limits_.max_alias_bytes) {
      throw LimitExceeded(mark, "alias expansion exceeds " + mebibytes(limits_.max_alias_bytes) +
                                    " (the values anchors and aliases copy, counted as JSON: "
                                    "what a run holds and its spec snapshot stores; a \"billion "
                                    "laughs\" document?); write the repeated parts out, or alias "
                                    "fewer and smaller anchors");
    }
  }

  // A value of `height` levels was placed in the innermost open collection.
  void placed(int height) {
    if (!stack_.empty() && key_depth_ == 0) {
      stack_.back().height = std::max(stack_.back().height, height + 1);
    }
  }

  void scalar(const YAML::Mark& mark, Json value, const std::string& text, YAML::anchor_t anchor) {
    ++nodes_;
    bytes_ += text.size();
    if (anchor != 0) {
      charge(1, text.size(), toMark(mark));
    }
    placeScalar(mark, std::move(value), text, anchor);
  }

  void placeScalar(const YAML::Mark& mark, Json value, const std::string& text,
                   YAML::anchor_t anchor) {
    if (expectingKey()) {
      if (anchor != 0) {
        anchors_[anchor] = Anchored{Json(text), 1, text.size(), 0};
      }
      setKey(text, toMark(mark));
      return;
    }
    Json* target = slot(contentMark(mark));
    *target = std::move(value);
    if (anchor != 0) {
      anchors_[anchor] = Anchored{*target, 1, text.size(), 0};
    }
  }

  void open(const YAML::Mark& mark, Json empty, YAML::anchor_t anchor) {
    // Stops yaml-cpp too: it emits this event before it recurses into the collection.
    if (static_cast<int>(stack_.size()) >= limits_.max_depth) {
      throw tooDeep(mark, "the document");
    }
    ++nodes_;
    Frame f;
    f.is_map = empty.is_object();
    f.anchor = anchor;
    f.nodes_at_open = nodes_ - 1;
    f.open_mark = toMark(mark);
    f.bytes_at_open = bytes_;
    if (expectingKey()) {
      // A collection used as a mapping key (rare): build it, then use its JSON text as the key.
      Frame& parent = stack_.back();
      parent.key_holder = std::make_unique<Json>(std::move(empty));
      parent.key_mark = toMark(mark);
      f.container = parent.key_holder.get();
      f.is_key = true;
      ++key_depth_;
    } else {
      f.container = slot(toMark(mark));
      *f.container = std::move(empty);
    }
    f.pointer_len = pointer_.size();
    stack_.push_back(std::move(f));
  }

  void close() {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    if (f.anchor != 0) {
      const size_t nodes = nodes_ - f.nodes_at_open;
      const size_t bytes = bytes_ - f.bytes_at_open;
      // The anchor keeps a copy: that costs as much as an alias does.
      charge(nodes, bytes, f.open_mark);
      anchors_[f.anchor] = Anchored{*f.container, nodes, bytes, f.height};
    }
    if (!f.is_key) {
      placed(f.height);
    }
    if (f.is_key) {
      --key_depth_;
      Frame& parent = stack_.back();
      setKey(expr::stringify(*parent.key_holder), parent.key_mark);
    }
  }

  Experience& exp_;
  std::string_view text_;
  std::vector<Diagnostic>& diagnostics_;
  const LoadLimits& limits_;
  Json root_;
  std::vector<Frame> stack_;
  std::string pointer_;
  int key_depth_ = 0;
  std::unordered_map<YAML::anchor_t, Anchored> anchors_;
  size_t nodes_ = 0;  // values and keys built so far
  size_t bytes_ = 0;  // scalar text built so far
  size_t copied_nodes_ = 0;
  size_t copied_bytes_ = 0;  // as JSON text: see charge()
};

Diagnostic fileDiagnostic(const Experience& exp, std::string message, int line = 0,
                          int column = 0) {
  Diagnostic d;
  d.file = exp.source_name;
  d.line = line;
  d.column = column;
  d.message = std::move(message);
  return d;
}

std::string tooLarge(size_t size, const LoadLimits& limits) {
  return "the file is " + mebibytes(size) + "; oe reads experience files of at most " +
         mebibytes(limits.max_bytes) +
         ". Move large data out of it (a dataset node reads a file at run time)";
}

const SchemaChecker& structureChecker() {
  // Parsed once per process and immutable afterwards (a function-local constant, not a global
  // constructor); valijson only reads it while validating.
  static const SchemaChecker checker = SchemaChecker::compile(experienceValidationSchema()).value();
  return checker;
}

std::string describe(const Json& v) {
  std::string text = v.is_string() ? "\"" + v.get<std::string>() + "\"" : expr::stringify(v);
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

// on_error is a oneOf of three shapes upstream; a failed oneOf explains nothing, so the shapes
// are checked here with one message per problem.
void checkOnError(const Experience& exp, const Json& on_error, const std::string& pointer,
                  std::vector<Diagnostic>& out) {
  const std::string kShapes =
      "use {policy: skip}, {policy: fail_run} or {policy: retry, attempts: 1..20, "
      "backoff: linear|exponential, base_ms: >= 0}";
  if (!on_error.is_object()) {
    out.push_back(diagnosticAt(exp, pointer, "must be a mapping; " + kShapes));
    return;
  }
  auto policy = on_error.find("policy");
  if (policy == on_error.end()) {
    out.push_back(diagnosticAt(exp, pointer, "missing required key \"policy\"; " + kShapes));
    return;
  }
  if (!policy->is_string() || (*policy != "skip" && *policy != "fail_run" && *policy != "retry")) {
    out.push_back(diagnosticAt(exp, pointer + "/policy",
                               "must be one of: skip, fail_run, retry; got " + describe(*policy)));
    return;
  }
  auto attempts = on_error.find("attempts");
  if (*policy == "retry" && attempts == on_error.end()) {
    out.push_back(
        diagnosticAt(exp, pointer, "policy retry needs \"attempts\" (an integer from 1 to 20)"));
  }
  if (attempts != on_error.end() &&
      !(attempts->is_number_integer() && attempts->get<int64_t>() >= 1 &&
        attempts->get<int64_t>() <= 20)) {
    out.push_back(diagnosticAt(exp, pointer + "/attempts",
                               "must be an integer from 1 to 20, got " + describe(*attempts)));
  }
  auto backoff = on_error.find("backoff");
  if (backoff != on_error.end() && *backoff != "linear" && *backoff != "exponential") {
    out.push_back(diagnosticAt(exp, pointer + "/backoff",
                               "must be one of: linear, exponential; got " + describe(*backoff)));
  }
  auto base_ms = on_error.find("base_ms");
  if (base_ms != on_error.end() &&
      !(base_ms->is_number_integer() && base_ms->get<int64_t>() >= 0)) {
    out.push_back(diagnosticAt(exp, pointer + "/base_ms",
                               "must be an integer >= 0, got " + describe(*base_ms)));
  }
}

std::string str(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<std::string> optStr(const Json& obj, const char* key) {
  auto it = obj.find(key);
  if (it != obj.end() && it->is_string()) {
    return it->get<std::string>();
  }
  return std::nullopt;
}

std::vector<std::string> strings(const Json& obj, const char* key) {
  std::vector<std::string> out;
  auto it = obj.find(key);
  if (it != obj.end() && it->is_array()) {
    out.reserve(it->size());
    for (const auto& v : *it) {
      if (v.is_string()) {
        out.push_back(v.get<std::string>());
      }
    }
  }
  return out;
}

template <class T>
std::optional<T> optInt(const Json& obj, const char* key) {
  auto it = obj.find(key);
  if (it != obj.end() && it->is_number_integer()) {
    return static_cast<T>(it->get<int64_t>());
  }
  return std::nullopt;
}

FieldType fieldType(const std::string& t) {
  if (t == "string") {
    return FieldType::kString;
  }
  if (t == "number") {
    return FieldType::kNumber;
  }
  if (t == "boolean") {
    return FieldType::kBoolean;
  }
  if (t == "object") {
    return FieldType::kObject;
  }
  if (t == "array") {
    return FieldType::kArray;
  }
  if (t == "null") {
    return FieldType::kNull;
  }
  return FieldType::kAny;
}

constexpr size_t kMaxPathCandidates = 256;
constexpr int kMaxPathDepth = 8;

void collectPathStrings(const Json& value, int depth, std::vector<std::string>& out) {
  if (out.size() >= kMaxPathCandidates || depth > kMaxPathDepth) {
    return;
  }
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    if (!text.empty() && text.size() <= 4096 && text.front() != '$' &&
        text.find('\n') == std::string::npos) {
      out.push_back(text);
    }
  } else if (value.is_array() || value.is_object()) {
    for (const auto& [key, child] : value.items()) {
      if (value.is_object() && key == "schema") {
        continue;
      }
      collectPathStrings(child, depth + 1, out);
    }
  }
}

// The typed fields of node `i` of the graph, from its JSON `n` (raw and text are the caller's).
NodeSpec nodeFrom(const Experience& exp, const Json& n, size_t i) {
  const std::string pointer = "/graph/nodes/" + std::to_string(i);
  NodeSpec node;
  node.id = str(n, "id");
  node.kind = str(n, "kind");
  node.phase = optStr(n, "phase");
  node.reads = strings(n, "reads");
  node.writes = strings(n, "writes");
  node.writes_declared = n.contains("writes");
  if (auto oe = n.find("on_error"); oe != n.end()) {
    std::string policy = str(*oe, "policy");
    if (policy == "fail_run") {
      node.on_error.policy = ErrorPolicy::kFailRun;
    } else if (policy == "retry") {
      node.on_error.policy = ErrorPolicy::kRetry;
      node.on_error.attempts = optInt<int>(*oe, "attempts").value_or(1);
      node.on_error.backoff =
          str(*oe, "backoff") == "exponential" ? Backoff::kExponential : Backoff::kLinear;
      node.on_error.base_ms = optInt<int64_t>(*oe, "base_ms").value_or(100);
    }
  }
  if (auto fe = n.find("for_each"); fe != n.end()) {
    ForEach f;
    f.source = str(*fe, "source");
    f.concurrency = optInt<int>(*fe, "concurrency").value_or(1);
    f.mark = exp.markOf(pointer + "/for_each/source");
    node.for_each = std::move(f);
  }
  node.timeout_ms = optInt<int64_t>(n, "timeout_ms");
  node.queue = optStr(n, "queue");
  if (auto cache = n.find("cache"); cache != n.end()) {
    if (cache->is_boolean()) {
      node.cache.enabled = cache->get<bool>();
    } else if (cache->is_object()) {
      node.cache.inputs = strings(*cache, "inputs");
    }
  }
  if (auto args = n.find("args"); args != n.end()) {
    node.args = *args;
  }
  if (auto policy = n.find("policy"); policy != n.end() && policy->is_object()) {
    node.policy = std::make_shared<const PolicySpec>(policyFrom(*policy));
  }
  if (auto ws = n.find("workspace"); ws != n.end()) {
    if (ws->is_string() && ws->get<std::string>() == "worktree") {
      node.workspace = std::make_shared<const WorkspaceSpec>();
    } else if (ws->is_object() && ws->value("mode", Json()) == "worktree") {
      WorkspaceSpec spec;
      if (auto repo = ws->find("repo"); repo != ws->end() && repo->is_string()) {
        spec.repo = repo->get<std::string>();
      }
      node.workspace = std::make_shared<const WorkspaceSpec>(std::move(spec));
    }
  }
  if (auto approval = approvalOf(n)) {
    node.approval = std::make_shared<const ApprovalSpec>(std::move(*approval));
  }
  node.mark = exp.markOf(pointer);
  return node;
}

// `lines`: the graph's nodes and edges as lines of canonical JSON (spec snapshots) instead of
// exp.raw's graph.nodes and graph.edges. False when one of them is not a JSON object.
bool fill(Experience& exp, const GraphLines* lines = nullptr) {
  const Json& raw = exp.raw;
  exp.name = str(raw, "name");
  exp.description = str(raw, "description");
  exp.version = str(raw, "version");

  const Json& state = raw["state"];
  exp.state.store = optStr(state, "store");
  const Json& schema = state["schema"];
  for (auto it = schema.begin(); it != schema.end(); ++it) {
    FieldSpec f;
    f.name = it.key();
    f.type = fieldType(str(it.value(), "type"));
    std::string merge = str(it.value(), "merge");
    f.merge = merge == "array_append" ? MergeStrategy::kArrayAppend
              : merge == "set_once"   ? MergeStrategy::kSetOnce
                                      : MergeStrategy::kLastWins;
    std::string pointer = "/state/schema";
    appendPointerSegment(pointer, f.name);
    f.mark = exp.keyMarkOf(pointer);
    exp.state.fields.push_back(std::move(f));
  }
  // JSON objects are sorted by key; the file's order is the declaration order.
  std::stable_sort(exp.state.fields.begin(), exp.state.fields.end(),
                   [](const FieldSpec& a, const FieldSpec& b) {
                     return a.mark.line != b.mark.line ? a.mark.line < b.mark.line
                                                       : a.mark.column < b.mark.column;
                   });
  for (size_t i = 0; i < exp.state.fields.size(); ++i) {
    exp.state.index.emplace(exp.state.fields[i].name, i);
  }

  if (auto phases = raw.find("phases"); phases != raw.end()) {
    for (const auto& p : *phases) {
      exp.phases.push_back(Phase{str(p, "id"), optStr(p, "title")});
    }
  }

  const Json& graph = raw["graph"];
  if (lines != nullptr) {
    // A spec snapshot: each node is a line of canonical JSON, parsed one at a time (a DOM of
    // the whole graph at once would be the run's peak memory) and kept as that text.
    exp.nodes.reserve(lines->nodes.size());
    exp.node_index.reserve(lines->nodes.size());
    for (size_t i = 0; i < lines->nodes.size(); ++i) {
      const Json n = Json::parse(lines->nodes[i], nullptr, false);
      if (!n.is_object()) {
        return false;
      }
      NodeSpec node = nodeFrom(exp, n, i);
      node.text = std::string(lines->nodes[i]);
      node.path_candidates = pathCandidates(n);
      exp.node_index.emplace(node.id, i);
      exp.nodes.push_back(std::move(node));
    }
  } else {
    const Json& nodes = graph["nodes"];
    exp.nodes.reserve(nodes.size());
    exp.node_index.reserve(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      NodeSpec node = nodeFrom(exp, nodes[i], i);
      node.raw = nodes[i];
      exp.node_index.emplace(node.id, i);
      exp.nodes.push_back(std::move(node));
    }
  }
  std::string pointer;

  auto edge_of = [&exp, &pointer](const Json& e, size_t i) {
    pointer = "/graph/edges/" + std::to_string(i);
    EdgeSpec edge;
    edge.from = str(e, "from");
    edge.to = str(e, "to");
    edge.when = optStr(e, "when");
    edge.mark = exp.markOf(pointer);
    if (edge.when) {
      edge.when_mark = exp.markOf(pointer + "/when");
    }
    return edge;
  };
  if (lines != nullptr) {
    exp.edges.reserve(lines->edges.size());
    for (size_t i = 0; i < lines->edges.size(); ++i) {
      const Json e = Json::parse(lines->edges[i], nullptr, false);
      if (!e.is_object()) {
        return false;
      }
      exp.edges.push_back(edge_of(e, i));
    }
  } else {
    const Json& edges = graph["edges"];
    exp.edges.reserve(edges.size());
    for (size_t i = 0; i < edges.size(); ++i) {
      exp.edges.push_back(edge_of(edges[i], i));
    }
  }

  if (auto pipelines = graph.find("pipelines"); pipelines != graph.end()) {
    for (size_t i = 0; i < pipelines->size(); ++i) {
      const Json& p = (*pipelines)[i];
      exp.pipelines.push_back(PipelineSpec{str(p, "id"), str(p, "items"), strings(p, "stages"),
                                           optStr(p, "phase"),
                                           exp.markOf("/graph/pipelines/" + std::to_string(i))});
    }
  }
  if (auto loops = graph.find("loops"); loops != graph.end()) {
    for (size_t i = 0; i < loops->size(); ++i) {
      const Json& l = (*loops)[i];
      pointer = "/graph/loops/" + std::to_string(i);
      LoopSpec loop;
      loop.id = str(l, "id");
      loop.body = str(l, "body");
      loop.until = optStr(l, "until");
      loop.max_iters = optInt<int>(l, "max_iters");
      loop.budget = optInt<int64_t>(l, "budget");
      loop.phase = optStr(l, "phase");
      loop.mark = exp.markOf(pointer);
      if (loop.until) {
        loop.until_mark = exp.markOf(pointer + "/until");
      }
      exp.loops.push_back(std::move(loop));
    }
  }

  if (auto policy = raw.find("policy"); policy != raw.end() && policy->is_object()) {
    exp.policy = std::make_shared<const PolicySpec>(policyFrom(*policy));
  }
  // `plugins: { override: [...] }` (docs/trust.md); a malformed one is the schema's error.
  if (auto plugins = raw.find("plugins"); plugins != raw.end() && plugins->is_object()) {
    exp.plugin_isolation = pluginIsolationFrom(*plugins);
    if (auto names = plugins->find("override"); names != plugins->end() && names->is_array()) {
      for (const Json& name : *names) {
        if (name.is_string()) {
          exp.plugin_overrides.push_back(name.get<std::string>());
        }
      }
    }
  }
  // `secrets:` (docs/policy.md, "Secrets"); a malformed entry is the schema's error.
  if (auto secrets = raw.find("secrets"); secrets != raw.end() && secrets->is_object()) {
    for (const auto& [name, source] : secrets->items()) {
      if (!source.is_object()) {
        continue;
      }
      secrets::Declaration declaration;
      declaration.name = name;
      declaration.env = str(source, "env");
      declaration.file = str(source, "file");
      std::string at = "/secrets";
      appendPointerSegment(at, name);
      declaration.line = exp.keyMarkOf(at).line;
      exp.secrets.push_back(std::move(declaration));
    }
  }
  exp.triggers = triggersOf(exp);
  if (auto runtime = raw.find("runtime"); runtime != raw.end()) {
    exp.runtime.concurrency = optInt<int>(*runtime, "concurrency");
    if (auto det = runtime->find("deterministic"); det != runtime->end() && det->is_boolean()) {
      exp.runtime.deterministic = det->get<bool>();
    }
    if (auto strict = runtime->find("strict_writes");
        strict != runtime->end() && strict->is_boolean()) {
      exp.runtime.strict_writes = strict->get<bool>();
    }
  }
  return true;
}

// `raw` with each value fill() relies on given the type it expects (a wrong one becomes empty;
// arrays keep their length, so every JSON pointer of what is kept still points at its value).
Json shapedForModel(Json raw) {
  auto ensure = [](Json& parent, const char* key, Json empty) -> Json& {
    Json& value = parent[key];
    if (value.type() != empty.type()) {
      value = std::move(empty);
    }
    return value;
  };
  auto objectsIn = [&ensure](Json& parent, const char* key) {
    for (Json& item : ensure(parent, key, Json::array())) {
      if (!item.is_object()) {
        item = Json::object();
      }
    }
  };
  Json& state = ensure(raw, "state", Json::object());
  for (auto& [name, field] : ensure(state, "schema", Json::object()).items()) {
    if (!field.is_object()) {
      field = Json::object();
    }
  }
  if (raw.contains("phases")) {
    objectsIn(raw, "phases");
  }
  Json& graph = ensure(raw, "graph", Json::object());
  objectsIn(graph, "nodes");
  objectsIn(graph, "edges");
  for (const char* key : {"pipelines", "loops"}) {
    if (graph.contains(key)) {
      objectsIn(graph, key);
    }
  }
  if (raw.contains("triggers")) {
    objectsIn(raw, "triggers");
  }
  if (raw.contains("runtime") && !raw["runtime"].is_object()) {
    raw.erase("runtime");
  }
  return raw;
}

}  // namespace

bool buildModel(Experience& exp, const GraphLines* lines) { return fill(exp, lines); }

std::string canonicalText(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::vector<std::string> pathCandidates(const Json& node) {
  static constexpr std::array<std::string_view, 9> kNotPaths = {
      "id", "kind", "phase", "model", "schema", "args", "reads", "writes", "cache"};
  std::vector<std::string> out;
  if (!node.is_object()) {
    return out;
  }
  for (const auto& [key, value] : node.items()) {
    if (std::find(kNotPaths.begin(), kNotPaths.end(), key) == kNotPaths.end()) {
      collectPathStrings(value, 1, out);
    }
  }
  return out;
}

void compactNodes(Experience& exp) {
  for (NodeSpec& node : exp.nodes) {
    if (!node.raw.is_null()) {
      node.text = canonicalText(node.raw);
      node.path_candidates = pathCandidates(node.raw);
    }
    node.raw = Json();
  }
}

void attachReadFiles(Experience& exp, const KindCatalog& kinds) {
  std::map<std::string_view, const Json*, std::less<>> marked;  // kind -> schema, or nullptr
  for (NodeSpec& node : exp.nodes) {
    auto [mark, inserted] = marked.try_emplace(node.kind, nullptr);
    if (inserted) {
      auto kind = kinds.find(node.kind);
      if (kind != kinds.end() && kind->second.schema && marksReadFiles(*kind->second.schema)) {
        mark->second = &*kind->second.schema;
      }
    }
    if (mark->second == nullptr) {
      continue;
    }
    // A run's nodes keep their text only (compactNodes): parsed again, for these nodes only.
    node.read_files = node.raw.is_object()
                          ? readFiles(*mark->second, node.raw)
                          : readFiles(*mark->second, Json::parse(node.text, nullptr, false));
  }
}

std::filesystem::path resolveExperiencePath(const std::filesystem::path& arg) {
  std::string ext = arg.extension().string();
  if (ext == ".yaml" || ext == ".yml") {
    return arg;
  }
  return arg / "experience.yaml";
}

Experience experienceAt(const std::filesystem::path& yaml_path) {
  Experience exp;
  exp.source_name = yaml_path.string();
  std::error_code ec;
  // Normal form: `oe run .` names /dir/experience.yaml in its messages, not /dir/./experience.yaml.
  exp.file = std::filesystem::absolute(yaml_path, ec).lexically_normal();
  if (ec) {
    exp.file = yaml_path;
  }
  exp.dir = exp.file.parent_path();
  return exp;
}

LoadResult loadExperienceText(std::string_view text, const std::filesystem::path& yaml_path,
                              const LoadLimits& limits) {
  LoadResult result;
  Experience exp = experienceAt(yaml_path);
  if (text.size() > limits.max_bytes) {
    result.diagnostics.push_back(fileDiagnostic(exp, tooLarge(text.size(), limits)));
    return result;
  }
  // About one value per 8 bytes of YAML in graph-heavy files: no rehash while building.
  exp.marks.reserve(text.size() / 8);
  exp.key_marks.reserve(text.size() / 12);

  auto& diags = result.diagnostics;
  {
    const std::optional<std::string> sanitized = sanitizedUtf8(text);
    const std::string_view clean = sanitized ? std::string_view(*sanitized) : text;
    JsonBuilder builder(exp, clean, diags, limits);
    try {
      ViewBuffer buffer(clean);
      std::istream in(&buffer);
      YAML::Parser parser(in);
      parser.HandleNextDocument(builder);
    } catch (const YAML::Exception& e) {
      // The position is the diagnostic's file:line:column; the message does not repeat it.
      int line = e.mark.is_null() ? 0 : e.mark.line + 1;
      int column = e.mark.is_null() ? 0 : e.mark.column + 1;
      diags.push_back(fileDiagnostic(exp, "YAML parse error: " + e.msg, line, column));
      return result;
    } catch (const LimitExceeded& e) {
      diags.push_back(fileDiagnostic(exp, e.what(), e.mark.line, e.mark.column));
      return result;
    }
    exp.raw = builder.take();
  }
  if (!exp.raw.is_object()) {
    Mark m = exp.markOf("");
    diags.push_back(fileDiagnostic(exp, "experience.yaml must be a YAML mapping at the top level",
                                   m.line, m.column));
    return result;
  }

  for (const SchemaIssue& issue : structureChecker().check(exp.raw)) {
    diags.push_back(
        diagnosticAt(exp, issue.pointer, issue.message, Severity::kError, issue.at_key));
  }
  if (auto graph = exp.raw.find("graph"); graph != exp.raw.end() && graph->is_object()) {
    if (auto nodes = graph->find("nodes"); nodes != graph->end() && nodes->is_array()) {
      for (size_t i = 0; i < nodes->size(); ++i) {
        const Json& n = (*nodes)[i];
        if (auto oe = n.is_object() ? n.find("on_error") : n.end();
            n.is_object() && oe != n.end()) {
          checkOnError(exp, *oe, "/graph/nodes/" + std::to_string(i) + "/on_error", diags);
        }
      }
    }
  }
  // Report in file order, whatever check found them.
  std::stable_sort(diags.begin(), diags.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return a.line != b.line ? a.line < b.line : a.column < b.column;
  });
  if (hasErrors(diags)) {
    // The reference checks still get what is sound, so one `oe validate` reports both.
    exp.raw = shapedForModel(std::move(exp.raw));
    fill(exp);
    result.partial = std::move(exp);
    return result;
  }
  fill(exp);
  result.experience = std::move(exp);
  return result;
}

std::vector<Diagnostic> checkLoaded(const LoadResult& loaded, const KindCatalog& kinds, bool strict,
                                    ProgramCheck missing_program) {
  std::vector<Diagnostic> out = loaded.diagnostics;
  const Experience* exp = loaded.experience ? &*loaded.experience
                          : loaded.partial  ? &*loaded.partial
                                            : nullptr;
  if (exp == nullptr) {
    return out;
  }
  std::vector<Diagnostic> more =
      validateExperience(*exp, kinds, strict, /*check_files=*/true, missing_program);
  out.insert(out.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  std::stable_sort(out.begin(), out.end(), [](const Diagnostic& a, const Diagnostic& b) {
    const int la = a.line > 0 ? a.line : std::numeric_limits<int>::max();
    const int lb = b.line > 0 ? b.line : std::numeric_limits<int>::max();
    return la != lb ? la < lb : a.column < b.column;
  });
  return out;
}

LoadResult loadExperience(const std::filesystem::path& yaml_path, const LoadLimits& limits) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(yaml_path, ec);
  if (!ec && size > limits.max_bytes) {
    // Refused before it is read: reading it is the first gigabyte a hostile file costs.
    LoadResult result;
    result.diagnostics.push_back(
        fileDiagnostic(experienceAt(yaml_path), tooLarge(static_cast<size_t>(size), limits)));
    return result;
  }
  const std::optional<std::string> text = readFile(yaml_path);
  if (!text) {
    LoadResult result;
    Diagnostic d;
    d.file = yaml_path.string();
    d.message = "experience.yaml not found at " + yaml_path.string() +
                ". Pass a directory containing experience.yaml or the yaml file directly.";
    result.diagnostics.push_back(std::move(d));
    return result;
  }
  return loadExperienceText(*text, yaml_path, limits);
}

}  // namespace oe::spec
