// Transcript assembly and digest; see transcript.h.
#include "harness/transcript.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <regex>
#include <variant>

#include "mock_server/wire_format.h"

namespace harness {

using nlohmann::json;

json make_transcript(const Scenario& scenario, const rut::RunResult& run, const mock::Journal& journal,
                     const std::vector<ToolCallRecord>& tool_calls) {
  json ledger = json::array();
  for (const rut::LedgerEntry& l : run.ledger) {
    ledger.push_back({{"name", l.name}, {"args", l.args}, {"request_seq", l.request_seq},
                      {"call_index", l.call_index}});
  }
  json requests = json::array();
  // How much of the request the user's interrupt cancelled mid-stream the server delivered depends
  // on the transport (over HTTP, bytes already in the socket's buffers when the client hangs up
  // count as sent), so the digest leaves its `completed` out.
  const int interrupted = interrupted_request(scenario, journal);
  for (std::size_t i = 0; i < journal.size(); ++i) {
    const mock::JournalEntry& e = journal[i];
    json r = {{"turn", e.turn}, {"attempt", e.attempt}, {"script_attempt", e.script_attempt},
              {"model", e.model}, {"played", e.played}, {"fault", e.fault},
              {"status", e.response_status}, {"validated", e.validated},
              {"completed", e.completed}};
    if (static_cast<int>(i) == interrupted) {
      r.erase("completed");
      r["interrupted"] = true;
    }
    requests.push_back(std::move(r));
  }
  json out = {{"scenario", scenario.name},
          {"outcome", {{"completed", run.completed}, {"error", run.error}, {"final_text", run.final_text},
                       {"truncated", run.truncated}}},
          {"shown_output", run.shown_output},
          {"requests", run.requests},
          {"waited_s", run.waited_s},
          {"ledger", ledger},
          {"events", run.events},
          {"journal", requests},
          {"final_history", run.final_history}};
  if (!tool_calls.empty()) {
    json calls = json::array();
    for (const ToolCallRecord& r : tool_calls) calls.push_back(tool_call_record_to_json(r));
    out["tool_calls"] = std::move(calls);
  }
  return out;
}

std::string fnv1a_hex(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

namespace {

/// The transcript digest's hash: a JSON value walked in json's own order (objects by sorted key),
/// each piece fed as 64-bit little-endian words (a tag, a number's bits, a string's length, then
/// its bytes 8 at a time, the last word zero-padded) into h = (h ^ w) * 0x9e3779b97f4a7c15, h ^= h >> 32, with
/// splitmix64's finalizer at the end. Not FNV-1a over json::dump()'s text, as until stop 60: that
/// ran the serializer's UTF-8 check and escaping over every byte of every case (5% of an in-memory
/// exploration case's instructions); this reads each string once, 8 bytes a step. Strings are
/// length-prefixed and containers closed by a tag, so distinct values feed distinct word streams.
class TranscriptHash {
 public:
  void word(std::uint64_t w) {
    h_ = (h_ ^ w) * 0x9e3779b97f4a7c15ULL;
    h_ ^= h_ >> 32;
  }
  void string(std::string_view text) {
    word(kString ^ (static_cast<std::uint64_t>(text.size()) << 8));
    const char* p = text.data();
    std::size_t n = text.size();
    for (; n >= 8; p += 8, n -= 8) {
      std::uint64_t w;
      std::memcpy(&w, p, 8);
      word(w);
    }
    if (n > 0) {
      std::uint64_t w = 0;
      std::memcpy(&w, p, n);
      word(w);
    }
  }
  void boolean(bool b) { word(b ? kTrue : kFalse); }
  void integer(std::int64_t n) {
    word(kInteger);
    word(static_cast<std::uint64_t>(n));
  }
  void number(double d) {
    std::uint64_t bits;
    std::memcpy(&bits, &d, 8);
    word(kFloat);
    word(bits);
  }
  void open_object() { word(kObject); }
  void close_object() { word(kObjectEnd); }
  void open_array() { word(kArray); }
  void close_array() { word(kArrayEnd); }
  /// An object member's name (the value follows).
  void key(std::string_view name) { string(name); }
  /// An object member: its name, then its value as json(value) would hold it. (No string literal
  /// as `value`: it would take the bool overload.)
  void member(std::string_view name, bool value) {
    key(name);
    boolean(value);
  }
  void member(std::string_view name, int value) {
    key(name);
    integer(value);
  }
  void member(std::string_view name, const std::string& value) {
    key(name);
    string(value);
  }
  void member(std::string_view name, const json& value) {
    key(name);
    this->value(value);
  }

  /// `value` as a whole: what value(json(x)) and the typed calls above feed alike.
  void value(const json& v) {
    switch (v.type()) {
      case json::value_t::null:
      case json::value_t::discarded:
        word(kNull);
        return;
      case json::value_t::boolean:
        boolean(v.get_ref<const json::boolean_t&>());
        return;
      case json::value_t::number_integer:
        integer(v.get_ref<const json::number_integer_t&>());
        return;
      case json::value_t::number_unsigned: {
        const std::uint64_t u = v.get_ref<const json::number_unsigned_t&>();
        if (u > static_cast<std::uint64_t>(INT64_MAX)) {
          word(kUnsigned);
          word(u);
        } else {
          integer(static_cast<std::int64_t>(u));
        }
        return;
      }
      case json::value_t::number_float:
        number(v.get_ref<const json::number_float_t&>());
        return;
      case json::value_t::string:
        string(v.get_ref<const json::string_t&>());
        return;
      case json::value_t::binary:
        word(kBinary);
        string(std::string_view(reinterpret_cast<const char*>(v.get_binary().data()), v.get_binary().size()));
        return;
      case json::value_t::array:
        open_array();
        for (const json& e : v) value(e);
        close_array();
        return;
      case json::value_t::object:
        open_object();
        for (auto it = v.begin(); it != v.end(); ++it) {
          key(it.key());
          value(it.value());
        }
        close_object();
        return;
    }
  }

  std::string hex() const {
    std::uint64_t z = h_;  // splitmix64's finalizer
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(z));
    return buf;
  }

 private:
  // Tags: distinct from one another; a string's tag carries its length above the low byte.
  static constexpr std::uint64_t kNull = 0x01, kFalse = 0x02, kTrue = 0x03, kInteger = 0x04, kUnsigned = 0x05,
                                 kFloat = 0x06, kString = 0x07, kBinary = 0x08, kArray = 0x09, kArrayEnd = 0x0a,
                                 kObject = 0x0b, kObjectEnd = 0x0c;
  std::uint64_t h_ = 0xcbf29ce484222325ULL;
};

}  // namespace

std::string transcript_digest(const json& transcript) {
  TranscriptHash h;
  h.value(transcript);
  return h.hex();
}

std::string transcript_digest(const Scenario& scenario, const rut::RunResult& run, const mock::Journal& journal,
                              const std::vector<ToolCallRecord>& tool_calls) {
  // make_transcript's object walked as TranscriptHash::value walks it: its members in json's
  // (std::map) sorted key order, each value fed as the json make_transcript would hold; kept in
  // step with it by the test "the streamed transcript digest equals the digest of the built
  // transcript".
  TranscriptHash h;
  h.open_object();
  h.key("events");
  h.open_array();
  for (const json& e : run.events) h.value(e);
  h.close_array();
  h.member("final_history", run.final_history);
  h.key("journal");
  h.open_array();
  const int interrupted = interrupted_request(scenario, journal);
  for (std::size_t i = 0; i < journal.size(); ++i) {
    const mock::JournalEntry& e = journal[i];
    h.open_object();
    h.member("attempt", e.attempt);
    if (static_cast<int>(i) != interrupted) h.member("completed", e.completed);
    h.member("fault", e.fault);
    if (static_cast<int>(i) == interrupted) h.member("interrupted", true);
    h.member("model", e.model);
    h.member("played", e.played);
    h.member("script_attempt", e.script_attempt);
    h.member("status", e.response_status);
    h.member("turn", e.turn);
    h.member("validated", e.validated);
    h.close_object();
  }
  h.close_array();
  h.key("ledger");
  h.open_array();
  for (const rut::LedgerEntry& l : run.ledger) {
    h.open_object();
    h.member("args", l.args);
    h.member("call_index", l.call_index);
    h.member("name", l.name);
    h.member("request_seq", l.request_seq);
    h.close_object();
  }
  h.close_array();
  h.key("outcome");
  h.open_object();
  h.member("completed", run.completed);
  h.member("error", run.error);
  h.member("final_text", run.final_text);
  h.member("truncated", run.truncated);
  h.close_object();
  h.member("requests", run.requests);
  h.member("scenario", scenario.name);
  h.member("shown_output", run.shown_output);
  if (!tool_calls.empty()) {
    h.key("tool_calls");
    h.open_array();
    for (const ToolCallRecord& r : tool_calls) h.value(tool_call_record_to_json(r));
    h.close_array();
  }
  h.key("waited_s");
  h.number(run.waited_s);
  h.close_object();
  return h.hex();
}

std::vector<int> requests_named(const Violation& violation) {
  std::vector<int> out;
  if (violation.request >= 0) out.push_back(violation.request);
  // "request 3", "requests 0, 1", "requests 0, 1 and 2"
  static const std::regex kNamed(R"(\brequests? (\d+(?:(?:, | and )\d+)*))");
  static const std::regex kNumber(R"(\d+)");
  for (auto it = std::sregex_iterator(violation.message.begin(), violation.message.end(), kNamed);
       it != std::sregex_iterator(); ++it) {
    const std::string list = (*it)[1].str();
    for (auto n = std::sregex_iterator(list.begin(), list.end(), kNumber); n != std::sregex_iterator(); ++n) {
      out.push_back(std::stoi(n->str()));
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {

/// The scripted attempt a journal entry played; null when it played none.
const mock::Attempt* scripted_attempt(const Scenario& scenario, const mock::JournalEntry& e) {
  if (e.turn < 0 || e.script_attempt < 0) return nullptr;
  const auto& turns = scenario.script.turns;
  if (static_cast<std::size_t>(e.turn) >= turns.size()) return nullptr;
  const auto& attempts = turns[static_cast<std::size_t>(e.turn)].attempts;
  if (static_cast<std::size_t>(e.script_attempt) >= attempts.size()) return nullptr;
  return &attempts[static_cast<std::size_t>(e.script_attempt)];
}

/// What the request carried: a digest of its history, and the calls of its last model content
/// with the function responses that answer them.
json request_sent(const mock::JournalEntry& e) {
  json calls = json::array(), responses = json::array();
  int contents = 0;
  if (e.contents.is_array()) {
    contents = static_cast<int>(e.contents.size());
    const auto history = mock::summarize_history(e.contents);
    // The last model content and the user content after it, if any.
    for (std::size_t k = history.size(); k-- > 0;) {
      if (history[k].role != "model") continue;
      for (const auto& c : history[k].calls) {
        json call = {{"name", c.name}, {"args", c.args}};
        if (!c.id.empty()) call["id"] = c.id;
        calls.push_back(std::move(call));
      }
      for (std::size_t u = k + 1; u < history.size(); ++u) {
        for (const auto& r : history[u].responses) {
          json response = {{"name", r.name}};
          if (!r.id.empty()) response["id"] = r.id;
          responses.push_back(std::move(response));
        }
      }
      break;
    }
  }
  return {{"history_digest", fnv1a_hex(e.contents.dump())}, {"contents", contents},
          {"calls_answered", calls}, {"function_responses", responses}};
}

/// How the answer ended: "completed", "fault:KIND", "status:CODE", "finish:REASON" (a finish that
/// does not complete the turn), "rejected", "bad-request", "context-lost", "not-found", "unscripted",
/// "preflight" or "incomplete" (the stream ended without its terminal frame).
std::string answer_ended(const mock::JournalEntry& e, const mock::Attempt* attempt) {
  if (e.played == "status") return "status:" + std::to_string(e.response_status);
  if (e.played != "stream") return e.played.empty() ? "incomplete" : e.played;
  if (e.completed) return "completed";
  if (!e.fault.empty()) return "fault:" + e.fault;
  if (attempt && !attempt->events.empty()) {
    if (const auto* finish = std::get_if<mock::FinishEvent>(&attempt->events.back())) {
      return "finish:" + std::string(mock::finish_name(finish->reason));
    }
  }
  return "incomplete";
}

json request_answer(const mock::JournalEntry& e, const mock::Attempt* attempt) {
  json fault = nullptr;
  if (!e.fault.empty() && attempt && attempt->fault) {
    fault = mock::fault_to_json(*attempt->fault);
    fault["fell_after_event"] = mock::fault_after_event(*attempt->fault, attempt->events.size());
  } else if (!e.fault.empty()) {
    fault = {{"kind", e.fault}};
  }
  json calls = json::array();
  for (const auto& c : e.delivered_calls) {
    json call = {{"name", c.name}, {"args", c.args}, {"call_index", c.call_index}};
    if (!c.id.empty()) call["id"] = c.id;
    if (c.reuse_id) call["reuse_id"] = true;  // the provider repeated an id on purpose
    calls.push_back(std::move(call));
  }
  json a = {{"status", e.response_status},
            {"played", e.played},
            {"events_delivered", e.events_delivered},
            {"events_scripted", attempt ? static_cast<int>(attempt->events.size()) : 0},
            {"fault", fault},
            {"ended", answer_ended(e, attempt)},
            {"delivered_calls", calls},
            {"delivered_text", e.delivered_text}};
  if (!e.rejection.empty()) a["rejection"] = e.rejection;
  return a;
}

}  // namespace

json make_review_transcript(const Scenario& scenario, const rut::RunResult& run, const mock::Journal& journal,
                            const std::vector<Violation>& violations, const std::vector<double>& sent_at_s) {
  json links = json::array();
  std::vector<std::vector<int>> named(violations.size());
  for (std::size_t v = 0; v < violations.size(); ++v) {
    named[v] = requests_named(violations[v]);
    links.push_back({{"index", v}, {"invariant", violations[v].invariant}, {"requests", named[v]}});
  }

  json executions = json::array();
  for (const rut::LedgerEntry& l : run.ledger) {
    executions.push_back({{"name", l.name}, {"args", l.args}, {"call_id", l.call_id},
                          {"call_index", l.call_index}, {"request", l.request_seq}});
  }

  json requests = json::array();
  for (std::size_t i = 0; i < journal.size(); ++i) {
    const mock::JournalEntry& e = journal[i];
    const mock::Attempt* attempt = scripted_attempt(scenario, e);
    json r = {{"index", e.index}, {"turn", e.turn}, {"attempt", e.attempt}, {"script_attempt", e.script_attempt},
              {"model", e.model}, {"provider", e.provider}, {"streaming", e.streaming},
              {"virtual_s", i < sent_at_s.size() ? json(sent_at_s[i]) : json(nullptr)}};
    if (e.arrived_ms >= 0) r["arrived_ms"] = e.arrived_ms;
    if (e.answered_ms >= 0) r["answered_ms"] = e.answered_ms;
    r["sent"] = request_sent(e);
    r["answer"] = request_answer(e, attempt);
    json executed = json::array();
    for (std::size_t k = 0; k < run.ledger.size(); ++k) {
      if (run.ledger[k].request_seq == static_cast<int>(e.index)) executed.push_back(k);
    }
    r["executed"] = executed;
    json linked = json::array();
    for (std::size_t v = 0; v < violations.size(); ++v) {
      if (std::find(named[v].begin(), named[v].end(), static_cast<int>(e.index)) != named[v].end()) linked.push_back(v);
    }
    r["violations"] = linked;
    requests.push_back(std::move(r));
  }

  // The runtime's own story: each retry, commit and error with the request it followed.
  json retries = json::array(), commits = json::array(), errors = json::array();
  int last_request = -1;
  for (const json& ev : run.events) {
    const std::string type = ev.value("type", "");
    if (type == "request") {
      last_request = ev.value("seq", last_request);
    } else if (type == "retry") {
      retries.push_back({{"request", last_request}, {"turn", ev.value("turn", -1)}, {"attempt", ev.value("attempt", -1)},
                         {"reason", ev.value("error", "")}, {"message", ev.value("message", "")},
                         {"wait_s", ev.value("wait_s", 0.0)}, {"model", ev.value("model", "")}});
    } else if (type == "commit") {
      commits.push_back({{"request", last_request}, {"turn", ev.value("turn", -1)}});
    } else if (type == "error") {
      errors.push_back({{"request", last_request}, {"code", ev.value("code", "")}, {"message", ev.value("message", "")}});
    }
  }
  json runtime = {{"retries", retries},
                  {"commits", commits},
                  {"errors", errors},
                  {"outcome", {{"completed", run.completed}, {"error", run.error},
                               {"error_message", run.error_message}, {"final_text", run.final_text},
                               {"truncated", run.truncated}}},
                  {"requests", run.requests},
                  {"waited_s", run.waited_s}};

  return {{"version", kReviewTranscriptVersion}, {"requests", requests}, {"runtime", runtime},
          {"executions", executions}, {"violations", links}};
}

}  // namespace harness
