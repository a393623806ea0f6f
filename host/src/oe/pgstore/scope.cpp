// storeScope, storeRetry: the environment's overrides.
#include "oe/pgstore/scope.hpp"

#include <cstdlib>

#include "oe/spec/workspace.hpp"

namespace oe::pgstore {

std::string storeScope(std::string_view experience_name,
                       const std::filesystem::path& experience_file) {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read only, at start-up
  if (const char* env = std::getenv("OE_STORE_SCOPE"); env != nullptr && *env != '\0') {
    return env;
  }
  std::string scope =
      experience_name.empty() ? std::string("default") : std::string(experience_name);
  const std::filesystem::path name = experience_file.filename();
  if (!name.empty() && name != spec::kDefaultExperienceFile) {
    scope += ':';
    scope += name.string();
  }
  return scope;
}

std::chrono::milliseconds storeRetry() {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read only, at start-up
  if (const char* env = std::getenv("OE_STORE_RETRY_MS"); env != nullptr && *env != '\0') {
    char* end = nullptr;
    const long long ms = std::strtoll(env, &end, 10);
    if (end != env && *end == '\0' && ms >= 0) {
      return std::chrono::milliseconds(ms);
    }
  }
  return std::chrono::seconds(30);
}

}  // namespace oe::pgstore
