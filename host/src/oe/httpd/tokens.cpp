#include "oe/httpd/tokens.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/stat.h>

#include <set>
#include <stdexcept>

#include "oe/common/file.hpp"

namespace oe::httpd {

namespace {

bool isBlank(char c) { return c == ' ' || c == '\t'; }

// The next field of `line` from `pos`, skipping blanks before it.
std::string_view nextField(std::string_view line, size_t& pos) {
  while (pos < line.size() && isBlank(line[pos])) {
    ++pos;
  }
  const size_t start = pos;
  while (pos < line.size() && !isBlank(line[pos])) {
    ++pos;
  }
  return line.substr(start, pos - start);
}

bool printableAscii(std::string_view text) {
  for (const char c : text) {
    if (c <= ' ' || c == '\x7f' || static_cast<unsigned char>(c) >= 0x80) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::array<uint8_t, 32> sha256(std::string_view text) {
  std::array<uint8_t, 32> out{};
  unsigned int len = 0;
  if (EVP_Digest(text.data(), text.size(), out.data(), &len, EVP_sha256(), nullptr) != 1 ||
      len != out.size()) {
    // Only an OpenSSL without SHA-256 gets here: nothing a user's input causes.
    throw std::runtime_error("OpenSSL could not compute a SHA-256 digest");
  }
  return out;
}

Result<TokenTable> TokenTable::parse(std::string_view text, std::string_view label) {
  TokenTable table;
  std::set<std::string> names;
  std::set<std::array<uint8_t, 32>> digests;
  size_t line_no = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    const std::string where = std::string(label) + ":" + std::to_string(line_no) + ": ";
    size_t pos = 0;
    const std::string_view scope = nextField(line, pos);
    if (scope.empty() || scope.front() == '#') {
      continue;
    }
    const std::string_view name = nextField(line, pos);
    const std::string_view token = nextField(line, pos);
    const std::string_view extra = nextField(line, pos);
    if (name.empty() || token.empty() || !extra.empty()) {
      return makeError(where +
                       "expected `<read|admin> <name> <token>` (three fields separated by " +
                       "spaces); fix or remove the line");
    }
    Token entry;
    if (scope == "read") {
      entry.scope = Scope::kRead;
    } else if (scope == "admin") {
      entry.scope = Scope::kAdmin;
    } else {
      return makeError(where + "unknown scope '" + std::string(scope).substr(0, 32) +
                       "': use `read` or `admin`");
    }
    if (!printableAscii(name) || !printableAscii(token)) {
      return makeError(where + "names and tokens are printable ASCII without spaces");
    }
    if (token.size() < kMinTokenLength) {
      return makeError(where + "the token of '" + std::string(name) + "' is shorter than " +
                       std::to_string(kMinTokenLength) +
                       " characters: use a random one, e.g. `openssl rand -hex 32`");
    }
    if (!names.insert(std::string(name)).second) {
      return makeError(where + "the name '" + std::string(name) +
                       "' is used twice: give each token its own name");
    }
    entry.name = std::string(name);
    entry.digest = sha256(token);
    if (!digests.insert(entry.digest).second) {
      return makeError(where + "the token of '" + std::string(name) +
                       "' is also another line's token: give each its own");
    }
    table.tokens_.push_back(std::move(entry));
  }
  return table;
}

Result<TokenTable> TokenTable::load(const std::filesystem::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) {
    return makeError("--token-file " + path.string() + ": not a readable file");
  }
  // The file holds admin credentials: a copy readable by every local user would hand them out.
  if ((info.st_mode & (S_IROTH | S_IWOTH | S_IWGRP)) != 0) {
    return makeError("--token-file " + path.string() +
                     ": other users may read or change it; run `chmod 600 " + path.string() +
                     "` (or 640 to share it with a group)");
  }
  const auto text = readFile(path);
  if (!text) {
    return makeError("--token-file " + path.string() + ": cannot be read");
  }
  auto table = parse(*text, path.string());
  if (table && table->tokens_.empty()) {
    return makeError("--token-file " + path.string() +
                     ": no token in it; add a line `admin <name> <token>`");
  }
  return table;
}

const Token* TokenTable::find(std::string_view presented) const {
  const auto digest = sha256(presented);
  const Token* found = nullptr;
  for (const Token& token : tokens_) {
    // No early exit: every entry costs the same whether it matches or not.
    const bool same = CRYPTO_memcmp(token.digest.data(), digest.data(), digest.size()) == 0;
    found = same ? &token : found;
  }
  return found;
}

}  // namespace oe::httpd
