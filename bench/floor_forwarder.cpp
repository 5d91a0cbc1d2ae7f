// bench/proxy_overhead.sh's floor: the least a proxy of `hiccup proxy`'s shape can add, so that
// the script shows how much of the proxy's added latency is the extra hop itself on this machine
// (issue 38's target: under 0.2 ms added p99 at 16 connections).
//
// Same shape as harness/record/recording_proxy.cpp: one thread per client connection, one
// keep-alive upstream connection per client connection (opened when the client connects),
// TCP_NODELAY on both sides, blocking sockets. Nothing else: no HTTP parsing, no re-chunking, no
// recording, no journal; whatever bytes come from one side are sent to the other as they are, in
// one send per read (poll on both sockets). A benchmark tool, not part of hiccup: no timeouts, no
// limits; the upstream must be a numeric IPv4 address.
//
//   hiccup_floor_forwarder UPSTREAM_HOST UPSTREAM_PORT
//     (listens on 127.0.0.1, any free port; prints "http://127.0.0.1:PORT" when ready)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace {

sockaddr_in upstream_addr{};

void nodelay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool send_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

void relay(int client) {
  nodelay(client);
  const int up = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (up >= 0 && ::connect(up, reinterpret_cast<const sockaddr*>(&upstream_addr), sizeof upstream_addr) == 0) {
    nodelay(up);
    char buf[16384];
    pollfd fds[2] = {{client, POLLIN, 0}, {up, POLLIN, 0}};
    for (bool open = true; open;) {
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      for (int i = 0; i < 2 && open; ++i) {
        if (fds[i].revents == 0) continue;
        const ssize_t n = ::recv(fds[i].fd, buf, sizeof buf, 0);
        open = n > 0 && send_all(fds[1 - i].fd, buf, static_cast<std::size_t>(n));
      }
    }
  }
  if (up >= 0) ::close(up);
  ::close(client);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: hiccup_floor_forwarder UPSTREAM_HOST UPSTREAM_PORT\n");
    return 2;
  }
  ::signal(SIGPIPE, SIG_IGN);
  upstream_addr.sin_family = AF_INET;
  upstream_addr.sin_port = htons(static_cast<std::uint16_t>(std::atoi(argv[2])));
  if (::inet_pton(AF_INET, argv[1], &upstream_addr.sin_addr) != 1) {
    std::fprintf(stderr, "hiccup_floor_forwarder: expected a numeric IPv4 address, found %s\n", argv[1]);
    return 2;
  }
  const int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(lfd, 512) != 0 ||
      ::getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::perror("hiccup_floor_forwarder");
    return 1;
  }
  std::printf("http://127.0.0.1:%d\n", ntohs(addr.sin_port));
  std::fflush(stdout);
  for (;;) {
    const int c = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return 1;
    }
    std::thread(relay, c).detach();
  }
}
