// The stdio bridge: one thread per message in flight, each a cpp-httplib client request whose
// answer is written line by line as it arrives (an SSE body event by event). This file is part
// of the I/O shell: sockets and threads live here; the endpoint's answers come from McpServer.
#include "mock_server/mcp/stdio_bridge.h"

#include <httplib.h>

#include <nlohmann/json.hpp>

#include "mock_server/json_text.h"

namespace mock::mcp {

std::optional<Endpoint> parse_endpoint(std::string_view url, std::string& error) {
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    error = "expected an http:// URL of an MCP endpoint (e.g. http://127.0.0.1:PORT/mcp), found " +
            json_text::quote_input(url, 200);
    return std::nullopt;
  }
  std::string_view rest = url.substr(kScheme.size());
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (authority.find('@') != std::string_view::npos) {
    // Never echoed: the part before '@' may hold a password.
    error = "credentials in the URL are not allowed (hiccup's MCP endpoint takes none), found http://***@" +
            json_text::quote_input(authority.substr(authority.rfind('@') + 1), 200);
    return std::nullopt;
  }
  Endpoint e;
  if (slash != std::string_view::npos) e.path = std::string(rest.substr(slash));
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      error = "an IPv6 host must end with ']', found " + json_text::quote_input(url, 200);
      return std::nullopt;
    }
    e.host = std::string(authority.substr(1, close - 1));
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') {
        error = "expected ':PORT' after the IPv6 host, found " + json_text::quote_input(url, 200);
        return std::nullopt;
      }
      port = authority.substr(close + 2);
    }
  } else {
    const std::size_t colon = authority.rfind(':');
    e.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (e.host.empty()) {
    error = "expected a host in " + json_text::quote_input(url, 200);
    return std::nullopt;
  }
  if (!port.empty() || authority.find(':') != std::string_view::npos) {
    int value = 0;
    bool ok = !port.empty() && port.size() <= 5;
    for (char c : port) {
      ok = ok && c >= '0' && c <= '9';
      value = value * 10 + (c - '0');
    }
    if (!ok || value < 1 || value > 65535) {
      error = "expected a port 1..65535 in " + json_text::quote_input(url, 200);
      return std::nullopt;
    }
    e.port = value;
  }
  return e;
}

std::vector<std::string> SseSplitter::feed(std::string_view bytes) {
  std::vector<std::string> out;
  for (char c : bytes) {
    if (after_cr_ && c == '\n') {  // the LF of a CRLF: that line has ended already
      after_cr_ = false;
      continue;
    }
    after_cr_ = c == '\r';
    if (c == '\r' || c == '\n') {
      line(pending_, out);
      pending_.clear();
    } else {
      pending_ += c;
    }
  }
  return out;
}

void SseSplitter::line(std::string_view text, std::vector<std::string>& out) {
  if (text.empty()) {  // the event ends
    if (has_data_) out.push_back(std::move(data_));
    data_.clear();
    has_data_ = false;
    return;
  }
  if (text.front() == ':') return;  // a comment
  const std::size_t colon = text.find(':');
  const std::string_view field = text.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field != "data") return;
  if (has_data_) data_ += '\n';
  data_ += value;
  has_data_ = true;
}

StdioBridge::StdioBridge(Endpoint endpoint, BridgeOptions options)
    : endpoint_(std::move(endpoint)), options_(options) {}

StdioBridge::~StdioBridge() {
  for (std::thread& t : threads_) {
    if (t.joinable()) t.detach();  // run(wait = false) left them; the process is ending
  }
}

std::uint64_t StdioBridge::posted() const {
  std::lock_guard lock(mu_);
  return posted_;
}

std::uint64_t StdioBridge::refused() const {
  std::lock_guard lock(mu_);
  return refused_;
}

namespace {

/// Whether `j` is a JSON-RPC 2.0 message or a batch of them (JSON-RPC 2.0 sections 4-6).
bool is_json_rpc(const nlohmann::json& j) {
  if (j.is_object()) return j.contains("jsonrpc") && j["jsonrpc"] == "2.0";
  if (!j.is_array() || j.empty()) return false;
  for (const auto& m : j) {
    if (!m.is_object() || !m.contains("jsonrpc") || m["jsonrpc"] != "2.0") return false;
  }
  return true;
}

}  // namespace

void StdioBridge::write_answer(const std::string& request, int status, const std::string& body) {
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_discarded() && is_json_rpc(j)) {
    write_line(body);
    return;
  }
  const std::string what = "the endpoint answered HTTP " + std::to_string(status) + " with a body that is not JSON-RPC: " +
                           json_text::escape_input(body, 200);
  {
    std::lock_guard lock(mu_);
    *log_ << "hiccup mcp: " << what << '\n' << std::flush;
  }
  answer_with_error(request, "hiccup mcp: " + what);
}

void StdioBridge::answer_with_error(const std::string& request, const std::string& message) {
  const nlohmann::json req = nlohmann::json::parse(request, nullptr, false);
  if (!req.is_object() || !req.contains("id") || !(req["id"].is_string() || req["id"].is_number())) return;
  // -32603 Internal error (JSON-RPC 2.0 section 5.1): the bridge, not the client's message, failed.
  const nlohmann::ordered_json error = {{"jsonrpc", "2.0"}, {"id", req["id"]}, {"error", {{"code", -32603}, {"message", message}}}};
  write_line(error.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void StdioBridge::write_line(const std::string& message) {
  // One message per line: MCP stdio messages "MUST NOT contain embedded newlines". The server's
  // answers are compact JSON; anything else is rewritten compact (or, not JSON, dropped with a note).
  std::string line = message;
  if (line.find_first_of("\r\n") != std::string::npos) {
    const nlohmann::json j = nlohmann::json::parse(message, nullptr, false);
    if (j.is_discarded()) {
      std::lock_guard lock(mu_);
      *log_ << "hiccup mcp: an answer that is not JSON was dropped: " << json_text::escape_input(message, 200) << '\n';
      return;
    }
    line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  std::lock_guard lock(mu_);
  *out_ << line << '\n' << std::flush;
}

void StdioBridge::post(const std::string& message) {
  httplib::Client client(endpoint_.host, endpoint_.port);
  client.set_connection_timeout(options_.connect_timeout_s, 0);
  client.set_read_timeout(options_.read_timeout_s, 0);
  client.set_keep_alive(false);
  httplib::Request req;
  req.method = "POST";
  req.path = endpoint_.path;
  req.body = message;
  req.set_header("Content-Type", "application/json");
  req.set_header("Accept", "application/json, text/event-stream");
  {
    std::lock_guard lock(mu_);
    if (!session_id_.empty()) req.set_header("Mcp-Session-Id", session_id_);
    ++posted_;
  }
  bool sse = false;
  bool wrote = false;
  std::string body;
  SseSplitter splitter;
  req.response_handler = [&](const httplib::Response& r) {
    sse = r.get_header_value("Content-Type").rfind("text/event-stream", 0) == 0;
    const std::string sid = r.get_header_value("Mcp-Session-Id");
    if (!sid.empty()) {
      std::lock_guard lock(mu_);
      session_id_ = sid;
    }
    return true;
  };
  req.content_receiver = [&](const char* data, std::size_t n, std::uint64_t, std::uint64_t) {
    if (!sse) {
      body.append(data, n);
      return true;
    }
    for (const std::string& event : splitter.feed(std::string_view(data, n))) {
      write_line(event);
      wrote = true;
    }
    return true;
  };
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  const auto sent = std::chrono::steady_clock::now();
  const bool ok = client.send(req, res, error);
  // cpp-httplib reports a read timeout as a read error: told apart by the time the read took.
  const bool timed_out = !ok && error == httplib::Error::Read &&
                         std::chrono::steady_clock::now() - sent >= std::chrono::seconds(options_.read_timeout_s);
  if (!sse && ok && (!body.empty() || res.status >= 400)) {
    write_answer(message, res.status, body);
    wrote = true;
  }
  if (!ok && error == httplib::Error::Connection) {
    // Nothing listens at the endpoint: the client gets an answer rather than waiting for one.
    answer_with_error(message, "hiccup mcp: nothing accepts connections at " + endpoint_.host + ":" +
                                   std::to_string(endpoint_.port) + " (is `hiccup serve` running?)");
  }
  std::lock_guard lock(mu_);
  if (!ok && error == httplib::Error::Connection) ++refused_;
  if (!ok) {
    *log_ << "hiccup mcp: no " << (wrote ? "complete " : "") << "answer to " << json_text::escape_input(message, 120)
          << " (" << httplib::to_string(error) << ": "
          << (error == httplib::Error::Connection ? "nothing accepts connections at " + endpoint_.host + ":" + std::to_string(endpoint_.port)
              : timed_out ? "no byte for " + std::to_string(options_.read_timeout_s) + " s, --read-timeout-s: given up"
                          : std::string("the connection ended before the reply"))
          << ")\n"
          << std::flush;
  }
  --in_flight_;
  ended_.notify_all();
}

std::size_t StdioBridge::drain(std::chrono::milliseconds limit) {
  std::unique_lock lock(mu_);
  ended_.wait_for(lock, limit, [this] { return in_flight_ == 0; });
  return in_flight_;
}

void StdioBridge::run(std::istream& in, std::ostream& out, std::ostream& log, bool wait) {
  out_ = &out;
  log_ = &log;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    // initialize goes alone: what follows needs the session id its answer brings.
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    {
      std::lock_guard lock(mu_);
      ++in_flight_;
    }
    if (j.is_object() && j.contains("method") && j["method"] == "initialize") {
      post(line);
      continue;
    }
    threads_.emplace_back([this, message = line] { post(message); });
  }
  if (!wait) return;
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

}  // namespace mock::mcp
