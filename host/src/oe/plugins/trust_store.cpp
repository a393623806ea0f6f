// The trust store file and the gate that reads it (see trust_store.hpp, docs/trust.md).
#include "oe/plugins/trust_store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <system_error>

#include "oe/common/file.hpp"
#include "oe/common/json.hpp"
#include "oe/common/scoped_fd.hpp"

namespace oe::plugins {
namespace {

constexpr int kTrustStoreFormat = 1;


std::string errnoText() {
  return std::strerror(errno);  // NOLINT(concurrency-mt-unsafe): the message of this thread's errno
}

Json toJson(const std::vector<TrustRecord>& records) {
  Json list = Json::array();
  for (const TrustRecord& record : records) {
    list.push_back({{"path", record.path},
                    {"sha256", record.sha256},
                    {"plugin", record.plugin_id},
                    {"trusted_at", record.trusted_at}});
    if (!record.isolation.empty()) {
      list.back()["isolation"] = record.isolation;
    }
  }
  return Json{{"oe_trust_store", kTrustStoreFormat}, {"trusted", std::move(list)}};
}

Result<std::vector<TrustRecord>> parse(const std::string& text, const std::filesystem::path& file) {
  const std::string broken = file.string() + " is not an oe trust store (";
  const std::string fix = "); fix or remove it, then trust the plugins again with `oe trust`";
  const Json doc = Json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return makeError(broken + "not a JSON object" + fix);
  }
  if (doc.value("oe_trust_store", 0) != kTrustStoreFormat) {
    return makeError(broken + "\"oe_trust_store\" is not " + std::to_string(kTrustStoreFormat) +
                     fix);
  }
  const auto trusted = doc.find("trusted");
  if (trusted == doc.end() || !trusted->is_array()) {
    return makeError(broken + "no \"trusted\" array" + fix);
  }
  std::vector<TrustRecord> records;
  for (const Json& item : *trusted) {
    if (!item.is_object() || !item.value("path", Json()).is_string() ||
        !item.value("sha256", Json()).is_string()) {
      return makeError(broken + "a record without \"path\" and \"sha256\": " + item.dump() + fix);
    }
    TrustRecord record;
    record.path = item["path"].get<std::string>();
    record.sha256 = item["sha256"].get<std::string>();
    if (auto id = item.find("plugin"); id != item.end() && id->is_string()) {
      record.plugin_id = id->get<std::string>();
    }
    if (auto at = item.find("trusted_at"); at != item.end() && at->is_string()) {
      record.trusted_at = at->get<std::string>();
    }
    if (auto mode = item.find("isolation"); mode != item.end() && mode->is_string()) {
      record.isolation = mode->get<std::string>();
    }
    records.push_back(std::move(record));
  }
  return records;
}

// A short digest for messages: enough to tell two builds apart.
std::string shortDigest(std::string_view sha256) {
  return std::string(sha256.substr(0, 12)) + "...";
}

bool needsQuoting(std::string_view text) {
  for (const char c : text) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '/' || c == '.' || c == '_' || c == '-' || c == '+' || c == ',' ||
                       c == ':' || c == '@' || c == '%';
    if (!plain) {
      return true;
    }
  }
  return text.empty();
}

}  // namespace

std::optional<std::filesystem::path> trustStorePath() {
  // NOLINTBEGIN(concurrency-mt-unsafe): read only
  if (const char* file = std::getenv("OE_TRUST_FILE"); file != nullptr && *file != '\0') {
    return std::filesystem::path(file);
  }
  if (const char* config = std::getenv("XDG_CONFIG_HOME"); config != nullptr && *config == '/') {
    return std::filesystem::path(config) / "oe" / "trust.json";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::filesystem::path(home) / ".config" / "oe" / "trust.json";
  }
  // NOLINTEND(concurrency-mt-unsafe)
  return std::nullopt;
}

Result<std::vector<TrustRecord>> readTrustStore(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    return std::vector<TrustRecord>{};
  }
  const std::optional<std::string> text = readFile(file);
  if (!text) {
    return makeError("cannot read the trust store " + file.string());
  }
  return parse(*text, file);
}

Result<std::vector<TrustRecord>> updateTrustStore(
    const std::filesystem::path& file,
    const std::function<void(std::vector<TrustRecord>&)>& change) {
  std::error_code ec;
  const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : ".";
  if (!std::filesystem::is_directory(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return makeError("cannot create " + dir.string() + " for the trust store: " + ec.message());
    }
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);
  }
  std::filesystem::path lock_path = file;
  lock_path += ".lock";
  const ScopedFd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (lock.get() < 0) {
    return makeError("cannot open " + lock_path.string() + ": " + errnoText());
  }
  while (::flock(lock.get(), LOCK_EX) != 0) {
    if (errno != EINTR) {
      return makeError("cannot lock " + lock_path.string() + ": " + errnoText());
    }
  }
  auto records = readTrustStore(file);
  if (!records) {
    return records;
  }
  change(*records);
  // A name of its own per writer: the lock is advisory, and a stray temporary must not be
  // renamed over the store by someone else.
  std::random_device random;
  std::filesystem::path tmp = file;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(random());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << toJson(*records).dump(2) << '\n';
    out.flush();
    out.close();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return makeError("cannot write " + tmp.string());
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    return makeError("cannot write the trust store " + file.string() + ": " + ec.message());
  }
  return records;
}

const TrustRecord* findTrust(const std::vector<TrustRecord>& records,
                             const std::filesystem::path& library) {
  for (const TrustRecord& record : records) {
    if (record.path == library.string()) {
      return &record;
    }
  }
  return nullptr;
}

TrustState trustState(const std::vector<TrustRecord>& records, const std::filesystem::path& library,
                      std::string_view sha256) {
  const TrustRecord* record = findTrust(records, library);
  if (record == nullptr) {
    return TrustState::kUntrusted;
  }
  return record->sha256 == sha256 ? TrustState::kTrusted : TrustState::kChanged;
}

std::string_view toString(TrustState state) {
  switch (state) {
    case TrustState::kTrusted:
      return "trusted";
    case TrustState::kChanged:
      return "changed since it was trusted";
    case TrustState::kUntrusted:
    default:
      return "not trusted";
  }
}

TrustRecord trustRecordNow(const std::filesystem::path& library, std::string sha256,
                           std::string plugin_id) {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return TrustRecord{library.string(), std::move(sha256), std::move(plugin_id), when, {}};
}

std::string trustCommand(const std::filesystem::path& library) {
  const std::string path = library.string();
  if (!needsQuoting(path)) {
    return "oe trust " + path;
  }
  std::string quoted = "'";
  for (const char c : path) {
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return "oe trust " + quoted + "'";
}

std::string TrustGate::isolationOf(const std::filesystem::path& library,
                                   const std::string& sha256) {
  std::lock_guard lock(mutex_);
  if (!records_ || !*records_) {
    return {};
  }
  const TrustRecord* record = findTrust(records_->value(), library);
  return record != nullptr && record->sha256 == sha256 ? record->isolation : std::string();
}

Result<void> TrustGate::admit(const std::filesystem::path& library, const std::string& sha256,
                              const PluginManifest* manifest) {
  std::lock_guard lock(mutex_);
  const std::string where = library.string() + ": ";
  const std::string review = "; review it, then run: " + trustCommand(library);
  if (!store_) {
    return makeError(where +
                     "not trusted, and there is no trust store to look in (set HOME, "
                     "XDG_CONFIG_HOME or OE_TRUST_FILE)" +
                     review);
  }
  if (!records_) {
    records_ = readTrustStore(*store_);
  }
  if (!*records_) {
    return makeError(where + "not trusted: " + records_->error().message);
  }
  const TrustRecord* record = findTrust(records_->value(), library);
  if (record != nullptr && record->sha256 == sha256) {
    return {};
  }
  const auto key = std::make_pair(library.string(), sha256);
  auto answered = answered_.find(key);
  if (answered == answered_.end() && ask_) {
    const bool yes = ask_(Question{library, sha256, manifest, record});
    answered = answered_.emplace(key, yes).first;
    if (yes) {
      auto written = updateTrustStore(*store_, [&](std::vector<TrustRecord>& records) {
        std::erase_if(records, [&](const TrustRecord& r) { return r.path == library.string(); });
        records.push_back(trustRecordNow(library, sha256, manifest != nullptr ? manifest->id : ""));
      });
      if (!written) {
        answered->second = false;
        return makeError(where + "not loaded: your yes could not be recorded (" +
                         written.error().message +
                         "); fix that, then run: " + trustCommand(library));
      }
      records_ = std::move(written);
    }
  }
  if (answered != answered_.end() && answered->second) {
    return {};
  }
  if (answered != answered_.end()) {
    return makeError(where +
                     "not trusted (you answered no); to trust it later: " + trustCommand(library));
  }
  if (record != nullptr) {
    return makeError(where + "changed since it was trusted (sha256 then " +
                     shortDigest(record->sha256) + ", now " + shortDigest(sha256) +
                     "); oe loads a plugin that is not built in only as the bytes you trusted" +
                     review);
  }
  return makeError(where + "not trusted (sha256 " + shortDigest(sha256) +
                   "); oe loads a plugin that is not built in only once you trust it" + review);
}

}  // namespace oe::plugins
