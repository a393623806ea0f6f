// The fault-injecting TCP proxy (tcp_proxy.hpp): one poll loop owns the listener and every
// connection; controls are commands the loop runs between two polls.
#include "support/tcp_proxy.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <optional>
#include <stdexcept>
#include <string_view>

namespace oe::test {

namespace {

using Clock = std::chrono::steady_clock;

// Per connection and direction: past this many bytes waiting, that side is not read (the
// sender's socket buffer then fills and it waits, as on a slow network).
constexpr size_t kMaxBuffered = size_t{4} << 20;
// A client message declaring more than this is not parsed: the connection goes raw.
constexpr uint32_t kMaxMessage = uint32_t{64} << 20;
constexpr size_t kMaxLinks = 512;
constexpr uint32_t kSslRequest = 80877103;
constexpr uint32_t kGssRequest = 80877104;

uint32_t bigEndian32(const char* p) {
  unsigned char b[4];
  std::memcpy(b, p, 4);
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
}

void closeFd(int& fd) {
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
}

void setNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

void noDelay(int fd) {
  const int one = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// The SQL of a Query ('Q': sql\0) or Parse ('P': name\0 sql\0 ...) message, whole message given.
std::string_view statementText(std::string_view message) {
  std::string_view body = message.substr(5);
  if (message[0] == 'P') {
    const size_t name_end = body.find('\0');
    if (name_end == std::string_view::npos) {
      return {};
    }
    body.remove_prefix(name_end + 1);
  }
  const size_t end = body.find('\0');
  return end == std::string_view::npos ? body : body.substr(0, end);
}

}  // namespace

// The proxy's per-connection state (named: the Loop class holds it).
namespace tcp_proxy_detail {

using Clock = std::chrono::steady_clock;

struct Chunk {
  Clock::time_point ready;
  std::string data;
  size_t offset = 0;
};

// Bytes waiting to go one way.
struct Queue {
  std::deque<Chunk> chunks;
  size_t bytes = 0;

  void push(Clock::time_point ready, std::string_view data) {
    if (data.empty()) {
      return;
    }
    chunks.push_back(Chunk{ready, std::string(data), 0});
    bytes += data.size();
  }
  [[nodiscard]] bool readyAt(Clock::time_point now) const {
    return !chunks.empty() && chunks.front().ready <= now;
  }
  void clear() {
    chunks.clear();
    bytes = 0;
  }
};

// One proxied connection.
struct Link {
  int client = -1;
  int server = -1;
  Queue up;    // client -> server
  Queue down;  // server -> client
  bool client_eof = false;  // the client closed: the server side goes once `up` drained
  bool server_eof = false;  // the server closed: the client side goes once `down` drained
  // The client's stream, parsed into messages (PostgreSQL protocol).
  std::string partial;  // an incomplete message
  bool typed = false;   // past the startup packet: messages are type byte + length
  bool raw = false;     // not parsed (TLS or GSS negotiated, or not the protocol at all)
  // The server's stream, framed: a type byte and a length per message, except the one-byte
  // answers to SSLRequest and GSSENCRequest.
  int single_bytes = 0;
  char header[5] = {};
  size_t header_len = 0;
  uint64_t frame_left = 0;
  char frame_type = 0;
  // What a trigger did to it.
  bool losing = false;              // kLoseReply: server bytes dropped; cut at ReadyForQuery
  bool refuse_after = false;        // kLoseReplyAndRefuse: refuse new connections after the cut
  bool orphan_at_sync = false;      // kOrphan on a Parse: the client goes after its Sync
  bool close_when_flushed = false;  // kCut: both sides go once `up` drained
  bool orphan = false;              // the client is gone, the server's session kept

  [[nodiscard]] bool dead() const { return client < 0 && server < 0; }
};

}  // namespace tcp_proxy_detail

using tcp_proxy_detail::Chunk;
using tcp_proxy_detail::Link;
using tcp_proxy_detail::Queue;

class TcpProxy::Loop {
 public:
  explicit Loop(TcpProxy& proxy) : proxy_(proxy) {}
  ~Loop() { closeEverything(); }

  struct Trigger {
    std::string needle;
    Action action;
    int left;  // firings to come
    int skip;  // matches to let through first
  };

  // Settings, changed by commands on the loop's thread.
  bool swallow = false;
  bool holding = false;
  bool refusing = false;
  std::chrono::milliseconds delay{0};
  std::vector<Trigger> triggers;

  void run() {
    std::vector<pollfd> fds;
    std::vector<std::pair<size_t, bool>> owners;  // link index, true: its client socket
    for (;;) {
      const auto now = Clock::now();
      fds.clear();
      owners.clear();
      fds.push_back({proxy_.wake_[0], POLLIN, 0});
      fds.push_back({proxy_.listener_, POLLIN, 0});
      std::optional<Clock::time_point> next_ready;
      for (size_t i = 0; i < links_.size(); ++i) {
        Link& link = *links_[i];
        if (link.client >= 0) {
          short events = 0;
          if (!link.client_eof && !link.close_when_flushed && link.up.bytes < kMaxBuffered) {
            events |= POLLIN;
          }
          if (!holding && link.down.readyAt(now)) {
            events |= POLLOUT;
          }
          fds.push_back({link.client, events, 0});
          owners.emplace_back(i, true);
        }
        if (link.server >= 0) {
          short events = 0;
          if (!link.server_eof && link.down.bytes < kMaxBuffered) {
            events |= POLLIN;
          }
          if (!holding && link.up.readyAt(now)) {
            events |= POLLOUT;
          }
          fds.push_back({link.server, events, 0});
          owners.emplace_back(i, false);
        }
        if (!holding) {
          for (const Queue* queue : {&link.up, &link.down}) {
            if (!queue->chunks.empty() && queue->chunks.front().ready > now &&
                (!next_ready || queue->chunks.front().ready < *next_ready)) {
              next_ready = queue->chunks.front().ready;
            }
          }
        }
      }
      int timeout = -1;
      if (next_ready) {
        const auto wait =
            std::chrono::ceil<std::chrono::milliseconds>(*next_ready - Clock::now()).count();
        timeout = static_cast<int>(std::clamp<int64_t>(wait, 0, 60'000));
      }
      const int polled = ::poll(fds.data(), fds.size(), timeout);
      if (polled < 0 && errno != EINTR) {
        throw std::runtime_error(std::string("tcp proxy: poll: ") + std::strerror(errno));
      }
      if (polled > 0 && (fds[0].revents & POLLIN) != 0) {
        if (!runCommands()) {
          return;
        }
        continue;  // the commands may have closed links: poll them again
      }
      if (polled > 0 && (fds[1].revents & POLLIN) != 0) {
        acceptAll();
      }
      for (size_t k = 2; polled > 0 && k < fds.size(); ++k) {
        if (fds[k].revents == 0) {
          continue;
        }
        Link& link = *links_[owners[k - 2].first];
        const bool client = owners[k - 2].second;
        const int fd = client ? link.client : link.server;
        if (fd != fds[k].fd) {
          continue;  // closed meanwhile, in this round
        }
        if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
          client ? readClient(link) : readServer(link);
        }
        if ((fds[k].revents & POLLOUT) != 0) {
          client ? flushTo(link, link.client, link.down) : flushTo(link, link.server, link.up);
        }
      }
      // Time-released chunks, and the closes that wait for a queue to drain.
      const auto later = Clock::now();
      for (auto& link : links_) {
        if (!holding && link->server >= 0 && link->up.readyAt(later)) {
          flushTo(*link, link->server, link->up);
        }
        if (!holding && link->client >= 0 && link->down.readyAt(later)) {
          flushTo(*link, link->client, link->down);
        }
        settle(*link);
      }
      links_.erase(std::remove_if(links_.begin(), links_.end(),
                                  [](const std::unique_ptr<Link>& l) { return l->dead(); }),
                   links_.end());
      publishOpen();
    }
  }

  void cutAll() {
    int64_t cut = 0;
    for (auto& link : links_) {
      if (!link->dead()) {
        ++cut;
      }
      closeFd(link->client);
      closeFd(link->server);
    }
    links_.clear();
    count([cut](Counters& c) { c.cut += cut; });
    publishOpen();
  }

 private:
  // Runs the queued commands; false when the proxy is stopping.
  bool runCommands() {
    char sink[256];
    while (::read(proxy_.wake_[0], sink, sizeof sink) > 0) {
    }
    std::vector<std::function<void(Loop&)>> commands;
    uint64_t upto = 0;
    bool stopping = false;
    {
      std::lock_guard lock(proxy_.mutex_);
      commands.swap(proxy_.commands_);
      upto = proxy_.queued_;
      stopping = proxy_.stopping_;
    }
    for (auto& command : commands) {
      command(*this);
    }
    {
      std::lock_guard lock(proxy_.mutex_);
      proxy_.applied_ = upto;
    }
    proxy_.changed_.notify_all();
    return !stopping;
  }

  template <class F>
  void count(F&& change) {
    {
      std::lock_guard lock(proxy_.mutex_);
      change(proxy_.counters_);
    }
    proxy_.changed_.notify_all();
  }

  void publishOpen() {
    int64_t open = 0;
    int64_t orphans = 0;
    int64_t waiting = 0;
    for (const auto& link : links_) {
      open += link->client >= 0 ? 1 : 0;
      orphans += link->orphan && link->server >= 0 ? 1 : 0;
      waiting += static_cast<int64_t>((link->server >= 0 ? link->up.bytes : 0) +
                                      (link->client >= 0 ? link->down.bytes : 0));
    }
    std::lock_guard lock(proxy_.mutex_);
    Counters& c = proxy_.counters_;
    if (c.open != open || c.orphans != orphans || c.waiting != waiting) {
      c.open = open;
      c.orphans = orphans;
      c.waiting = waiting;
      proxy_.changed_.notify_all();
    }
  }

  void closeEverything() {
    for (auto& link : links_) {
      closeFd(link->client);
      closeFd(link->server);
    }
    links_.clear();
  }

  int connectTarget() const {
    const Target& target = proxy_.target_;
    int fd = -1;
    if (!target.unix_path.empty()) {
      fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_un address{};
      address.sun_family = AF_UNIX;
      const std::string path = target.unix_path.string();
      if (fd < 0 || path.size() >= sizeof address.sun_path) {
        closeFd(fd);
        return -1;
      }
      std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
      if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        closeFd(fd);
        return -1;
      }
    } else {
      fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_port = htons(target.port);
      if (fd < 0 || ::inet_pton(AF_INET, target.host.c_str(), &address.sin_addr) != 1 ||
          ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        closeFd(fd);
        return -1;
      }
      noDelay(fd);
    }
    setNonBlocking(fd);
    return fd;
  }

  void acceptAll() {
    for (;;) {
      int client = ::accept4(proxy_.listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (client < 0) {
        return;  // EAGAIN: no more waiting
      }
      // Each count is taken before the close the client sees, so a test that saw the
      // close reads the count too.
      if (refusing || links_.size() >= kMaxLinks) {
        count([](Counters& c) { ++c.refused; });
        closeFd(client);
        continue;
      }
      const int server = connectTarget();
      if (server < 0) {
        count([](Counters& c) { ++c.refused; });
        closeFd(client);
        continue;
      }
      noDelay(client);
      auto link = std::make_unique<Link>();
      link->client = client;
      link->server = server;
      link->raw = proxy_.protocol_ == Protocol::kRaw;
      links_.push_back(std::move(link));
      count([](Counters& c) { ++c.accepted; });
    }
  }

  void cut(Link& link) {
    if (!link.dead()) {
      count([](Counters& c) { ++c.cut; });  // before the close the client sees
    }
    closeFd(link.client);
    closeFd(link.server);
    link.up.clear();
    link.down.clear();
  }

  void makeOrphan(Link& link) {
    count([](Counters& c) { ++c.cut; });  // before the close the client sees
    closeFd(link.client);
    link.down.clear();
    link.partial.clear();
    link.orphan = true;
  }

  // The action of the first armed trigger `sql` matches (which is then spent once).
  std::optional<Action> match(std::string_view sql) {
    for (auto it = triggers.begin(); it != triggers.end(); ++it) {
      if (sql.find(it->needle) != std::string_view::npos) {
        if (it->skip > 0) {
          --it->skip;
          return std::nullopt;
        }
        const Action action = it->action;
        if (--it->left <= 0) {
          triggers.erase(it);
        }
        return action;
      }
    }
    return std::nullopt;
  }

  void readClient(Link& link) {
    char buffer[65536];
    const ssize_t n = ::recv(link.client, buffer, sizeof buffer, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      link.client_eof = true;
      closeFd(link.client);
      link.down.clear();
      return;
    }
    if (n < 0) {
      return;
    }
    onClientBytes(link, std::string_view(buffer, static_cast<size_t>(n)));
  }

  // Splits the client's bytes into messages and applies the triggers to statements.
  void onClientBytes(Link& link, std::string_view data) {
    const auto ready = Clock::now() + delay;
    if (link.raw) {
      link.up.push(ready, data);
      return;
    }
    link.partial.append(data);
    size_t pos = 0;
    auto goRaw = [&] {
      link.raw = true;
      link.up.push(ready, std::string_view(link.partial).substr(pos));
      link.partial.clear();
    };
    for (;;) {
      const std::string_view rest = std::string_view(link.partial).substr(pos);
      if (!link.typed) {
        if (rest.size() < 8) {
          break;
        }
        const uint32_t length = bigEndian32(rest.data());
        if (length < 8 || length > kMaxMessage) {
          goRaw();
          return;
        }
        if (rest.size() < length) {
          break;
        }
        const uint32_t code = bigEndian32(rest.data() + 4);
        if (code == kSslRequest || code == kGssRequest) {
          ++link.single_bytes;  // the server answers with one byte
        } else {
          link.typed = true;  // a StartupMessage (or a CancelRequest, the last message)
        }
        link.up.push(ready, rest.substr(0, length));
        pos += length;
        continue;
      }
      if (rest.size() < 5) {
        break;
      }
      const uint32_t length = bigEndian32(rest.data() + 1);
      if (length < 4 || length > kMaxMessage) {
        goRaw();
        return;
      }
      if (rest.size() < 1 + size_t{length}) {
        break;
      }
      const std::string_view message = rest.substr(0, 1 + size_t{length});
      pos += message.size();
      const char type = message[0];
      if (type == 'Q' || type == 'P') {
        count([](Counters& c) { ++c.statements; });
        if (const auto action = match(statementText(message))) {
          count([](Counters& c) { ++c.fired; });
          if (*action == Action::kCut) {
            link.up.push(ready, message.substr(0, std::max<size_t>(1, message.size() / 2)));
            link.close_when_flushed = true;
            link.partial.clear();
            return;
          }
          if (*action == Action::kLoseReply || *action == Action::kLoseReplyAndRefuse) {
            link.losing = true;
            link.refuse_after = *action == Action::kLoseReplyAndRefuse;
          } else if (type == 'Q') {
            link.up.push(ready, message);
            makeOrphan(link);
            return;
          } else {
            link.orphan_at_sync = true;
          }
        }
      }
      link.up.push(ready, message);
      if (type == 'S' && link.orphan_at_sync) {
        makeOrphan(link);
        return;
      }
    }
    link.partial.erase(0, pos);
  }

  void readServer(Link& link) {
    char buffer[65536];
    const ssize_t n = ::recv(link.server, buffer, sizeof buffer, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      link.server_eof = true;
      closeFd(link.server);
      link.up.clear();
      return;
    }
    if (n < 0) {
      return;
    }
    const std::string_view data(buffer, static_cast<size_t>(n));
    if (link.orphan) {
      count([n](Counters& c) { c.dropped += n; });
      return;
    }
    const bool losing = link.losing;
    const bool ready_for_query = !link.raw && scanServer(link, data);
    const bool cut_now = losing && ready_for_query;
    if (swallow || losing) {
      count([n](Counters& c) { c.dropped += n; });
    } else {
      link.down.push(Clock::now() + delay, data);
    }
    if (cut_now) {
      refusing = refusing || link.refuse_after;
      cut(link);
    }
  }

  // Follows the server's message framing; true when a ReadyForQuery ended in `data`.
  static bool scanServer(Link& link, std::string_view data) {
    bool ready_for_query = false;
    size_t i = 0;
    while (i < data.size() && !link.raw) {
      if (link.frame_left > 0) {
        const size_t take = static_cast<size_t>(
            std::min<uint64_t>(link.frame_left, data.size() - i));
        link.frame_left -= take;
        i += take;
        if (link.frame_left == 0 && link.frame_type == 'Z') {
          ready_for_query = true;
        }
        continue;
      }
      if (link.header_len == 0 && link.single_bytes > 0) {
        --link.single_bytes;
        if (data[i] != 'N') {
          link.raw = true;  // TLS or GSS from here: opaque
        }
        ++i;
        continue;
      }
      link.header[link.header_len++] = data[i++];
      if (link.header_len == 5) {
        link.frame_type = link.header[0];
        const uint32_t length = bigEndian32(link.header + 1);
        link.header_len = 0;
        if (length < 4) {
          link.raw = true;
          break;
        }
        link.frame_left = length - 4;
        if (link.frame_left == 0 && link.frame_type == 'Z') {
          ready_for_query = true;
        }
      }
    }
    return ready_for_query;
  }

  void flushTo(Link& link, int fd, Queue& queue) {
    const auto now = Clock::now();
    while (fd >= 0 && queue.readyAt(now)) {
      Chunk& chunk = queue.chunks.front();
      const ssize_t n = ::send(fd, chunk.data.data() + chunk.offset,
                               chunk.data.size() - chunk.offset, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
          return;
        }
        // The other end is gone: as if it had closed.
        if (fd == link.server) {
          link.server_eof = true;
          closeFd(link.server);
          link.up.clear();
        } else {
          link.client_eof = true;
          closeFd(link.client);
          link.down.clear();
        }
        return;
      }
      chunk.offset += static_cast<size_t>(n);
      queue.bytes -= static_cast<size_t>(n);
      const bool up = &queue == &link.up;
      count([n, up](Counters& c) { (up ? c.to_server : c.to_client) += n; });
      if (chunk.offset == chunk.data.size()) {
        queue.chunks.pop_front();
      }
    }
  }

  // Closes what has nothing left to do.
  void settle(Link& link) {
    if (link.close_when_flushed && link.up.chunks.empty()) {
      cut(link);
      return;
    }
    if (link.client < 0 && link.server >= 0 && !link.orphan && link.up.chunks.empty()) {
      closeFd(link.server);  // the client left: its last messages (Terminate) went through
    }
    if (link.server < 0 && link.client >= 0 && link.down.chunks.empty()) {
      closeFd(link.client);  // the server left: what it said last reached the client
    }
  }

  TcpProxy& proxy_;
  std::vector<std::unique_ptr<Link>> links_;
};

std::unique_ptr<TcpProxy> TcpProxy::toUnixSocket(std::filesystem::path path, Protocol protocol) {
  Target target;
  target.unix_path = std::move(path);
  return std::unique_ptr<TcpProxy>(new TcpProxy(std::move(target), protocol));
}

std::unique_ptr<TcpProxy> TcpProxy::toTcp(std::string host, uint16_t port, Protocol protocol) {
  Target target;
  target.host = std::move(host);
  target.port = port;
  return std::unique_ptr<TcpProxy>(new TcpProxy(std::move(target), protocol));
}

std::unique_ptr<TcpProxy> TcpProxy::toPostgres(const std::filesystem::path& cluster_dir,
                                               int port) {
  return toUnixSocket(cluster_dir / (".s.PGSQL." + std::to_string(port)), Protocol::kPostgres);
}

TcpProxy::TcpProxy(Target target, Protocol protocol)
    : target_(std::move(target)), protocol_(protocol) {
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw std::runtime_error(std::string("tcp proxy: pipe: ") + std::strerror(errno));
  }
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int one = 1;
  (void)::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t size = sizeof address;
  if (listener_ < 0 ||
      ::bind(listener_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listener_, 128) != 0 ||
      ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    const std::string why = std::strerror(errno);
    closeFd(listener_);
    closeFd(wake_[0]);
    closeFd(wake_[1]);
    throw std::runtime_error("tcp proxy: cannot listen on 127.0.0.1: " + why);
  }
  port_ = ntohs(address.sin_port);
  loop_ = std::make_unique<Loop>(*this);
  thread_ = std::thread([this] { loop_->run(); });
}

TcpProxy::~TcpProxy() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  const char byte = 's';
  (void)::write(wake_[1], &byte, 1);
  thread_.join();
  loop_.reset();
  closeFd(listener_);
  closeFd(wake_[0]);
  closeFd(wake_[1]);
}

std::string TcpProxy::pgUrl(const std::string& database, const std::string& user) const {
  return "postgresql://" + user + "@127.0.0.1:" + std::to_string(port_) + "/" + database;
}

void TcpProxy::apply(std::function<void(Loop&)> command) {
  std::unique_lock lock(mutex_);
  if (stopping_) {
    return;
  }
  commands_.push_back(std::move(command));
  const uint64_t mine = ++queued_;
  const char byte = 'c';
  (void)::write(wake_[1], &byte, 1);  // a full pipe already holds a wake-up
  changed_.wait(lock, [this, mine] { return applied_ >= mine; });
}

void TcpProxy::cutAll() {
  apply([](Loop& loop) { loop.cutAll(); });
}

void TcpProxy::swallowReplies(bool on) {
  apply([on](Loop& loop) { loop.swallow = on; });
}

void TcpProxy::hold(bool on) {
  apply([on](Loop& loop) { loop.holding = on; });
}

void TcpProxy::delay(std::chrono::milliseconds delay) {
  apply([delay](Loop& loop) { loop.delay = std::max(delay, std::chrono::milliseconds(0)); });
}

void TcpProxy::refuse(bool on) {
  apply([on](Loop& loop) { loop.refusing = on; });
}

void TcpProxy::on(std::string needle, Action action, int times, int skip) {
  apply([needle = std::move(needle), action, times, skip](Loop& loop) {
    if (times > 0) {
      loop.triggers.push_back(Loop::Trigger{needle, action, times, std::max(skip, 0)});
    }
  });
}

void TcpProxy::disarm() {
  apply([](Loop& loop) { loop.triggers.clear(); });
}

TcpProxy::Counters TcpProxy::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

bool TcpProxy::waitUntil(const std::function<bool(const Counters&)>& ready,
                         std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return ready(counters_); });
}

}  // namespace oe::test
