// The Responses API's WebSocket mode (see ws_session.h).
#include "mock_server/websocket/ws_session.h"

#include <algorithm>
#include <cctype>
#include <exception>
#include <deque>
#include <map>
#include <optional>
#include <utility>
#include <variant>

#include <nlohmann/json.hpp>

#include "json_reader/json_reader.h"
#include "mock_server/openai_responses_format.h"
#include "mock_server/script_engine.h"
#include "mock_server/websocket/ws_frame.h"

namespace mock::ws {

namespace {

using nlohmann::json;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// Whether the comma-separated header value `value` holds `token` (case-insensitive).
bool has_token(std::string_view value, std::string_view token) {
  const std::string v = lower(value);
  const std::string t = lower(token);
  std::size_t start = 0;
  while (start <= v.size()) {
    std::size_t end = v.find(',', start);
    if (end == std::string::npos) end = v.size();
    std::string_view part(v.data() + start, end - start);
    while (!part.empty() && (part.front() == ' ' || part.front() == '\t')) part.remove_prefix(1);
    while (!part.empty() && (part.back() == ' ' || part.back() == '\t')) part.remove_suffix(1);
    if (part == t) return true;
    start = end + 1;
  }
  return false;
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

/// The path of `target` (query dropped).
std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

/// Whether `path` names a Responses endpoint (`/v1/responses`, also under a session prefix
/// `/s/{id}/…` and a base path such as `/openai/v1/responses`).
bool responses_path(std::string_view path) {
  static constexpr std::string_view kSuffix = "/responses";
  return path.size() >= kSuffix.size() && path.substr(path.size() - kSuffix.size()) == kSuffix;
}

std::string refusal(int status, std::string_view message, std::vector<std::pair<std::string, std::string>> headers = {}) {
  json body = {{"error", {{"message", std::string(message)}, {"type", "invalid_request_error"}, {"param", nullptr}, {"code", nullptr}}}};
  const std::string text = dump(body);
  return response_head(status, "application/json", headers, static_cast<long long>(text.size()), false) + text;
}

/// Hands each complete SSE event at the front of `sse` to `each` (its `data:` payload, lines
/// joined by "\n": a view into `sse`, or into a scratch string for an event of several data
/// lines, valid during the call), then removes them from `sse`; a partial event stays.
template <typename Each>
void take_events(std::string& sse, Each each) {
  std::string joined;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = sse.find("\n\n", start);
    if (end == std::string::npos) break;
    std::string_view data;
    int lines = 0;
    std::size_t line = start;
    while (line < end) {
      std::size_t eol = sse.find('\n', line);
      if (eol == std::string::npos || eol > end) eol = end;
      std::string_view l(sse.data() + line, eol - line);
      if (l.substr(0, 5) == "data:") {
        l.remove_prefix(5);
        if (!l.empty() && l.front() == ' ') l.remove_prefix(1);
        if (lines == 1) joined.assign(data);
        if (lines >= 1) {
          joined += '\n';
          joined.append(l);
          data = joined;
        } else {
          data = l;
        }
        ++lines;
      }
      line = eol + 1;
    }
    if (lines > 0) each(data);
    start = end + 2;
  }
  sse.erase(0, start);
}

/// The `data:` payload of a partial SSE event (a cut): what follows its `data:` prefix, or "".
std::string partial_data(std::string_view sse) {
  const std::size_t at = sse.find("data:");
  if (at == std::string_view::npos) return "";
  std::string_view d = sse.substr(at + 5);
  if (!d.empty() && d.front() == ' ') d.remove_prefix(1);
  return std::string(d);
}

/// The type of event `payload` ("" when it is not a JSON object with a string `type`). The
/// Responses encoder writes `type` first: read it without parsing (a view into `payload`);
/// anything else is parsed (a view into `scratch`).
std::string_view event_type(std::string_view payload, std::string& scratch) {
  static constexpr std::string_view kLead = "{\"type\":\"";
  if (payload.substr(0, kLead.size()) == kLead) {
    const std::size_t end = payload.find('"', kLead.size());
    const std::string_view type = payload.substr(kLead.size(), end == std::string_view::npos ? 0 : end - kLead.size());
    // A complete object whose type has no escapes (the encoder's own events).
    if (end != std::string_view::npos && type.find('\\') == std::string_view::npos && payload.back() == '}' &&
        payload.find('\n') == std::string_view::npos) {
      return type;
    }
  }
  const json j = json::parse(payload, nullptr, false);
  if (!j.is_object()) return "";
  const auto t = j.find("type");
  scratch = t != j.end() && t->is_string() ? t->get<std::string>() : "";
  return scratch;
}

/// The in-band error frame for a request answered with HTTP `status` and `body` (the Responses
/// error envelope) over HTTP: `{"type":"error","status":N,"error":{…},"headers":{…}}` as codex
/// reads it (codex-rs/codex-api/src/endpoint/responses_websocket.rs, WrappedWebsocketErrorEvent);
/// with `string_error` the `error` member is the message string (anomalyco/opencode#49338).
std::string status_error_frame(int status, const std::string& body,
                               const std::vector<std::pair<std::string, std::string>>& headers,
                               bool string_error) {
  json envelope = json::parse(body, nullptr, false);
  json error = envelope.is_object() && envelope.contains("error") ? envelope["error"] : json::object();
  if (!error.is_object()) error = json::object();
  if (!error.contains("message")) error["message"] = std::string(reason_phrase(status));
  json frame = {{"type", "error"}, {"status", status}};
  if (string_error) {
    frame["error"] = error["message"].is_string() ? error["message"] : json(dump(error["message"]));
  } else {
    frame["error"] = error;
  }
  if (!headers.empty()) {
    json h = json::object();
    for (const auto& [name, value] : headers) h[lower(name)] = value;
    frame["headers"] = h;
  }
  return dump(frame);
}

class Session {
 public:
  /// `memory`: the session's SessionMemory (responses stored across its connections), or nullptr.
  Session(Io& io, RequestRouter& router, const SessionOptions& options, const HttpRequest& upgrade,
          SessionMemory* memory)
      : io_(io), router_(router), options_(options), upgrade_(upgrade), memory_(memory),
        decoder_(FrameDecoder::Role::kServer, options.max_message_bytes) {}

  void run(std::string_view first_bytes) {
    decoder_.feed(first_bytes);
    char buf[16 * 1024];
    for (;;) {
      Message m;
      FrameDecoder::Status st = decoder_.next(m);
      while (st == FrameDecoder::Status::kNeedMore) {
        const long n = io_.recv(buf, sizeof buf, options_.idle_timeout_ms);
        if (n == -2) {  // idle: close cleanly, as a server ends an idle connection
          close(kCloseNormal, "idle timeout");
          return;
        }
        if (n <= 0) return;
        decoder_.feed(buf, static_cast<std::size_t>(n));
        st = decoder_.next(m);
      }
      if (st == FrameDecoder::Status::kError) {
        close(decoder_.error_code(), decoder_.error());
        return;
      }
      switch (m.opcode) {
        case Opcode::kPing:
          if (!io_.send(encode_frame(Opcode::kPong, m.payload))) return;
          break;
        case Opcode::kPong:
          break;
        case Opcode::kClose: {
          // Echo the client's code (RFC 6455 §5.5.1), then end the connection.
          std::string echo = m.payload.size() >= 2 ? m.payload.substr(0, 2) : std::string();
          io_.send(encode_frame(Opcode::kClose, echo));
          return;
        }
        case Opcode::kBinary:
          close(kCloseUnsupportedData, "binary messages are not part of the Responses WebSocket mode");
          return;
        default:
          if (!cycle(m.payload)) return;
      }
    }
  }

 private:
  void close(std::uint16_t code, std::string_view reason) {
    io_.send(encode_frame(Opcode::kClose, close_payload(code, reason)));
  }

  bool send_text(std::string_view payload) { return io_.send(encode_frame(Opcode::kText, payload)); }

  bool in_band_error(int status, std::string_view code, std::string_view message) {
    json frame = {{"type", "error"}, {"status", status},
                  {"error", {{"type", "invalid_request_error"}, {"code", std::string(code)}, {"message", std::string(message)}, {"param", nullptr}}}};
    return send_text(dump(frame));
  }

  /// One client message: a `response.create` played as a request. False: the connection ends.
  bool cycle(const std::string& text) {
    // The top-level members only: the input (and the tools, the instructions) checked as JSON,
    // not built. Most messages are a plain response.create, handed to the engine as they came.
    if (json_nesting_depth(text, kMaxJsonDepth) > kMaxJsonDepth) {
      // As the engine answers such a body over HTTP.
      return in_band_error(400, "invalid_request_error",
                           "the request body nests arrays and objects deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    const json top = json_reader::parse(text, kMaxJsonDepth, {"input", "tools", "instructions"});
    if (!top.is_object()) return in_band_error(400, "invalid_json", "the message is not a JSON object");
    const auto type = top.find("type");
    if (type == top.end() || !type->is_string() || *type != "response.create") {
      return in_band_error(400, "unknown_event_type",
                           "expected a message of type \"response.create\", found " +
                               (type != top.end() && type->is_string() ? "\"" + type->get<std::string>() + "\"" : std::string("none")));
    }
    const auto previous = top.find("previous_response_id");
    if (!top.contains("stream") && !top.contains("generate") && (previous == top.end() || previous->is_null())) {
      // The body of the equivalent POST: the message with `"stream":true` put first (its `type`
      // stays; the Responses format reads no member of that name).
      std::string body = "{\"stream\":true,";
      body.append(std::string_view(text).substr(text.find('{') + 1));
      return respond(std::move(body), stored_here_only(top));
    }
    json event = json::parse(text, nullptr, false);
    // The body of the equivalent POST: the event's fields without `type`, streaming implied.
    event.erase("type");
    event["stream"] = true;
    // Continuation: `previous_response_id` names a response this connection or the session
    // stored; the request is played as the full conversation (its input, its output, then the
    // new input), so the engine matches and journals it as it would the full request over HTTP.
    // One that is not a string goes to the engine, whose Responses format answers it as over HTTP
    // (invalid_type).
    if (const auto prev = event.find("previous_response_id"); prev != event.end() && prev->is_string()) {
      const std::string id = prev->get<std::string>();
      const json own = event.contains("input") ? event["input"] : json();
      if (const std::optional<Rejection> problem = openai_responses::continuation_input_problem(own)) {
        const ErrorAnswer answer = openai_responses::format().error_answer(problem->status, problem->message, std::nullopt);
        return send_text(status_error_frame(problem->status, answer.body, answer.headers, false));
      }
      const std::optional<std::string> found = find(id);
      std::optional<json> full =
          found ? openai_responses::continued_input(*found, own) : std::nullopt;
      if (!full) {
        // As the API answers a continuation whose response it no longer holds (the WebSocket-mode
        // guide: start a new chain with the full input).
        json frame = {{"type", "error"}, {"status", 400},
                      {"error", {{"type", "invalid_request_error"}, {"code", "previous_response_not_found"},
                                 {"message", openai_responses::not_found_message(id)},
                                 {"param", "previous_response_id"}}}};
        return send_text(dump(frame));
      }
      event.erase("previous_response_id");
      event["input"] = std::move(*full);
    }
    // A warm-up (`generate: false`): no model output, a response id to chain from (the WebSocket-
    // mode guide: "generate: false does not return a model output, but prepares request state …
    // The warmup request returns a response ID that you can chain from with previous_response_id").
    // codex sends one before each turn's first request. It plays no script attempt and is not
    // journaled: it is not a model request.
    if (const auto gen = event.find("generate"); gen != event.end() && gen->is_boolean() && !gen->get<bool>()) {
      return warm_up(event);
    }
    return respond(dump(event), stored_here_only(event));
  }

  /// Whether a response to `event` (a response.create) is kept on this connection only: `store:
  /// false` (the WebSocket-mode guide: connection-local state is what makes continuation work
  /// with it). Other responses the engine keeps in the session's memory, where this connection
  /// finds them too.
  static bool stored_here_only(const json& event) {
    const auto store = event.find("store");
    return store != event.end() && store->is_boolean() && !store->get<bool>();
  }

  /// Plays `body` (the equivalent POST's, streaming) through the router, keeping its completed
  /// response on this connection when `keep_here` (stored_here_only). False: the connection ends.
  bool respond(std::string body, bool keep_here) {
    HttpRequest req;
    req.method = "POST";
    req.target = upgrade_.target;
    req.version = "HTTP/1.1";
    req.headers = upgrade_.headers;
    req.body = body;
    req.transport = "websocket";
    Dispatch d = dispatch_request(router_, req, io_.now_ms());
    if (!d.engine) {
      const DirectAnswer a = d.deferred ? DirectAnswer{500, "application/json", R"({"error":{"message":"no answer"}})", {}} : d.direct;
      if (!send_text(status_error_frame(a.status, a.body, a.headers, false))) return false;
      return !d.internal_error;
    }
    completed_.clear();
    keep_completed_ = keep_here || !memory_;
    const bool open = play(*d.engine, d.plan);
    // A completed response of a `store: false` request is kept on this connection for
    // continuation (the engine keeps the others in the session's memory), unless the scenario
    // makes the server forget it (websocket.forget_response). Its payload is parsed only when a
    // continuation names it.
    if (!completed_.empty() && !(d.plan.websocket && d.plan.websocket->forget_response)) {
      if (const auto id = openai_responses::payload_response_id(completed_)) {
        store(std::string(*id), openai_responses::stored_value(body, completed_));
      }
    }
    return open;
  }

  /// Answers a warm-up: `response.created` and `response.completed` with no output, its id
  /// (`resp_warmup_` + this connection's warm-up count, from 0) stored on this connection for
  /// continuation, with `event` (its input the conversation through it).
  /// The response object's fields and order, and its fixed created_at, are those of the
  /// Responses format's write_response (openai_responses_format.cpp): change them together.
  bool warm_up(const json& event) {
    const std::string id = "resp_warmup_" + std::to_string(warm_ups_++);
    const json model = event.contains("model") && event["model"].is_string() ? event["model"] : json("");
    auto response = [&](std::string_view status) {
      return json{{"id", id}, {"object", "response"}, {"created_at", 1700000000}, {"status", std::string(status)},
                  {"background", false}, {"completed_at", status == "completed" ? json(1700000001) : json(nullptr)},
                  {"error", nullptr}, {"incomplete_details", nullptr}, {"model", model}, {"output", json::array()},
                  {"parallel_tool_calls", true},
                  {"usage", status == "completed" ? json{{"input_tokens", 0}, {"output_tokens", 0}, {"total_tokens", 0}} : json(nullptr)},
                  {"metadata", json::object()}};
    };
    const std::string created = dump(json{{"type", "response.created"}, {"sequence_number", 0}, {"response", response("in_progress")}});
    const std::string completed = dump(json{{"type", "response.completed"}, {"sequence_number", 1}, {"response", response("completed")}});
    if (!io_.send(encode_frame(Opcode::kText, created) + encode_frame(Opcode::kText, completed))) return false;
    store(id, openai_responses::stored_value(dump(event), completed));
    return true;
  }

  /// Keeps response `id` for continuation on this connection (`value`: openai_responses::
  /// stored_value; at most kMaxStored, oldest dropped).
  void store(const std::string& id, std::string value) {
    if (stored_.find(id) == stored_.end()) {
      if (order_.size() >= kMaxStored) {
        stored_.erase(order_.front());
        order_.pop_front();
      }
      order_.push_back(id);
    }
    stored_[id] = std::move(value);
  }

  /// The response `id` stored on this connection, else in the session's memory.
  std::optional<std::string> find(const std::string& id) const {
    if (const auto it = stored_.find(id); it != stored_.end()) return it->second;
    if (!memory_) return std::nullopt;
    return memory_->get(openai_responses::stored_key(id));
  }

  /// Plays `plan` as frames; false when the connection ended (a fault, or the client left).
  bool play(Responder& engine, const Plan& plan) {
    Delivery delivery;
    auto settle = [&](bool gone) {
      delivery.client_gone = gone;
      delivery.ended_ms = io_.now_ms();
      engine.settle(plan.journal_index, delivery);
    };
    const bool string_error = plan.websocket && plan.websocket->string_error;
    if (!plan.streaming || plan.status != 200) {
      // A status answer: any stall first (the answer is late), then the in-band error frame.
      for (const Action& a : plan.actions) {
        if (const auto* s = std::get_if<StallAction>(&a)) {
          if (!io_.pause(s->seconds * options_.stall_ms_per_s)) {
            settle(true);
            return false;
          }
        }
      }
      if (plan.ending != Ending::kTerminator) return end_connection(plan, [&](bool gone) { settle(gone); });
      settle(false);  // before the write (see below)
      const bool ok = send_text(status_error_frame(plan.status, plan.body, plan.headers, string_error));
      if (!ok) settle(true);
      return ok;
    }
    std::string sse;
    std::string last_type;  // assigned, not rebuilt: its buffer is reused event after event
    std::string type_scratch;
    bool terminal = false;
    bool over = false;  // the response's terminal event is among the frames queued so far
    // The frames of consecutive writes go out in one send (the HTTP server sends a plan's writes
    // in one sendmmsg); a pause sends what came before it first.
    std::string pending;
    int pending_actions = 0;
    auto flush = [&] {
      if (pending_actions == 0) return true;
      const int before = delivery.actions_done;
      // Settled before the write, as the HTTP server does: a client that has read the frames may
      // ask for the journal at once. A failed write settles again (the last report wins).
      delivery.actions_done = before + pending_actions;
      settle(false);
      const bool ok = pending.empty() || io_.send(pending);
      pending.clear();
      pending_actions = 0;
      if (!ok) delivery.actions_done = before;
      return ok;
    };
    for (const Action& a : plan.actions) {
      bool ok = true;
      if (const auto* w = std::get_if<WriteAction>(&a)) {
        sse += w->bytes;
        take_events(sse, [&](std::string_view payload) {
          last_type.assign(event_type(payload, type_scratch));
          if (keep_completed_ && last_type == "response.completed") completed_ = payload;
          // The response's own end (a stop; max_tokens or a content filter: incomplete; a
          // malformed call or an error event: failed): the client stops reading this response.
          over = over || last_type == "response.completed" || last_type == "response.incomplete" ||
                 last_type == "response.failed";
          if (plan.websocket && plan.websocket->malformed_frame && last_type.empty()) {
            // The malformed fault as a frame that breaks RFC 6455 (RSV1 set, no extension
            // negotiated) instead of a text frame whose JSON does not parse.
            std::string f = encode_frame(Opcode::kText, payload);
            f[0] = static_cast<char>(static_cast<unsigned char>(f[0]) | 0x40);
            pending += f;
          } else {
            pending += frame_header(Opcode::kText, payload.size());
            pending += payload;
          }
        });
        terminal = terminal || w->terminal;
        ++pending_actions;
        continue;
      }
      if (over) {
        // After the terminal event the response is over: the client has stopped reading it and
        // may already be sending its next response.create. What the plan still holds (a fault
        // placed after the finish: a malformed frame, an error event, a stall, the connection's
        // end) plays at once, in the terminal frame's send, not between this cycle and the next
        // where it would meet the next request by timing (docs/WIRE-FORMATS.md "Explored").
        ++pending_actions;
        continue;
      }
      ok = flush();
      if (ok) {
        if (const auto* st = std::get_if<StallAction>(&a)) {
          ok = io_.pause(st->seconds * options_.stall_ms_per_s);
        } else if (const auto* dr = std::get_if<DrainAction>(&a)) {
          ok = io_.pause(cap(dr->pause_ms));
        }
      }
      if (!ok) {
        settle(true);
        return false;
      }
      ++delivery.actions_done;
    }
    std::string cut;
    if (!sse.empty() && plan.ending != Ending::kTerminator) {
      // A cut: the event's frame header announces one byte more than the part of its payload
      // that goes out, so the frame never completes before the connection ends.
      const std::string part = partial_data(sse);
      cut = frame_header(Opcode::kText, part.size() + 1) + part;
      if (over) pending += std::exchange(cut, std::string());  // in the terminal frame's send
    }
    if (!flush()) {
      settle(true);
      return false;
    }
    if (!cut.empty() && !io_.send(cut)) {
      settle(true);
      return false;
    }
    if (plan.ending != Ending::kTerminator) {
      return end_connection(plan, [&](bool gone) { settle(gone); }, /*at_once=*/over);
    }
    settle(false);
    // The response ended with its own event (completed; incomplete, e.g. a content filter or
    // max_tokens; failed; an error): the connection stays for the next response.create.
    if (terminal || last_type == "error" || last_type == "response.failed" || last_type == "response.incomplete" ||
        last_type == "response.completed") {
      return true;
    }
    // A clean end without the terminal event (the `end` fault): nothing on a WebSocket ends a
    // response but its terminal event, so the server closes the connection (1000 unless the
    // scenario chooses another code): "websocket closed by server before response.completed".
    const int code = plan.websocket && plan.websocket->close_code ? *plan.websocket->close_code : kCloseNormal;
    if (code != kCloseAbnormal) close(static_cast<std::uint16_t>(code), "closed before response.completed");
    return false;
  }

  double cap(int ms) const {
    return options_.max_delay_ms >= 0 ? std::min(ms, options_.max_delay_ms) : ms;
  }

  /// A fault that ends the connection (disconnect, cut, reset): after its delay, a close frame with
  /// the scenario's code (1000, 1011), else (1006, the default) none: FIN; reset: RST.
  /// `at_once`: after the response's terminal event, without the delay (see play()).
  template <typename Settle>
  bool end_connection(const Plan& plan, Settle settle, bool at_once = false) {
    io_.settle_sent();  // what went out before the end arrives whole (a RST discards the unsent)
    const bool paused = at_once || plan.ending_delay_ms <= 0 || io_.pause(cap(plan.ending_delay_ms));
    settle(!paused);
    if (!paused) return false;
    if (plan.ending == Ending::kReset) {
      io_.reset();
      return false;
    }
    const int code = plan.websocket && plan.websocket->close_code ? *plan.websocket->close_code : kCloseAbnormal;
    if (code != kCloseAbnormal) close(static_cast<std::uint16_t>(code), "closed before response.completed");
    return false;
  }

  Io& io_;
  RequestRouter& router_;
  SessionOptions options_;
  const HttpRequest& upgrade_;
  SessionMemory* memory_;  // the session's memory (responses stored across connections), or null
  FrameDecoder decoder_;
  static constexpr std::size_t kMaxStored = 64;  // responses kept per connection (oldest dropped)
  std::map<std::string, std::string> stored_;     // response id → its stored value
  std::deque<std::string> order_;                 // stored ids, oldest first
  std::string completed_;                         // the last cycle's response.completed payload
  bool keep_completed_ = false;                   // whether this cycle's is kept here (completed_)
  int warm_ups_ = 0;                              // warm-ups answered on this connection
};

/// The upgrade status the scenario behind `r` asks for (its `websocket.upgrade_status`), or 0.
int scenario_refusal(const Route& r) {
  if (const auto* engine = dynamic_cast<const ScriptEngine*>(r.engine.get())) {
    return engine->script().websocket_upgrade_status.value_or(0);
  }
  return 0;
}

}  // namespace

bool is_upgrade(const HttpRequest& req) { return has_token(req.header("Upgrade"), "websocket"); }

HandshakeAnswer answer_upgrade(const HttpRequest& req, int refuse_with) {
  HandshakeAnswer a;
  a.accepted = false;
  auto refuse = [&](int status, std::string_view message, std::vector<std::pair<std::string, std::string>> headers = {}) {
    a.status = status;
    a.bytes = refusal(status, message, std::move(headers));
    return a;
  };
  if (req.method != "GET") return refuse(405, "a WebSocket upgrade must be a GET", {{"Allow", "GET"}});
  if (!responses_path(path_of(req.target))) return refuse(404, "no WebSocket endpoint at this path (the Responses API's is /v1/responses)");
  if (req.header("Sec-WebSocket-Version") != "13") {
    return refuse(426, "unsupported Sec-WebSocket-Version (expected 13)", {{"Sec-WebSocket-Version", "13"}});
  }
  if (!has_token(req.header("Connection"), "upgrade")) return refuse(400, "expected Connection: Upgrade");
  const std::string key(req.header("Sec-WebSocket-Key"));
  if (!valid_client_key(key)) return refuse(400, "expected a Sec-WebSocket-Key of 16 bytes in base64");
  if (refuse_with != 0) {
    std::vector<std::pair<std::string, std::string>> headers;
    if (refuse_with == 426) headers.emplace_back("Upgrade", "HTTP/1.1");
    return refuse(refuse_with, "WebSocket upgrade refused by the scenario (websocket.upgrade_status)", std::move(headers));
  }
  a.accepted = true;
  a.status = 101;
  a.bytes = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
            accept_key(key) + "\r\n\r\n";
  return a;
}

void serve(Io& io, const HttpRequest& upgrade, RequestRouter& router, const SessionOptions& options,
           std::string_view first_bytes) {
  try {
    int refuse_with = 0;
    Route route;  // the engine the upgrade's path names: held while the connection lasts
    if (upgrade.method == "GET" && responses_path(path_of(upgrade.target))) {
      route = router.route("POST", upgrade.target, "");
      refuse_with = scenario_refusal(route);
    }
    const HandshakeAnswer answer = answer_upgrade(upgrade, refuse_with);
    if (!io.send(answer.bytes) || !answer.accepted) return;
    Session session(io, router, options, upgrade, route.engine ? route.engine->session_memory() : nullptr);
    session.run(first_bytes);
  } catch (const std::exception&) {
    // Nothing a client sends ends the server: the connection just closes.
  }
}

}  // namespace mock::ws
