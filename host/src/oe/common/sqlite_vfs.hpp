// A SQLite VFS that writes each transaction's WAL frames with one pwrite instead of two per
// page. Include it only through sqlite.hpp (it needs sqlite3.h and is used by sqlite::open).
//
// Why: SQLite writes a WAL frame as two calls (24-byte header, then the page), so a state write
// touching five pages costs ten pwrite(2) calls, and on this VM a syscall is the main cost of a
// commit (docs/performance.md). This VFS keeps the WAL's consecutive writes in a buffer and
// hands them to the real file in one call.
//
// Why it is safe: the buffer is written out as soon as it holds a commit frame (a frame whose
// header has a non-zero database size, the WAL file format's commit marker), so a failure is
// returned by that write and SQLite rolls the transaction back as it would have. As a
// backstop that does not rely on how SQLite splits its writes, a buffer is also flushed before
// ANY other operation on its WAL file (read, sync, size, truncate, close) and, on the main
// database file, before every shared-memory barrier and lock call: SQLite publishes a commit
// by writing the wal-index header around an xShmBarrier and releases the write lock with
// xShmLock, both on the main file. So the frames of a commit are in the WAL file (the
// kernel's page cache, as before) before the commit is visible to any reader and before
// COMMIT returns; a kill before that loses only a transaction that had not committed
// (recovery reads the WAL file, never this buffer). Only the connection holding the WAL write
// lock ever has buffered bytes. A connection can be used from another thread than a second
// connection to the same file (the state store commits from its fold timer's thread), so each
// WAL file's buffer has its own mutex, and a main file looks only at the WALs of its own name.
#pragma once

#include <sqlite3.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <vector>

namespace oe::sqlite::vfs {

inline constexpr const char* kName = "oe-wal-batch";
// seekAndWrite in SQLite's unix VFS handles at most 128 KiB per call; stay well below.
inline constexpr size_t kMaxBuffered = size_t{64} << 10;

struct File {
  sqlite3_file base;     // first: SQLite sees a File* as a sqlite3_file*
  sqlite3_file* real;    // the root VFS's file, allocated right after this struct
  bool is_wal;
  std::string name;      // main file: its WAL's name ("<db>-wal"); WAL file: its own name
  std::string pending;   // WAL file: bytes not yet written, from offset `pending_at`
  sqlite3_int64 pending_at;
  bool commit_page_next;  // WAL file: the last write was a commit frame's header
  std::mutex buffer_mutex;  // guards pending, pending_at and commit_page_next
};

// A WAL frame header: page number, then the database size in pages, non-zero only in the last
// frame of a transaction (https://www.sqlite.org/fileformat2.html#walformat), then salts and
// checksums.
inline constexpr int kFrameHeaderSize = 24;
inline bool isCommitFrameHeader(const void* data, int amount) {
  if (amount != kFrameHeaderSize) {
    return false;
  }
  const auto* bytes = static_cast<const unsigned char*>(data);
  return (bytes[4] | bytes[5] | bytes[6] | bytes[7]) != 0;
}

// The open WAL files of this process (few: one per connection), so a main file can flush the
// WAL that belongs to it. A function-local static: SQLite's VFS list is process-wide anyway.
struct Registry {
  std::mutex mutex;
  std::vector<File*> wals;
};
inline Registry& registry() {
  static Registry instance;
  return instance;
}

inline sqlite3_vfs* root() {
  static sqlite3_vfs* const found = sqlite3_vfs_find(nullptr);
  return found;
}

inline File* self(sqlite3_file* f) { return reinterpret_cast<File*>(f); }  // NOLINT
inline sqlite3_file* real(sqlite3_file* f) { return self(f)->real; }

inline int flushWalLocked(File& wal) {
  if (wal.pending.empty()) {
    return SQLITE_OK;
  }
  const int rc = wal.real->pMethods->xWrite(wal.real, wal.pending.data(),
                                             static_cast<int>(wal.pending.size()), wal.pending_at);
  wal.pending.clear();
  return rc;
}

inline int flushWal(File& wal) {
  std::lock_guard lock(wal.buffer_mutex);
  return flushWalLocked(wal);
}

// Before anything else happens to `f`: its own buffer (a WAL file) or its WAL's (a main file).
inline int flushFor(sqlite3_file* f) {
  File& file = *self(f);
  if (file.is_wal) {
    return flushWal(file);
  }
  if (file.name.empty()) {
    return SQLITE_OK;  // a temp or journal file: never buffered
  }
  Registry& reg = registry();
  std::lock_guard lock(reg.mutex);
  int rc = SQLITE_OK;
  for (File* wal : reg.wals) {
    if (wal->name == file.name) {  // names never change after xOpen
      const int r = flushWal(*wal);
      rc = rc == SQLITE_OK ? r : rc;
    }
  }
  return rc;
}

inline int xClose(sqlite3_file* f) {
  File* file = self(f);
  const int flushed = flushFor(f);
  if (file->is_wal) {
    Registry& reg = registry();
    std::lock_guard lock(reg.mutex);
    reg.wals.erase(std::remove(reg.wals.begin(), reg.wals.end(), file), reg.wals.end());
  }
  const int closed = file->real->pMethods->xClose(file->real);
  file->~File();
  return flushed != SQLITE_OK ? flushed : closed;
}

inline int xWrite(sqlite3_file* f, const void* data, int amount, sqlite3_int64 offset) {
  File& file = *self(f);
  if (!file.is_wal) {
    return file.real->pMethods->xWrite(file.real, data, amount, offset);
  }
  std::lock_guard lock(file.buffer_mutex);
  const auto end = file.pending_at + static_cast<sqlite3_int64>(file.pending.size());
  if (!file.pending.empty() && offset != end) {
    if (const int rc = flushWalLocked(file); rc != SQLITE_OK) {
      return rc;
    }
  }
  if (file.pending.empty()) {
    file.pending_at = offset;
  }
  file.pending.append(static_cast<const char*>(data), static_cast<size_t>(amount));
  // The page after a commit frame's header ends the transaction's frames: write them now.
  const bool commit_complete = file.commit_page_next;
  file.commit_page_next = isCommitFrameHeader(data, amount);
  return commit_complete || file.pending.size() >= kMaxBuffered ? flushWalLocked(file)
                                                                 : SQLITE_OK;
}

inline int xRead(sqlite3_file* f, void* data, int amount, sqlite3_int64 offset) {
  const int rc = flushFor(f);
  return rc != SQLITE_OK ? rc : real(f)->pMethods->xRead(real(f), data, amount, offset);
}
inline int xTruncate(sqlite3_file* f, sqlite3_int64 size) {
  const int rc = flushFor(f);
  return rc != SQLITE_OK ? rc : real(f)->pMethods->xTruncate(real(f), size);
}
inline int xSync(sqlite3_file* f, int flags) {
  const int rc = flushFor(f);
  return rc != SQLITE_OK ? rc : real(f)->pMethods->xSync(real(f), flags);
}
inline int xFileSize(sqlite3_file* f, sqlite3_int64* size) {
  const int rc = flushFor(f);
  return rc != SQLITE_OK ? rc : real(f)->pMethods->xFileSize(real(f), size);
}
inline int xLock(sqlite3_file* f, int level) {
  const int rc = flushFor(f);
  return rc != SQLITE_OK ? rc : real(f)->pMethods->xLock(real(f), level);
}
inline int xUnlock(sqlite3_file* f, int level) {
  const int rc = flushFor(f);
  return rc != SQLITE_OK ? rc : real(f)->pMethods->xUnlock(real(f), level);
}
inline int xCheckReservedLock(sqlite3_file* f, int* out) {
  return real(f)->pMethods->xCheckReservedLock(real(f), out);
}
inline int xFileControl(sqlite3_file* f, int op, void* arg) {
  const int rc = flushFor(f);
  return rc != SQLITE_OK ? rc : real(f)->pMethods->xFileControl(real(f), op, arg);
}
inline int xSectorSize(sqlite3_file* f) { return real(f)->pMethods->xSectorSize(real(f)); }
inline int xDeviceCharacteristics(sqlite3_file* f) {
  return real(f)->pMethods->xDeviceCharacteristics(real(f));
}
inline int xShmMap(sqlite3_file* f, int page, int size, int extend, void volatile** out) {
  const int rc = flushFor(f);
  return rc != SQLITE_OK ? rc : real(f)->pMethods->xShmMap(real(f), page, size, extend, out);
}
inline int xShmLock(sqlite3_file* f, int offset, int n, int flags) {
  const int rc = flushFor(f);
  return rc != SQLITE_OK ? rc : real(f)->pMethods->xShmLock(real(f), offset, n, flags);
}
inline void xShmBarrier(sqlite3_file* f) {
  // The backstop flush (normally nothing is left by now); a barrier cannot report an error.
  (void)flushFor(f);
  real(f)->pMethods->xShmBarrier(real(f));
}
inline int xShmUnmap(sqlite3_file* f, int delete_flag) {
  const int rc = flushFor(f);
  return rc != SQLITE_OK ? rc : real(f)->pMethods->xShmUnmap(real(f), delete_flag);
}
inline int xFetch(sqlite3_file* f, sqlite3_int64 offset, int amount, void** out) {
  if (real(f)->pMethods->iVersion < 3) {
    *out = nullptr;
    return SQLITE_OK;
  }
  const int rc = flushFor(f);
  return rc != SQLITE_OK ? rc : real(f)->pMethods->xFetch(real(f), offset, amount, out);
}
inline int xUnfetch(sqlite3_file* f, sqlite3_int64 offset, void* page) {
  return real(f)->pMethods->iVersion < 3 ? SQLITE_OK
                                         : real(f)->pMethods->xUnfetch(real(f), offset, page);
}

inline constexpr sqlite3_io_methods kMethods = {
    3,          xClose,      xRead,   xWrite,    xTruncate,       xSync,
    xFileSize,  xLock,       xUnlock, xCheckReservedLock, xFileControl, xSectorSize,
    xDeviceCharacteristics, xShmMap, xShmLock,  xShmBarrier,     xShmUnmap, xFetch,
    xUnfetch};

inline size_t realOffset() { return (sizeof(File) + 15) & ~size_t{15}; }

inline int xOpen(sqlite3_vfs* /*vfs*/, const char* name, sqlite3_file* f, int flags,
                 int* out_flags) {
  sqlite3_vfs* base = root();
  auto* real_file = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(f) + realOffset());
  std::memset(real_file, 0, static_cast<size_t>(base->szOsFile));
  f->pMethods = nullptr;
  const int rc = base->xOpen(base, name, real_file, flags, out_flags);
  if (rc != SQLITE_OK || real_file->pMethods == nullptr) {
    if (real_file->pMethods != nullptr) {
      real_file->pMethods->xClose(real_file);
    }
    return rc != SQLITE_OK ? rc : SQLITE_CANTOPEN;
  }
  const bool is_wal = (flags & SQLITE_OPEN_WAL) != 0;
  std::string file_name;
  if (is_wal && name != nullptr) {
    file_name = name;
  } else if ((flags & SQLITE_OPEN_MAIN_DB) != 0 && name != nullptr) {
    file_name = std::string(name) + "-wal";
  }
  File* file =
      new (f) File{{&kMethods}, real_file, is_wal, std::move(file_name), {}, 0, false, {}};
  if (is_wal) {
    Registry& reg = registry();
    std::lock_guard lock(reg.mutex);
    reg.wals.push_back(file);
  }
  return SQLITE_OK;
}

// Registered (not as the default) on first use; the other methods are the root VFS's own.
inline const char* name() {
  static const bool registered = [] {
    static sqlite3_vfs vfs = *root();
    vfs.szOsFile = static_cast<int>(realOffset()) + root()->szOsFile;
    vfs.zName = kName;
    vfs.xOpen = xOpen;
    vfs.pNext = nullptr;
    return sqlite3_vfs_register(&vfs, 0) == SQLITE_OK;
  }();
  return registered ? kName : nullptr;
}

}  // namespace oe::sqlite::vfs
