// Journal (flock-owned append-only file) and FoldTimer.
#include "oe/common/journal.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <system_error>

#include "oe/common/file.hpp"

namespace oe {

namespace {

constexpr std::string_view kSuffix = ".jsonl";

std::string errnoText(int err) { return std::error_code(err, std::generic_category()).message(); }

bool isJournalOf(const std::filesystem::path& p, std::string_view prefix) {
  const std::string name = p.filename().string();
  return name.size() > prefix.size() + kSuffix.size() && name.starts_with(prefix) &&
         name.ends_with(kSuffix);
}

}  // namespace

Journal::~Journal() { close(); }

Journal::Journal(Journal&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_), size_(other.size_) {
  other.fd_ = -1;
}

Journal& Journal::operator=(Journal&& other) noexcept {
  if (this != &other) {
    close();
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    size_ = other.size_;
    other.fd_ = -1;
  }
  return *this;
}

void Journal::close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

Result<Journal> Journal::create(const std::filesystem::path& dir, std::string_view prefix) {
  std::array<unsigned char, 8> nonce{};
  if (::getrandom(nonce.data(), nonce.size(), 0) != static_cast<ssize_t>(nonce.size())) {
    return makeError("cannot draw a random journal name in " + dir.string() + ": " +
                     errnoText(errno));
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string name(prefix);
  name += std::to_string(::getpid());
  name += '-';
  for (unsigned char c : nonce) {
    name += kHex[c >> 4];
    name += kHex[c & 0xF];
  }
  name += kSuffix;
  // Created and locked under a name foldOrphans() does not list, then renamed: a journal is
  // never visible to another store's orphan scan before its owner holds the lock, which would
  // let that scan fold and delete it between our open() and flock().
  const std::filesystem::path pending = dir / ("." + name + ".new");
  Journal journal;
  journal.path_ = dir / name;
  journal.fd_ = ::open(pending.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (journal.fd_ < 0) {
    return makeError("cannot create the journal " + journal.path_.string() + ": " +
                     errnoText(errno));
  }
  auto fail = [&](std::string_view what, int err) -> Result<Journal> {
    std::error_code ec;
    std::filesystem::remove(pending, ec);
    return makeError(std::string(what) + journal.path_.string() + ": " + errnoText(err));
  };
  if (::flock(journal.fd_, LOCK_EX | LOCK_NB) != 0) {
    return fail("cannot lock the journal ", errno);
  }
  if (::rename(pending.c_str(), journal.path_.c_str()) != 0) {
    return fail("cannot name the journal ", errno);
  }
  return journal;
}

Result<void> Journal::append(std::string_view line) {
  if (fd_ < 0) {
    return makeError("the journal " + path_.string() + " is closed");
  }
  const uint64_t before = size_;
  for (size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      // Cut the part of the line that got in (this store is the file's only writer), so the
      // journal stays whole and locked; only if that fails too does it close.
      if (::ftruncate(fd_, static_cast<off_t>(before)) == 0) {
        size_ = before;
      } else {
        close();
      }
      return makeError("cannot append to " + path_.string() + ": " + errnoText(err));
    }
    done += static_cast<size_t>(n);
    size_ += static_cast<uint64_t>(n);
  }
  return {};
}

Result<void> Journal::clear() {
  if (fd_ >= 0 && ::ftruncate(fd_, 0) != 0) {
    return makeError("cannot empty the journal " + path_.string() + ": " + errnoText(errno));
  }
  size_ = 0;
  return {};
}

void Journal::remove() {
  if (fd_ >= 0) {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  close();
}

void Journal::forEachLine(std::string_view text,
                          const std::function<void(std::string_view)>& fn) {
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    fn(text.substr(at, end - at));
    at = end + 1;
  }
}

std::vector<std::filesystem::path> Journal::list(const std::filesystem::path& dir,
                                                 std::string_view prefix) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (isJournalOf(it->path(), prefix)) {
      out.push_back(it->path());
    }
  }
  return out;
}

void Journal::foldOrphans(
    const std::filesystem::path& dir, std::string_view prefix,
    const std::function<bool(const std::filesystem::path&, std::string_view)>& fold,
    const std::filesystem::path& skip) {
  for (const auto& journal : list(dir, prefix)) {
    if (journal == skip) {
      continue;
    }
    const int fd = ::open(journal.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      continue;  // folded and removed by another process meanwhile
    }
    struct stat st {};
    // Locked: its owner is alive. Unlinked once we hold it: another process folded it first.
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::fstat(fd, &st) == 0 && st.st_nlink > 0) {
      const std::string text = readFile(journal).value_or(std::string());
      if (fold(journal, text)) {
        std::error_code removed;
        std::filesystem::remove(journal, removed);
      }
    }
    ::close(fd);
  }
}

FoldTimer::FoldTimer(std::chrono::milliseconds delay, std::function<void()> fold)
    : delay_(delay), fold_(std::move(fold)) {}

FoldTimer::~FoldTimer() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void FoldTimer::arm() {
  std::lock_guard lock(mutex_);
  if (armed_) {
    return;
  }
  armed_ = true;
  armed_at_ = std::chrono::steady_clock::now();
  if (!thread_.joinable()) {
    thread_ = std::thread([this] { loop(); });
  }
  wake_.notify_all();
}

void FoldTimer::disarm() {
  std::lock_guard lock(mutex_);
  armed_ = false;
}

void FoldTimer::loop() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    if (!armed_) {
      wake_.wait(lock, [this] { return stop_ || armed_; });
      continue;
    }
    const auto due = armed_at_ + delay_;
    if (std::chrono::steady_clock::now() < due) {
      // Re-checked after the wait: the owner may have folded (disarm) or re-armed meanwhile.
      wake_.wait_until(lock, due, [this] { return stop_; });
      continue;
    }
    armed_ = false;
    lock.unlock();
    fold_();
    lock.lock();
  }
}

}  // namespace oe
