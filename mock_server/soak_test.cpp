// Soak test (label `soak`, 127.0.0.1 only): 64 concurrent clients × 1,000 requests against one
// in-process MockHttpServer, a fault on every request (reset, disconnect, cut, stall, error event,
// status). Client k always asks for turn k, whose only attempt says "client-k" and ends with fault
// k % 6, so each answer is checked against that client's own script (no cross-talk). Afterwards a
// fresh client is answered and no file descriptor is left open. One request per connection
// (Connection: close), so accepting, handing to workers and closing are soaked too; keep-alive
// connections are covered by http_server_test (64 and 256 connections at once).
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <regex>
#include <thread>

#include "mock_server/http_server.h"
#include "tests/test_scale.h"

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kClients = 64;
constexpr int kRequestsPerClient = 1000;  // scaled by HICCUP_TEST_SCALE (tests/test_scale.h)
const std::string kStream = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";

enum Kind { kReset, kDisconnect, kCut, kStall, kErrorEvent, kStatus, kKinds };
const char* kKindNames[] = {"reset", "disconnect", "cut", "stall", "error_event", "status"};

std::size_t open_fds() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n - 1;  // the iterator's own descriptor
}

/// Turn k: one attempt with "client-k." then a stop, ended by fault k % 6.
mock::Script soak_script() {
  mock::Script s;
  s.provider = "gemini";
  for (int k = 0; k < kClients; ++k) {
    mock::Attempt a;
    a.events = {mock::TextEvent{"client-" + std::to_string(k) + "."}, mock::FinishEvent{mock::FinishReason::kStop}};
    switch (k % kKinds) {
      case kReset: a.fault = mock::ResetFault{1, 200}; break;
      case kDisconnect: a.fault = mock::DisconnectFault{1, 0}; break;
      case kCut: a.fault = mock::CutFault{1, 10}; break;
      case kStall: a.fault = mock::StallFault{1, 1.0}; break;
      case kErrorEvent: a.fault = mock::ErrorEventFault{1, 503}; break;
      case kStatus: a.status = 503; a.events.clear(); break;
    }
    s.turns.push_back(mock::Turn{{a}});
  }
  return s;
}

/// A Gemini request at turn k: k earlier model turns in the history.
std::string request_at_turn(int k) {
  json contents = json::array({{{"role", "user"}, {"parts", {{{"text", "Go."}}}}}});
  for (int t = 0; t < k; ++t) {
    contents.push_back({{"role", "model"}, {"parts", {{{"text", "ok"}}}}});
    contents.push_back({{"role", "user"}, {"parts", {{{"text", "Go on."}}}}});
  }
  const std::string body = json{{"contents", contents}}.dump();
  return "POST " + kStream + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" +
         "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

struct Answer {
  std::string bytes;
  int error = 0;  // errno of the read that ended it; 0 on EOF
};

Answer round_trip(int port, const std::string& request) {
  Answer a;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return {"", errno};
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
    a.error = errno;
    close(fd);
    return a;
  }
  char buf[8192];
  while (true) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      a.bytes.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0) a.error = errno;
    break;
  }
  close(fd);
  return a;
}

/// What is wrong with client k's answer ("" when it matches the client's script).
std::string check_answer(int k, const Answer& a) {
  static const std::regex marker("client-([0-9]+)\\.");
  for (auto it = std::sregex_iterator(a.bytes.begin(), a.bytes.end(), marker); it != std::sregex_iterator(); ++it) {
    if (std::stoi((*it)[1].str()) != k) return "cross-talk: the answer holds " + (*it)[0].str();
  }
  const bool has_own = a.bytes.find("client-" + std::to_string(k) + ".") != std::string::npos;
  const bool terminated = a.bytes.find("\r\n0\r\n\r\n") != std::string::npos;
  const bool ok200 = a.bytes.rfind("HTTP/1.1 200 ", 0) == 0;
  switch (k % kKinds) {
    case kReset:
      if (!ok200 || !has_own || terminated || a.error != ECONNRESET) return "expected the text, then RST";
      break;
    case kDisconnect:
    case kCut:
      if (!ok200 || !has_own || terminated || a.error != 0) return "expected the text, then FIN without terminator";
      break;
    case kStall:
      if (!ok200 || !has_own || !terminated || a.bytes.find("\"STOP\"") == std::string::npos) return "expected the whole stream after the stall";
      break;
    case kErrorEvent:
      if (!ok200 || !has_own || !terminated || a.bytes.find("\"error\"") == std::string::npos) return "expected the text, then the error event";
      break;
    case kStatus:
      if (a.bytes.rfind("HTTP/1.1 503 ", 0) != 0 || a.bytes.find("UNAVAILABLE") == std::string::npos) return "expected 503 UNAVAILABLE";
      break;
  }
  return "";
}

}  // namespace

TEST_CASE("soak: 64 clients x 1000 faulted requests, no crash, no cross-talk, no leaked descriptor") {
  const int requests_per_client = hiccup_test::scaled(kRequestsPerClient);
  const std::size_t fds_before = open_fds();
  mock::ScriptEngine engine(soak_script());
  mock::ServerOptions options;
  options.max_delay_ms = 2;     // reset's idle pause
  options.stall_ms_per_s = 2;   // a 1 s stall sleeps 2 ms
  mock::MockHttpServer server(engine, options);
  const int port = server.start();

  std::atomic<int> mismatches{0};
  std::mutex first_mutex;
  std::string first_mismatch;
  const auto started = Clock::now();
  std::vector<std::thread> clients;
  for (int k = 0; k < kClients; ++k) {
    clients.emplace_back([&, k] {
      const std::string request = request_at_turn(k);
      for (int i = 0; i < requests_per_client; ++i) {
        const std::string problem = check_answer(k, round_trip(port, request));
        if (!problem.empty() && mismatches++ == 0) {
          std::lock_guard<std::mutex> lock(first_mutex);
          first_mismatch = "client " + std::to_string(k) + " (" + kKindNames[k % kKinds] + "), request " +
                           std::to_string(i) + ": " + problem;
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  WARN("soak: " << kClients * requests_per_client << " requests in " << seconds << " s ("
                << kClients * requests_per_client / seconds << " requests/s, HICCUP_TEST_SCALE "
                << hiccup_test::test_scale() << ")");
  INFO(first_mismatch);
  CHECK(mismatches == 0);
  CHECK(engine.journal().size() == static_cast<std::size_t>(kClients * requests_per_client));

  // A fresh client is answered at the end.
  const Answer fresh = round_trip(port, request_at_turn(3));
  CHECK(check_answer(3, fresh).empty());

  // Every connection is closed once the workers finish settling: only the listening socket and
  // the accept thread's are left beyond what was open before the server.
  server.stop();
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (open_fds() != fds_before && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(open_fds() == fds_before);
}
