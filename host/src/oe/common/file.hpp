// Whole-file reads (the experience YAML, spec snapshots, cache journals).
#pragma once

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>

namespace oe {

// The bytes of the regular file at `path`; nullopt when there is none or it cannot be read.
inline std::optional<std::string> readFile(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (!in || size < 0) {
    return std::nullopt;
  }
  std::string out(static_cast<size_t>(size), '\0');
  in.seekg(0, std::ios::beg);
  if (!in.read(out.data(), static_cast<std::streamsize>(out.size()))) {
    return std::nullopt;
  }
  return out;
}

}  // namespace oe
