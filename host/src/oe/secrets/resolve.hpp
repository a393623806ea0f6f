// Where a run's secrets come from: the `secrets:` of experience.yaml (`NAME: { env: VAR }` or
// `NAME: { file: path }`), read once at run start; and the provider API keys oe itself reads,
// which every sink redacts too.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "oe/common/result.hpp"
#include "oe/secrets/secret_set.hpp"

namespace oe::secrets {

// One entry of `secrets:`.
struct Declaration {
  std::string name;
  std::string env;   // the environment variable holding the value, or empty
  std::string file;  // a file holding it (relative to the experience folder), or empty
  int line = 0;      // of the entry in experience.yaml (0: unknown)
};

// A secret that cannot be read: the message names the secret, where it was looked for and what to
// set; the caller adds the file and line.
struct Problem {
  std::string name;
  int line = 0;
  std::string message;
};

// The value of one declaration: the variable's value, or the file's content without one trailing
// newline ("\n" or "\r\n", as files written by `echo` or a secret store end). Fails when the
// variable is unset or empty, the file cannot be read or is empty, or the value is shorter than
// kMinSecretLength.
Result<std::string> readValue(const Declaration& declaration, const std::filesystem::path& dir);

// Every declaration read: the set, and the problems of those that could not be.
struct Resolved {
  SecretSet set;
  std::vector<Problem> problems;
};
Resolved resolve(const std::vector<Declaration>& declarations, const std::filesystem::path& dir);

// The environment variables holding the provider API keys oe reads itself (llm/settings.cpp and
// the provider plugins): their values are redacted as secrets named after the variable.
const std::vector<std::string>& providerKeyVariables();
// Adds the provider keys set in this process's environment to `set`, to be redacted only: a
// `${secret:OPENAI_API_KEY}` gets no value unless the experience declares that secret.
void addProviderKeys(SecretSet& set);

// The key of a store's keyed digests (SecretSet::keyedDigest): 32 random bytes, hex, kept in
// `file` (mode 0600), made by the first run that needs it. Two runs making it at once agree
// (O_EXCL: the second reads the first's).
Result<std::string> storeKey(const std::filesystem::path& file);

}  // namespace oe::secrets
