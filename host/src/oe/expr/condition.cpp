// Tokenizer, parser and evaluator of when/until expressions; see condition.hpp.
#include "oe/expr/condition.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>

#include "oe/expr/ident.hpp"
#include "oe/expr/js_value.hpp"

namespace oe::expr {

// Named, not anonymous: Condition::Parser (external linkage) holds a vector of them.
namespace condition_tokens {

enum class Tok : uint8_t { kLParen, kRParen, kPath, kString, kNumber, kOp, kNot, kIdent };

struct Token {
  Tok type = Tok::kIdent;
  size_t pos = 0;         // byte offset in the source
  std::string_view text;  // the token as written (a string token: without its quotes)
};

}  // namespace condition_tokens

namespace {

using condition_tokens::Tok;
using condition_tokens::Token;

// Deep enough for any hand-written condition; bounds the recursion of the parser.
constexpr int kMaxDepth = 200;

bool isDigit(char c) { return c >= '0' && c <= '9'; }

Error errorAt(size_t pos, const std::string& message) {
  return makeError("column " + std::to_string(pos + 1) + ": " + message);
}

// The whole UTF-8 sequence starting at `pos`, so a message never shows half a character.
std::string_view charAt(std::string_view src, size_t pos) {
  auto c = static_cast<unsigned char>(src[pos]);
  size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
  return src.substr(pos, n);
}

Result<std::vector<Token>> tokenize(std::string_view src) {
  std::vector<Token> out;
  size_t i = 0;
  const size_t n = src.size();
  while (i < n) {
    char c = src[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++i;
      continue;
    }
    if (c == '(' || c == ')') {
      out.push_back({c == '(' ? Tok::kLParen : Tok::kRParen, i, src.substr(i, 1)});
      ++i;
      continue;
    }
    if (c == '$' && i + 1 < n && src[i + 1] == '.') {
      size_t j = i + 2;
      while (j < n && (isIdentChar(src[j]) || src[j] == '.')) {
        ++j;
      }
      out.push_back({Tok::kPath, i, src.substr(i, j - i)});
      i = j;
      continue;
    }
    if (c == '\'' || c == '"') {
      size_t end = src.find(c, i + 1);
      if (end == std::string_view::npos) {
        return errorAt(i, "Unterminated string in expression: " + std::string(src));
      }
      out.push_back({Tok::kString, i, src.substr(i + 1, end - i - 1)});
      i = end + 1;
      continue;
    }
    if (isDigit(c) || (c == '-' && i + 1 < n && isDigit(src[i + 1]))) {
      size_t j = i + 1;
      while (j < n && (isDigit(src[j]) || src[j] == '.')) {
        ++j;
      }
      out.push_back({Tok::kNumber, i, src.substr(i, j - i)});
      i = j;
      continue;
    }
    if (i + 1 < n) {
      std::string_view two = src.substr(i, 2);
      if (two == "==" || two == "!=" || two == ">=" || two == "<=" || two == "&&" || two == "||") {
        out.push_back({Tok::kOp, i, two});
        i += 2;
        continue;
      }
    }
    if (c == '>' || c == '<') {
      out.push_back({Tok::kOp, i, src.substr(i, 1)});
      ++i;
      continue;
    }
    if (c == '!') {
      out.push_back({Tok::kNot, i, src.substr(i, 1)});
      ++i;
      continue;
    }
    if (isIdentStart(c)) {
      size_t j = i + 1;
      while (j < n && isIdentChar(src[j])) {
        ++j;
      }
      out.push_back({Tok::kIdent, i, src.substr(i, j - i)});
      i = j;
      continue;
    }
    return errorAt(i, "Unexpected character \"" + std::string(charAt(src, i)) +
                          "\" in expression: " + std::string(src));
  }
  return out;
}

// JS parseFloat of a number token ("1.2.3" -> 1.2): the longest prefix that is a number.
double parseNumber(std::string_view text) {
  double v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

}  // namespace

class Condition::Parser {
 public:
  Parser(Condition& c, std::string_view src, std::vector<Token> tokens)
      : c_(c), src_(src), tokens_(std::move(tokens)) {}

  Result<uint32_t> parseAll() {
    auto root = parseOr(0);
    if (!root) {
      return root;
    }
    if (i_ < tokens_.size()) {
      const Token& t = tokens_[i_];
      return errorAt(t.pos,
                     "Unexpected token \"" + tokenText(t) + "\" after the end of the expression");
    }
    return root;
  }

 private:
  const Token* peek() const { return i_ < tokens_.size() ? &tokens_[i_] : nullptr; }

  bool peekOp(std::string_view op) const {
    const Token* t = peek();
    return t != nullptr && t->type == Tok::kOp && t->text == op;
  }

  std::string tokenText(const Token& t) const {
    if (t.type == Tok::kString) {
      return std::string(src_.substr(t.pos, t.text.size() + 2));  // with its quotes
    }
    return std::string(t.text);
  }

  Error endError() const { return errorAt(src_.size(), "Unexpected end of expression"); }

  uint32_t add(Node node) {
    c_.nodes_.push_back(node);
    return static_cast<uint32_t>(c_.nodes_.size() - 1);
  }

  uint32_t addLiteral(Json value) {
    c_.literals_.push_back(std::move(value));
    return add(Node{Op::kLiteral, static_cast<uint32_t>(c_.literals_.size() - 1), 0, false});
  }

  Result<uint32_t> parseOr(int depth) {
    if (depth > kMaxDepth) {
      return errorAt(peek() != nullptr ? peek()->pos : src_.size(),
                     "Expression is nested too deeply");
    }
    auto left = parseAnd(depth);
    while (left && peekOp("||")) {
      ++i_;
      auto right = parseAnd(depth);
      if (!right) {
        return right;
      }
      left = add(Node{Op::kOr, *left, *right, false});
    }
    return left;
  }

  Result<uint32_t> parseAnd(int depth) {
    auto left = parseCmp(depth);
    while (left && peekOp("&&")) {
      ++i_;
      auto right = parseCmp(depth);
      if (!right) {
        return right;
      }
      left = add(Node{Op::kAnd, *left, *right, false});
    }
    return left;
  }

  Result<uint32_t> parseCmp(int depth) {
    auto left = parseUnary(depth);
    if (!left) {
      return left;
    }
    const Token* t = peek();
    if (t == nullptr || t->type != Tok::kOp || t->text == "&&" || t->text == "||") {
      return left;
    }
    Op op = t->text == "=="   ? Op::kEq
            : t->text == "!=" ? Op::kNe
            : t->text == ">"  ? Op::kGt
            : t->text == "<"  ? Op::kLt
            : t->text == ">=" ? Op::kGe
                              : Op::kLe;
    ++i_;
    auto right = parseUnary(depth);
    if (!right) {
      return right;
    }
    return add(Node{op, *left, *right, false});
  }

  Result<uint32_t> parseUnary(int depth) {
    const Token* t = peek();
    if (t != nullptr && t->type == Tok::kNot) {
      ++i_;
      if (depth + 1 > kMaxDepth) {
        return errorAt(t->pos, "Expression is nested too deeply");
      }
      auto operand = parseUnary(depth + 1);
      if (!operand) {
        return operand;
      }
      return add(Node{Op::kNot, *operand, 0, false});
    }
    return parseAtom(depth);
  }

  Result<uint32_t> parseAtom(int depth) {
    const Token* t = peek();
    if (t == nullptr) {
      return endError();
    }
    ++i_;
    switch (t->type) {
      case Tok::kLParen: {
        auto inner = parseOr(depth + 1);
        if (!inner) {
          return inner;
        }
        if (auto close = expectClose(); !close) {
          return close.error();
        }
        return inner;
      }
      case Tok::kNumber:
        return addLiteral(Json(parseNumber(t->text)));
      case Tok::kString:
        return addLiteral(Json(std::string(t->text)));
      case Tok::kPath:
        return addPath(t->text.substr(2));
      case Tok::kIdent:
        return parseIdent(*t, depth);
      default:
        return errorAt(t->pos, "Unexpected token \"" + tokenText(*t) + "\"");
    }
  }

  Result<uint32_t> parseIdent(const Token& t, int depth) {
    if (t.text == "true" || t.text == "false") {
      return addLiteral(Json(t.text == "true"));
    }
    if (t.text == "null") {
      return addLiteral(Json(nullptr));
    }
    const Token* next = peek();
    if (next == nullptr || next->type != Tok::kLParen) {
      return errorAt(t.pos, "Unexpected identifier \"" + std::string(t.text) + "\" without parens");
    }
    if (t.text != "length") {
      return errorAt(t.pos, "Unknown function: " + std::string(t.text));
    }
    ++i_;  // the '('
    const Token* first = peek();
    if (first != nullptr && first->type == Tok::kRParen) {
      ++i_;
      return add(Node{Op::kLength, 0, 0, false});
    }
    auto arg = parseOr(depth + 1);
    if (!arg) {
      return arg;
    }
    if (auto close = expectClose(); !close) {
      return close.error();
    }
    return add(Node{Op::kLength, *arg, 0, true});
  }

  Result<void> expectClose() {
    const Token* t = peek();
    if (t == nullptr) {
      return endError();
    }
    if (t->type != Tok::kRParen) {
      return errorAt(t->pos, "Expected \")\" but found \"" + tokenText(*t) + "\"");
    }
    ++i_;
    return {};
  }

  uint32_t addPath(std::string_view rest) {
    std::vector<std::string> segments;
    size_t start = 0;
    while (true) {
      size_t dot = rest.find('.', start);
      segments.emplace_back(rest.substr(start, dot == std::string_view::npos ? dot : dot - start));
      if (dot == std::string_view::npos) {
        break;
      }
      start = dot + 1;
    }
    if (std::find(c_.fields_.begin(), c_.fields_.end(), segments.front()) == c_.fields_.end()) {
      c_.fields_.push_back(segments.front());
    }
    c_.paths_.push_back(std::move(segments));
    return add(Node{Op::kPath, static_cast<uint32_t>(c_.paths_.size() - 1), 0, false});
  }

  Condition& c_;
  std::string_view src_;
  std::vector<Token> tokens_;
  size_t i_ = 0;
};

Result<Condition> Condition::compile(std::string_view source) {
  Condition c;
  c.source_ = std::string(source);
  auto tokens = tokenize(c.source_);
  if (!tokens) {
    return std::move(tokens).error();
  }
  Parser parser(c, c.source_, std::move(tokens.value()));
  auto root = parser.parseAll();
  if (!root) {
    return std::move(root).error();
  }
  c.root_ = *root;
  return c;
}

namespace detail {

// The result of evaluating a sub-expression: a JSON value held elsewhere (state or literal), a
// computed boolean or number, or undefined. Nothing is copied while evaluating.
struct EvalValue {
  enum class Kind : uint8_t { kUndefined, kRef, kBool, kNumber };
  Kind kind = Kind::kUndefined;
  bool b = false;
  double n = 0;
  const Json* ref = nullptr;

  static EvalValue undefined() { return EvalValue{}; }
  static EvalValue boolean(bool v) { return EvalValue{Kind::kBool, v, 0, nullptr}; }
  static EvalValue number(double v) { return EvalValue{Kind::kNumber, false, v, nullptr}; }
  static EvalValue of(const Json& v) { return EvalValue{Kind::kRef, false, 0, &v}; }
};

}  // namespace detail

namespace {

using Value = detail::EvalValue;
using Kind = detail::EvalValue::Kind;

enum class JsType : uint8_t { kUndefined, kNull, kBool, kNumber, kString, kArray, kObject };

JsType typeOf(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined:
      return JsType::kUndefined;
    case Kind::kBool:
      return JsType::kBool;
    case Kind::kNumber:
      return JsType::kNumber;
    default:
      break;
  }
  switch (v.ref->type()) {
    case Json::value_t::null:
      return JsType::kNull;
    case Json::value_t::boolean:
      return JsType::kBool;
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return JsType::kNumber;
    case Json::value_t::string:
      return JsType::kString;
    case Json::value_t::array:
      return JsType::kArray;
    case Json::value_t::discarded:
      return JsType::kUndefined;
    default:
      return JsType::kObject;
  }
}

bool truthyValue(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined:
      return false;
    case Kind::kBool:
      return v.b;
    case Kind::kNumber:
      return v.n != 0 && !std::isnan(v.n);
    default:
      return truthy(*v.ref);
  }
}

double numberOf(const Value& v) {
  if (v.kind == Kind::kNumber) {
    return v.n;
  }
  if (v.kind == Kind::kBool) {
    return v.b ? 1 : 0;
  }
  return v.ref->is_number() || v.ref->is_boolean() ? toNumber(*v.ref) : 0.0;
}

bool boolOf(const Value& v) { return v.kind == Kind::kBool ? v.b : v.ref->get<bool>(); }

// JS `===`. Arrays and objects are equal only when they are the same value (identity), which
// two paths to the same state value are, as in JS.
bool strictEqual(const Value& l, const Value& r) {
  if (l.kind == Kind::kRef && r.kind == Kind::kRef && l.ref == r.ref &&
      !(l.ref->is_number_float() && std::isnan(l.ref->get<double>()))) {
    return true;
  }
  JsType tl = typeOf(l);
  JsType tr = typeOf(r);
  if (tl != tr) {
    return false;
  }
  switch (tl) {
    case JsType::kUndefined:
    case JsType::kNull:
      return true;
    case JsType::kBool:
      return boolOf(l) == boolOf(r);
    case JsType::kNumber:
      return numberOf(l) == numberOf(r);
    case JsType::kString:
      return l.ref->get_ref<const std::string&>() == r.ref->get_ref<const std::string&>();
    default:
      return false;  // distinct arrays/objects
  }
}

// A primitive as JS's relational comparison sees it (ToPrimitive; arrays/objects as strings).
struct Prim {
  bool is_string = false;
  const std::string* sp = nullptr;
  std::string owned;
  double num = 0;

  [[nodiscard]] const std::string& str() const { return sp != nullptr ? *sp : owned; }
  [[nodiscard]] double number() const { return is_string ? stringToNumber(str()) : num; }
};

Prim toPrim(const Value& v) {
  Prim p;
  switch (typeOf(v)) {
    case JsType::kString:
      p.is_string = true;
      p.sp = &v.ref->get_ref<const std::string&>();
      break;
    case JsType::kArray:
    case JsType::kObject:
      p.is_string = true;
      p.owned = toJsString(*v.ref);
      break;
    case JsType::kNull:
      p.num = 0;
      break;
    default:
      p.num = numberOf(v);
  }
  return p;
}

// a < b with JS semantics; nullopt when JS says undefined (a NaN on either side).
std::optional<bool> lessThan(const Prim& a, const Prim& b) {
  if (a.is_string && b.is_string) {
    return a.str() < b.str();
  }
  double x = a.number();
  double y = b.number();
  if (std::isnan(x) || std::isnan(y)) {
    return std::nullopt;
  }
  return x < y;
}

}  // namespace

bool Condition::isNullLiteral(uint32_t node) const {
  const Node& n = nodes_[node];
  return n.op == Op::kLiteral && literals_[n.a].is_null();
}

Value Condition::compare(const Node& node, const StateReader& state) const {
  Value l = eval(node.a, state);
  Value r = eval(node.b, state);
  const bool l_undef = l.kind == Kind::kUndefined;
  const bool r_undef = r.kind == Kind::kUndefined;
  if (l_undef || r_undef) {
    // D8: a missing field equals the `null` literal (`$.x == null` asks "is x unset?").
    if ((node.op == Op::kEq || node.op == Op::kNe) &&
        ((l_undef && isNullLiteral(node.b)) || (r_undef && isNullLiteral(node.a)))) {
      return Value::boolean(node.op == Op::kEq);
    }
    // Upstream: with a missing side, `!=` is `l !== r` and every other operator is false.
    return Value::boolean(node.op == Op::kNe && !(l_undef && r_undef));
  }
  switch (node.op) {
    case Op::kEq:
      return Value::boolean(strictEqual(l, r));
    case Op::kNe:
      return Value::boolean(!strictEqual(l, r));
    default:
      break;
  }
  Prim pl = toPrim(l);
  Prim pr = toPrim(r);
  std::optional<bool> result;
  switch (node.op) {
    case Op::kLt:
      result = lessThan(pl, pr);
      break;
    case Op::kGt:
      result = lessThan(pr, pl);
      break;
    case Op::kLe:
      result = lessThan(pr, pl);
      if (result) {
        result = !*result;
      }
      break;
    default:  // kGe
      result = lessThan(pl, pr);
      if (result) {
        result = !*result;
      }
  }
  return Value::boolean(result.value_or(false));
}

Value Condition::eval(uint32_t index, const StateReader& state) const {
  const Node& node = nodes_[index];
  switch (node.op) {
    case Op::kLiteral:
      return Value::of(literals_[node.a]);
    case Op::kPath: {
      const auto& segments = paths_[node.a];
      const Json* root = state.field(segments.front());
      if (root == nullptr) {
        return Value::undefined();
      }
      Lookup cur = Lookup::of(*root);
      for (size_t i = 1; i < segments.size() && cur.defined(); ++i) {
        cur = lookupSegment(cur, segments[i]);
      }
      if (cur.ref != nullptr) {
        return Value::of(*cur.ref);
      }
      return cur.length >= 0 ? Value::number(static_cast<double>(cur.length)) : Value::undefined();
    }
    case Op::kNot:
      return Value::boolean(!truthyValue(eval(node.a, state)));
    case Op::kAnd:
      return Value::boolean(truthyValue(eval(node.a, state)) && truthyValue(eval(node.b, state)));
    case Op::kOr:
      return Value::boolean(truthyValue(eval(node.a, state)) || truthyValue(eval(node.b, state)));
    case Op::kLength: {
      if (!node.has_arg) {
        return Value::number(0);
      }
      Value v = eval(node.a, state);
      if (v.kind == Kind::kRef && v.ref->is_array()) {
        return Value::number(static_cast<double>(v.ref->size()));
      }
      if (v.kind == Kind::kRef && v.ref->is_string()) {
        return Value::number(
            static_cast<double>(utf16Length(v.ref->get_ref<const std::string&>())));
      }
      return Value::number(0);
    }
    default:
      return compare(node, state);
  }
}

Json Condition::evaluate(const StateReader& state) const {
  if (nodes_.empty()) {
    return Json(Json::value_t::discarded);
  }
  Value v = eval(root_, state);
  switch (v.kind) {
    case Kind::kUndefined:
      return Json(Json::value_t::discarded);
    case Kind::kBool:
      return Json(v.b);
    case Kind::kNumber:
      // Whole numbers come back as integers so they print as JS prints them ("3", not "3.0").
      if (std::isfinite(v.n) && std::trunc(v.n) == v.n && std::abs(v.n) < 9.0e15) {
        return Json(static_cast<int64_t>(v.n));
      }
      return Json(v.n);
    default:
      return *v.ref;
  }
}

bool Condition::test(const StateReader& state) const {
  return !nodes_.empty() && truthyValue(eval(root_, state));
}

}  // namespace oe::expr
