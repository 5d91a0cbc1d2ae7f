// The script engine: routing, validation, matching, plan building and settling (see
// script_engine.h). Everything here is pure and deterministic; the mutex only serialises callers.
#include "mock_server/script_engine.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "mock_server/credentials.h"
#include "mock_server/json_text.h"


namespace mock {

std::string_view Request::header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (n.size() == name.size() &&
        std::equal(n.begin(), n.end(), name.begin(), [](char a, char b) {
          return (a >= 'A' && a <= 'Z' ? a + 32 : a) == (b >= 'A' && b <= 'Z' ? b + 32 : b);
        })) {
      return v;
    }
  }
  return {};
}
namespace {

bool is_terminal(const Event& e) {
  auto* f = std::get_if<FinishEvent>(&e);
  return f && (f->reason == FinishReason::kStop || f->reason == FinishReason::kMaxTokens);
}

/// Faults after which nothing more of the attempt is delivered.
bool stops_delivery(const Fault& f) {
  return !std::holds_alternative<MalformedFault>(f) && !std::holds_alternative<StallFault>(f);
}

std::string path_of(const std::string& target) { return target.substr(0, target.find('?')); }

/// Accumulates a byte run (frames no fault separates) and turns it into WriteActions, sliced
/// into writes of at most `slice` bytes when set.
class StreamBuilder {
 public:
  explicit StreamBuilder(std::optional<int> slice) : slice_(slice) {}

  void add_frame(const std::string& bytes, bool terminal) {
    run_ += bytes;
    marks_.push_back({run_.size(), terminal});
  }
  void add_bytes(const std::string& bytes) { run_ += bytes; }

  void flush() {
    if (run_.empty()) return;
    const std::size_t step =
        slice_ && *slice_ > 0 ? static_cast<std::size_t>(*slice_) : run_.size();
    std::size_t mark = 0;
    actions_.reserve(actions_.size() + (run_.size() + step - 1) / step);
    if (step >= run_.size()) {
      // One write of the whole run (no slicing): the run itself, moved, not copied.
      WriteAction w{std::move(run_), events_ + static_cast<int>(marks_.size()), false};
      for (const Mark& m : marks_) w.terminal = w.terminal || m.terminal;
      events_ = w.events_done;
      actions_.emplace_back(std::move(w));
      run_ = std::string();
      marks_.clear();
      return;
    }
    for (std::size_t off = 0; off < run_.size(); off += step) {
      const std::size_t end = std::min(off + step, run_.size());
      // Built in place: each slice of a sliced stream is an action of its own.
      WriteAction& w = std::get<WriteAction>(
          actions_.emplace_back(WriteAction{std::string(run_.data() + off, end - off), events_, false}));
      while (mark < marks_.size() && marks_[mark].end <= end) {
        w.terminal = w.terminal || marks_[mark].terminal;
        w.events_done = ++events_;
        ++mark;
      }
    }
    run_.clear();
    marks_.clear();
  }

  void stall(double seconds) {
    flush();
    actions_.push_back(StallAction{seconds});
  }

  void drain(int pause_ms) {
    flush();
    actions_.push_back(DrainAction{pause_ms});
  }

  /// True when nothing was written or is waiting to be.
  bool empty() const { return run_.empty() && actions_.empty(); }

  std::vector<Action> take() {
    flush();
    return std::move(actions_);
  }

 private:
  struct Mark {
    std::size_t end;
    bool terminal;
  };
  std::optional<int> slice_;
  std::string run_;
  std::vector<Mark> marks_;
  int events_ = 0;
  std::vector<Action> actions_;
};

}  // namespace

ScriptEngine::ScriptEngine(Script script, AttemptRewriter rewriter)
    : script_(std::move(script)), rewriter_(std::move(rewriter)) {}

Plan ScriptEngine::respond(const Request& request) {
  // Over HTTP the parser has percent-encoded what a target may not hold raw; a caller in memory
  // gets the same here, so the journal and every message built from the path are valid UTF-8.
  // (Printable ASCII, as nearly every target is, needs nothing: checked first, without a copy.)
  if (!json_text::is_printable_ascii(request.target)) {
    if (std::string target = json_text::percent_encode_unsafe(request.target); target != request.target) {
      Request clean = request;
      clean.target = std::move(target);
      return respond(clean);
    }
  }
  std::lock_guard lock(mu_);
  JournalEntry entry;
  entry.index = first_index_ + journal_.size();
  entry.method = request.method;
  entry.transport = request.transport;
  entry.arrived_ms = request.arrived_ms;
  {
    std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64
    for (unsigned char c : request.body) h = (h ^ c) * 0x100000001b3ULL;
    static constexpr char kHex[] = "0123456789abcdef";
    entry.body_digest.assign(16, '0');
    for (int i = 15; i >= 0; --i, h >>= 4) entry.body_digest[static_cast<std::size_t>(i)] = kHex[h & 0xf];
  }
  entry.target = redact_target(request.target);  // a `?key=` credential is never stored
  PlanRecord record;
  Plan plan = respond_locked(request, entry, record);
  plan.journal_index = entry.index;
  // A model endpoint's answer carries its provider's request id and rate-limit headers.
  if (!entry.provider.empty()) {
    if (const WireFormat* format = wire_format(entry.provider)) format->add_answer_headers(entry.index, plan.status, plan.headers);
  }
  if (record.played) plan.websocket = record.played->websocket;  // carried, never read here
  entry.response_status = plan.status;
  if (window_ > 0) {
    std::size_t answer = plan.body.size();
    for (const Action& action : plan.actions) {
      if (const auto* w = std::get_if<WriteAction>(&action)) answer += w->bytes.size();
    }
    record.bytes = sizeof(JournalEntry) + request.body.size() + 2 * answer;
    window_bytes_ += record.bytes;
  }
  journal_.push_back(std::move(entry));
  records_.push_back(std::move(record));
  if (window_ > 0 && (journal_.size() > window_ || window_bytes_ > window_max_bytes_)) evict_locked();
  return plan;
}

void ScriptEngine::evict_locked() {
  while ((journal_.size() > window_ || (window_bytes_ > window_max_bytes_ && journal_.size() > 1)) &&
         (journal_.front().settled || journal_.size() >= 2 * window_)) {
    JournalEntry& e = journal_.front();
    evicted_summary_.add(e);
    if (e.turn >= 0 && !e.delivered_calls.empty()) {
      const auto turn = static_cast<std::size_t>(e.turn);
      if (evicted_delivered_.size() <= turn) evicted_delivered_.resize(turn + 1);
      auto& kept = evicted_delivered_[turn];
      for (const DeliveredCall& c : e.delivered_calls) {
        if (std::find(kept.begin(), kept.end(), c) == kept.end()) kept.push_back(c);
      }
    }
    if (keep_evicted_) evicted_.push_back(std::move(e));
    window_bytes_ -= records_.front().bytes;
    journal_.pop_front();
    records_.pop_front();
    ++first_index_;
  }
}

void ScriptEngine::set_journal_window(std::size_t max_entries, bool keep_evicted, std::size_t max_bytes) {
  std::lock_guard lock(mu_);
  window_ = std::max<std::size_t>(max_entries, 1);
  window_max_bytes_ = max_bytes;
  keep_evicted_ = keep_evicted;
}

std::vector<JournalEntry> ScriptEngine::take_evicted() {
  std::lock_guard lock(mu_);
  return std::exchange(evicted_, {});
}

JournalSummary ScriptEngine::evicted_summary() const {
  std::lock_guard lock(mu_);
  return evicted_summary_;
}

std::size_t ScriptEngine::journal_size() const {
  std::lock_guard lock(mu_);
  return first_index_ + journal_.size();
}

Plan ScriptEngine::respond_locked(const Request& request, JournalEntry& entry,
                                  PlanRecord& record) {
  Plan plan;
  const std::string path = path_of(request.target);
  if ((request.method == "HEAD" || request.method == "GET") && path == "/") {
    entry.played = "preflight";
    plan.status = 200;
    plan.content_type = "text/plain";
    return plan;
  }
  const WireFormat* format = format_for_path(path);
  if (request.method != "POST" || format == nullptr) {
    // A known path with the wrong method answers in that path's envelope; an unknown path in the
    // scenario's provider's.
    const WireFormat* fallback = format != nullptr ? format : wire_format(script_.provider);
    if (fallback == nullptr) fallback = wire_formats().front();
    entry.played = "not-found";
    plan.status = 404;
    plan.content_type = fallback->error_content_type(request.target);
    ErrorAnswer answer = fallback->error_answer(404, fallback->default_message(404), std::nullopt);
    plan.body = std::move(answer.body);
    plan.headers = std::move(answer.headers);
    return plan;
  }
  entry.provider = std::string(format->name());
  if (json_nesting_depth(request.body, kMaxJsonDepth) > kMaxJsonDepth) {
    entry.played = "bad-request";
    entry.validated = false;
    entry.rejection = "the request body nests arrays and objects deeper than " +
                      std::to_string(kMaxJsonDepth) + " levels";
    ErrorAnswer answer = format->error_answer(400, entry.rejection, std::nullopt);
    plan.status = 400;
    plan.content_type = format->error_content_type(request.target);
    plan.body = std::move(answer.body);
    plan.headers = std::move(answer.headers);
    return plan;
  }
  // A request that continues a stored response (Responses `previous_response_id`) is decoded,
  // matched and checked as the full request it stands for.
  std::optional<std::string> full_body;
  if (format->stores_responses()) {
    WireFormat::Continuation c =
        format->continue_stored(request.body, [this](const std::string& key) { return memory_.get(key); });
    if (c.rejection) {
      entry.played = c.lost ? "context-lost" : "bad-request";
      entry.validated = c.lost;
      entry.rejection = c.rejection->message;
      ErrorAnswer answer = format->error_answer(c.rejection->status, c.rejection->message, std::nullopt);
      plan.status = c.rejection->status;
      plan.content_type = format->error_content_type(request.target);
      plan.body = std::move(answer.body);
      plan.headers = std::move(answer.headers);
      return plan;
    }
    full_body = std::move(c.body);
  }
  const std::string_view body = full_body ? std::string_view(*full_body) : std::string_view(request.body);
  DecodedRequest decoded = format->decode_request(request.target, body);
  entry.model = decoded.model;
  entry.streaming = decoded.streaming;
  entry.contents = std::move(decoded.contents);
  if (entry.contents.is_array()) {
    split_kept_ends(entry.contents);
    entry.turn = turn_index(entry.contents);
  }

  auto answer_with = [&](int status, ErrorAnswer answer) {
    plan.status = status;
    plan.content_type = format->error_content_type(request.target);
    plan.body = std::move(answer.body);
    plan.headers = std::move(answer.headers);
  };
  auto answer_error = [&](int status, std::string_view message, std::optional<double> retry_after_s) {
    answer_with(status, format->error_answer(status, message, retry_after_s));
  };

  if (decoded.rejection) {
    entry.played = decoded.rejection->pairing ? "rejected" : "bad-request";
    entry.validated = false;
    entry.rejection = decoded.rejection->message;
    answer_error(decoded.rejection->status, decoded.rejection->message, std::nullopt);
    return plan;
  }
  const int turn = entry.turn;
  note_kept_end(entry.contents);
  check_responses(entry.contents, entry);
  if (std::optional<Rejection> r = check_reasoning(*format, body, entry.contents, entry.reasoning_due)) {
    // The history drops (or changes) reasoning the server delivered with a call it holds: the
    // provider's own 400, journaled like a pairing rejection (WIRE-FORMATS.md "Reasoning").
    entry.played = "rejected";
    entry.validated = false;
    entry.rejection = r->message;
    answer_error(r->status, r->message, std::nullopt);
    return plan;
  }

  if (turn >= static_cast<int>(script_.turns.size()) ||
      script_.turns[static_cast<std::size_t>(turn)].attempts.empty()) {
    const std::string detail = "turn " + std::to_string(turn) + " is past the script's last turn (" +
                               std::to_string(script_.turns.size()) + " turns): no /turns/" +
                               std::to_string(turn) + " to play";
    entry.issues.push_back("unscripted-request: " + detail);
    if (past_script_text_) {
      // answer_past_script: a completed answer of the text alone, settled like a played attempt.
      entry.issues.back() += "; answered with a final text";
      record.turn = turn;
      record.played.emplace();
      record.played->events = {TextEvent{*past_script_text_}, FinishEvent{FinishReason::kStop}};
      plan = plan_attempt(*format, *record.played, decoded, entry, record);
      entry.played = "unscripted";
      return plan;
    }
    entry.played = "unscripted";
    answer_error(500, "unscripted request: " + detail, std::nullopt);
    return plan;
  }
  if (answered_per_turn_.size() <= static_cast<std::size_t>(turn)) {
    answered_per_turn_.resize(static_cast<std::size_t>(turn) + 1, 0);
  }
  const auto& attempts = script_.turns[static_cast<std::size_t>(turn)].attempts;
  const int attempt = answered_per_turn_[static_cast<std::size_t>(turn)]++;
  const int played = std::min(attempt, static_cast<int>(attempts.size()) - 1);
  entry.attempt = attempt;
  entry.script_attempt = played;
  record.turn = turn;
  record.script_attempt = played;
  record.played = attempts[static_cast<std::size_t>(played)];
  if (rewriter_) rewriter_(turn, attempt, *record.played);
  // Calls without a scripted id get the format's deterministic one (none for Gemini), reasoning
  // without a scripted signature the deterministic default_signature.
  int call_index = 0;
  int reasoning_index = 0;
  for (Event& e : record.played->events) {
    if (auto* c = std::get_if<CallEvent>(&e)) {
      if (c->id.empty()) c->id = format->call_id(entry.index, call_index);
      ++call_index;
    } else if (auto* r = std::get_if<ReasoningEvent>(&e)) {
      if (r->signature.empty()) r->signature = default_signature(entry.index, reasoning_index);
      ++reasoning_index;
    }
  }
  record.reasoning = format->sends_reasoning();
  const Attempt& a = *record.played;

  if (a.status) {
    entry.played = "status";
    if (a.quota && *a.status == 429) {
      answer_with(429, format->quota_answer(*a.quota, entry.model, a.retry_after_s));
    } else {
      answer_error(*a.status, format->default_message(*a.status), a.retry_after_s);
    }
    return plan;
  }
  entry.played = "stream";
  plan = plan_attempt(*format, a, decoded, entry, record);
  // The provider keeps a completed response for a later continuation, unless the scenario makes
  // it forget this one (`websocket.forget_response`, also over HTTP).
  if (format->stores_responses() && !(a.websocket && a.websocket->forget_response)) {
    // A stream completes a response only when its terminal frame goes out whole (a write marked
    // terminal): the bytes up to that write are the format's to read, the terminal write alone
    // first (it holds the whole frame unless slice_bytes split it), all of them only if need be.
    std::optional<std::pair<std::string, std::string>> kept;
    if (!plan.streaming) {
      kept = format->stored_answer(body, false, plan.body);
    } else {
      std::size_t terminal = plan.actions.size();
      for (std::size_t k = 0; k < plan.actions.size() && terminal == plan.actions.size(); ++k) {
        if (const auto* w = std::get_if<WriteAction>(&plan.actions[k]); w && w->terminal) terminal = k;
      }
      if (terminal < plan.actions.size()) {
        kept = format->stored_answer(body, true, std::get<WriteAction>(plan.actions[terminal]).bytes);
        if (!kept) {
          std::string streamed;
          for (std::size_t k = 0; k <= terminal; ++k) {
            if (const auto* w = std::get_if<WriteAction>(&plan.actions[k])) streamed += w->bytes;
          }
          kept = format->stored_answer(body, true, streamed);
        }
      }
    }
    if (kept) memory_.put(kept->first, std::move(kept->second));
  }
  return plan;
}

void SessionMemory::put(const std::string& key, std::string value) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->first == key) {
      bytes_ -= it->first.size() + it->second.size();
      entries_.erase(it);
      break;
    }
  }
  if (capacity_ == 0) return;
  bytes_ += key.size() + value.size();
  entries_.emplace_back(key, std::move(value));
  while (entries_.size() > capacity_ || (bytes_ > max_bytes_ && entries_.size() > 1)) {
    bytes_ -= entries_.front().first.size() + entries_.front().second.size();
    entries_.pop_front();
  }
}

std::optional<std::string> SessionMemory::get(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (it->first == key) return it->second;
  }
  return std::nullopt;
}

Plan ScriptEngine::plan_attempt(const WireFormat& format, const Attempt& a,
                                const DecodedRequest& request, JournalEntry& entry,
                                PlanRecord& record) const {
  Plan plan;
  const bool streaming = request.streaming;
  const ResponseContext ctx{entry.model, entry.index, request.include_usage, request.include_obfuscation,
                            request.metadata};
  const int n = static_cast<int>(a.events.size());
  const int at = a.fault ? fault_after_event(*a.fault, a.events.size()) : n;

  if (!streaming) return plan_unary(format, a, ctx, entry, record);

  plan.status = 200;
  plan.streaming = true;
  plan.content_type = std::string(format.stream_content_type());
  const std::unique_ptr<StreamEncoder> encoder = format.stream_encoder(ctx);
  StreamBuilder out(a.slice_bytes);
  out.add_bytes(encoder->open());
  bool seen_terminal = false;
  int call_index = 0;
  auto join = [](std::vector<std::string>& units, std::size_t from, std::size_t to) {
    // One unit (most events): moved, not copied.
    if (to == from + 1 && to <= units.size()) return std::move(units[from]);
    std::string s;
    for (std::size_t u = from; u < to && u < units.size(); ++u) s += units[u];
    return s;
  };
  for (int i = 0; i <= n; ++i) {
    // The event's frames: `head` goes out before a fault placed inside it (a call's start and
    // `after_fragment` argument fragments), `rest` after it.
    std::vector<std::string> units;
    std::size_t split = 0;
    // A fault that ends the stream before event i (disconnect, reset, end, error_event) sends
    // nothing of it: leave it unencoded so stateful encoders (sequence numbers, block indexes)
    // number only what goes out. Cuts, goers-on and faults inside a call need its frames.
    const bool needs_event =
        !(a.fault && i == at && !fault_after_fragment(*a.fault) &&
          (std::holds_alternative<DisconnectFault>(*a.fault) || std::holds_alternative<ResetFault>(*a.fault) ||
           std::holds_alternative<EndFault>(*a.fault) || std::holds_alternative<ErrorEventFault>(*a.fault)));
    if (i < n && needs_event) {
      const Event& e = a.events[static_cast<std::size_t>(i)];
      // The event's timing (`delay_s`): nothing goes out for that long before it, as a stall.
      if (const double delay = event_delay_s(e, script_.timing); delay > 0) out.stall(delay);
      const bool is_call = std::holds_alternative<CallEvent>(e);
      units = encoder->event_units(e, call_index);
      if (is_call) ++call_index;
      if (const auto cut = cut_by_finish(a.events, static_cast<std::size_t>(i)); cut && units.size() >= 2) {
        // The max_tokens finish after this call cuts it: its start and `cut` argument fragments go
        // out, never its end (lint keeps faults out of such a call).
        const std::size_t keep = std::min<std::size_t>(1 + static_cast<std::size_t>(*cut), units.size() - 1);
        encoder->withhold_last_units(keep);
        units.resize(keep);
      }
      if (a.fault && i == at && is_call && units.size() >= 2) {
        if (auto frag = fault_after_fragment(*a.fault)) {
          split = std::min<std::size_t>(1 + static_cast<std::size_t>(*frag), units.size() - 1);
          // A fault that ends the stream here withholds the rest of the call for good.
          if (stops_delivery(*a.fault)) encoder->withhold_last_units(split);
        }
      }
    }
    const std::string rest = join(units, split, units.size());
    if (a.fault && i == at) {
      out.add_bytes(join(units, 0, split));
      entry.fault = std::string(fault_name(*a.fault));
      const Fault& f = *a.fault;
      bool stop = true;
      if (auto* d = std::get_if<DisconnectFault>(&f)) {
        plan.ending = Ending::kFin;
        plan.ending_delay_ms = d->delay_ms;
      } else if (auto* r = std::get_if<ResetFault>(&f)) {
        plan.ending = Ending::kReset;
        plan.ending_delay_ms = r->idle_ms;
      } else if (std::holds_alternative<EndFault>(f)) {
        plan.ending = Ending::kTerminator;
      } else if (auto* c = std::get_if<CutFault>(&f)) {
        if (!rest.empty()) {
          const std::size_t len =
              std::min(static_cast<std::size_t>(std::max(c->bytes, 1)), rest.size() - 1);
          out.flush();
          out.add_bytes(rest.substr(0, len));
          out.flush();
        }
        plan.ending = Ending::kFin;
      } else if (auto* e = std::get_if<ErrorEventFault>(&f)) {
        // The error goes out in a read of its own, after what came before was received.
        if (i > 0 || split > 0 || !out.empty()) out.drain(kErrorEventPauseMs);
        out.add_bytes(encoder->error_event(e->status));
        out.flush();
        plan.ending = Ending::kTerminator;
      } else if (std::holds_alternative<MalformedFault>(f)) {
        out.flush();
        out.add_bytes(encoder->malformed_frame());
        out.flush();
        stop = false;
      } else if (auto* s = std::get_if<StallFault>(&f)) {
        out.stall(s->seconds);
        stop = false;
      }
      if (stop) break;
    }
    if (i == n) break;
    const Event& e = a.events[static_cast<std::size_t>(i)];
    const bool terminal = !seen_terminal && is_terminal(e);
    seen_terminal = seen_terminal || terminal;
    out.add_frame(rest, terminal);
  }
  plan.actions = out.take();
  // Running maxima, so settle reads how far a prefix of the plan got in O(1) (the HTTP server
  // settles before every write: a sliced stream of n writes would otherwise cost O(n^2)).
  ActionInfo so_far;
  for (const auto& act : plan.actions) {
    if (auto* w = std::get_if<WriteAction>(&act)) {
      so_far.events_done = std::max(so_far.events_done, w->events_done);
      so_far.terminal = so_far.terminal || w->terminal;
    }
    record.actions.push_back(so_far);
  }
  return plan;
}

Plan ScriptEngine::plan_unary(const WireFormat& format, const Attempt& a, const ResponseContext& ctx,
                              JournalEntry& entry, PlanRecord& record) const {
  // The answer holds the events up to and including the first finish. A fault placed after that
  // finish does not play: a streaming client stops reading at the finish, and a non-streaming
  // answer ends there (the journal records no fault). Any other fault has one form per kind.
  const int n = static_cast<int>(a.events.size());
  int finish = n;  // index of the first finish, n when none
  for (int i = 0; i < n; ++i) {
    if (std::holds_alternative<FinishEvent>(a.events[static_cast<std::size_t>(i)])) {
      finish = i;
      break;
    }
  }
  const int upto = finish < n ? finish + 1 : n;
  const int at = a.fault ? fault_after_event(*a.fault, a.events.size()) : n;
  const bool fault_plays = a.fault && at <= finish;
  const std::vector<Event> full(a.events.begin(), a.events.begin() + upto);
  Plan plan;
  plan.status = 200;
  plan.streaming = false;
  // The events' timing (`delay_s`): the whole answer is late by their sum, as by a stall.
  double delay_s = 0;
  for (const Event& e : full) delay_s += event_delay_s(e, script_.timing);
  if (delay_s > 0) plan.actions.push_back(StallAction{delay_s});
  auto answer = [&](const std::vector<Event>& events) {
    plan.body = format.unary_body(events, ctx);
    record.has_body_events = true;
    record.body_events = static_cast<int>(events.size());
    record.body_completed = std::any_of(events.begin(), events.end(), is_terminal);
    const bool filtered = std::any_of(events.begin(), events.end(), [](const Event& e) {
      const auto* f = std::get_if<FinishEvent>(&e);
      return f && f->reason == FinishReason::kContentFilter;
    });
    record.body_blocked = filtered && !format.filtered_answer_keeps_parts();
    const bool malformed_call = std::any_of(events.begin(), events.end(), [](const Event& e) {
      const auto* f = std::get_if<FinishEvent>(&e);
      return f && f->reason == FinishReason::kMalformedCall;
    });
    if (malformed_call) {
      plan.status = format.malformed_call_unary_status();
      if (plan.status != 200) {
        // An error answer: its envelope's headers (e.g. Anthropic's x-should-retry), and nothing
        // of the events delivered.
        plan.headers = format.error_answer(plan.status, format.default_message(plan.status), std::nullopt).headers;
        plan.content_type = format.error_content_type(entry.target);
        record.body_blocked = true;
      } else {
        record.body_blocked = !format.malformed_call_answer_keeps_parts();
      }
    }
  };
  if (!fault_plays) {
    answer(full);
    return plan;
  }
  const Fault& f = *a.fault;
  entry.fault = std::string(fault_name(f));
  // A body cut short: the headers announce all of it, the first `bytes` go out, then the end.
  auto cut_body = [&](Ending ending, int delay_ms, std::size_t bytes) {
    plan.body = format.unary_body(full, ctx);
    plan.ending = ending;
    plan.ending_delay_ms = delay_ms;
    plan.body_bytes = std::min(std::max<std::size_t>(bytes, 1), plan.body.size() > 1 ? plan.body.size() - 1 : 0);
  };
  if (auto* e = std::get_if<ErrorEventFault>(&f)) {
    // The provider's HTTP error with that status, in its envelope: what the API answers where a
    // stream would carry the in-stream error.
    entry.played = "status";
    ErrorAnswer err = format.error_answer(e->status, format.default_message(e->status), std::nullopt);
    plan.status = e->status;
    plan.content_type = format.error_content_type(entry.target);
    plan.body = std::move(err.body);
    plan.headers = std::move(err.headers);
  } else if (auto* s = std::get_if<StallFault>(&f)) {
    plan.actions.push_back(StallAction{s->seconds});  // the whole answer is late
    answer(full);
  } else if (std::holds_alternative<MalformedFault>(f)) {
    // A complete HTTP answer whose JSON does not parse: the first half of the body.
    const std::string body = format.unary_body(full, ctx);
    plan.body = body.substr(0, body.size() / 2);
  } else if (std::holds_alternative<EndFault>(f)) {
    // A well-formed answer without a finish reason: the events before the fault, no finish.
    answer(std::vector<Event>(a.events.begin(), a.events.begin() + at));
  } else if (auto* d = std::get_if<DisconnectFault>(&f)) {
    cut_body(Ending::kFin, d->delay_ms, format.unary_body(full, ctx).size() / 2);
  } else if (auto* r = std::get_if<ResetFault>(&f)) {
    cut_body(Ending::kReset, r->idle_ms, format.unary_body(full, ctx).size() / 2);
  } else if (auto* c = std::get_if<CutFault>(&f)) {
    cut_body(Ending::kFin, 0, static_cast<std::size_t>(std::max(c->bytes, 1)));
  }
  return plan;
}

namespace {

/// The hash of parts [0, n) of a model content's `parts` array, as JSON text.
std::size_t parts_hash(const nlohmann::json& parts, std::size_t n) {
  std::string text;
  // replace: a client's text that is not UTF-8 hashes too, and never throws (type_error.316).
  for (std::size_t i = 0; i < n && i < parts.size(); ++i) {
    text += parts[i].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + '\n';
  }
  return std::hash<std::string>{}(text);
}

const nlohmann::json* model_parts(const nlohmann::json& content) {
  if (!content.is_object()) return nullptr;
  auto role = content.find("role");
  auto parts = content.find("parts");
  if (role == content.end() || *role != "model" || parts == content.end() || !parts->is_array()) return nullptr;
  return &*parts;
}

}  // namespace

void ScriptEngine::split_kept_ends(nlohmann::json& contents) const {
  for (const KeptEnd& k : kept_ends_) {
    if (k.index >= contents.size()) continue;
    const nlohmann::json* parts = model_parts(contents[k.index]);
    if (parts == nullptr || parts->size() <= k.parts || parts_hash(*parts, k.parts) != k.hash) continue;
    nlohmann::json first = nlohmann::json::array();
    nlohmann::json rest = nlohmann::json::array();
    for (std::size_t i = 0; i < parts->size(); ++i) (i < k.parts ? first : rest).push_back((*parts)[i]);
    contents[k.index] = {{"role", "model"}, {"parts", std::move(first)}};
    contents.insert(contents.begin() + static_cast<std::ptrdiff_t>(k.index) + 1,
                    nlohmann::json{{"role", "model"}, {"parts", std::move(rest)}});
  }
}

void ScriptEngine::note_kept_end(const nlohmann::json& contents) {
  if (!contents.is_array() || contents.empty() || kept_ends_.size() >= kMaxKeptEnds) return;
  const nlohmann::json* parts = model_parts(contents.back());
  if (parts == nullptr || parts->empty()) return;
  KeptEnd k{contents.size() - 1, parts->size(), parts_hash(*parts, parts->size())};
  for (const KeptEnd& seen : kept_ends_) {
    if (seen.index == k.index && seen.parts == k.parts && seen.hash == k.hash) return;
  }
  kept_ends_.push_back(k);
}

void ScriptEngine::check_responses(const nlohmann::json& contents, JournalEntry& entry) const {
  const auto summary = summarize_history(contents);
  int model_turns = 0;
  for (std::size_t i = 0; i < summary.size(); ++i) {
    const auto& c = summary[i];
    if (c.role == "model") {
      ++model_turns;
      continue;
    }
    if (c.responses.empty()) continue;
    const int turn = model_turns - 1;
    // The calls every attempt of that model turn delivered whole, among earlier requests (in the
    // window, then those that left it): a response may answer a call of a completed attempt or,
    // when the client kept a cut turn (the `continue` recovery design), of a failed one. Then
    // those of the next turn's attempts: a client that merges a continuation's answer into the
    // cut turn it kept (qwen-code appends what the answer to its "Resume directly" delivered)
    // asked for that answer as the next turn, and records its calls in the kept one.
    std::vector<const DeliveredCall*> calls;
    for (const int t : {turn, turn + 1}) {
      for (const JournalEntry& e : journal_) {
        if (e.turn != t || !e.settled) continue;
        for (const DeliveredCall& c : e.delivered_calls) calls.push_back(&c);
        // A client that read past an undecodable frame had the calls written after it whole too.
        if (e.past_undecodable) {
          for (const DeliveredCall& c : e.past_undecodable->delivered_calls) calls.push_back(&c);
        }
      }
      if (t >= 0 && static_cast<std::size_t>(t) < evicted_delivered_.size()) {
        for (const DeliveredCall& c : evicted_delivered_[static_cast<std::size_t>(t)]) calls.push_back(&c);
      }
    }
    std::vector<bool> used(calls.size(), false);
    const HistoryContent* model = i > 0 && summary[i - 1].role == "model" ? &summary[i - 1] : nullptr;
    for (std::size_t j = 0; j < c.responses.size(); ++j) {
      const auto& r = c.responses[j];
      bool matched = false;
      auto take = [&](const auto& fits) {
        for (std::size_t k = 0; k < calls.size() && !matched; ++k) {
          if (!used[k] && fits(*calls[k])) matched = used[k] = true;
        }
      };
      // By id. A call delivered by two attempts is a candidate twice; whether one call may have
      // two responses is the provider's own validation, within the request.
      if (!r.id.empty()) take([&](const DeliveredCall& call) { return call.id == r.id; });
      // A client may give a call an id of its own in history (one the provider sent twice needs a
      // new one: POLICY.md "Call ids"): the response then answers the call of that id in the
      // model content before it, which must be one that was delivered (by name and arguments).
      for (std::size_t h = 0; model != nullptr && !matched && !r.id.empty() && h < model->calls.size(); ++h) {
        const HistoryCall& kept = model->calls[h];
        if (kept.id == r.id) take([&](const DeliveredCall& call) { return call.name == kept.name && call.args == kept.args; });
      }
      // By name when the call was delivered without an id: clients invent one for such a call and
      // echo it back (gemini-cli does; WIRE-FORMATS.md "Gemini").
      if (!matched) take([&](const DeliveredCall& call) { return call.id.empty() && call.name == r.name; });
      if (!matched) {
        std::string what = "contents[" + std::to_string(i) + "] function response \"" + r.name +
                           "\"" + (r.id.empty() ? "" : " (id \"" + r.id + "\")");
        entry.issues.push_back("response-for-undelivered-call: " + what +
                               " answers no call any attempt of turn " +
                               std::to_string(turn) + " (or of the turn after it) delivered");
      }
    }
  }
}

std::optional<Rejection> ScriptEngine::check_reasoning(const WireFormat& format, std::string_view body,
                                                       const nlohmann::json& contents, int& due_calls) const {
  if (!format.sends_reasoning()) return std::nullopt;
  // Only turns for which some attempt delivered reasoning are checked: a scenario without
  // reasoning is served exactly as before (no summary, no second parse of the body).
  if (!reasoning_delivered_) return std::nullopt;
  bool any = false;
  for (const JournalEntry& e : journal_) any = any || !e.delivered_reasoning.empty();
  if (!any) return std::nullopt;
  const auto summary = summarize_history(contents);
  std::vector<ReasoningCheck> checks;
  int model_turns = 0;
  for (std::size_t i = 0; i < summary.size(); ++i) {
    if (summary[i].role != "model") continue;
    const int turn = model_turns++;
    ReasoningCheck check;
    check.content = static_cast<int>(i);
    std::vector<const JournalEntry*> attempts;
    for (const JournalEntry& e : journal_) {
      if (e.turn != turn || !e.settled) continue;
      attempts.push_back(&e);
      for (const DeliveredReasoning& r : e.delivered_reasoning) check.delivered.emplace_back(e.index, r);
    }
    if (check.delivered.empty()) continue;
    const auto& calls = summary[i].calls;
    for (std::size_t j = 0; j < calls.size(); ++j) {
      const HistoryCall& h = calls[j];
      ReasoningCheck::Call due{static_cast<int>(j), h.name, {}};
      bool needs = false;
      bool plain = false;  // some attempt delivered this call without reasoning before it
      for (const JournalEntry* e : attempts) {
        for (const DeliveredCall& d : e->delivered_calls) {
          // The call the history's call is: by id when both have one, else by name and arguments.
          const bool same = (!h.id.empty() && d.id == h.id) || (d.name == h.name && d.args == h.args);
          if (!same) continue;
          ReasoningCheck::Delivery delivery{e->index, d.call_index, {}};
          for (const DeliveredReasoning& r : e->delivered_reasoning) {
            if (r.before_call == d.call_index) delivery.reasoning.push_back(r);
          }
          if (delivery.reasoning.empty()) {
            plain = true;
          } else {
            needs = true;
            due.deliveries.push_back(std::move(delivery));
          }
        }
      }
      if (needs && !plain) check.calls.push_back(std::move(due));
    }
    due_calls += static_cast<int>(check.calls.size());
    checks.push_back(std::move(check));
  }
  // Every reasoning event delivered in the run, whatever turn the history holds of it (content
  // -1): a reasoning item sent back alone is refused too.
  ReasoningCheck all;
  all.content = -1;
  for (const JournalEntry& e : journal_) {
    for (const DeliveredReasoning& r : e.delivered_reasoning) all.delivered.emplace_back(e.index, r);
  }
  checks.push_back(std::move(all));
  return format.check_reasoning(body, checks);
}

void ScriptEngine::answer_past_script(std::optional<std::string> text) {
  std::lock_guard lock(mu_);
  past_script_text_ = std::move(text);
}

void ScriptEngine::settle(std::size_t journal_index, const Delivery& delivery) {
  std::lock_guard lock(mu_);
  // An entry that left the window (or was never journaled) is not settled again.
  if (journal_index < first_index_ || journal_index - first_index_ >= journal_.size()) return;
  JournalEntry& e = journal_[journal_index - first_index_];
  PlanRecord& rec = records_[journal_index - first_index_];
  e.answered_ms = delivery.ended_ms;
  if (rec.turn < 0) {
    e.settled = true;
    e.events_delivered = 0;
    e.past_undecodable.reset();
    e.completed = false;
    e.delivered_calls.clear();
    e.delivered_text.clear();
    e.delivered_reasoning.clear();
    return;
  }
  int events = 0;
  bool completed = false;
  if (rec.has_body_events) {
    if (!delivery.client_gone) {
      events = rec.body_events;
      completed = rec.body_completed;
    }
  } else {
    const auto done = std::min<std::size_t>(static_cast<std::size_t>(std::max(delivery.actions_done, 0)),
                                            rec.actions.size());
    if (done > 0) {  // actions[i] holds the running maxima over actions 0..i
      events = rec.actions[done - 1].events_done;
      completed = rec.actions[done - 1].terminal;
    }
  }
  const Attempt& attempt = *rec.played;
  // What a correct client reads: it stops at the first finish frame (later frames and faults change
  // nothing) and at an undecodable frame (the attempt fails there, whatever the server writes next).
  if (rec.read_limit < 0) {
    int limit = static_cast<int>(attempt.events.size());
    for (std::size_t i = 0; i < attempt.events.size(); ++i) {
      if (std::holds_alternative<FinishEvent>(attempt.events[i])) {
        limit = static_cast<int>(i) + 1;
        break;
      }
    }
    rec.read_limit = limit;
    rec.finish_limit = limit;
    rec.malformed_limit = false;
    if (!rec.has_body_events && attempt.fault && std::holds_alternative<MalformedFault>(*attempt.fault)) {
      const int at = fault_after_event(*attempt.fault, attempt.events.size());
      if (at < limit) {
        rec.read_limit = at;
        rec.malformed_limit = true;
      }
    }
  }
  const int events_past = std::min(events, rec.finish_limit);
  const bool completed_past = completed;
  events = std::min(events, rec.read_limit);
  if (rec.malformed_limit) completed = false;  // the undecodable frame comes before the finish
  // Settled again with the same progress (a sliced stream settles before each of its writes):
  // the delivered calls and text are already right.
  const bool read_past = rec.malformed_limit && events_past > events;
  if (e.settled && e.events_delivered == events && e.completed == completed &&
      (!read_past || (e.past_undecodable && e.past_undecodable->events_delivered == events_past &&
                      e.past_undecodable->completed == completed_past))) {
    return;
  }
  e.settled = true;
  e.events_delivered = events;
  e.completed = completed;
  e.delivered_calls.clear();
  e.delivered_text.clear();
  e.delivered_reasoning.clear();
  e.past_undecodable.reset();
  if (read_past) {
    JournalEntry::PastUndecodable past{events_past, completed_past, {}, ""};
    int call = 0;
    for (int i = 0; i < events_past; ++i) {
      const Event& ev = attempt.events[static_cast<std::size_t>(i)];
      if (auto* c = std::get_if<CallEvent>(&ev)) {
        if (!cut_by_finish(attempt.events, static_cast<std::size_t>(i))) {
          past.delivered_calls.push_back({c->name, c->args, c->id, call, c->reuse_id});
        }
        ++call;
      } else if (auto* t = std::get_if<TextEvent>(&ev)) {
        past.delivered_text += t->text;
      }
    }
    e.past_undecodable = std::move(past);
  }
  int call_index = 0;
  int reasoning_index = 0;
  for (std::size_t i = 0; i < attempt.events.size(); ++i) {
    const Event& ev = attempt.events[i];
    // A blocked non-streaming answer holds its finish but none of the parts before it.
    const bool delivered = static_cast<int>(i) < events && !rec.body_blocked;
    if (auto* r = std::get_if<ReasoningEvent>(&ev)) {
      if (delivered && rec.reasoning) {
        DeliveredReasoning d{r->text, r->signature, reasoning_index, -1, r->redacted};
        // The call it holds the place of: the next call, unless other reasoning or the finish
        // comes first.
        int next_call = call_index;
        for (std::size_t k = i + 1; k < attempt.events.size(); ++k) {
          const Event& later = attempt.events[k];
          if (std::holds_alternative<CallEvent>(later)) {
            d.before_call = next_call;
            break;
          }
          if (std::holds_alternative<ReasoningEvent>(later) || std::holds_alternative<FinishEvent>(later)) break;
        }
        e.delivered_reasoning.push_back(std::move(d));
        reasoning_delivered_ = true;
      }
      ++reasoning_index;
    } else if (auto* c = std::get_if<CallEvent>(&ev)) {
      // A call its max_tokens finish cuts is never delivered whole.
      if (delivered && !cut_by_finish(attempt.events, i)) {
        e.delivered_calls.push_back({c->name, c->args, c->id, call_index, c->reuse_id});
      }
      ++call_index;
    } else if (auto* t = std::get_if<TextEvent>(&ev)) {
      if (delivered) e.delivered_text += t->text;
    }
  }
}

void ScriptEngine::refuse(std::size_t journal_index, int status, const std::string& reason) {
  settle(journal_index, Delivery{0, true, -1});
  std::lock_guard lock(mu_);
  if (journal_index < first_index_ || journal_index - first_index_ >= journal_.size()) return;
  JournalEntry& e = journal_[journal_index - first_index_];
  e.response_status = status;
  e.played = "overloaded";
  e.issues.push_back("server-overloaded: " + reason);
}

Journal ScriptEngine::journal() const {
  std::lock_guard lock(mu_);
  return Journal(journal_.begin(), journal_.end());
}


Journal ScriptEngine::take_journal() {
  std::lock_guard lock(mu_);
  Journal out(std::make_move_iterator(journal_.begin()), std::make_move_iterator(journal_.end()));
  // The entries are gone: later requests keep counting from where they stopped.
  first_index_ += journal_.size();
  journal_.clear();
  records_.clear();
  return out;
}

}  // namespace mock
