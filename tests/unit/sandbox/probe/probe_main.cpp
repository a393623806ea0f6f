// oe_sandbox_probe: the confined program of the sandbox tests. Each command tries one thing the
// confinement may forbid and prints what the kernel answered, so a test reads the outcome.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int connectTcp(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::printf("connect failed: %s\n", std::strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

std::string readAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n = 0;
  while ((n = read(fd, buf, sizeof buf)) > 0) {
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

int run(const std::vector<std::string>& a) {
  const std::string& cmd = a.at(0);
  if (cmd == "alloc") {  // alloc MB: touch every page
    const std::size_t bytes = std::stoull(a.at(1)) * 1024 * 1024;
    char* p = static_cast<char*>(std::malloc(bytes));
    if (p == nullptr) {
      std::printf("alloc failed\n");
      std::fprintf(stderr, "alloc: %s\n", std::strerror(errno));
      return 1;
    }
    std::memset(p, 1, bytes);
    std::printf("alloc ok\n");
    std::free(p);
    return 0;
  }
  if (cmd == "fork") {  // fork N: children that wait; prints how many the kernel allowed
    const long want = std::stol(a.at(1));
    std::vector<pid_t> kids;
    for (long i = 0; i < want; ++i) {
      const pid_t pid = fork();
      if (pid == 0) {
        pause();
        _exit(0);
      }
      if (pid < 0) {
        std::fprintf(stderr, "fork: %s\n", std::strerror(errno));
        break;
      }
      kids.push_back(pid);
    }
    std::printf("forked %zu\n", kids.size());
    for (const pid_t pid : kids) {
      kill(pid, SIGKILL);
    }
    while (wait(nullptr) > 0) {
    }
    return 0;
  }
  if (cmd == "open") {  // open N: how many descriptors the kernel allowed
    const long want = std::stol(a.at(1));
    long opened = 0;
    while (opened < want && open("/dev/null", O_RDONLY) >= 0) {
      ++opened;
    }
    std::printf("opened %ld\n", opened);
    return 0;
  }
  if (cmd == "write") {  // write PATH MB
    std::signal(SIGXFSZ, SIG_IGN);
    const int fd = open(a.at(1).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
      std::printf("open failed: %s\n", std::strerror(errno));
      return 1;
    }
    std::vector<char> mb(1024 * 1024, 'x');
    long written = 0;
    for (long i = 0; i < std::stol(a.at(2)); ++i) {
      if (write(fd, mb.data(), mb.size()) != static_cast<ssize_t>(mb.size())) {
        std::printf("write failed after %ld MB: %s\n", written, std::strerror(errno));
        return 1;
      }
      ++written;
    }
    std::printf("wrote %ld MB\n", written);
    return 0;
  }
  if (cmd == "spin") {
    volatile unsigned long n = 0;
    for (;;) {
      n = n + 1;
    }
  }
  if (cmd == "connect") {  // connect PORT
    const int fd = connectTcp(std::stoi(a.at(1)));
    if (fd < 0) {
      return 1;
    }
    std::printf("connected\n");
    return 0;
  }
  if (cmd == "loopback") {  // a listener of its own on 127.0.0.1, reached from inside
    const int server = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(server, 1) != 0 ||
        getsockname(server, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      std::printf("listen failed: %s\n", std::strerror(errno));
      return 1;
    }
    const int fd = connectTcp(ntohs(addr.sin_port));
    if (fd < 0) {
      return 1;
    }
    const int peer = accept(server, nullptr, nullptr);
    (void)!write(fd, "hi", 2);
    char buf[2] = {};
    const bool ok = read(peer, buf, 2) == 2 && buf[0] == 'h';
    std::printf(ok ? "loopback ok\n" : "loopback broken\n");
    return ok ? 0 : 1;
  }
  if (cmd == "proxy") {  // proxy MESSAGE: through $HTTPS_PROXY's port, prints the reply
    const char* url = std::getenv("HTTPS_PROXY");
    if (url == nullptr) {
      std::printf("no HTTPS_PROXY\n");
      return 1;
    }
    const std::string text(url);
    const int fd = connectTcp(std::stoi(text.substr(text.rfind(':') + 1)));
    if (fd < 0) {
      return 1;
    }
    const std::string& message = a.at(1);
    (void)!write(fd, message.data(), message.size());
    shutdown(fd, SHUT_WR);
    std::printf("reply: %s\n", readAll(fd).c_str());
    return 0;
  }
  if (cmd == "env") {  // env NAME...
    for (std::size_t i = 1; i < a.size(); ++i) {
      const char* v = std::getenv(a[i].c_str());
      std::printf("%s=%s\n", a[i].c_str(), v == nullptr ? "(unset)" : v);
    }
    return 0;
  }
  if (cmd == "exit") {
    return std::stoi(a.at(1));
  }
  if (cmd == "signal") {  // signal N: dies of it
    std::signal(std::stoi(a.at(1)), SIG_DFL);
    raise(std::stoi(a.at(1)));
    return 99;
  }
  if (cmd == "pid-then-spin") {  // prints its pid, then waits to be killed
    std::printf("%d\n", getpid());
    std::fflush(stdout);
    pause();
    return 0;
  }
  std::printf("unknown command %s\n", cmd.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  if (argc < 2) {
    std::printf("usage: oe_sandbox_probe COMMAND [ARGS...]\n");
    return 2;
  }
  return run(std::vector<std::string>(argv + 1, argv + argc));
}
