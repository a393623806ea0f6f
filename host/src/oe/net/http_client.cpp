// libcurl behind oe::net::request. Each thread keeps one multi + easy handle pair so that
// consecutive requests from a worker reuse their connections (keep-alive, TLS sessions); the
// multi loop wakes at least every kPollSlice to check cancellation and the stall timer, which
// CURLOPT_LOW_SPEED_TIME (whole seconds, no cancellation hook) cannot do.
#include "oe/net/http_client.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <mutex>
#include <string>
#include <utility>

namespace oe::net {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kPollSlice{50};

// One thread's handles. Lazily created on the thread's first request, freed at thread exit.
struct CurlPool {
  CURLM* multi = nullptr;
  CURL* easy = nullptr;
  bool busy = false;  // guards against reentrant use (a cancellation probe that itself fetches)

  CurlPool() = default;
  CurlPool(const CurlPool&) = delete;
  CurlPool& operator=(const CurlPool&) = delete;
  ~CurlPool() {
    if (easy != nullptr) {
      curl_easy_cleanup(easy);
    }
    if (multi != nullptr) {
      curl_multi_cleanup(multi);
    }
  }
  bool ready() {
    if (multi == nullptr) {
      multi = curl_multi_init();
    }
    if (easy == nullptr) {
      easy = curl_easy_init();
    }
    return multi != nullptr && easy != nullptr;
  }
};

CurlPool& threadPool() {
  thread_local CurlPool pool;
  return pool;
}

struct Transfer {
  HttpResponse response;
  size_t max_bytes = 0;
  bool too_large = false;
  Clock::time_point last_activity;
  curl_off_t last_dl = 0;
  curl_off_t last_ul = 0;
};

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r' ||
                           text.back() == '\n')) {
    text.remove_suffix(1);
  }
  return text;
}

size_t onBody(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  t->last_activity = Clock::now();
  if (t->response.body.size() + n > t->max_bytes) {
    t->too_large = true;
    return 0;  // makes curl fail with CURLE_WRITE_ERROR
  }
  t->response.body.append(data, n);
  return n;
}

size_t onHeader(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  t->last_activity = Clock::now();
  const std::string_view line(data, n);
  if (line.starts_with("HTTP/")) {
    t->response.headers.clear();  // a new response begins (redirect, 100 Continue)
    return n;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) {
    return n;
  }
  std::string name = lower(trim(line.substr(0, colon)));
  const std::string_view value = trim(line.substr(colon + 1));
  auto [it, inserted] = t->response.headers.try_emplace(std::move(name), value);
  if (!inserted) {
    it->second.append(", ").append(value);
  }
  return n;
}

// Counts upload progress as activity too, so a large request body is not a "stall".
int onProgress(void* user, curl_off_t /*dltotal*/, curl_off_t dlnow, curl_off_t /*ultotal*/,
               curl_off_t ulnow) {
  auto* t = static_cast<Transfer*>(user);
  if (dlnow != t->last_dl || ulnow != t->last_ul) {
    t->last_dl = dlnow;
    t->last_ul = ulnow;
    t->last_activity = Clock::now();
  }
  return 0;
}

// The URL as it may appear in a message: no credentials, no query string (API keys sometimes
// travel there, and error texts end up in run logs).
std::string redact(std::string_view url) {
  std::string out(url.substr(0, url.find_first_of("?#")));
  if (out.size() < url.size()) {
    out += "?...";
  }
  const size_t scheme = out.find("://");
  const size_t start = scheme == std::string::npos ? 0 : scheme + 3;
  const size_t at = out.find('@', start);
  const size_t slash = out.find('/', start);
  if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
    out.erase(start, at + 1 - start);
  }
  return out;
}

bool isToken(std::string_view method) {
  return !method.empty() && std::all_of(method.begin(), method.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 || c == '-' || c == '_';
  });
}

struct Failure {
  oe_status status;
  std::string cause;
};

Failure describe(CURLcode code, const char* detail, const HttpRequest& req) {
  std::string info = detail != nullptr && *detail != '\0' ? detail : curl_easy_strerror(code);
  switch (code) {
    case CURLE_COULDNT_CONNECT:
      return {OE_UNAVAILABLE,
              "could not connect (" + info + "); is the server running and the URL right?"};
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return {OE_UNAVAILABLE, "could not resolve the host name (" + info + "); check the URL"};
    case CURLE_OPERATION_TIMEDOUT:
      return {OE_DEADLINE_EXCEEDED, "no complete response within " +
                                        std::to_string(req.timeout.count()) + " ms (timeout_ms); " +
                                        info};
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return {OE_INVALID_ARGUMENT, "the URL is not a valid http(s) URL (" + info + ")"};
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
      return {OE_UNAVAILABLE, "the TLS connection failed (" + info + ")"};
    default:
      return {OE_UNAVAILABLE, "the connection failed (" + info + ")"};
  }
}

// Frees the header list on every exit path.
struct HeaderList {
  curl_slist* list = nullptr;
  HeaderList() = default;
  HeaderList(const HeaderList&) = delete;
  HeaderList& operator=(const HeaderList&) = delete;
  ~HeaderList() { curl_slist_free_all(list); }
  bool add(const std::string& line) {
    curl_slist* next = curl_slist_append(list, line.c_str());
    if (next == nullptr) {
      return false;
    }
    list = next;
    return true;
  }
};

Result<HttpResponse> perform(CurlPool& pool, const HttpRequest& req,
                             const std::function<bool()>& cancelled, oe_status* failure) {
  const std::string where = req.method + " " + redact(req.url);
  auto fail = [&](oe_status status, const std::string& cause) -> Result<HttpResponse> {
    if (failure != nullptr) {
      *failure = status;
    }
    return makeError(where + " failed: " + cause);
  };
  if (!isToken(req.method)) {
    return fail(OE_INVALID_ARGUMENT, "\"" + req.method + "\" is not an HTTP method");
  }
  if (req.timeout.count() <= 0 || req.stall_timeout.count() <= 0) {
    return fail(OE_INVALID_ARGUMENT, "timeout_ms and stall_timeout_ms must be positive");
  }

  HeaderList headers;
  // Without this curl waits up to a second for "100 Continue" before sending a large body.
  bool headers_ok = headers.add("Expect:");
  for (const auto& [name, value] : req.headers) {
    if (name.empty() || name.find_first_of(":\r\n") != std::string::npos ||
        value.find_first_of("\r\n") != std::string::npos) {
      return fail(OE_INVALID_ARGUMENT, "invalid header \"" + name + "\"");
    }
    // "Name;" is curl's way to send a header with an empty value.
    headers_ok = headers_ok && headers.add(value.empty() ? name + ";" : name + ": " + value);
  }
  if (!headers_ok) {
    return fail(OE_RESOURCE_EXHAUSTED, "out of memory building the headers");
  }

  CURL* easy = pool.easy;
  curl_easy_reset(easy);  // keeps the connection cache, drops every option of the last request
  Transfer transfer;
  transfer.max_bytes = req.max_response_bytes;
  std::array<char, CURL_ERROR_SIZE> error_text{};

  curl_easy_setopt(easy, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
  curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(easy, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
  curl_easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS,
                   static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(easy, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(easy, CURLOPT_USERAGENT, "oe/" OE_VERSION_STRING);
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(req.timeout.count()));
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers.list);
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, error_text.data());
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &onBody);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &onHeader);
  curl_easy_setopt(easy, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, &onProgress);
  curl_easy_setopt(easy, CURLOPT_XFERINFODATA, &transfer);
  curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);
  if (req.method == "HEAD") {
    curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);
  } else if (req.method == "POST" || !req.body.empty()) {
    // The body is not copied: req outlives the transfer.
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, req.body.data());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
    if (req.method != "POST") {
      curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    }
  } else if (req.method != "GET") {
    curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  }

  if (curl_multi_add_handle(pool.multi, easy) != CURLM_OK) {
    return fail(OE_INTERNAL, "curl_multi_add_handle failed");
  }
  transfer.last_activity = Clock::now();
  enum class Abort { kNone, kCancelled, kStalled, kMulti } abort = Abort::kNone;
  int running = 1;
  while (true) {
    if (curl_multi_perform(pool.multi, &running) != CURLM_OK) {
      abort = Abort::kMulti;
      break;
    }
    if (running == 0) {
      break;
    }
    if (cancelled && cancelled()) {
      abort = Abort::kCancelled;
      break;
    }
    const auto idle = Clock::now() - transfer.last_activity;
    if (idle >= req.stall_timeout) {
      abort = Abort::kStalled;
      break;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(req.stall_timeout - idle);
    const auto wait = std::clamp(left, std::chrono::milliseconds{1}, kPollSlice);
    curl_multi_poll(pool.multi, nullptr, 0, static_cast<int>(wait.count()), nullptr);
  }

  CURLcode code = CURLE_OK;
  if (abort == Abort::kNone) {
    int pending = 0;
    while (CURLMsg* msg = curl_multi_info_read(pool.multi, &pending)) {
      if (msg->msg == CURLMSG_DONE && msg->easy_handle == easy) {
        code = msg->data.result;
      }
    }
  }
  long status = 0;
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
  // An unfinished transfer's connection is closed here, never reused.
  curl_multi_remove_handle(pool.multi, easy);

  switch (abort) {
    case Abort::kCancelled:
      return fail(OE_CANCELLED, "cancelled");
    case Abort::kStalled:
      return fail(OE_DEADLINE_EXCEEDED,
                  "no data received for " + std::to_string(req.stall_timeout.count()) +
                      " ms (stall_timeout_ms); the server stopped responding");
    case Abort::kMulti:
      return fail(OE_INTERNAL, "curl_multi_perform failed");
    case Abort::kNone:
    default:
      break;
  }
  if (transfer.too_large) {
    return fail(OE_RESOURCE_EXHAUSTED,
                "the response exceeds " + std::to_string(req.max_response_bytes) + " bytes");
  }
  if (code != CURLE_OK) {
    Failure f = describe(code, error_text.data(), req);
    return fail(f.status, f.cause);
  }
  transfer.response.status = static_cast<int>(status);
  return std::move(transfer.response);
}

}  // namespace

void initNet() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

Result<HttpResponse> request(const HttpRequest& req, const std::function<bool()>& cancelled,
                             oe_status* failure) {
  initNet();
  CurlPool& shared = threadPool();
  if (!shared.busy && shared.ready()) {
    struct Busy {
      bool& flag;
      explicit Busy(bool& f) : flag(f) { flag = true; }
      Busy(const Busy&) = delete;
      Busy& operator=(const Busy&) = delete;
      ~Busy() { flag = false; }
    } busy(shared.busy);
    return perform(shared, req, cancelled, failure);
  }
  CurlPool local;  // reentrant call, or the thread's handles could not be created
  if (!local.ready()) {
    if (failure != nullptr) {
      *failure = OE_RESOURCE_EXHAUSTED;
    }
    return makeError(req.method + " " + redact(req.url) + " failed: curl could not be initialised");
  }
  return perform(local, req, cancelled, failure);
}

}  // namespace oe::net
