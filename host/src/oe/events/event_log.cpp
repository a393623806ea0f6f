// EventLog: builds each JSONL line by hand (≈1 µs, no Json objects unless a listener wants one)
// and appends it with one write(2); readEventLog tolerates the torn lines a killed run leaves.
#include "oe/events/event_log.hpp"

#include "oe/common/clock.hpp"

#include <fcntl.h>
#include <openssl/rand.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <random>
#include <sstream>
#include <system_error>

namespace oe::events {

namespace {

std::string errnoText(int err) { return std::error_code(err, std::generic_category()).message(); }

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not valid (overlong
// forms, surrogates and code points above U+10FFFF are invalid, as in RFC 3629).
size_t utf8Length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  size_t n = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    lo = c == 0xE0 ? 0xA0 : 0x80;
    hi = c == 0xED ? 0x9F : 0xBF;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    lo = c == 0xF0 ? 0x90 : 0x80;
    hi = c == 0xF4 ? 0x8F : 0xBF;
  } else {
    return 0;
  }
  if (i + n > s.size() || byte(i + 1) < lo || byte(i + 1) > hi) {
    return 0;
  }
  for (size_t k = 2; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) {
      return 0;
    }
  }
  return n;
}

// Appends `s` as a JSON string literal. Invalid UTF-8 becomes U+FFFD so that every line stays
// parseable (a plugin's error text may hold anything).
void appendJsonString(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  size_t run = 0;  // start of the pending run of bytes copied verbatim
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      const size_t n = utf8Length(s, i);
      if (n != 0) {
        i += n;
        continue;
      }
    }
    out.append(s.data() + run, i - run);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c >= 0x80) {
          out += "\\ufffd";
        } else {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        }
        break;
    }
    ++i;
    run = i;
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

void appendMember(std::string& out, std::string_view key, std::string_view value) {
  out += ",\"";
  out += key;  // keys are oe's own constants: plain ASCII
  out += "\":";
  appendJsonString(out, value);
}

void appendJson(std::string& out, const Json& value) {
  out += value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void appendExtra(std::string& out, const Json& extra) {
  if (!extra.is_object()) {
    return;
  }
  for (const auto& [key, value] : extra.items()) {
    out += ',';
    appendJsonString(out, key);
    out += ':';
    appendJson(out, value);
  }
}

// The phase of the events that never have one (run.*, state.write), for their listeners.
const std::optional<std::string> kNoPhase;

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string shortText(std::string_view s) {
  constexpr size_t kMax = 120;
  return s.size() <= kMax ? std::string(s) : std::string(s.substr(0, kMax)) + "...";
}

}  // namespace

std::string nowIso() { return isoNow(); }

int64_t parseIsoMs(std::string_view ts) {
  int year = 0;
  int month = 0;
  int day = 0;
  int hour = 0;
  int minute = 0;
  int second = 0;
  int consumed = 0;
  const std::string text(ts);
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &month, &day, &hour, &minute,
                  &second, &consumed) != 6) {
    return -1;
  }
  int millis = 0;
  if (static_cast<size_t>(consumed) < text.size() && text[static_cast<size_t>(consumed)] == '.') {
    int digits = 0;
    for (size_t i = static_cast<size_t>(consumed) + 1; i < text.size() && digits < 3; ++i) {
      if (text[i] < '0' || text[i] > '9') {
        break;
      }
      millis = millis * 10 + (text[i] - '0');
      ++digits;
    }
    for (; digits < 3 && digits > 0; ++digits) {
      millis *= 10;
    }
  }
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return static_cast<int64_t>(timegm(&tm)) * 1000 + millis;
}

bool isRunId(std::string_view id) {
  if (id.size() != 36) {
    return false;
  }
  for (size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') {
        return false;
      }
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  const char variant = id[19];
  return id[14] == '4' &&
         (variant == '8' || variant == '9' || variant == 'a' || variant == 'b');
}

std::string newRunId() {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof b) != 1) {
    // OpenSSL's generator failing is near impossible; the kernel's is as good for an id.
    std::random_device dev;
    for (unsigned char& x : b) {
      x = static_cast<unsigned char>(dev());
    }
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0F) | 0x40);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3F) | 0x80);  // RFC 4122 variant
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  id.reserve(36);
  for (size_t i = 0; i < sizeof b; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) {
      id += '-';
    }
    id += kHex[b[i] >> 4];
    id += kHex[b[i] & 0xF];
  }
  return id;
}

struct EventLog::Private {};

EventLog::EventLog(const Private&, int fd, std::filesystem::path path, std::string run_id)
    : fd_(fd), path_(std::move(path)), run_id_(std::move(run_id)) {}

EventLog::~EventLog() { ::close(fd_); }

Result<std::unique_ptr<EventLog>> EventLog::open(const std::filesystem::path& jsonl_path,
                                                 std::string run_id) {
  std::error_code ec;
  if (jsonl_path.has_parent_path()) {
    std::filesystem::create_directories(jsonl_path.parent_path(), ec);
    if (ec) {
      return makeError("cannot create " + jsonl_path.parent_path().string() + ": " +
                       ec.message());
    }
  }
  const int fd = ::open(jsonl_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return makeError("cannot open the event log " + jsonl_path.string() + ": " +
                     errnoText(errno));
  }
  return std::make_unique<EventLog>(Private{}, fd, jsonl_path, std::move(run_id));
}

std::string EventLog::head(std::string_view type, const std::string_view* node_id) const {
  std::string line;
  line.reserve(256);
  line += "{\"type\":";
  appendJsonString(line, type);
  appendMember(line, "run_id", run_id_);
  if (node_id != nullptr) {
    appendMember(line, "node_id", *node_id);
  }
  return line;
}

void EventLog::appendTs(std::string& line) { appendMember(line, "ts", nowIso()); }

void EventLog::appendPhase(std::string& line, const std::optional<std::string>& phase) {
  if (phase) {
    appendMember(line, "phase", *phase);
  }
}

void EventLog::commit(std::string& line, std::string_view type, std::string_view node_id,
                      const std::optional<std::string>* phase, bool cached, int64_t item) {
  line += "}\n";
  if (secrets_) {
    secrets_->redact(line);
  }
  // One write(2) per line: with O_APPEND each line lands whole and in order, even across
  // threads and processes; only a kill in the middle of this call can tear it.
  const char* data = line.data();
  size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, data, left);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      // n == 0 for a non-empty write: no progress is possible (treated as a full device).
      if (!write_error_) {
        write_error_ = "cannot write the event log " + path_.string() + ": " +
                       (n < 0 ? errnoText(errno) : std::string("no space left"));
        std::fprintf(stderr, "oe: %s\n", write_error_->c_str());
      }
      break;
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  if (listeners_) {
    notify(Event(type, node_id, std::string_view(line.data(), line.size() - 1), cached, phase,
                 item));
  }
}

void EventLog::setSecrets(std::shared_ptr<const secrets::SecretSet> secrets) {
  std::lock_guard lock(mutex_);
  secrets_ = secrets && !secrets->empty() ? std::move(secrets) : nullptr;
}

std::optional<std::string> EventLog::writeError() const {
  std::lock_guard lock(mutex_);
  return write_error_;
}

void EventLog::notify(const Event& event) {
  // Our own reference: a listener that (un)subscribes replaces listeners_, not this list.
  const std::shared_ptr<const Subscribers> targets = listeners_;
  for (const Subscriber& subscriber : *targets) {
    try {
      subscriber.listener(event);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "event listener error: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "event listener error: unknown exception\n");
    }
  }
}

void EventLog::runStarted(const Json& args, const Json& extra) {
  std::lock_guard lock(mutex_);
  constexpr std::string_view kType = "run.started";
  std::string line = head(kType, nullptr);
  appendTs(line);
  line += ",\"args\":";
  appendJson(line, args);
  appendExtra(line, extra);
  commit(line, kType, {}, &kNoPhase);
}

void EventLog::runFinished(std::string_view status, const Json& extra) {
  std::lock_guard lock(mutex_);
  constexpr std::string_view kType = "run.finished";
  std::string line = head(kType, nullptr);
  appendTs(line);
  appendMember(line, "status", status);
  appendExtra(line, extra);
  commit(line, kType, {}, &kNoPhase);
}

void EventLog::nodeReady(std::string_view node_id, const std::optional<std::string>& phase) {
  std::lock_guard lock(mutex_);
  constexpr std::string_view kType = "node.ready";
  std::string line = head(kType, &node_id);
  appendTs(line);
  appendPhase(line, phase);
  commit(line, kType, node_id, &phase);
}

void EventLog::appendItem(std::string& line, int64_t item) {
  if (item >= 0) {
    line += ",\"item\":";
    line += std::to_string(item);
  }
}

void EventLog::nodeStarted(std::string_view node_id, const std::optional<std::string>& phase,
                           int64_t item) {
  std::lock_guard lock(mutex_);
  constexpr std::string_view kType = "node.started";
  std::string line = head(kType, &node_id);
  appendTs(line);
  appendPhase(line, phase);
  appendItem(line, item);
  commit(line, kType, node_id, &phase, false, item);
}

void EventLog::nodeFinished(std::string_view node_id, const std::optional<std::string>& phase,
                            const Json* metrics, bool cached, int64_t item) {
  std::lock_guard lock(mutex_);
  constexpr std::string_view kType = "node.finished";
  std::string line = head(kType, &node_id);
  appendTs(line);
  appendPhase(line, phase);
  if (metrics != nullptr) {
    line += ",\"metrics\":";
    appendJson(line, *metrics);
  }
  if (cached) {
    line += ",\"cached\":true";
  }
  appendItem(line, item);
  commit(line, kType, node_id, &phase, cached, item);
}

void EventLog::nodeFailed(std::string_view node_id, std::string_view error,
                          const std::optional<std::string>& phase, bool cancelled, int64_t item) {
  std::lock_guard lock(mutex_);
  constexpr std::string_view kType = "node.failed";
  std::string line = head(kType, &node_id);
  appendTs(line);
  appendMember(line, "error", error);
  appendPhase(line, phase);
  if (cancelled) {
    line += ",\"cancelled\":true";
  }
  appendItem(line, item);
  commit(line, kType, node_id, &phase, false, item);
}

void EventLog::nodeSkipped(std::string_view node_id, std::string_view reason,
                           const std::optional<std::string>& phase) {
  std::lock_guard lock(mutex_);
  constexpr std::string_view kType = "node.skipped";
  std::string line = head(kType, &node_id);
  appendTs(line);
  appendMember(line, "reason", reason);
  appendPhase(line, phase);
  commit(line, kType, node_id, &phase);
}

void EventLog::stateWrite(std::string_view node_id, std::string_view field) {
  std::lock_guard lock(mutex_);
  constexpr std::string_view kType = "state.write";
  std::string line = head(kType, &node_id);
  appendMember(line, "field", field);  // upstream puts field before ts for this one type
  appendTs(line);
  commit(line, kType, node_id, &kNoPhase);
}

Result<void> EventLog::nodeEvent(std::string_view type, std::string_view node_id,
                                 std::string_view fields_json) {
  const auto fail = [&](std::string_view why) {
    return makeError("event \"" + std::string(type) + "\" from node \"" + std::string(node_id) +
                     "\": " + std::string(why));
  };
  if (type.empty()) {
    return fail("the event type is empty");
  }
  const Json fields = Json::parse(fields_json, nullptr, false);
  if (!fields.is_object()) {
    return fail("its fields must be a JSON object, got: " + shortText(fields_json));
  }
  for (const char* reserved : {"type", "run_id", "node_id", "ts"}) {
    if (fields.contains(reserved)) {
      return fail(std::string("its fields may not set \"") + reserved +
                  "\" (the host fills it in)");
    }
  }
  // Splice the members as the plugin wrote them, keeping their order (upstream's node.tokens
  // is input_tokens, output_tokens, model). Newlines can only be whitespace between tokens
  // (inside strings they would be invalid JSON), so they become spaces to keep one line.
  size_t open_brace = fields_json.find('{');
  size_t close_brace = fields_json.rfind('}');
  std::string_view inner = fields_json.substr(open_brace + 1, close_brace - open_brace - 1);
  while (!inner.empty() && isSpace(inner.front())) {
    inner.remove_prefix(1);
  }
  while (!inner.empty() && isSpace(inner.back())) {
    inner.remove_suffix(1);
  }

  std::lock_guard lock(mutex_);
  std::string line = head(type, &node_id);
  appendTs(line);
  if (!inner.empty()) {
    line += ',';
    const size_t at = line.size();
    line += inner;
    for (size_t i = at; i < line.size(); ++i) {
      if (line[i] == '\n' || line[i] == '\r') {
        line[i] = ' ';
      }
    }
  }
  commit(line, type, node_id);
  return {};
}

size_t EventLog::subscribe(Listener listener) {
  std::lock_guard lock(mutex_);
  const size_t id = next_listener_++;
  auto next =
      listeners_ ? std::make_shared<Subscribers>(*listeners_) : std::make_shared<Subscribers>();
  next->push_back(Subscriber{id, std::move(listener)});
  listeners_ = std::move(next);
  return id;
}

void EventLog::unsubscribe(size_t id) {
  std::lock_guard lock(mutex_);
  if (!listeners_) {
    return;
  }
  auto next = std::make_shared<Subscribers>(*listeners_);
  std::erase_if(*next, [id](const Subscriber& entry) { return entry.id == id; });
  listeners_ = next->empty() ? nullptr : std::shared_ptr<const Subscribers>(std::move(next));
}

Result<LogReadResult> readEventLog(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return makeError("cannot read the event log " + path.string() + ": " + errnoText(errno));
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  const std::string text = std::move(buf).str();

  // Lines are [start, end) ranges; a final '\n' does not start another line.
  std::vector<std::string_view> lines;
  std::string_view rest(text);
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    if (nl == std::string_view::npos) {
      lines.push_back(rest);
      break;
    }
    lines.push_back(rest.substr(0, nl));
    rest.remove_prefix(nl + 1);
  }
  return parseEventLines(path.string(), lines);
}

LogReadResult parseEventLines(std::string_view source, const std::vector<std::string_view>& lines) {
  LogReadResult out;
  out.events.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) {
      continue;
    }
    Json event = Json::parse(line, nullptr, false);
    if (event.is_object()) {
      out.events.push_back(std::move(event));
      continue;
    }
    const std::string where = std::string(source) + ":" + std::to_string(i + 1) + ": ";
    if (i + 1 == lines.size()) {
      out.warnings.push_back(where +
                             "ignoring a torn last line (the run was probably killed while "
                             "writing it)");
    } else {
      out.warnings.push_back(where + "ignoring a line that is not a JSON object");
    }
  }
  return out;
}

}  // namespace oe::events
