// The secrets of a run (docs/policy.md, "Secrets"): the `${secret:NAME}` reference scanner, the
// values resolved once at run start, their last-moment substitution into what a plugin or process
// gets, and the redaction every sink applies (each value, raw and JSON-escaped, becomes
// `«secret:NAME»`).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/json.hpp"

namespace oe::secrets {

// One `${secret:NAME}` in a text: `name` views the text, [begin, end) is the whole reference.
struct SecretRef {
  std::string_view name;
  size_t begin = 0;
  size_t end = 0;
};

// NAME: [A-Za-z_][A-Za-z0-9_]*, at most 128 characters.
[[nodiscard]] bool isSecretName(std::string_view name);

// Every well-formed `${secret:NAME}` in `text`, in order. A `${secret:` not followed by a name
// and `}` is not a reference (it stays as written; `oe validate` reports it, see malformedAt).
[[nodiscard]] std::vector<SecretRef> findReferences(std::string_view text);

// The offset of the first `${secret:` in `text` that does not open a well-formed reference, or
// npos.
[[nodiscard]] size_t malformedAt(std::string_view text);

// What every sink shows instead of the value: «secret:NAME».
[[nodiscard]] std::string placeholder(std::string_view name);

// The names every string of `value` (keys included) references, appended to `names` (sorted,
// unique).
void collectReferences(const Json& value, std::vector<std::string>& names);

// The shortest value a secret may have: a shorter one would be redacted out of unrelated text
// (a word such as "none" is everywhere).
inline constexpr size_t kMinSecretLength = 8;
// The shortest provider key that is redacted: real keys are far longer ("sk-" and 40+
// characters); a short one is a stand-in such as OPENAI_API_KEY=none for a local server, and
// redacting it would rewrite every "none" of the run.
inline constexpr size_t kMinProviderKeyLength = 16;

// A run's secrets: name -> value. Built once at run start, read-only afterwards (shared by every
// thread without locks). Empty (no secret declared, no provider key held) costs one branch per
// sink.
class SecretSet {
 public:
  // Adds (or replaces) a secret. An empty value is ignored: there is nothing to redact.
  void add(std::string name, std::string value);

  // Adds a value that is redacted as «secret:NAME» but never substituted for `${secret:NAME}`
  // (the provider keys oe reads: no experience can ask for them by name). Empty: ignored.
  void addRedactOnly(std::string name, std::string value);
  // Takes `other`'s secrets (a nested run takes its parent's): each whose name this set lacks
  // is added; one whose name it has with another value is still redacted (as that name), never
  // substituted; what `other` only redacts, this set only redacts.
  void addMissing(const SecretSet& other);

  // Nothing to redact (then nothing to substitute either).
  [[nodiscard]] bool empty() const { return forms_.empty(); }
  // The value of `name` (a secret added with add), or null.
  [[nodiscard]] const std::string* find(std::string_view name) const;

  // `text` with each `${secret:NAME}` of a known secret replaced by its value; unknown names stay
  // as written. `json_string`: the text is JSON, the references are inside its strings, and the
  // value is inserted JSON-escaped.
  [[nodiscard]] std::string substitute(std::string_view text, bool json_string) const;
  // The same over a JSON value: every string (not the keys) substituted.
  [[nodiscard]] Json substitute(const Json& value) const;
  // `target` is `source` resolved (a node's `args` with its `$.path` leaves filled in, inside a
  // bundle with more members): each string leaf of `source` that references a secret and is
  // still the same string in `target` gets the values. Nothing else of `target` is touched, so a
  // value that came from elsewhere (the state, an edge, --args) is never substituted: a tool's
  // output that names a secret does not make the next node see it.
  void substituteWritten(const Json& source, Json& target) const;

  // Replaces every secret value in `text` (raw, JSON-escaped, and JSON-escaped twice: a JSON
  // document inside a JSON string) with «secret:NAME». Longer values first, so a value that
  // contains another is replaced whole. No-op (and no allocation) when nothing matches.
  void redact(std::string& text) const;
  [[nodiscard]] std::string redacted(std::string_view text) const;
  // Every string of `value`, keys included, redacted in place.
  void redact(Json& value) const;
  // Whether `text` holds any value in any of its forms.
  [[nodiscard]] bool leaks(std::string_view text) const;

  // A keyed digest (HMAC-SHA256 under `key`, hex) of the values of `names`, for a cache key: the
  // same values give the same digest, the digest says nothing of them without the key. Names not
  // in the set count as absent.
  [[nodiscard]] std::string keyedDigest(const std::vector<std::string>& names,
                                        std::string_view key) const;

 private:
  struct Form {
    std::string text;         // a form of a value
    std::string replacement;  // «secret:NAME»
  };
  struct Entry {
    std::string name;
    std::string value;
  };
  void rebuildForms();

  std::vector<Entry> entries_;
  std::vector<Entry> redact_only_;  // addMissing's values under a name entries_ has
  std::vector<Form> forms_;         // every form of every value, longest first
};

// HMAC-SHA256 of `data` under `key`, lowercase hex.
[[nodiscard]] std::string hmacSha256Hex(std::string_view key, std::string_view data);

}  // namespace oe::secrets
