// DigestCache: data files' digests, read again only when their stat() identity changes.
#include "oe/cache/digest_cache.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>
#include <utility>
#include <vector>

#include "oe/cache/cache_store.hpp"

namespace oe::cache {

namespace {

namespace fs = std::filesystem;

// A file modified this close to the moment it was read may change again without its identity
// changing (file timestamps have a granularity: a kernel tick, or 1-2 s on some filesystems),
// so its digest is not remembered until it is older than that. The modification time decides
// (the change time still belongs to the identity): a file whose mtime was set into the past is
// remembered at once, which is what copies that keep timestamps (cp -p, rsync -t) want.
constexpr int64_t kRacyNs = int64_t{2'000'000'000};

int64_t nanos(const timespec& t) { return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec; }

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string errnoText() { return std::error_code(errno, std::generic_category()).message(); }

}  // namespace

Result<std::string> DigestCache::digest(const fs::path& path, bool* too_large) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return makeError("cannot hash " + path.string() + " for the cache key: " + errnoText());
  }
  if (S_ISDIR(st.st_mode)) {
    return folderDigest(path, too_large);
  }
  if (!S_ISREG(st.st_mode)) {
    return makeError("cannot hash " + path.string() +
                     " for the cache key: it is neither a regular file nor a folder");
  }
  return fileDigest(path, st);
}

Result<std::string> DigestCache::fileDigest(const fs::path& path, const struct stat& st) {
  const Identity identity{st.st_dev, st.st_ino, st.st_size, nanos(st.st_mtim), nanos(st.st_ctim)};
  auto it = files_.find(path.native());
  if (it != files_.end() && it->second.identity == identity) {
    return it->second.sha256;
  }
  auto digest = cache::fileDigest(path);
  ++files_read_;
  if (!digest) {
    return digest.error();
  }
  if (nowNs() - identity.mtime_ns >= kRacyNs) {
    files_.insert_or_assign(path.native(), Entry{identity, *digest});
  } else if (it != files_.end()) {
    files_.erase(it);
  }
  return digest;
}

Result<std::string> DigestCache::folderDigest(const fs::path& path, bool* too_large) {
  std::vector<std::pair<std::string, std::string>> entries;
  uint64_t bytes = 0;
  std::error_code ec;
  auto refuse = [&path, too_large](const std::string& what) {
    if (too_large != nullptr) {
      *too_large = true;
    }
    return makeError(path.string() + " holds more than " + what +
                     ", too much to hash for the cache key; name a smaller folder, list the "
                     "files that matter in the node's cache.inputs, or set cache: false");
  };
  for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& entry = it->path();
    const std::string name = entry.filename().string();
    const bool symlink = it->is_symlink(ec);
    if (!symlink && it->is_directory(ec)) {
      if (name == ".git" || name == ".openexpertise") {
        it.disable_recursion_pending();
      }
      continue;
    }
    std::string rel = entry.lexically_relative(path).generic_string();
    struct stat st {};
    if (::stat(entry.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) {
      // A dangling link, or a link to a folder (not followed: it may lead anywhere, even back
      // here): its target's text stands for it.
      std::error_code link_ec;
      const fs::path target = fs::read_symlink(entry, link_ec);
      entries.emplace_back(std::move(rel),
                           "link:" + (link_ec ? std::string("?") : target.string()));
      continue;
    }
    if (!S_ISREG(st.st_mode)) {
      continue;  // a socket, a FIFO: nothing to read
    }
    if (entries.size() >= kMaxFolderFiles) {
      return refuse(std::to_string(kMaxFolderFiles) + " files");
    }
    bytes += static_cast<uint64_t>(st.st_size);
    if (bytes > kMaxFolderBytes) {
      return refuse("1 GiB");
    }
    auto digest = fileDigest(entry, st);
    if (!digest) {
      return digest.error();
    }
    entries.emplace_back(std::move(rel), std::move(*digest));
  }
  if (ec) {
    return makeError("cannot list " + path.string() +
                     " to hash it for the cache key: " + ec.message());
  }
  std::sort(entries.begin(), entries.end());
  std::string listing;
  for (const auto& [rel, digest] : entries) {
    listing += rel;
    listing += '\0';
    listing += digest;
    listing += '\n';
  }
  return sha256Hex(listing);
}

}  // namespace oe::cache
