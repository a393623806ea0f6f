// The secret set: reference scanning, substitution and redaction (secret_set.hpp).
#include "oe/secrets/secret_set.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <array>

namespace oe::secrets {
namespace {

constexpr std::string_view kOpen = "${secret:";
constexpr size_t kMaxNameLength = 128;

bool nameStart(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool nameChar(char c) { return nameStart(c) || (c >= '0' && c <= '9'); }

// The end of the reference opened at `at` (one past its `}`), or npos when it is not one.
size_t referenceEnd(std::string_view text, size_t at) {
  size_t i = at + kOpen.size();
  const size_t name_begin = i;
  if (i >= text.size() || !nameStart(text[i])) {
    return std::string_view::npos;
  }
  while (i < text.size() && nameChar(text[i])) {
    ++i;
  }
  if (i - name_begin > kMaxNameLength || i >= text.size() || text[i] != '}') {
    return std::string_view::npos;
  }
  return i + 1;
}

// The inside of a JSON string holding `text` (no quotes); invalid UTF-8 replaced, as oe's
// dumps do not throw on it either.
std::string jsonEscaped(std::string_view text) {
  std::string quoted = Json(std::string(text)).dump(-1, ' ', false, Json::error_handler_t::replace);
  return quoted.substr(1, quoted.size() - 2);
}

void collectIn(std::string_view text, std::vector<std::string>& names) {
  if (text.find(kOpen) == std::string_view::npos) {
    return;
  }
  for (const SecretRef& ref : findReferences(text)) {
    names.emplace_back(ref.name);
  }
}

void collectAll(const Json& value, std::vector<std::string>& names) {
  if (value.is_string()) {
    collectIn(value.get_ref<const std::string&>(), names);
  } else if (value.is_object()) {
    for (const auto& [key, member] : value.items()) {
      collectIn(key, names);
      collectAll(member, names);
    }
  } else if (value.is_array()) {
    for (const Json& element : value) {
      collectAll(element, names);
    }
  }
}

}  // namespace

bool isSecretName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength || !nameStart(name[0])) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), nameChar);
}

std::vector<SecretRef> findReferences(std::string_view text) {
  std::vector<SecretRef> refs;
  size_t at = text.find(kOpen);
  while (at != std::string_view::npos) {
    const size_t end = referenceEnd(text, at);
    if (end == std::string_view::npos) {
      at = text.find(kOpen, at + 1);
      continue;
    }
    const size_t name_begin = at + kOpen.size();
    refs.push_back(SecretRef{text.substr(name_begin, end - 1 - name_begin), at, end});
    at = text.find(kOpen, end);
  }
  return refs;
}

size_t malformedAt(std::string_view text) {
  for (size_t at = text.find(kOpen); at != std::string_view::npos; at = text.find(kOpen, at + 1)) {
    if (referenceEnd(text, at) == std::string_view::npos) {
      return at;
    }
  }
  return std::string_view::npos;
}

std::string placeholder(std::string_view name) {
  std::string text = "\xC2\xABsecret:";  // «
  text += name;
  text += "\xC2\xBB";  // »
  return text;
}

void collectReferences(const Json& value, std::vector<std::string>& names) {
  collectAll(value, names);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
}

void SecretSet::add(std::string name, std::string value) {
  if (value.empty()) {
    return;
  }
  auto same = std::find_if(entries_.begin(), entries_.end(),
                           [&name](const Entry& entry) { return entry.name == name; });
  if (same != entries_.end()) {
    same->value = std::move(value);
  } else {
    entries_.push_back(Entry{std::move(name), std::move(value)});
  }
  rebuildForms();
}

void SecretSet::addRedactOnly(std::string name, std::string value) {
  if (value.empty()) {
    return;
  }
  redact_only_.push_back(Entry{std::move(name), std::move(value)});
  rebuildForms();
}

void SecretSet::addMissing(const SecretSet& other) {
  bool added = false;
  for (const Entry& entry : other.entries_) {
    const std::string* own = find(entry.name);
    if (own == nullptr) {
      entries_.push_back(entry);
      added = true;
    } else if (*own != entry.value) {
      redact_only_.push_back(entry);
      added = true;
    }
  }
  for (const Entry& entry : other.redact_only_) {
    redact_only_.push_back(entry);
    added = true;
  }
  if (added) {
    rebuildForms();
  }
}

void SecretSet::rebuildForms() {
  forms_.clear();
  for (const auto* list : {&entries_, &redact_only_}) {
    for (const Entry& entry : *list) {
      const std::string replacement = placeholder(entry.name);
      std::string once = jsonEscaped(entry.value);
      std::string twice = jsonEscaped(once);
      forms_.push_back(Form{entry.value, replacement});
      if (once != entry.value) {
        forms_.push_back(Form{once, replacement});
      }
      if (twice != once) {
        forms_.push_back(Form{std::move(twice), replacement});
      }
    }
  }
  std::stable_sort(forms_.begin(), forms_.end(),
                   [](const Form& a, const Form& b) { return a.text.size() > b.text.size(); });
}

const std::string* SecretSet::find(std::string_view name) const {
  for (const Entry& entry : entries_) {
    if (entry.name == name) {
      return &entry.value;
    }
  }
  return nullptr;
}

std::string SecretSet::substitute(std::string_view text, bool json_string) const {
  std::string out;
  size_t done = 0;
  for (const SecretRef& ref : findReferences(text)) {
    const std::string* value = find(ref.name);
    if (value == nullptr) {
      continue;
    }
    out.append(text.substr(done, ref.begin - done));
    out += json_string ? jsonEscaped(*value) : *value;
    done = ref.end;
  }
  if (done == 0) {
    return std::string(text);
  }
  out.append(text.substr(done));
  return out;
}

Json SecretSet::substitute(const Json& value) const {
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    return text.find(kOpen) == std::string::npos ? value : Json(substitute(text, false));
  }
  if (value.is_object()) {
    Json out = Json::object();
    for (const auto& [key, member] : value.items()) {
      out[key] = substitute(member);
    }
    return out;
  }
  if (value.is_array()) {
    Json out = Json::array();
    for (const Json& element : value) {
      out.push_back(substitute(element));
    }
    return out;
  }
  return value;
}

void SecretSet::substituteWritten(const Json& source, Json& target) const {
  if (source.is_string()) {
    const auto& text = source.get_ref<const std::string&>();
    if (target.is_string() && text.find(kOpen) != std::string::npos &&
        target.get_ref<const std::string&>() == text) {
      target = substitute(text, false);
    }
  } else if (source.is_object() && target.is_object()) {
    for (const auto& [key, member] : source.items()) {
      if (auto at = target.find(key); at != target.end()) {
        substituteWritten(member, *at);
      }
    }
  } else if (source.is_array() && target.is_array()) {
    for (size_t i = 0; i < source.size() && i < target.size(); ++i) {
      substituteWritten(source[i], target[i]);
    }
  }
}

void SecretSet::redact(std::string& text) const {
  for (const Form& form : forms_) {
    size_t at = text.find(form.text);
    while (at != std::string::npos) {
      text.replace(at, form.text.size(), form.replacement);
      at = text.find(form.text, at + form.replacement.size());
    }
  }
}

std::string SecretSet::redacted(std::string_view text) const {
  std::string out(text);
  redact(out);
  return out;
}

void SecretSet::redact(Json& value) const {
  if (forms_.empty()) {
    return;
  }
  if (value.is_string()) {
    redact(value.get_ref<std::string&>());
  } else if (value.is_object()) {
    bool keys_leak = false;
    for (auto& [key, member] : value.items()) {
      keys_leak = keys_leak || leaks(key);
      redact(member);
    }
    if (keys_leak) {
      Json renamed = Json::object();
      for (auto& [key, member] : value.items()) {
        renamed[redacted(key)] = std::move(member);
      }
      value = std::move(renamed);
    }
  } else if (value.is_array()) {
    for (Json& element : value) {
      redact(element);
    }
  }
}

bool SecretSet::leaks(std::string_view text) const {
  return std::any_of(forms_.begin(), forms_.end(), [text](const Form& form) {
    return text.find(form.text) != std::string_view::npos;
  });
}

std::string SecretSet::keyedDigest(const std::vector<std::string>& names,
                                   std::string_view key) const {
  // name NUL value NUL ..., names sorted: the digest does not depend on their order.
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  std::string data;
  for (const std::string& name : sorted) {
    data += name;
    data += '\0';
    if (const std::string* value = find(name)) {
      data += '1';
      data += *value;
    } else {
      data += '0';
    }
    data += '\0';
  }
  return hmacSha256Hex(key, data);
}

std::string hmacSha256Hex(std::string_view key, std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest.data(), &length);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(static_cast<size_t>(length) * 2);
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0x0f];
  }
  return hex;
}

}  // namespace oe::secrets
