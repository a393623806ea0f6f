// Reading a run's secrets from the environment and from files (resolve.hpp).
#include "oe/secrets/resolve.hpp"

#include <fcntl.h>
#include <openssl/rand.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace oe::secrets {

Result<std::string> readValue(const Declaration& declaration, const std::filesystem::path& dir) {
  std::string value;
  if (!declaration.env.empty()) {
    const char* set = std::getenv(declaration.env.c_str());
    if (set == nullptr || *set == '\0') {
      return makeError("secret \"" + declaration.name + "\" reads the environment variable " +
                       declaration.env + ", which is not set; set " + declaration.env +
                       " before running");
    }
    value = set;
  } else {
    const std::filesystem::path path = (dir / declaration.file).lexically_normal();
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      return makeError("secret \"" + declaration.name + "\" reads the file " + path.string() +
                       ", which cannot be read; create it (one line, the value) or fix "
                       "secrets." +
                       declaration.name + ".file");
    }
    std::ostringstream text;
    text << in.rdbuf();
    value = std::move(text).str();
    if (value.ends_with("\r\n")) {
      value.resize(value.size() - 2);
    } else if (value.ends_with('\n')) {
      value.pop_back();
    }
    if (value.empty()) {
      return makeError("secret \"" + declaration.name + "\": the file " + path.string() +
                       " is empty; write the value into it");
    }
  }
  if (value.size() < kMinSecretLength) {
    return makeError("secret \"" + declaration.name + "\" is shorter than " +
                     std::to_string(kMinSecretLength) +
                     " characters: oe could not redact it without mangling other text; use a "
                     "longer value");
  }
  return value;
}

Resolved resolve(const std::vector<Declaration>& declarations, const std::filesystem::path& dir) {
  Resolved resolved;
  for (const Declaration& declaration : declarations) {
    auto value = readValue(declaration, dir);
    if (!value) {
      resolved.problems.push_back(
          Problem{declaration.name, declaration.line, value.error().message});
      continue;
    }
    resolved.set.add(declaration.name, std::move(*value));
  }
  return resolved;
}

const std::vector<std::string>& providerKeyVariables() {
  static const std::vector<std::string> kNames = {"ANTHROPIC_API_KEY", "OPENAI_API_KEY"};
  return kNames;
}

void addProviderKeys(SecretSet& set) {
  for (const std::string& name : providerKeyVariables()) {
    const char* value = std::getenv(name.c_str());
    // A key too short to be real is not redacted (it would mangle unrelated text).
    if (value != nullptr && std::string_view(value).size() >= kMinProviderKeyLength) {
      set.addRedactOnly(name, value);
    }
  }
}

Result<std::string> storeKey(const std::filesystem::path& file) {
  constexpr size_t kHexLength = 64;
  auto read = [&file]() -> std::string {
    std::ifstream in(file);
    std::string text;
    std::getline(in, text);
    return text;
  };
  if (std::string key = read(); key.size() == kHexLength) {
    return key;
  }
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  std::array<unsigned char, kHexLength / 2> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    return makeError("cannot make the secrets key " + file.string() + ": no random bytes");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string key;
  for (unsigned char byte : bytes) {
    key += kHex[byte >> 4];
    key += kHex[byte & 0x0f];
  }
  const std::string tmp = file.string() + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return makeError("cannot write the secrets key " + tmp + ": " + std::strerror(errno));
  }
  const std::string line = key + "\n";
  const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  // link(2) fails when another run made the key first: then that one is the store's.
  if (!written || (::link(tmp.c_str(), file.c_str()) != 0 && errno != EEXIST)) {
    const std::string cause = std::strerror(errno);
    ::unlink(tmp.c_str());
    return makeError("cannot write the secrets key " + file.string() + ": " + cause);
  }
  ::unlink(tmp.c_str());
  if (std::string stored = read(); stored.size() == kHexLength) {
    return stored;
  }
  return makeError("the secrets key " + file.string() +
                   " is not 64 hex digits; remove it (the "
                   "cache entries of the nodes that use a secret are then computed again)");
}

}  // namespace oe::secrets
