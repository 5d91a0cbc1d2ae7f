// bench/peers.sh's ceiling: the least an HTTP/1.1 server can do to answer the benchmark's requests
// with a fixed answer, so that the table shows how close `hiccup serve` comes to what the machine
// can do, not only how far ahead of its peers it is (issue 39).
//
// One thread, one epoll set, non-blocking sockets, edge-triggered. A request is read only as far as
// its end: the header block up to the blank line, then Content-Length bytes of body (no other
// parsing: no method, target, chunked bodies or header folding). Each request is answered with the
// same prebuilt bytes: a status line, Content-Type: text/event-stream, Content-Length and the body
// read from BODY_FILE at start. Pipelined requests are answered in order; a request header
// "Connection: close" closes the connection after its answer. A benchmark tool, not part of hiccup:
// no timeouts, no limits beyond a 64 KiB request head.
//
//   hiccup_ceiling PORT BODY_FILE      (listens on 127.0.0.1:PORT; prints "listening" when ready)
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <unordered_map>

namespace {

struct Connection {
  std::string in;          // bytes read, not yet consumed by a whole request
  std::string out;         // answer bytes not yet sent
  bool close_after = false;
};

/// The value of header `name` (lower-case) in `head`, or "" (case-insensitive names).
std::string_view header(std::string_view head, std::string_view name) {
  std::size_t pos = head.find("\r\n");
  while (pos != std::string_view::npos && pos + 2 < head.size()) {
    const std::size_t start = pos + 2;
    const std::size_t end = head.find("\r\n", start);
    const std::string_view line = head.substr(start, end == std::string_view::npos ? head.npos : end - start);
    const std::size_t colon = line.find(':');
    if (colon == name.size() &&
        std::equal(name.begin(), name.end(), line.begin(),
                   [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); })) {
      std::string_view v = line.substr(colon + 1);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      return v;
    }
    pos = end;
  }
  return {};
}

/// Moves every whole request at the front of `c.in` to an answer in `c.out`. False on a head over
/// 64 KiB without its end or a Content-Length over 64 MiB (the connection is dropped).
bool take_requests(Connection& c, const std::string& answer) {
  std::size_t used = 0;
  while (true) {
    const std::string_view rest = std::string_view(c.in).substr(used);
    const std::size_t end = rest.find("\r\n\r\n");
    if (end == std::string_view::npos) {
      if (rest.size() > 65536) return false;
      break;
    }
    const std::string_view head = rest.substr(0, end);
    const unsigned long long length = std::strtoull(std::string(header(head, "content-length")).c_str(), nullptr, 10);
    if (length > (64ull << 20)) return false;  // over 64 MiB (or a wrapped number): drop the connection
    const std::size_t body = static_cast<std::size_t>(length);
    if (rest.size() < end + 4 + body) break;
    c.out += answer;
    std::string conn(header(head, "connection"));
    for (char& ch : conn) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (conn == "close") c.close_after = true;
    used += end + 4 + body;
    if (c.close_after) break;
  }
  c.in.erase(0, used);
  return true;
}

/// Sends what `c.out` holds. False when the peer is gone; `c.out` keeps what the socket did not take.
bool flush(int fd, Connection& c) {
  std::size_t sent = 0;
  while (sent < c.out.size()) {
    const ssize_t n = send(fd, c.out.data() + sent, c.out.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;
    } else {
      return false;
    }
  }
  c.out.erase(0, sent);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: hiccup_ceiling PORT BODY_FILE\n");
    return 2;
  }
  std::ifstream file(argv[2], std::ios::binary);
  if (!file) {
    std::fprintf(stderr, "hiccup_ceiling: cannot read %s\n", argv[2]);
    return 2;
  }
  const std::string body((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const std::string answer = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " +
                             std::to_string(body.size()) + "\r\n\r\n" + body;
  signal(SIGPIPE, SIG_IGN);

  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::atoi(argv[1])));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(listener, 1024) != 0) {
    std::perror("hiccup_ceiling: bind/listen");
    return 1;
  }
  const int ep = epoll_create1(0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listener;
  epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev);
  std::printf("listening\n");
  std::fflush(stdout);

  std::unordered_map<int, Connection> connections;
  epoll_event events[256];
  char buf[65536];
  auto drop = [&](int fd) {
    epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    connections.erase(fd);
  };
  while (true) {
    const int n = epoll_wait(ep, events, 256, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return 1;
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == listener) {
        while (true) {
          const int c = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK);
          if (c < 0) break;
          setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          epoll_event cev{};
          cev.events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP;
          cev.data.fd = c;
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
          connections.emplace(c, Connection{});
        }
        continue;
      }
      auto it = connections.find(fd);
      if (it == connections.end()) continue;
      Connection& c = it->second;
      bool alive = true;
      bool peer_done = false;  // EOF: the requests read with it are still answered
      if (events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
        while (true) {  // edge-triggered: read until the socket is empty
          const ssize_t r = recv(fd, buf, sizeof buf, 0);
          if (r > 0) {
            c.in.append(buf, static_cast<std::size_t>(r));
          } else if (r < 0 && errno == EINTR) {
            continue;
          } else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
          } else if (r == 0) {
            peer_done = true;
            break;
          } else {
            alive = false;  // an error
            break;
          }
        }
        if (alive && !c.close_after) alive = take_requests(c, answer);
        if (peer_done) c.close_after = true;
      }
      if (alive) alive = flush(fd, c);
      if (!alive || (c.close_after && c.out.empty())) drop(fd);
    }
  }
}
