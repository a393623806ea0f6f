// Content digests of the files a call reads as data (named in its args, matched by its
// `cache.inputs`), taken when each call is keyed: an earlier node of the same run may have
// written them. A digest is remembered with the file's stat() identity, so a file that did not
// change is read once however many calls name it.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <unordered_map>

#include "oe/common/result.hpp"

namespace oe::cache {

class DigestCache {
 public:
  // A folder is hashed through every file below it, up to these bounds; past either, digest()
  // fails with a message that names the folder and the bound.
  static constexpr size_t kMaxFolderFiles = 10'000;
  static constexpr uint64_t kMaxFolderBytes = uint64_t{1} << 30;  // 1 GiB

  // SHA-256 of a regular file's content. A folder: of the sorted list of (path relative to it,
  // digest) of every regular file below it, following symbolic links to files but not to
  // folders (a link to a folder counts as its target's text), and leaving out `.git` and
  // `.openexpertise` folders. A folder past the bounds fails with `*too_large` set (when given).
  // Not thread-safe: one per run, used on the coordinator.
  Result<std::string> digest(const std::filesystem::path& path, bool* too_large = nullptr);

  // Files read (hashed) so far: the memo's misses, for the tests.
  [[nodiscard]] size_t filesRead() const { return files_read_; }

 private:
  struct Identity {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    int64_t mtime_ns = 0;
    int64_t ctime_ns = 0;
    bool operator==(const Identity&) const = default;
  };
  struct Entry {
    Identity identity;
    std::string sha256;
  };
  Result<std::string> fileDigest(const std::filesystem::path& path, const struct stat& st);
  Result<std::string> folderDigest(const std::filesystem::path& path, bool* too_large);

  std::unordered_map<std::string, Entry> files_;
  size_t files_read_ = 0;
};

}  // namespace oe::cache
