// StoreLock: flock on `<db>.lock`, whose content names the holder.
#include "oe/state/store_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "oe/common/clock.hpp"
#include "oe/common/json.hpp"

namespace oe::state {

namespace {

int flockRetry(int fd, int op) {
  int rc = 0;
  do {
    rc = ::flock(fd, op);
  } while (rc != 0 && errno == EINTR);
  return rc;
}

// The holder named in the lock file open at `fd`; an empty or unreadable file names nobody yet.
LockHolder readHolder(int fd) {
  LockHolder out;
  std::string text;
  char buf[512];
  off_t at = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n <= 0) {
      break;
    }
    text.append(buf, static_cast<size_t>(n));
    at += n;
  }
  const Json doc = Json::parse(text, nullptr, false);
  if (!doc.is_object()) {
    return out;
  }
  if (auto it = doc.find("run_id"); it != doc.end() && it->is_string()) {
    out.run_id = it->get<std::string>();
  }
  if (auto it = doc.find("pid"); it != doc.end() && it->is_number_integer()) {
    out.pid = it->get<int64_t>();
  }
  if (auto it = doc.find("started"); it != doc.end() && it->is_string()) {
    out.started = it->get<std::string>();
  }
  return out;
}

}  // namespace

std::filesystem::path StoreLock::lockPath(const std::filesystem::path& db_path) {
  std::filesystem::path p = db_path;
  p += ".lock";
  return p;
}

std::string StoreLock::describe(const LockHolder& holder) {
  if (holder.run_id.empty() && holder.pid == 0) {
    return "another run";
  }
  std::string out = "run " + (holder.run_id.empty() ? std::string("?") : holder.run_id) +
                    " (pid " + std::to_string(holder.pid);
  if (!holder.started.empty()) {
    out += ", started " + holder.started;
  }
  out += ')';
  return out;
}

Result<StoreLock> StoreLock::acquire(const std::filesystem::path& db_path,
                                     std::string_view run_id, bool wait) {
  const std::filesystem::path path = lockPath(db_path);
  std::error_code ec;
  if (path.has_parent_path()) {
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) {
      return makeError("cannot create " + path.parent_path().string() + ": " + ec.message());
    }
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return makeError("cannot open the state store's lock " + path.string() + ": " +
                     std::strerror(errno));
  }
  // Closed without a word on the error paths: the file names the holder, not us.
  auto fail = [fd](std::string message) -> Result<StoreLock> {
    ::close(fd);
    return makeError(std::move(message));
  };
  if (flockRetry(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) {
      return fail("cannot lock " + path.string() + ": " + std::strerror(errno));
    }
    if (!wait) {
      return fail("the state store " + db_path.string() + " is in use by " +
                  describe(readHolder(fd)) +
                  ". Wait for that run to finish (or stop it), or pass --wait to wait for it.");
    }
    if (flockRetry(fd, LOCK_EX) != 0) {
      return fail("cannot lock " + path.string() + ": " + std::strerror(errno));
    }
  }
  StoreLock lock(fd);
  const std::string text =
      Json{{"run_id", std::string(run_id)}, {"pid", static_cast<int64_t>(::getpid())},
           {"started", isoNow()}}
          .dump() +
      "\n";
  // The name is informative only (the flock is the lock): a failure to write it is not fatal,
  // a waiting command then says "another run".
  if (::ftruncate(fd, 0) == 0) {
    (void)::pwrite(fd, text.data(), text.size(), 0);
  }
  return lock;
}

std::optional<LockHolder> StoreLock::holder(const std::filesystem::path& db_path) {
  const std::filesystem::path path = lockPath(db_path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return std::nullopt;  // never locked
  }
  std::optional<LockHolder> out;
  if (flockRetry(fd, LOCK_SH | LOCK_NB) == 0) {
    ::flock(fd, LOCK_UN);  // free: nobody holds it (a leftover file names a dead holder)
  } else if (errno == EWOULDBLOCK) {
    out = readHolder(fd);
  }
  ::close(fd);
  return out;
}

StoreLock::~StoreLock() { release(); }

StoreLock::StoreLock(StoreLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

StoreLock& StoreLock::operator=(StoreLock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void StoreLock::release() {
  if (fd_ < 0) {
    return;
  }
  // Cleared while still held, so the file never names a holder that let go.
  (void)::ftruncate(fd_, 0);
  ::close(fd_);  // releases the flock
  fd_ = -1;
}

}  // namespace oe::state
