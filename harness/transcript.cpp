// Transcript assembly and digest; see transcript.h.
#include "harness/transcript.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
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

std::string transcript_digest(const json& transcript) { return fnv1a_hex(transcript.dump()); }

namespace {

/// FNV-1a 64 fed piece by piece; hex() as fnv1a_hex of the concatenation.
class Fnv1a {
 public:
  Fnv1a() : serializer_(std::make_shared<Sink>(h_), ' ') {}
  Fnv1a& operator<<(std::string_view text) {
    feed(h_, text.data(), text.size());
    return *this;
  }
  Fnv1a& operator<<(const char* text) { return *this << std::string_view(text); }  // not the bool overload
  Fnv1a& operator<<(char c) { return *this << std::string_view(&c, 1); }
  Fnv1a& operator<<(bool b) { return *this << (b ? "true" : "false"); }
  Fnv1a& operator<<(int n) {
    char buf[16];
    const int len = std::snprintf(buf, sizeof buf, "%d", n);
    return *this << std::string_view(buf, static_cast<std::size_t>(len));
  }
  /// A value as json::dump() writes it (strings escaped, numbers in nlohmann's own format): the
  /// same serializer dump() uses, writing into the hash instead of a string (a dump() a value
  /// made and freed a string per value: 3 % of an in-memory exploration case's CPU).
  Fnv1a& dump(const json& value) {
    serializer_.dump(value, false, false, 0);
    return *this;
  }
  Fnv1a& key(std::string_view name, bool first = false) {
    if (!first) *this << ',';
    return *this << '"' << name << "\":";
  }
  std::string hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
    return buf;
  }

 private:
  static void feed(std::uint64_t& h, const char* data, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i) {
      h ^= static_cast<unsigned char>(data[i]);
      h *= 0x100000001b3ULL;
    }
  }
  /// nlohmann's output adapter interface (detail/output/output_adapters.hpp), feeding the hash.
  class Sink final : public nlohmann::detail::output_adapter_protocol<char> {
   public:
    explicit Sink(std::uint64_t& h) : h_(h) {}
    void write_character(char c) override { feed(h_, &c, 1); }
    void write_characters(const char* s, std::size_t length) override { feed(h_, s, length); }

   private:
    std::uint64_t& h_;
  };

  std::uint64_t h_ = 0xcbf29ce484222325ULL;
  nlohmann::detail::serializer<json> serializer_;
};

}  // namespace

std::string transcript_digest(const Scenario& scenario, const rut::RunResult& run, const mock::Journal& journal,
                              const std::vector<ToolCallRecord>& tool_calls) {
  // make_transcript's object, its keys in json's (std::map) sorted order; kept in step with it by
  // the test "the streamed transcript digest equals the digest of the built transcript".
  Fnv1a h;
  h << '{';
  h.key("events", true) << '[';
  for (std::size_t i = 0; i < run.events.size(); ++i) {
    if (i) h << ',';
    h.dump(run.events[i]);
  }
  h << ']';
  h.key("final_history").dump(run.final_history);
  h.key("journal") << '[';
  const int interrupted = interrupted_request(scenario, journal);
  for (std::size_t i = 0; i < journal.size(); ++i) {
    const mock::JournalEntry& e = journal[i];
    if (i) h << ',';
    h << '{';
    h.key("attempt", true) << e.attempt;
    if (static_cast<int>(i) != interrupted) h.key("completed") << e.completed;
    h.key("fault").dump(e.fault);
    if (static_cast<int>(i) == interrupted) h.key("interrupted") << true;
    h.key("model").dump(e.model);
    h.key("played").dump(e.played);
    h.key("script_attempt") << e.script_attempt;
    h.key("status") << e.response_status;
    h.key("turn") << e.turn;
    h.key("validated") << e.validated;
    h << '}';
  }
  h << ']';
  h.key("ledger") << '[';
  for (std::size_t i = 0; i < run.ledger.size(); ++i) {
    const rut::LedgerEntry& l = run.ledger[i];
    if (i) h << ',';
    h << '{';
    h.key("args", true).dump(l.args);
    h.key("call_index") << l.call_index;
    h.key("name").dump(l.name);
    h.key("request_seq") << l.request_seq;
    h << '}';
  }
  h << ']';
  h.key("outcome") << '{';
  h.key("completed", true) << run.completed;
  h.key("error").dump(run.error);
  h.key("final_text").dump(run.final_text);
  h.key("truncated") << (run.truncated ? "true" : "false");
  h << '}';
  h.key("requests") << run.requests;
  h.key("scenario").dump(scenario.name);
  h.key("shown_output").dump(run.shown_output);
  if (!tool_calls.empty()) {
    h.key("tool_calls") << '[';
    for (std::size_t i = 0; i < tool_calls.size(); ++i) {
      if (i) h << ',';
      h.dump(tool_call_record_to_json(tool_calls[i]));
    }
    h << ']';
  }
  h.key("waited_s").dump(run.waited_s);
  h << '}';
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
