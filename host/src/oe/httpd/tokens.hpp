// `oe serve`'s bearer tokens: the token file (`<scope> <name> <token>` a line, docs/serve.md,
// "Tokens") and the lookup of a request's token, in constant time over its SHA-256.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/result.hpp"
#include "oe/httpd/http.hpp"

namespace oe::httpd {

// Tokens shorter than this are refused: a bearer token is the only thing between a remote
// caller and the admin routes.
inline constexpr size_t kMinTokenLength = 16;

struct Token {
  Scope scope = Scope::kRead;        // kRead or kAdmin
  std::string name;                  // for logs and Request::token_name; never the secret
  std::array<uint8_t, 32> digest{};  // SHA-256 of the token; the token itself is not kept
};

class TokenTable {
 public:
  // Parses a token file's text. `label` names the file in errors ("tokens.txt:3: ...").
  // Blank lines and lines starting with '#' are skipped; every other line is
  // `<read|admin> <name> <token>` separated by spaces or tabs. Names and tokens must be unique.
  static Result<TokenTable> parse(std::string_view text, std::string_view label);
  // Reads and parses the file. Refused when the file is not a regular file, when others than its
  // owner's group may read it, or when anyone but its owner may write it (the error says which
  // chmod fixes it).
  static Result<TokenTable> load(const std::filesystem::path& path);

  // The token a request presented (the text after "Bearer "), or null. Every entry is compared,
  // each with CRYPTO_memcmp over the SHA-256 digests, so the time taken says nothing about which
  // bytes matched or which entry it was.
  [[nodiscard]] const Token* find(std::string_view presented) const;

  [[nodiscard]] const std::vector<Token>& tokens() const { return tokens_; }

 private:
  std::vector<Token> tokens_;
};

// SHA-256 of `text`.
std::array<uint8_t, 32> sha256(std::string_view text);

}  // namespace oe::httpd
