// The invariant checkers and the expect checks; see invariants.h. Each checker reads the
// server's journal (what was really asked and delivered) and the runtime's result (what it did),
// never the runtime's internals, so the same checks judge any runtime.
#include "harness/invariants.h"
#include "harness/scenario_io.h"
#include "harness/strings.h"

#include <algorithm>
#include <cstring>
#include <cctype>
#include <map>
#include <tuple>
#include <optional>
#include <set>
#include <sstream>

namespace harness {
namespace {

using nlohmann::json;

Violation make(std::string_view invariant, std::string message, const mock::JournalEntry* e = nullptr) {
  Violation v{std::string(invariant), std::move(message)};
  if (e != nullptr) {
    v.request = static_cast<int>(e->index);
    v.turn = e->turn;
    v.attempt = e->attempt;
  }
  return v;
}

std::string where(const mock::JournalEntry& e) {
  std::ostringstream out;
  out << "request " << e.index;
  if (e.turn >= 0 && e.attempt >= 0) out << " (turn " << e.turn << ", attempt " << e.attempt << ")";
  else if (e.turn >= 0) out << " (turn " << e.turn << ", " << (e.played.empty() ? std::string("unmatched") : e.played) << ")";
  else out << " (" << (e.played.empty() ? std::string("no turn") : e.played) << ")";
  return out.str();
}

/// The scripted attempt an entry played, or nullptr.
const mock::Attempt* played_attempt(const Scenario& s, const mock::JournalEntry& e) {
  if (e.turn < 0 || e.script_attempt < 0) return nullptr;
  if (static_cast<std::size_t>(e.turn) >= s.script.turns.size()) return nullptr;
  const auto& attempts = s.script.turns[static_cast<std::size_t>(e.turn)].attempts;
  if (static_cast<std::size_t>(e.script_attempt) >= attempts.size()) return nullptr;
  return &attempts[static_cast<std::size_t>(e.script_attempt)];
}

}  // namespace

std::optional<mock::FinishReason> delivered_finish(const Scenario& s, const mock::JournalEntry& e) {
  const mock::Attempt* a = played_attempt(s, e);
  if (a == nullptr) return std::nullopt;
  for (int i = 0; i < e.events_delivered && i < static_cast<int>(a->events.size()); ++i) {
    if (const auto* f = std::get_if<mock::FinishEvent>(&a->events[static_cast<std::size_t>(i)])) return f->reason;
  }
  return std::nullopt;
}

namespace {

/// A model content reduced to what must match the server's delivery: text concatenated, calls.
struct ModelTurn {
  std::string text;
  std::vector<std::pair<std::string, json>> calls;
  /// merged_continuation only: the start of the delivery that repeated the kept text's end and
  /// was left out of the turn (not part of what the turn holds; ignored by ==).
  std::string repeated;
  bool operator==(const ModelTurn& o) const { return text == o.text && calls == o.calls; }
};

/// A reasoning part of the neutral view (`"thought": true`): neither text the model said nor a
/// call (wire_format.h); its round trip is the provider's own validation, in the server.
bool is_thought(const json& part) {
  if (!part.is_object()) return false;
  auto t = part.find("thought");
  return t != part.end() && t->is_boolean() && t->get<bool>();
}

ModelTurn from_content(const json& content) {
  ModelTurn t;
  if (!content.contains("parts") || !content["parts"].is_array()) return t;
  for (const json& part : content["parts"]) {
    if (is_thought(part)) continue;
    if (part.contains("text") && part["text"].is_string()) t.text += part["text"].get<std::string>();
    if (part.contains("functionCall") && part["functionCall"].is_object()) {
      const json& fc = part["functionCall"];
      t.calls.emplace_back(fc.value("name", ""), fc.value("args", json::object()));
    }
  }
  return t;
}

int recorded_turn(const mock::Journal& journal, std::size_t i);  // below, with merged_continuation
std::optional<ModelTurn> merged_continuation(const mock::Journal& journal, std::size_t i);

ModelTurn from_delivery(const mock::JournalEntry& e) {
  ModelTurn t;
  t.text = e.delivered_text;
  for (const auto& c : e.delivered_calls) t.calls.emplace_back(c.name, c.args);
  return t;
}

/// A history (the neutral view: role user/model, parts text / functionCall / functionResponse)
/// reduced to what every wire format carries: per content its role, its text, its calls (name,
/// args, id) and its responses (the id, else the name). The runtime's own history and the server's
/// decoding of a request compare equal under it whatever the provider.
/// The concatenated string `text` parts of one content object, as comparable_history reads them.
std::string content_text(const json& content) {
  std::string text;
  auto parts = content.find("parts");
  if (parts == content.end() || !parts->is_array()) return text;
  for (const json& part : *parts) {
    if (!part.is_object() || is_thought(part)) continue;
    auto t = part.find("text");
    if (t != part.end() && t->is_string()) text += t->get_ref<const std::string&>();
  }
  return text;
}

json comparable_history(const json& contents) {
  json out = json::array();
  if (!contents.is_array()) return out;
  for (const json& content : contents) {
    if (!content.is_object()) continue;
    json c = {{"role", content.value("role", "user")}, {"text", ""}, {"calls", json::array()},
              {"responses", json::array()}};
    std::string text;
    if (content.contains("parts") && content["parts"].is_array()) {
      for (const json& part : content["parts"]) {
        if (!part.is_object() || is_thought(part)) continue;
        if (part.contains("text") && part["text"].is_string()) text += part["text"].get<std::string>();
        if (part.contains("functionCall") && part["functionCall"].is_object()) {
          const json& fc = part["functionCall"];
          c["calls"].push_back({fc.value("name", ""), fc.value("args", json::object()), fc.value("id", "")});
        }
        if (part.contains("functionResponse") && part["functionResponse"].is_object()) {
          const json& fr = part["functionResponse"];
          const std::string id = fr.value("id", "");
          c["responses"].push_back(id.empty() ? fr.value("name", "") : id);
        }
      }
    }
    c["text"] = text;
    out.push_back(std::move(c));
  }
  return out;
}

std::string describe(const ModelTurn& t) {
  json j = json::object();
  j["text"] = t.text;
  j["calls"] = json::array();
  for (const auto& [name, args] : t.calls) j["calls"].push_back({{"name", name}, {"args", args}});
  return j.dump();
}

/// The call a journal entry delivered whole at position `call_index`, or nullptr (cut or never sent).
const mock::DeliveredCall* delivered_call(const mock::JournalEntry& e, int call_index) {
  for (const mock::DeliveredCall& c : e.delivered_calls) {
    if (c.call_index == call_index) return &c;
  }
  return nullptr;
}

std::string tool_words(const std::string& name, const json& args) { return "tool \"" + name + "\" " + args.dump(); }

/// Whether call `call_index` of the attempt entry `e` played is one its max_tokens finish cut
/// (SCENARIO-FORMAT.md: a finish with after_fragment), and the entry reached that finish.
bool cut_by_token_limit(const Scenario& s, const mock::JournalEntry& e, int call_index) {
  const mock::Attempt* a = played_attempt(s, e);
  if (a == nullptr) return false;
  int k = 0;
  for (std::size_t i = 0; i < a->events.size(); ++i) {
    if (!std::holds_alternative<mock::CallEvent>(a->events[i])) continue;
    if (k++ == call_index) return mock::cut_by_finish(a->events, i).has_value() && e.events_delivered > static_cast<int>(i) + 1;
  }
  return false;
}

/// The intended call (turn, position) of each delivered call that replays an earlier one
/// (docs/POLICY.md "Call ids"): the same non-empty id, name and arguments as an earlier call of its
/// attempt, or as a call of the attempt an earlier turn kept (the last one of that turn the server
/// streamed before it: the completed one, or the cut one a continue runtime kept). A replay is that
/// earlier call asked for again, so it has its identity. Keyed by (request, call index).
using Identity = std::pair<int, int>;
struct Replay {
  Identity of;                       ///< the intended call it replays
  const mock::JournalEntry* original = nullptr;  ///< the request that delivered that call
  int original_call = 0;
};
std::map<std::pair<std::size_t, int>, Replay> replays_in(const mock::Journal& journal) {
  std::map<std::pair<std::size_t, int>, Replay> out;
  std::map<int, const mock::JournalEntry*> kept;  // turn → the last entry that streamed it, so far
  auto identity = [&](const mock::JournalEntry& e, int call) {
    auto it = out.find({e.index, call});
    return it == out.end() ? Replay{{e.turn, call}, &e, call} : it->second;
  };
  auto same = [](const mock::DeliveredCall& a, const mock::DeliveredCall& b) {
    return a.id == b.id && a.name == b.name && a.args == b.args;
  };
  for (const mock::JournalEntry& e : journal) {
    if (e.turn < 0 || !e.settled || e.played != "stream") continue;
    for (std::size_t k = 0; k < e.delivered_calls.size(); ++k) {
      const mock::DeliveredCall& c = e.delivered_calls[k];
      if (c.id.empty()) continue;
      std::optional<Replay> found;
      for (std::size_t j = 0; j < k && !found; ++j) {
        if (same(e.delivered_calls[j], c)) found = identity(e, e.delivered_calls[j].call_index);
      }
      for (auto it = kept.begin(); it != kept.end() && it->first < e.turn && !found; ++it) {
        for (const mock::DeliveredCall& d : it->second->delivered_calls) {
          if (!found && same(d, c)) found = identity(*it->second, d.call_index);
        }
      }
      if (found) out[{e.index, c.call_index}] = *found;
    }
    kept[e.turn] = &e;
  }
  return out;
}

/// at-most-once, by intended call. Identity: a call is its reply's turn (the number of model turns
/// in the history of the request that delivered it) and its position among that reply's calls.
/// Every attempt of one turn is the same reply asked for again, so the call at position k of a
/// failed attempt and the call at position k of its retry are one intended call, whatever their
/// provider ids (which differ per attempt). A call kept from a cut turn and answered (the
/// `continue` design) moves the conversation to the next turn, so a call the model sends there is
/// a new intention. A replay (the provider sent the same id, name and arguments again: replays_in)
/// is the call it replays. Also a harm: a call that ran although the server never sent it whole
/// (its arguments were cut): a command the model did not send. After the user's cancel, the next
/// prompt asks anew: a request that carries more of the session's prompts is a new reply even
/// when it has the same turn index (a client that dropped the cancelled turn), so its calls are
/// new intentions (the user asked again; whether the cancelled call's run was recorded is
/// recorded-execution's to judge).
std::size_t prompts_carried(const json& contents, const std::vector<std::string>& prompts);

void check_at_most_once(const Evidence& ev, std::vector<Violation>& out) {
  const auto replays = replays_in(ev.journal);
  std::vector<std::string> prompts = {ev.scenario.prompt};
  for (const SessionPrompt& p : ev.scenario.session) prompts.push_back(p.prompt);
  // ((prompts the request carried, after a cancel only; continuations of its turn merged before
  // it), (turn, position)) → executions
  std::map<std::pair<std::pair<std::size_t, std::size_t>, Identity>, std::vector<const rut::LedgerEntry*>> runs;
  for (const rut::LedgerEntry& l : ev.run.ledger) {
    if (l.request_seq < 0 || static_cast<std::size_t>(l.request_seq) >= ev.journal.size()) {
      out.push_back(make("at-most-once", "a side effect the model never asked for: " + tool_words(l.name, l.args) +
                                             (l.request_seq < 0 ? " ran, but no request of the journal delivered its call"
                                                                : " ran for request " + std::to_string(l.request_seq) +
                                                                      ", which the server never saw")));
      continue;
    }
    const mock::JournalEntry& e = ev.journal[static_cast<std::size_t>(l.request_seq)];
    // A call the token limit cut that runs is honest-outcome's (the finish said the answer is cut).
    if (delivered_call(e, l.call_index) == nullptr && !cut_by_token_limit(ev.scenario, e, l.call_index)) {
      out.push_back(make("at-most-once",
                         "a command the model did not send ran: " + tool_words(l.name, l.args) + " ran, but " + where(e) +
                             " never delivered its call " + std::to_string(l.call_index) +
                             " whole (cut before its arguments ended)",
                         &e));
    }
    const auto replay = replays.find({e.index, l.call_index});
    const std::size_t asked = ev.scenario.interrupt ? prompts_carried(e.contents, prompts) : 0;
    // A request for a turn whose earlier answer the runtime merged into the turn before (a
    // continuation it kept: merged_continuation) asks for a new reply, not that one again.
    std::size_t merged_before = 0;
    for (std::size_t k = 0; k < static_cast<std::size_t>(l.request_seq); ++k) {
      if (ev.journal[k].turn == e.turn && merged_continuation(ev.journal, k)) ++merged_before;
    }
    runs[{{asked, merged_before}, replay == replays.end() ? Identity{e.turn, l.call_index} : replay->second.of}].push_back(&l);
  }
  for (const auto& [asked_key, ls] : runs) {
    const Identity& key = asked_key.second;
    if (ls.size() <= 1) continue;
    const mock::JournalEntry& e = ev.journal[static_cast<std::size_t>(ls.back()->request_seq)];
    std::set<int> seqs;
    std::set<std::string> shapes;
    std::string replayed;  // the executions that replayed the call, "call J of request R"
    std::string replayed_id;
    for (const rut::LedgerEntry* l : ls) {
      seqs.insert(l->request_seq);
      shapes.insert(tool_words(l->name, l->args));
      const auto replay = replays.find({static_cast<std::size_t>(l->request_seq), l->call_index});
      if (replay == replays.end()) continue;
      replayed += (replayed.empty() ? "" : ", ") + std::string("call ") + std::to_string(l->call_index) + " of request " +
                  std::to_string(l->request_seq);
      replayed_id = delivered_call(ev.journal[static_cast<std::size_t>(l->request_seq)], l->call_index)->id;
    }
    std::string from = seqs.size() == 1 ? "request " : "requests ";
    for (int seq : seqs) from += (seq == *seqs.begin() ? "" : ", ") + std::to_string(seq);
    const std::string what = shapes.size() == 1 ? *shapes.begin() : "tool \"" + ls.front()->name + "\"";
    const std::string why =
        replayed.empty() ? " (attempts of one turn are one reply asked for again, so their call " +
                               std::to_string(key.second) + " is one call)"
                         : ": " + replayed + " replayed it (the same id " + json(replayed_id).dump(-1, ' ', false, json::error_handler_t::replace) +
                               ", name and arguments), and a replay is answered, not run again";
    out.push_back(make("at-most-once",
                       what + " ran " + std::to_string(ls.size()) + " times for one intended call: call " +
                           std::to_string(key.second) + " of turn " + std::to_string(key.first) +
                           ", delivered by " + from + why,
                       &e));
  }
}

/// at-most-once across the tool boundary: the tools' own record (Evidence::tool_calls) counts each
/// model call's executions at the tool. A tool not marked idempotent that ran more than once for
/// one model call (the same call of the same request sent again, e.g. after it timed out or its
/// reply was lost) had its side effect more than once. A repeat of an idempotent tool is harmless.
void check_tool_at_most_once(const Evidence& ev, std::vector<Violation>& out) {
  if (ev.tool_calls == nullptr) return;
  std::map<std::pair<int, int>, std::vector<const ToolCallRecord*>> runs;  // (request, call) → executions
  for (const ToolCallRecord& r : *ev.tool_calls) {
    if (r.executed) runs[{r.request_seq, r.call_index}].push_back(&r);
  }
  for (const auto& [key, rs] : runs) {
    if (rs.size() <= 1) continue;
    const mock::mcp::Tool* tool = ev.scenario.tools.find(rs.front()->tool);
    if (tool != nullptr && tool->idempotent) continue;
    std::string outcomes;
    for (const ToolCallRecord* r : rs) outcomes += (outcomes.empty() ? "" : ", ") + r->outcome;
    const mock::JournalEntry* e =
        key.first >= 0 && static_cast<std::size_t>(key.first) < ev.journal.size() ? &ev.journal[static_cast<std::size_t>(key.first)] : nullptr;
    out.push_back(make("at-most-once",
                       tool_words(rs.front()->tool, rs.front()->arguments) + " ran " + std::to_string(rs.size()) +
                           " times at the tool for one model call: call " + std::to_string(key.second) + " of " +
                           (e != nullptr ? where(*e) : "request " + std::to_string(key.first)) +
                           " was sent to the tool again (its tries ended: " + outcomes + "); the tool is not marked idempotent, so each run is a side effect",
                       e));
  }
}

/// The index in `contents` of its `turn`-th model content, or -1.
int model_content_index(const json& contents, int turn) {
  if (!contents.is_array() || turn < 0) return -1;
  int seen = 0;
  for (std::size_t i = 0; i < contents.size(); ++i) {
    if (contents[i].is_object() && contents[i].value("role", "") == "model" && seen++ == turn) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

/// Whether `contents` holds `call` in its `turn`-th model content and a function response for it
/// in the user content right after (by id when the kept call has one, else by name).
bool history_records(const json& contents, int turn, const mock::DeliveredCall& call) {
  const int m = model_content_index(contents, turn);
  if (m < 0) return false;
  const json& model = contents[static_cast<std::size_t>(m)];
  if (!model.contains("parts") || !model["parts"].is_array()) return false;
  const json* kept = nullptr;
  for (const json& p : model["parts"]) {
    if (!p.is_object() || !p.contains("functionCall") || !p["functionCall"].is_object()) continue;
    const json& fc = p["functionCall"];
    if (fc.value("name", "") == call.name && fc.value("args", json::object()) == call.args) {
      kept = &fc;
      break;
    }
  }
  if (kept == nullptr || static_cast<std::size_t>(m) + 1 >= contents.size()) return false;
  const json& next = contents[static_cast<std::size_t>(m) + 1];
  if (!next.is_object() || next.value("role", "") != "user" || !next.contains("parts") || !next["parts"].is_array()) {
    return false;
  }
  const bool by_id = kept->contains("id") && (*kept)["id"].is_string();
  for (const json& p : next["parts"]) {
    if (!p.is_object() || !p.contains("functionResponse") || !p["functionResponse"].is_object()) continue;
    const json& fr = p["functionResponse"];
    if (by_id ? fr.contains("id") && fr["id"] == (*kept)["id"] : fr.value("name", "") == call.name) return true;
  }
  return false;
}

/// recorded-execution: every call that ran appears, with its result, in the history the runtime
/// sends next past its turn (the first later request whose history holds that model turn: a retry
/// of the same turn does not yet), or in the runtime's final history when no such request follows
/// (unknown for a black box: not judged then). A call run from an
/// attempt whose retry then delivered something else is a side effect the model never hears of:
/// it may ask for it again, or build on a state it does not know.
void check_recorded_execution(const Evidence& ev, std::vector<Violation>& out) {
  std::set<std::pair<int, int>> reported;  // (request, call) named once
  for (const rut::LedgerEntry& l : ev.run.ledger) {
    if (l.request_seq < 0 || static_cast<std::size_t>(l.request_seq) >= ev.journal.size()) continue;
    const mock::JournalEntry& e = ev.journal[static_cast<std::size_t>(l.request_seq)];
    const mock::DeliveredCall* call = delivered_call(e, l.call_index);
    if (call == nullptr || e.turn < 0 || !reported.insert({l.request_seq, l.call_index}).second) continue;
    const mock::JournalEntry* next = nullptr;
    for (std::size_t k = static_cast<std::size_t>(l.request_seq) + 1; k < ev.journal.size() && next == nullptr; ++k) {
      const mock::JournalEntry& n = ev.journal[k];
      if (n.turn > e.turn && n.contents.is_array() && n.played != "preflight" && n.played != "not-found") next = &n;
    }
    if (next != nullptr) {
      if (history_records(next->contents, recorded_turn(ev.journal, static_cast<std::size_t>(l.request_seq)), *call)) continue;
      out.push_back(make("recorded-execution",
                         "a side effect the model never hears of: " + tool_words(l.name, l.args) + " ran (call " +
                             std::to_string(l.call_index) + " of " + where(e) + "), but the first request past that turn, " +
                             where(*next) + ", does not carry that call with its result in model turn " +
                             std::to_string(e.turn),
                         next));
    } else if (ev.run.final_history.is_array() && ev.run.error != "cancelled" && ev.cap_message.empty() &&
               !history_records(ev.run.final_history, e.turn, *call)) {
      out.push_back(make("recorded-execution",
                         "a side effect the conversation never records: " + tool_words(l.name, l.args) + " ran (call " +
                             std::to_string(l.call_index) + " of " + where(e) +
                             "), but the runtime's final history does not carry that call with its result",
                         &e));
    }
  }
}

int cancelled_mid_stream_request(const Evidence& ev) {
  return interrupted_request(ev.scenario, ev.journal);
}

/// "after event e", or "inside event e's arguments, after f fragment(s)": a mid-stream interrupt point.
std::string mid_stream_point(const Interrupt& in) {
  if (in.after_fragment) {
    return "inside the arguments of event " + std::to_string(*in.after_event) + " (after " +
           std::to_string(*in.after_fragment) + " argument fragment(s))";
  }
  return "after event " + std::to_string(in.after_event.value_or(0));
}

/// no-execution-after-cancel: read from the scenario's interrupt, the journal and the ledger only.
/// Mid-stream (after_event e of attempt a of turn t): the request that played that attempt and
/// delivered event e is cancelled; no call it delivered after event e may run. While tools run
/// (after_calls k of turn t): the turn's committed attempt (its first completed request) is
/// cancelled once k calls ran; its calls k.. may not run.
void check_no_execution_after_cancel(const Evidence& ev, std::vector<Violation>& out) {
  if (!ev.scenario.interrupt) return;
  const Interrupt& in = *ev.scenario.interrupt;
  int seq = -1;
  int first_cancelled_call = 0;
  for (std::size_t i = 0; i < ev.journal.size() && seq < 0; ++i) {
    const mock::JournalEntry& e = ev.journal[i];
    if (e.turn != in.turn) continue;
    if (in.after_calls && e.completed) {
      seq = static_cast<int>(i);
      first_cancelled_call = *in.after_calls;
      if (static_cast<int>(e.delivered_calls.size()) <= first_cancelled_call) return;  // nothing was cancelled
    } else if (in.after_event && static_cast<int>(i) == cancelled_mid_stream_request(ev)) {
      seq = static_cast<int>(i);
      const auto& events = ev.scenario.script.turns[in.turn].attempts[e.script_attempt].events;
      // Inside call e's arguments (after_fragment), call e itself is cancelled.
      const int last_delivered = *in.after_event - (in.after_fragment ? 1 : 0);
      for (int k = 0; k <= last_delivered && k < static_cast<int>(events.size()); ++k) {
        first_cancelled_call += std::holds_alternative<mock::CallEvent>(events[k]) ? 1 : 0;
      }
    }
  }
  if (seq < 0) return;  // the run never reached the interrupt
  const mock::JournalEntry& e = ev.journal[static_cast<std::size_t>(seq)];
  for (std::size_t n = 0; n < ev.run.ledger.size(); ++n) {
    const rut::LedgerEntry& l = ev.run.ledger[n];
    if (l.request_seq != seq || l.call_index < first_cancelled_call) continue;
    if (static_cast<int>(n) < ev.executions_before_cancel) continue;  // it began before the cancel
    out.push_back(make("no-execution-after-cancel",
                       "a tool ran after the user said stop: tool \"" + l.name + "\" " + l.args.dump() + " (call " +
                           std::to_string(l.call_index) + " of " + where(e) + ") ran after the user cancelled " +
                           (in.after_calls ? "at call " + std::to_string(*in.after_calls) + " (" + std::to_string(*in.after_calls) +
                                                 " of its calls done before it)"
                                           : mid_stream_point(in)),
                       &e));
  }
}

/// How many of the session's prompts (`prompt`, then `session[i].prompt`), in order, a request's
/// history carries: each must be contained in a user text part after the previous one's (an agent
/// may wrap a prompt in text of its own).
std::size_t prompts_carried(const json& contents, const std::vector<std::string>& prompts) {
  std::size_t k = 0;
  if (!contents.is_array()) return k;
  for (const json& content : contents) {
    if (!content.is_object() || content.value("role", "") != "user") continue;
    const auto parts = content.find("parts");
    if (parts == content.end() || !parts->is_array()) continue;
    for (const json& part : *parts) {
      if (k == prompts.size() || !part.is_object()) break;
      const auto text = part.find("text");
      if (text == part.end() || !text->is_string()) continue;
      // One part may hold several prompts in order (a wire format that joins a message's parts).
      for (std::size_t from = 0; k < prompts.size();) {
        const std::size_t at = text->get_ref<const std::string&>().find(prompts[k], from);
        if (at == std::string::npos) break;
        from = at + prompts[k++].size();
      }
    }
  }
  return k;
}

/// no-request-after-cancel: read from the scenario's interrupt and the journal only. Once the user
/// cancelled, every later model request must carry the session's next prompt (the one after the
/// last prompt the cancelled request carried); with no next prompt, no request follows at all. A
/// retry that fires after the cancel, or a loop that sends the turn's results back to the model,
/// is a request nobody asked for. What the next prompt's request keeps of the cancelled turn (its
/// text, "cancelled" results for its calls) is the runtime's design, judged by pairing.
void check_no_request_after_cancel(const Evidence& ev, std::vector<Violation>& out) {
  const int c = cancel_point_request(ev.scenario, ev.journal);
  if (c < 0) return;
  std::vector<std::string> prompts = {ev.scenario.prompt};
  for (const SessionPrompt& p : ev.scenario.session) prompts.push_back(p.prompt);
  const mock::JournalEntry& cancelled = ev.journal[static_cast<std::size_t>(c)];
  const std::size_t carried = prompts_carried(cancelled.contents, prompts);
  const Interrupt& in = *ev.scenario.interrupt;
  const std::string point = in.after_event      ? mid_stream_point(in) + " of " + where(cancelled)
                            : in.after_calls    ? "at call " + std::to_string(*in.after_calls) + " of " + where(cancelled) + " (" +
                                                      std::to_string(*in.after_calls) + " of its calls done before it)"
                                                : "during the backoff after " + where(cancelled);
  for (std::size_t i = static_cast<std::size_t>(c) + 1; i < ev.journal.size(); ++i) {
    const mock::JournalEntry& e = ev.journal[i];
    if (e.turn < 0 || e.played == "preflight" || e.played == "not-found") continue;
    if (prompts_carried(e.contents, prompts) > carried) break;  // the next prompt's: the user asked
    if (static_cast<int>(e.index) < ev.requests_before_cancel) continue;  // sent before the cancel went out
    out.push_back(make("no-request-after-cancel",
                       "a request the user did not ask for: " + where(e) + " went out after the user cancelled " + point +
                           (carried < prompts.size() ? ", before the next prompt (\"" + prompts[carried] + "\")"
                                                     : ", and no prompt followed"),
                       &e));
    return;  // the first one says it
  }
}

/// pairing, on the final history of a run the user's cancel ended: every call of a model turn has
/// a function response in the user content right after it (POLICY.md "Cancellation": each call
/// left without a result gets one synthetic "cancelled" result). A call left unanswered makes the
/// next request of a resumed session invalid in every provider.
void check_final_history_orphans(const json& h, std::vector<Violation>& out) {
  for (std::size_t i = 0; i < h.size(); ++i) {
    const json& model = h[i];
    if (!model.is_object() || model.value("role", "") != "model" || !model.contains("parts") ||
        !model["parts"].is_array()) {
      continue;
    }
    std::vector<json> responses;
    if (i + 1 < h.size() && h[i + 1].is_object() && h[i + 1].value("role", "") == "user" &&
        h[i + 1].contains("parts") && h[i + 1]["parts"].is_array()) {
      for (const json& p : h[i + 1]["parts"]) {
        if (p.is_object() && p.contains("functionResponse")) responses.push_back(p["functionResponse"]);
      }
    }
    std::vector<bool> used(responses.size(), false);
    int call = 0;
    for (const json& p : model["parts"]) {
      if (!p.is_object() || !p.contains("functionCall")) continue;
      const json& fc = p["functionCall"];
      const bool by_id = fc.contains("id") && fc["id"].is_string();
      bool answered = false;
      for (std::size_t r = 0; r < responses.size() && !answered; ++r) {
        if (used[r]) continue;
        const bool same = by_id ? (responses[r].contains("id") && responses[r]["id"] == fc["id"])
                                : responses[r].value("name", "") == fc.value("name", "");
        if (same) used[r] = answered = true;
      }
      if (!answered) {
        out.push_back(make("pairing", "a resumed session is dead: the runtime's final history, content " + std::to_string(i) + ": call " +
                                          std::to_string(call) + " " + (by_id ? fc["id"].dump() + " " : std::string()) +
                                          "(\"" + fc.value("name", "") + "\") has no function response after the user "
                                          "cancelled (every call left without a result gets one synthetic "
                                          "\"cancelled\" result), so a resumed session sends an invalid request"));
      }
      ++call;
    }
  }
}

/// pairing, on the runtime's final history (the conversation it keeps and a resumed session sends
/// on; empty for external agents): each function response answers one call of the model turn right
/// before it (by id when it has one, else by name), and no call twice. A runtime's pre-send guard
/// may drop a stray response from a request, but the history it keeps stays a lie that a resumed
/// session, or a client without that guard, sends. Calls left without a response at the end are
/// not judged here (a run may end there: after a 400 the rejected responses leave history), except
/// when the user's cancel ended the run: the cancelled turn's calls must each have a result then.
void check_final_history_pairing(const Evidence& ev, std::vector<Violation>& out) {
  const json& h = ev.run.final_history;
  if (!h.is_array()) return;
  if (ev.run.error == "cancelled") check_final_history_orphans(h, out);
  for (std::size_t i = 0; i < h.size(); ++i) {
    const json& content = h[i];
    if (!content.is_object() || content.value("role", "") != "user" || !content.contains("parts") ||
        !content["parts"].is_array()) {
      continue;
    }
    std::vector<json> calls;
    if (i > 0 && h[i - 1].is_object() && h[i - 1].value("role", "") == "model" && h[i - 1].contains("parts")) {
      for (const json& p : h[i - 1]["parts"]) {
        if (p.is_object() && p.contains("functionCall")) calls.push_back(p["functionCall"]);
      }
    }
    std::vector<bool> answered(calls.size(), false);
    for (const json& p : content["parts"]) {
      if (!p.is_object() || !p.contains("functionResponse")) continue;
      const json& fr = p["functionResponse"];
      const bool by_id = fr.contains("id") && fr["id"].is_string();
      bool matched = false;
      bool twice = false;
      for (std::size_t c = 0; c < calls.size() && !matched; ++c) {
        const bool same = by_id ? (calls[c].contains("id") && calls[c]["id"] == fr["id"])
                                : calls[c].value("name", "") == fr.value("name", "");
        if (!same) continue;
        if (answered[c]) {
          twice = true;
        } else {
          answered[c] = matched = true;
        }
      }
      if (matched) continue;
      const std::string what = "function response " + (by_id ? fr["id"].dump() + " " : std::string()) + "(\"" +
                               fr.value("name", "") + "\") " + fr.value("response", json::object()).dump();
      out.push_back(make("pairing",
                         "a resumed session is dead: the runtime's final history, content " + std::to_string(i) + ": " + what +
                             (twice ? " answers a call of the model turn before it that already has a response"
                              : calls.empty() ? " follows no model turn with calls (content " + std::to_string(i) +
                                                    " comes after a " +
                                                    (i > 0 ? h[i - 1].value("role", "?") : std::string("no")) +
                                                    " content)"
                                              : " answers no call of the model turn before it") +
                             ", so a resumed session sends an invalid request"));
    }
  }
}

void check_pairing(const Evidence& ev, std::vector<Violation>& out) {
  for (const mock::JournalEntry& e : ev.journal) {
    if (!e.validated) {
      out.push_back(make("pairing", "the session is dead: the API rejects " + where(e) + " (" + e.rejection +
                                        "), and the same history is rejected on every later request",
                         &e));
    }
    for (const std::string& issue : e.issues) {
      if (issue.rfind("response-for-undelivered-call", 0) == 0) {
        out.push_back(make("pairing", "a tool result for a call the model never made: " + where(e) + " (" + issue + ")", &e));
      }
    }
  }
  check_final_history_pairing(ev, out);
}

/// The model request after journal entry `i` (a preflight or 404 is not one), or nullptr.
const mock::JournalEntry* next_model_request(const mock::Journal& journal, std::size_t i) {
  for (std::size_t k = i + 1; k < journal.size(); ++k) {
    const mock::JournalEntry& n = journal[k];
    if (n.turn >= 0 && n.played != "preflight" && n.played != "not-found") return &n;
  }
  return nullptr;
}

/// Whether `seen` (a model turn in a request's history) keeps what attempt `a` delivered: exactly
/// its delivery when it completed; when it was cut (the `continue` design keeps the cut turn), whole
/// units only: a prefix of its delivered text and, in order, calls it delivered whole; whitespace
/// at either end of the text does not count (a completed turn's, and a cut turn's start). `replays`
/// (replays_in) may be left out of a completed delivery: a runtime that records a replayed call
/// once keeps the conversation the model had (docs/POLICY.md "Call ids"). kept_as compares with
/// `delivered` as given; kept_whole with a's delivery, then with the text's outer whitespace gone.
bool kept_as(const ModelTurn& seen, const ModelTurn& delivered, const mock::JournalEntry& a,
             const std::map<std::pair<std::size_t, int>, Replay>* replays) {
  if (a.completed && seen == delivered) return true;
  if (a.completed && replays != nullptr) {
    ModelTurn once = delivered;
    once.calls.clear();
    for (const mock::DeliveredCall& c : a.delivered_calls) {
      if (!replays->contains({a.index, c.call_index})) once.calls.emplace_back(c.name, c.args);
    }
    return seen == once;
  }
  if (a.completed) return false;
  if (delivered.text.compare(0, seen.text.size(), seen.text) != 0 || seen.text.size() > delivered.text.size()) {
    return false;
  }
  std::size_t k = 0;
  for (const auto& call : seen.calls) {
    while (k < delivered.calls.size() && delivered.calls[k] != call) ++k;
    if (k == delivered.calls.size()) return false;
    ++k;
  }
  return true;
}

bool kept_whole(const ModelTurn& seen, const mock::JournalEntry& a,
                const std::map<std::pair<std::size_t, int>, Replay>* replays = nullptr) {
  const ModelTurn delivered = from_delivery(a);
  if (kept_as(seen, delivered, a, replays)) return true;
  // Whitespace around a turn's text is no content: gemini-cli 0.61.0 sends a resumed session's
  // completed turn "On it. " back as "On it." (explore case c30, stop 63). Copied only then.
  const auto spaced = [](const std::string& t) {
    return !t.empty() && (std::strchr(kSpace, t.front()) != nullptr || std::strchr(kSpace, t.back()) != nullptr);
  };
  if (!spaced(seen.text) && !spaced(delivered.text)) return false;
  ModelTurn s = seen;
  ModelTurn d = delivered;
  trim_space(s.text);
  if (a.completed) trim_space(d.text);
  else d.text.erase(0, std::min(d.text.find_first_not_of(kSpace), d.text.size()));
  return kept_as(s, d, a, replays);
}

/// What the runtime merged of attempt `journal[i]` into the model turn it had kept before: the
/// next model request asks for the same turn again, and its model turn `turn - 1` is the one
/// `journal[i]`'s request carried, grown at its end by text and calls that `journal[i]` delivered
/// (all of it when it completed; whole units of it when it was cut, as kept_whole reads a cut turn).
/// qwen-code 0.24.4 keeps a cut turn and asks with "Resume directly"; what that continuation
/// delivers it appends to the kept turn (a cut continuation's text, a completed one's text and
/// calls), then asks again. nullopt when not so (nothing grew, or something else changed).
std::optional<ModelTurn> merged_continuation(const mock::Journal& journal, std::size_t i) {
  const mock::JournalEntry& e = journal[i];
  if (e.turn < 1 || !e.contents.is_array()) return std::nullopt;
  const mock::JournalEntry* next = next_model_request(journal, i);
  if (next == nullptr || next->turn != e.turn || !next->contents.is_array()) return std::nullopt;
  const int before = model_content_index(e.contents, e.turn - 1);
  const int after = model_content_index(next->contents, e.turn - 1);
  if (before < 0 || after < 0) return std::nullopt;
  // `journal[i]` was a continuation: its history ends with that model turn, then at most one user
  // content of text alone (the "Resume directly" prompt; the black-box judge drops it as the
  // agent's own note when the scenario has a session), not with function responses.
  const auto after_kept = e.contents.size() - static_cast<std::size_t>(before);
  if (after_kept != 1 && after_kept != 2) return std::nullopt;
  if (after_kept == 2) {
    const json& prompt = e.contents.back();
    if (!prompt.is_object() || prompt.value("role", "") != "user" || content_text(prompt).empty()) return std::nullopt;
    if (const auto parts = prompt.find("parts"); parts != prompt.end() && parts->is_array()) {
      for (const json& part : *parts) {
        if (part.is_object() && part.contains("functionResponse")) return std::nullopt;
      }
    }
  }
  const ModelTurn was = from_content(e.contents[static_cast<std::size_t>(before)]);
  const ModelTurn now = from_content(next->contents[static_cast<std::size_t>(after)]);
  if (!now.text.starts_with(was.text) || now.calls.size() < was.calls.size() ||
      !std::equal(was.calls.begin(), was.calls.end(), now.calls.begin())) {
    return std::nullopt;
  }
  ModelTurn grown;
  grown.text = now.text.substr(was.text.size());
  grown.calls.assign(now.calls.begin() + static_cast<std::ptrdiff_t>(was.calls.size()), now.calls.end());
  // The continuation may begin by repeating the end of the kept text (qwen-code tells the model
  // "The previous assistant response ended with this exact suffix. Do not repeat it", and drops
  // the overlap when the model does): what grew is then the delivery less that repeat. Only a
  // repeat qwen-code 0.24.4 counts as one (isSignificantRecoveryOverlap): at least 4 characters
  // and 6 bytes, or 4 bytes holding markdown structure (#, |, `, a newline). Its replay of a
  // markdown prefix found further back in the kept text is not read here.
  auto significant = [](std::string_view overlap) {
    std::size_t chars = 0;
    for (const char c : overlap) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
    const bool structure = overlap.find_first_of("#|`\n") != std::string_view::npos;
    return (structure && overlap.size() >= 4) || (overlap.size() >= 6 && chars >= 4);
  };
  if (grown.text.empty() && grown.calls.empty()) {
    // Nothing grew: a completed continuation that only repeated the kept text's end (all of it
    // dropped as the overlap; explore case c1) merged nothing, yet was the continuation's answer.
    // Only after a cut turn (a continuation continues one): a session prompt's answer that the
    // agent asked for again, and that happens to repeat the end of a completed turn before it, is
    // no merge.
    const mock::JournalEntry* kept_from = nullptr;
    for (std::size_t k = 0; k < i; ++k) {
      if (journal[k].turn == e.turn - 1 && journal[k].played != "preflight" && journal[k].played != "not-found") {
        kept_from = &journal[k];
      }
    }
    if (kept_from != nullptr && !kept_from->completed && e.completed && e.delivered_calls.empty() &&
        !e.delivered_text.empty() && was.text.ends_with(e.delivered_text) && significant(e.delivered_text)) {
      grown.repeated = e.delivered_text;
      return grown;
    }
    return std::nullopt;
  }
  if (kept_whole(grown, e)) return grown;
  mock::JournalEntry rest = e;
  for (std::size_t k = 1; k <= std::min(was.text.size(), e.delivered_text.size()); ++k) {
    const std::string_view overlap = std::string_view(e.delivered_text).substr(0, k);
    if (!was.text.ends_with(overlap) || !significant(overlap)) continue;
    rest.delivered_text = e.delivered_text.substr(k);
    if (kept_whole(grown, rest)) {
      grown.repeated = e.delivered_text.substr(0, k);
      return grown;
    }
  }
  return std::nullopt;
}

/// The turn whose model content records what `journal[i]` delivered: `turn - 1` when the runtime
/// merged it into the turn before (merged_continuation), else its own.
int recorded_turn(const mock::Journal& journal, std::size_t i) {
  return merged_continuation(journal, i) ? journal[i].turn - 1 : journal[i].turn;
}

void check_history_integrity(const Evidence& ev, std::vector<Violation>& out) {
  const auto replays = replays_in(ev.journal);
  std::map<int, std::vector<const mock::JournalEntry*>> played;  // turn → its attempts so far, in order
  for (const mock::JournalEntry& e : ev.journal) {
    for (const std::string& issue : e.issues) {
      if (issue.rfind("unscripted-request", 0) == 0) {
        out.push_back(make("history-integrity", "a request for a turn the conversation never reached: " + where(e) + ": " + issue, &e));
      }
    }
    if (e.contents.is_array()) {
      const json& contents = e.contents;
      const bool prompt_first = !contents.empty() && contents[0].value("role", "") == "user" &&
                                contents[0].contains("parts") && contents[0]["parts"].is_array() &&
                                !contents[0]["parts"].empty() &&
                                contents[0]["parts"][0].value("text", "") == ev.scenario.prompt;
      if (!prompt_first) {
        out.push_back(make("history-integrity", "the user's prompt is lost: " + where(e) + " does not start with the prompt as a user turn", &e));
      }
      if (!ev.scenario.session.empty()) {
        // A session: the user turns that carry text are the prompts, in order, none skipped.
        std::vector<std::string> prompts = {ev.scenario.prompt};
        for (const SessionPrompt& p : ev.scenario.session) prompts.push_back(p.prompt);
        std::size_t k = 0;
        for (const json& content : contents) {  // comparable_history's role and text, without the rest
          if (!content.is_object() || content.value("role", "user") != "user") continue;
          const std::string text = content_text(content);
          if (text.empty() || text == ev.scenario.runtime.continuation_prompt) continue;
          // Prompts with no model turn between them (the first was cancelled before any answer)
          // may come as consecutive text parts of one user content (gemini-cli's resumed session).
          std::vector<std::string> part_texts;
          for (const json& part : content.value("parts", json::array())) {
            if (part.is_object() && part.contains("text") && part["text"].is_string() && !part["text"].get_ref<const std::string&>().empty()) {
              part_texts.push_back(part["text"].get<std::string>());
            }
          }
          const bool several = part_texts.size() > 1 && k + part_texts.size() <= prompts.size() &&
                               std::equal(part_texts.begin(), part_texts.end(), prompts.begin() + static_cast<std::ptrdiff_t>(k));
          if (several) {
            k += part_texts.size();
            continue;
          }
          if (k >= prompts.size() || text != prompts[k]) {
            out.push_back(make("history-integrity",
                               "the user's prompts are out of order: " + where(e) + " carries the user text " + json(text).dump() + " where " +
                                   (k < prompts.size() ? "the session's prompt " + std::to_string(k) + " " +
                                                             json(prompts[k]).dump() + " belongs"
                                                       : std::string("no further prompt belongs")),
                               &e));
            break;
          }
          ++k;
        }
      }
      int model_index = 0;
      for (const json& content : contents) {
        if (content.value("role", "") != "model") continue;
        auto it = played.find(model_index);
        if (it == played.end()) {
          out.push_back(make("history-integrity",
                             "a phantom turn, the model is told it said what it never said: " + where(e) +
                                 " carries model turn " + std::to_string(model_index) +
                                 ", which the server never delivered (no attempt of that turn was played)",
                             &e));
        } else {
          const ModelTurn seen = from_content(content);
          bool kept_as_delivered = false;
          for (const mock::JournalEntry* a : it->second) {
            kept_as_delivered = kept_as_delivered || kept_whole(seen, *a, &replays);
          }
          if (!kept_as_delivered) {
            // A kept cut turn grown by its continuations (merged_continuation): whole units of what
            // the turn's cut attempt delivered, then what each continuation added.
            ModelTurn merged;
            if (auto next = played.find(model_index + 1); next != played.end()) {
              for (const mock::JournalEntry* c : next->second) {
                const auto k = static_cast<std::size_t>(c - ev.journal.data());
                if (const auto grown = merged_continuation(ev.journal, k)) {
                  merged.text += grown->text;
                  merged.calls.insert(merged.calls.end(), grown->calls.begin(), grown->calls.end());
                }
              }
            }
            const bool tail = seen.text.ends_with(merged.text) && seen.calls.size() >= merged.calls.size() &&
                              std::equal(merged.calls.begin(), merged.calls.end(),
                                         seen.calls.end() - static_cast<std::ptrdiff_t>(merged.calls.size()));
            if (merged != ModelTurn{} && tail) {
              ModelTurn base = seen;
              base.text.resize(seen.text.size() - merged.text.size());
              base.calls.resize(seen.calls.size() - merged.calls.size());
              for (const mock::JournalEntry* a : it->second) {
                kept_as_delivered = kept_as_delivered || (!a->completed && kept_whole(base, *a));
              }
            }
          }
          if (!kept_as_delivered) {
            const mock::JournalEntry* closest = it->second.back();
            for (const mock::JournalEntry* a : it->second) {
              if (a->completed) closest = a;
            }
            const bool half_call = std::any_of(seen.calls.begin(), seen.calls.end(), [&](const auto& c) {
              return std::none_of(closest->delivered_calls.begin(), closest->delivered_calls.end(),
                                  [&](const mock::DeliveredCall& d) { return d.name == c.first && d.args == c.second; });
            });
            out.push_back(make("history-integrity",
                               std::string(half_call ? "the model is told it asked for a call the server never sent whole: "
                                                     : "the model is told it said what it never said: ") +
                                   where(e) + ": model turn " + std::to_string(model_index) + " is " + describe(seen) +
                                   ", which no attempt of that turn delivered (" +
                                   (closest->completed ? "request " + std::to_string(closest->index) +
                                                             " completed it as " + describe(from_delivery(*closest))
                                                       : "the last, request " + std::to_string(closest->index) +
                                                             ", was cut after " + describe(from_delivery(*closest))) +
                                   ")" +
                                   (half_call ? ": it holds a call the server never sent whole"
                                              : ": duplicated, dropped or invented content"),
                               &e));
          }
        }
        ++model_index;
      }
    }
    if (e.turn >= 0 && e.settled) played[e.turn].push_back(&e);
  }
  std::optional<json> final_history;  // made only when some request was rejected with 400
  for (const mock::JournalEntry& e : ev.journal) {
    if (e.response_status != 400 || !e.contents.is_array() || e.contents.empty()) continue;
    if (!final_history) final_history = comparable_history(ev.run.final_history);
    if (*final_history == comparable_history(e.contents)) {
      out.push_back(make("history-integrity",
                         "the session is dead: the runtime's final history still holds the content of " + where(e) +
                             ", which the server rejected with 400, so every later request is rejected too",
                         &e));
    }
  }
}

bool non_retryable_status(int status) {
  return status == 400 || status == 401 || status == 403 || status == 404;
}

void check_no_rejected_request(const Evidence& ev, std::vector<Violation>& out) {
  for (std::size_t i = 0; i < ev.journal.size(); ++i) {
    const mock::JournalEntry& e = ev.journal[i];
    if (!e.validated) {
      out.push_back(make("no-rejected-request", "a request the API rejects as invalid: " + where(e) + ": " + e.rejection, &e));
    }
    if (e.response_status != 400 || !e.contents.is_array()) continue;
    for (std::size_t k = i + 1; k < ev.journal.size(); ++k) {
      // The same history with another body (other parameters or features) is a changed request.
      if (ev.journal[k].contents == e.contents && ev.journal[k].body_digest == e.body_digest) {
        out.push_back(make("no-rejected-request",
                           "a rejected request sent again: " + where(ev.journal[k]) + " repeats " + where(e) + ", which was answered 400",
                           &ev.journal[k]));
        break;
      }
    }
  }
}

bool provider_retryable_status(int status) {
  return status == 429 || status == 500 || status == 502 || status == 503 || status == 504 || status == 529;
}

/// bounded-retries, giving up: the run failed on a request whose failure the provider marks
/// retryable (HTTP 429, 500, 502, 503, 504, 529, or an in-stream error event carrying one of them:
/// Anthropic's overloaded_error, OpenAI's server_error) while its turn had budget left. The user
/// loses a turn a retry would have saved (veryfront and llxprt-code fixed exactly this). A give-up
/// after a connection failure or an undecodable frame stays a policy difference.
void check_gave_up_on_retryable(const Evidence& ev, const std::map<int, int>& per_turn, std::vector<Violation>& out) {
  if (ev.run.completed || !ev.cap_message.empty() || ev.hung || ev.run.error == "cancelled") return;
  const mock::JournalEntry* last = nullptr;
  for (const mock::JournalEntry& e : ev.journal) {
    if (e.turn >= 0 && e.played != "preflight" && e.played != "not-found" && e.played != "rejected") last = &e;
  }
  if (last == nullptr || last->completed) return;
  const mock::Attempt* a = played_attempt(ev.scenario, *last);
  if (a == nullptr) return;
  int status = 0;
  std::string how;
  if (last->played == "status" && a->status) {
    // A 429 naming a per-day quota resets only the next day: giving up on it loses nothing a
    // retry in this run could save (gemini-cli's TerminalQuotaError).
    if (a->quota == mock::Quota::kPerDay) return;
    status = last->response_status;
    how = "answered HTTP " + std::to_string(status);
  } else if (const auto* f = a->fault ? std::get_if<mock::ErrorEventFault>(&*a->fault) : nullptr;
             f != nullptr && last->fault == "error_event" && !delivered_finish(ev.scenario, *last)) {
    // The error event failed the attempt only when no finish came before it (a content-filter
    // finish, say, ends the attempt first and the error after it changes nothing).
    status = f->status;
    how = "failed with an in-stream error event (status " + std::to_string(status) + ")";
  }
  if (!provider_retryable_status(status)) return;
  const auto it = per_turn.find(last->turn);
  const int used = it == per_turn.end() ? 0 : it->second;
  if (used >= ev.max_attempts) return;
  out.push_back(make("bounded-retries",
                     "a turn a retry would have saved is lost: the run gave up on turn " + std::to_string(last->turn) +
                         " after " + where(*last) + " " + how +
                         ", which the provider marks retryable, with " + std::to_string(ev.max_attempts - used) + " of " +
                         std::to_string(ev.max_attempts) + " attempts left",
                     last));
}

void check_bounded_retries(const Evidence& ev, std::vector<Violation>& out) {
  if (!ev.cap_message.empty() && !ev.hung) {
    out.push_back(make("bounded-retries", "the run never ended on its own: " + ev.cap_message));
  }
  std::map<int, int> per_turn;
  std::set<int> reported;
  // A turn the user cancelled mid-stream or during a backoff is requested afresh by the next
  // prompt: a new budget.
  const int cancelled = ev.scenario.interrupt && !ev.scenario.interrupt->after_calls
                            ? cancel_point_request(ev.scenario, ev.journal)
                            : -1;
  for (std::size_t i = 0; i < ev.journal.size(); ++i) {
    const mock::JournalEntry& e = ev.journal[i];
    if (e.turn < 0 || e.played == "rejected") continue;
    if (++per_turn[e.turn] > ev.max_attempts && reported.insert(e.turn).second) {
      out.push_back(make("bounded-retries",
                         "retries beyond their budget: " + where(e) + " exceeds the budget of " + std::to_string(ev.max_attempts) +
                             " attempts for turn " + std::to_string(e.turn),
                         &e));
    }
    if (static_cast<int>(i) == cancelled) per_turn[e.turn] = 0;
  }
  for (std::size_t i = 0; i < ev.journal.size(); ++i) {
    const mock::JournalEntry& e = ev.journal[i];
    if (!non_retryable_status(e.response_status) || e.turn < 0) continue;
    for (std::size_t k = i + 1; k < ev.journal.size(); ++k) {
      if (ev.journal[k].turn == e.turn) {
        out.push_back(make("bounded-retries",
                           "a retry that cannot succeed: " + where(ev.journal[k]) + " retries turn " + std::to_string(e.turn) + " after " +
                               where(e) + " was answered " + std::to_string(e.response_status) +
                               ", which is not retryable",
                           &ev.journal[k]));
        break;
      }
    }
  }
  check_gave_up_on_retryable(ev, per_turn, out);
  if (ev.real_time) {
    // Waits honour Retry-After, measured: from the end of the answer that asked for the delay to
    // the arrival of the next request for the same turn.
    for (std::size_t i = 0; i < ev.journal.size(); ++i) {
      const mock::JournalEntry& e = ev.journal[i];
      const mock::Attempt* a = played_attempt(ev.scenario, e);
      if (a == nullptr || !a->status || !a->retry_after_s || e.played != "status" || e.answered_ms < 0) continue;
      // The user cancelled during this answer's backoff: the turn's next request is the next
      // prompt's, not a retry, and owes the Retry-After nothing.
      if (static_cast<int>(i) == cancelled) continue;
      for (std::size_t k = i + 1; k < ev.journal.size(); ++k) {
        const mock::JournalEntry& next = ev.journal[k];
        if (next.turn != e.turn || next.arrived_ms < 0) continue;
        const double gap_ms = next.arrived_ms - e.answered_ms;
        if (gap_ms + kRetryAfterSlackMs < *a->retry_after_s * 1000) {
          std::ostringstream msg;
          msg.setf(std::ios::fixed);
          msg.precision(0);
          msg << "the provider's Retry-After was ignored: " << where(next) << " retried " << gap_ms << " ms after " << where(e) << " ended, but the server asked for "
              << *a->retry_after_s * 1000 << " ms (Retry-After / RetryInfo)";
          Violation v = make("bounded-retries", msg.str(), &next);
          // What went wrong is the wait after this status, whatever the retry then met (a
          // newcomer's probe, stop 63: signed by the retry's own content filter, the shrinker
          // kept that finish in a counterexample that needs none).
          v.cause_request = static_cast<int>(e.index);
          out.push_back(std::move(v));
        }
        break;
      }
    }
    return;
  }
  // Waits honour Retry-After: each retry event follows the request it retries.
  int last_seq = -1;
  for (const json& event : ev.run.events) {
    const std::string type = event.value("type", "");
    if (type == "request") last_seq = event.value("seq", -1);
    if (type != "retry" || last_seq < 0 || static_cast<std::size_t>(last_seq) >= ev.journal.size()) continue;
    const mock::JournalEntry& e = ev.journal[static_cast<std::size_t>(last_seq)];
    const mock::Attempt* a = played_attempt(ev.scenario, e);
    if (a == nullptr || !a->status || !a->retry_after_s || e.played != "status") continue;
    const double wait = event.value("wait_s", 0.0);
    if (wait + 1e-9 < *a->retry_after_s) {
      std::ostringstream msg;
      msg << "the provider's Retry-After was ignored: the retry after " << where(e) << " waited " << wait << " s, but the server asked for "
          << *a->retry_after_s << " s (Retry-After / RetryInfo)";
      out.push_back(make("bounded-retries", msg.str(), &e));
    }
  }
}

void check_no_unchanged_content_filter_retry(const Evidence& ev, std::vector<Violation>& out) {
  for (std::size_t i = 0; i < ev.journal.size(); ++i) {
    const mock::JournalEntry& e = ev.journal[i];
    const auto finish = delivered_finish(ev.scenario, e);
    if (!finish || *finish != mock::FinishReason::kContentFilter || !e.contents.is_array()) continue;
    for (std::size_t k = i + 1; k < ev.journal.size(); ++k) {
      const mock::JournalEntry& next = ev.journal[k];
      if (next.turn == e.turn && next.model == e.model && next.contents == e.contents) {
        out.push_back(make("no-unchanged-content-filter-retry",
                           "a refused request sent again unchanged: " + where(next) + " repeats " + where(e) + " unchanged (model \"" + e.model +
                               "\", same history) after its content-filter finish: the same request is filtered again",
                           &next));
        break;
      }
    }
  }
}

/// The run ends within its virtual-time cap: the runner's watchdog stopped it on a stream the
/// runtime was still waiting on (no idle timeout, or one beyond the cap).
void check_liveness(const Evidence& ev, std::vector<Violation>& out) {
  if (ev.hung) out.push_back(make("liveness", ev.cap_message));
}

const mock::JournalEntry* next_model_request(const Evidence& ev, std::size_t i) { return next_model_request(ev.journal, i); }

}  // namespace

namespace {

/// Whether a model request after `journal[after]` no longer starts its model turn `turn` with
/// `text`: the runtime gave up the turn it had kept (qwen-code gives up a continuation that
/// delivered nothing and asks for the turn afresh), so the conversation went on without it.
bool dropped_later(const mock::Journal& journal, std::size_t after, int turn, const std::string& text) {
  for (std::size_t k = after + 1; k < journal.size(); ++k) {
    const mock::JournalEntry& later = journal[k];
    if (later.turn < 0 || later.played == "preflight" || later.played == "not-found") continue;
    const int m = model_content_index(later.contents, turn);
    if (m < 0 || !content_text(later.contents[static_cast<std::size_t>(m)]).starts_with(text)) return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> kept_cut_text(const mock::Journal& journal, std::size_t i, const json& final_history) {
  const mock::JournalEntry& e = journal[i];
  if (e.completed || e.turn < 0) return std::nullopt;
  const mock::JournalEntry* next = next_model_request(journal, i);
  const json* contents = next != nullptr ? &next->contents : &final_history;
  const std::size_t next_at = next != nullptr ? static_cast<std::size_t>(next - journal.data()) : journal.size();
  if (next != nullptr && next->turn == e.turn) {
    // The text shown of it: a repeat of the kept text's end that the turn left out included;
    // none when the turn it grew was given up later.
    const auto merged = merged_continuation(journal, i);
    if (!merged) return std::nullopt;
    const int m = model_content_index(next->contents, e.turn - 1);
    if (m >= 0 && dropped_later(journal, next_at, e.turn - 1, content_text(next->contents[static_cast<std::size_t>(m)]))) {
      return std::nullopt;
    }
    return merged->repeated + merged->text;
  }
  if (next != nullptr && next->turn != e.turn + 1) return std::nullopt;
  const int m = model_content_index(*contents, e.turn);
  if (m < 0) return std::nullopt;
  std::string kept = content_text((*contents)[static_cast<std::size_t>(m)]);
  if (next != nullptr && dropped_later(journal, next_at, e.turn, kept)) return std::nullopt;
  return kept;
}

bool continuation_merged(const mock::Journal& journal, std::size_t i) { return merged_continuation(journal, i).has_value(); }

std::string merged_repeat(const mock::Journal& journal, std::size_t i) {
  const auto merged = merged_continuation(journal, i);
  return merged ? merged->repeated : std::string();
}

bool answer_discarded(const mock::Journal& journal, std::size_t i) {
  const mock::JournalEntry& e = journal[i];
  if (!e.completed || e.turn < 0) return false;
  const mock::JournalEntry* next = next_model_request(journal, i);
  return next != nullptr && next->turn >= 0 && next->turn <= e.turn && !merged_continuation(journal, i);
}

namespace {

/// Where `contents` answers a call of `tool` with `arguments` in its model turn `turn`: the call's
/// position among that turn's calls (the one at `call_index` when several have that name and those
/// arguments, else the first), and the `response` of the function response right after that
/// answers it (by id when the call has one, else the one at the same position among the responses
/// of that name). nullopt when the turn holds no such call; a null response when none answers it.
struct HistoryAnswer {
  int position = -1;
  const json* response = nullptr;
};
std::optional<HistoryAnswer> answer_in(const json& contents, int turn, const std::string& tool, const json& arguments,
                                       int call_index) {
  const int m = model_content_index(contents, turn);
  if (m < 0) return std::nullopt;
  const json& model = contents[static_cast<std::size_t>(m)];
  if (!model.contains("parts") || !model["parts"].is_array()) return std::nullopt;
  std::vector<const json*> calls;
  for (const json& p : model["parts"]) {
    if (p.is_object() && p.contains("functionCall") && p["functionCall"].is_object()) calls.push_back(&p["functionCall"]);
  }
  HistoryAnswer out;
  for (std::size_t k = 0; k < calls.size(); ++k) {
    const json& fc = *calls[k];
    if (fc.value("name", "") != tool || fc.value("args", json::object()) != arguments) continue;
    if (out.position < 0 || static_cast<int>(k) == call_index) out.position = static_cast<int>(k);
  }
  if (out.position < 0) return std::nullopt;
  const json& call = *calls[static_cast<std::size_t>(out.position)];
  int same_name_before = 0;
  for (int k = 0; k < out.position; ++k) same_name_before += calls[static_cast<std::size_t>(k)]->value("name", "") == tool;
  if (static_cast<std::size_t>(m) + 1 >= contents.size()) return out;
  const json& next = contents[static_cast<std::size_t>(m) + 1];
  if (!next.is_object() || next.value("role", "") != "user" || !next.contains("parts") || !next["parts"].is_array()) {
    return out;
  }
  const bool by_id = call.contains("id") && call["id"].is_string();
  int same_name = 0;
  for (const json& p : next["parts"]) {
    if (!p.is_object() || !p.contains("functionResponse") || !p["functionResponse"].is_object()) continue;
    const json& fr = p["functionResponse"];
    const bool named = fr.value("name", "") == tool;
    const bool match = by_id ? fr.contains("id") && fr["id"] == call["id"] : named && same_name == same_name_before;
    same_name += named;
    if (match) {
      if (fr.contains("response")) out.response = &fr["response"];
      return out;
    }
  }
  return out;
}

/// Whether a function response's `response` tells the model the call failed: an object with an
/// `error` member or MCP's `isError: true`, or a text saying "error" or "outcome unknown".
bool reports_failure(const json& response) {
  if (response.is_object()) {
    if (response.contains("error")) return true;
    const auto is_error = response.find("isError");
    return is_error != response.end() && is_error->is_boolean() && is_error->get<bool>();
  }
  if (response.is_string()) {
    const std::string& text = response.get_ref<const std::string&>();
    return text.find("error") != std::string::npos || text.find("outcome unknown") != std::string::npos;
  }
  return false;
}

/// honest-outcome across the tool boundary: a call whose tool failed (an error result, a JSON-RPC
/// error, an expired session) or whose outcome is unknown (timed out, reply lost) is not answered
/// to the model as a success in the first request past its turn. The answer is judged against the
/// last try at the tool of the call it answers (a call sent again, or run again from a failed
/// attempt, may have succeeded then: the repeat is at-most-once's harm, not this one's).
/// Whether a black box's answer to a failed call tells the model it failed, read leniently: a CLI
/// words the failure its own way ("Error: MCP tool 'x' reported an error", "tool call timed out",
/// "Request aborted", "The socket connection was closed unexpectedly"), so any string in the
/// answer that says error, fail, timed out, timeout, unknown, abort, cancel, unexpected, closed,
/// lost, refused, reset, expired, unable, could not, cannot or denied (any case) counts, as does
/// reports_failure. Only an answer with none of them is a failure reported as a success (the
/// tool's own error text passed on bare, nothing saying the call failed).
bool black_box_reports_failure(const json& response) {
  if (reports_failure(response)) return true;
  if (response.is_string()) {
    const std::string text = ascii_lower(response.get<std::string>());
    for (const char* word : {"error", "fail", "timed out", "timeout", "unknown", "abort", "cancel", "unexpected", "closed",
                             "lost", "refused", "reset", "expired", "unable", "could not", "cannot", "denied"}) {
      if (text.find(word) != std::string::npos) return true;
    }
    return false;
  }
  if (response.is_object() || response.is_array()) {
    for (const json& v : response) {
      if (black_box_reports_failure(v)) return true;
    }
  }
  return false;
}

void check_tool_outcomes(const Evidence& ev, std::vector<Violation>& out) {
  if (ev.tool_calls == nullptr) return;
  struct Judged {
    const ToolCallRecord* last = nullptr;
    const mock::JournalEntry* next = nullptr;
    const json* response = nullptr;
  };
  std::map<std::tuple<std::size_t, int, int>, Judged> answered;  // (next request, turn, position) → last try
  for (const ToolCallRecord& r : *ev.tool_calls) {
    if (r.turn < 0 || r.request_seq < 0 || static_cast<std::size_t>(r.request_seq) >= ev.journal.size()) continue;
    const mock::JournalEntry* next = nullptr;
    for (std::size_t k = static_cast<std::size_t>(r.request_seq) + 1; k < ev.journal.size() && next == nullptr; ++k) {
      const mock::JournalEntry& n = ev.journal[k];
      if (n.turn > r.turn && n.contents.is_array() && n.played != "preflight" && n.played != "not-found") next = &n;
    }
    if (next == nullptr) continue;
    const auto answer = answer_in(next->contents, r.turn, r.call_name.empty() ? r.tool : r.call_name, r.arguments, r.call_index);
    if (!answer) continue;
    answered[{next->index, r.turn, answer->position}] = Judged{&r, next, answer->response};
  }
  for (const auto& [key, j] : answered) {
    const ToolCallRecord& r = *j.last;
    const bool failed = (r.outcome == "result" && r.is_error) || r.outcome == "jsonrpc_error" ||
                        r.outcome == "timed_out" || r.outcome == "reply_lost" || r.outcome == "session_expired";
    if (!failed || j.response == nullptr) continue;  // no answer: pairing's
    if (ev.real_time ? black_box_reports_failure(*j.response) : reports_failure(*j.response)) continue;
    const std::string what = r.outcome == "result"            ? "returned an error result (isError)"
                             : r.outcome == "jsonrpc_error"   ? "answered with a JSON-RPC error"
                             : r.outcome == "session_expired" ? "did not run (its MCP session expired)"
                             : r.outcome == "timed_out"       ? "did not answer within the runtime's timeout (outcome unknown)"
                                                              : "lost its reply (outcome unknown)";
    out.push_back(make("honest-outcome",
                       "a failed tool call reported to the model as a success: " + tool_words(r.tool, r.arguments) + " (call " +
                           std::to_string(r.call_index) + " of " + where(ev.journal[static_cast<std::size_t>(r.request_seq)]) +
                           ") " + what + ", but " + where(*j.next) + " answers it with " +
                           j.response->dump(-1, ' ', false, json::error_handler_t::replace),
                       j.next));
  }
}

void check_honest_outcome(const Evidence& ev, std::vector<Violation>& out) {
  // A max_tokens finish that cuts a call's arguments: that call is not the model's whole command.
  for (const rut::LedgerEntry& l : ev.run.ledger) {
    if (l.request_seq < 0 || static_cast<std::size_t>(l.request_seq) >= ev.journal.size()) continue;
    const mock::JournalEntry& e = ev.journal[static_cast<std::size_t>(l.request_seq)];
    if (cut_by_token_limit(ev.scenario, e, l.call_index)) {
      out.push_back(make("honest-outcome",
                         "a command the token limit cut ran: " + tool_words(l.name, l.args) + " ran, but " + where(e) +
                             " ended with a max_tokens finish inside its call " + std::to_string(l.call_index) +
                             "'s arguments: the model never finished writing it",
                         &e));
    }
  }
  // A refusal is never continued past: the request after an attempt that ended with a
  // content-filter finish asks for the next turn, so the runtime kept the refused turn as an answer.
  for (std::size_t i = 0; i < ev.journal.size(); ++i) {
    const mock::JournalEntry& e = ev.journal[i];
    const auto finish = delivered_finish(ev.scenario, e);
    if (!finish || *finish != mock::FinishReason::kContentFilter || e.turn < 0) continue;
    const mock::JournalEntry* next = next_model_request(ev, i);
    if (next != nullptr && next->turn == e.turn + 1) {
      Violation v = make("honest-outcome",
                         "a refusal treated as an answer: " + where(*next) + " goes on to turn " + std::to_string(next->turn) + " after " + where(e) +
                             " ended with a content-filter finish: the refused turn is kept and continued as if the "
                             "model had answered",
                         next);
      v.cause_request = static_cast<int>(e.index);  // what went wrong is the refusal, whatever `next` met
      out.push_back(std::move(v));
    } else if (next != nullptr && merged_continuation(ev.journal, i)) {
      // A refused continuation appended to the turn kept before it (qwen-code's merge) is kept as
      // an answer too, though the next request asks for the same turn number.
      Violation v = make("honest-outcome",
                         "a refusal treated as an answer: " + where(e) +
                             " ended with a content-filter finish, and " + where(*next) +
                             " carries what it delivered merged into the turn kept before it, as if the model had answered",
                         next);
      v.cause_request = static_cast<int>(e.index);
      out.push_back(std::move(v));
    }
  }
  if (!ev.cap_message.empty()) return;
  if (ev.run.completed) {
    // The last model request: a preflight (HEAD / GET of "/") or a 404 is not an attempt.
    const mock::JournalEntry* last = nullptr;
    for (const mock::JournalEntry& e : ev.journal) {
      if (e.played != "preflight" && e.played != "not-found") last = &e;
    }
    if (last == nullptr) {
      out.push_back(make("honest-outcome", "success reported without an answer: the run reports success without any request"));
    } else if (!last->completed) {
      const auto finish = delivered_finish(ev.scenario, *last);
      std::string why = "its stream never delivered a stop or max_tokens finish";
      if (finish && *finish == mock::FinishReason::kContentFilter) why = "it ended with a content-filter finish";
      if (finish && *finish == mock::FinishReason::kMalformedCall) why = "it ended with a malformed-call finish";
      out.push_back(make("honest-outcome",
                         "success reported for an answer that never completed: the last attempt, " + where(*last) +
                             ", did not complete: " + why,
                         last));
    }
    if (!ev.run.error.empty()) {
      out.push_back(make("honest-outcome", "success and failure reported at once: the run reports success and the error \"" + ev.run.error + "\""));
    }
    if (last != nullptr && last->completed && ev.reports_truncation) {
      const auto finish = delivered_finish(ev.scenario, *last);
      const bool cut = finish && *finish == mock::FinishReason::kMaxTokens;
      if (cut && !ev.run.truncated) {
        out.push_back(make("honest-outcome",
                           "a truncated answer reported as whole: the last attempt, " + where(*last) +
                               ", ended with a max_tokens finish (the token limit cut the answer), but the outcome does not say truncated",
                           last));
      } else if (!cut && ev.run.truncated) {
        out.push_back(make("honest-outcome", "a whole answer reported as truncated: the outcome says truncated, but the last attempt, " +
                                                 where(*last) + ", ended with a stop finish",
                           last));
      }
    }
    return;
  }
  // max_turns: the runtime's documented turn cap (docs/POLICY.md "Retries"), a clear ending.
  static const std::set<std::string> kErrors = {"retries_exhausted", "non_retryable", "quota_exhausted", "content_filter",
                                                "invalid_request", "cancelled", "max_turns"};
  if (!kErrors.contains(ev.run.error)) {
    out.push_back(make("honest-outcome", "the user is not told why the run failed: the run failed without a clear error: \"" + ev.run.error + "\""));
  }
}

void check_clean_output(const Evidence& ev, std::vector<Violation>& out) {
  if (!ev.cap_message.empty()) return;
  std::string expected;
  const mock::JournalEntry* last_completed = nullptr;
  const int cancelled = cancelled_mid_stream_request(ev);
  for (std::size_t i = 0; i < ev.journal.size(); ++i) {
    const mock::JournalEntry& e = ev.journal[i];
    if (static_cast<int>(i) == cancelled) continue;
    if (!e.completed) {
      // A cut turn the runtime kept (continue) is shown as kept, once.
      if (const auto kept = kept_cut_text(ev.journal, i, ev.run.final_history)) expected += *kept;
      continue;
    }
    if (answer_discarded(ev.journal, i)) continue;  // its turn asked for again: not an answer kept
    expected += e.delivered_text;
    last_completed = &e;
  }
  if (ev.run.shown_output != expected) {
    out.push_back(make("clean-output", "the user is shown text the answer does not hold: shown output should hold the kept turns' text, once: " +
                                           json(expected).dump() + ", found " + json(ev.run.shown_output).dump()));
  }
  if (ev.run.completed && last_completed != nullptr && ev.run.final_text != last_completed->delivered_text) {
    out.push_back(make("clean-output", "the user is shown the wrong answer: final text should be " + json(last_completed->delivered_text).dump() +
                                           " (" + where(*last_completed) + "), found " +
                                           json(ev.run.final_text).dump(),
                       last_completed));
  }
}

}  // namespace

/// The request the scenario's interrupt cancels mid-stream (after_event e of attempt a of turn t:
/// the first request that played it and delivered event e), or -1. The server may have sent the
/// whole attempt; the runtime stopped reading at the cancel, so its answer never commits.
int interrupted_request(const Scenario& scenario, const std::vector<mock::JournalEntry>& journal) {
  if (!scenario.interrupt || !scenario.interrupt->after_event) return -1;
  const Interrupt& in = *scenario.interrupt;
  const int at = *in.after_event;
  for (std::size_t i = 0; i < journal.size(); ++i) {
    const mock::JournalEntry& e = journal[i];
    if (e.turn != in.turn || e.attempt != *in.attempt) continue;
    // The scripted attempt reaches event `at` unless its fault falls before it (a stall shorter
    // than the idle timeout only delays). events_delivered cannot tell: a runtime that stops
    // reading inside the event's frames leaves it partly delivered.
    const mock::Attempt* a = played_attempt(scenario, e);
    if (a == nullptr || a->status || at >= static_cast<int>(a->events.size())) return -1;
    if (interrupt_point_missed(*a, in, scenario.runtime.idle_timeout_s.value_or(60), "", scenario.script.timing)) return -1;
    return static_cast<int>(i);
  }
  return -1;
}


/// The journal index of the request during or after whose answer the user's interrupt fires, or
/// -1 when the run never reaches it. After event e: the request the cancel cuts
/// (interrupted_request). After k calls: the turn's first completed request, when it delivered more
/// than k calls. Before attempt a: the turn's first request played as attempt a - 1 that failed
/// (a runtime that retries it waits, and the cancel lands in that wait; one that does not retry
/// sends nothing the check could accuse).
int cancel_point_request(const Scenario& scenario, const std::vector<mock::JournalEntry>& journal) {
  if (!scenario.interrupt) return -1;
  const Interrupt& in = *scenario.interrupt;
  if (in.after_event) return interrupted_request(scenario, journal);
  for (std::size_t i = 0; i < journal.size(); ++i) {
    const mock::JournalEntry& e = journal[i];
    if (e.turn != in.turn) continue;
    if (in.after_calls && e.completed) {
      return static_cast<int>(e.delivered_calls.size()) > *in.after_calls ? static_cast<int>(i) : -1;
    }
    if (in.before_attempt && e.attempt == *in.before_attempt - 1 && !e.completed) return static_cast<int>(i);
  }
  return -1;
}

bool keeps_cut_turn(const json& contents, const mock::JournalEntry& cut) {
  const int m = model_content_index(contents, cut.turn);
  if (m < 0 || cut.completed) return false;
  const ModelTurn kept = from_content(contents[static_cast<std::size_t>(m)]);
  return (!kept.calls.empty() || !kept.text.empty()) && kept_whole(kept, cut);
}

std::string violation_location(const Violation& v) {
  if (v.request < 0) return "";
  std::string s = " [request " + std::to_string(v.request);
  if (v.turn >= 0) s += ", turn " + std::to_string(v.turn);
  if (v.attempt >= 0) s += ", attempt " + std::to_string(v.attempt);
  return s + "]";
}

json violation_to_json(const Violation& v) {
  json j = {{"invariant", v.invariant}, {"message", v.message}};
  if (v.request >= 0) j["request"] = v.request;
  if (v.turn >= 0) j["turn"] = v.turn;
  if (v.attempt >= 0) j["attempt"] = v.attempt;
  return j;
}

const std::vector<InvariantInfo>& invariant_catalogue() {
  static const std::vector<InvariantInfo> kCatalogue = {
      {"at-most-once", "no call the model intended once has its side effect more than once: a call is its turn and its position among that turn's calls, so a failed attempt's call and its retry's call at the same position are one call, and a call the provider replays (the same id, name and arguments) is the call it replays; and no call runs that the server never sent whole; at the tool, a tool not marked idempotent runs at most once per model call (a call whose outcome is unknown is never sent again)"},
      {"recorded-execution", "every call that ran appears, with its result, in the first request whose history reaches past its turn (or in the final history when none follows): no side effect the model never hears of"},
      {"pairing", "every request passes the provider's own validation (its exact 400s), every function response answers a call some attempt of its turn delivered whole, and the runtime's final history answers each call at most once, right after its model turn (exactly once when the user's cancel ended the run)"},
      {"history-integrity", "every request's history holds only what the server delivered: each model turn is a completed attempt's delivery (whitespace around its text aside) or, when the runtime keeps a cut turn (the continue design), whole units of a cut attempt (a prefix of its text, calls it delivered whole); no duplicated, phantom or half-delivered content"},
      {"no-rejected-request", "the runtime never sends a request the server rejects as invalid, and never repeats one after a rejection"},
      {"bounded-retries", "attempts per turn stay within the budget; non-retryable statuses are not retried; waits honour Retry-After; a failure the provider marks retryable (429, 5xx, 529, an in-stream error with one of them) is not given up while budget remains"},
      {"honest-outcome", "a content-filter finish or a stream without its terminal event is never reported as success, and a refused turn is never continued past (kept and followed by the next turn); an answer a max_tokens finish ended is reported as truncated, and a call whose arguments that finish cut never runs; a call whose tool failed or whose outcome is unknown (timed out, reply lost) is never answered to the model as a success; the run ends with a clear outcome"},
      {"clean-output", "text shown to the user is the kept turns' text, once: completed attempts' text (not of an answer the runtime asked for again) and, when the runtime keeps a cut turn (the continue design), the text it kept; no failed attempt's text glued in"},
      {"no-unchanged-content-filter-retry", "after a content-filter finish, the same request for that turn (same model, same history) is never sent again"},
      {"liveness", "the run ends within its virtual-time cap (max_virtual_s, default 3600 s): a stream that stays silent past it, or a tool call that has not answered by then, while the runtime still waits is a hang (external agents: the agent exits within its timeout)"},
      {"no-execution-after-cancel", "once the user cancels (scenario interrupt), no call of the cancelled turn starts: not a call that arrives after the cancel, not a committed call that had not started"},
      {"no-request-after-cancel", "once the user cancels (scenario interrupt), no model request goes out until the next prompt: not a pending retry, not the cancelled turn's results fed back to the model; every later request carries the next prompt (none follows when there is none)"},
  };
  return kCatalogue;
}

std::vector<Violation> check_invariants(const Evidence& ev) {
  std::vector<Violation> out;
  check_at_most_once(ev, out);
  check_tool_at_most_once(ev, out);
  check_recorded_execution(ev, out);
  check_pairing(ev, out);
  check_history_integrity(ev, out);
  check_no_rejected_request(ev, out);
  check_bounded_retries(ev, out);
  check_honest_outcome(ev, out);
  check_tool_outcomes(ev, out);
  check_clean_output(ev, out);
  check_no_unchanged_content_filter_retry(ev, out);
  check_liveness(ev, out);
  check_no_execution_after_cancel(ev, out);
  check_no_request_after_cancel(ev, out);
  return out;
}

std::vector<Violation> check_expect(const Evidence& ev) {
  std::vector<Violation> out;
  const Expect& x = ev.scenario.expect;
  const rut::RunResult& r = ev.run;
  const std::string outcome = r.completed ? "completed" : "failed";
  if (x.outcome && *x.outcome != outcome) {
    out.push_back(make("expect.outcome", "expected outcome " + *x.outcome + ", found " + outcome +
                                             (r.error.empty() ? "" : " (" + r.error + ")")));
  }
  if (x.error && *x.error != r.error) {
    out.push_back(make("expect.error", "expected error " + *x.error + ", found " +
                                           (r.error.empty() ? std::string("none") : r.error)));
  }
  if (x.final_text && *x.final_text != r.final_text) {
    out.push_back(make("expect.final_text", "expected final text " + json(*x.final_text).dump() + ", found " +
                                                json(r.final_text).dump()));
  }
  if (x.truncated && !r.completed) {
    out.push_back(make("expect.truncated", std::string("expected ") + (*x.truncated ? "a truncated" : "a whole") +
                                               " answer, the run failed (" + r.error + ")"));
  } else if (x.truncated && *x.truncated != r.truncated) {
    out.push_back(make("expect.truncated", *x.truncated ? "expected the outcome to say the answer was truncated, it does not"
                                                        : "expected a whole answer, the outcome says truncated"));
  }
  if (x.executions) {
    std::vector<std::pair<std::pair<std::string, json>, int>> seen;  // (name, args) → count, in order
    for (const rut::LedgerEntry& l : r.ledger) {
      auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& s) {
        return s.first.first == l.name && s.first.second == l.args;
      });
      if (it == seen.end()) seen.push_back({{l.name, l.args}, 1});
      else ++it->second;
    }
    std::vector<bool> matched(seen.size(), false);
    for (const ExpectedExecution& want : *x.executions) {
      int count = 0;
      for (std::size_t i = 0; i < seen.size(); ++i) {
        if (seen[i].first.first == want.name && (!want.args || *want.args == seen[i].first.second)) {
          count += seen[i].second;
          matched[i] = true;
        }
      }
      if (count != want.count) {
        out.push_back(make("expect.executions",
                           "expected tool \"" + want.name + "\"" + (want.args ? " " + want.args->dump() : "") +
                               " to run " + std::to_string(want.count) + " time(s), it ran " +
                               std::to_string(count)));
      }
    }
    for (std::size_t i = 0; i < seen.size(); ++i) {
      if (!matched[i]) {
        out.push_back(make("expect.executions", "tool \"" + seen[i].first.first + "\" " + seen[i].first.second.dump() +
                                                    " ran " + std::to_string(seen[i].second) +
                                                    " time(s), expected 0 (not listed)"));
      }
    }
  }
  if (x.requests && *x.requests != r.requests) {
    out.push_back(make("expect.requests", "expected " + std::to_string(*x.requests) + " requests, found " +
                                              std::to_string(r.requests)));
  }
  if (x.waited_s && std::abs(*x.waited_s - r.waited_s) > 1e-6) {
    std::ostringstream msg;
    msg << "expected " << *x.waited_s << " s of backoff, found " << r.waited_s << " s";
    out.push_back(make("expect.waited_s", msg.str()));
  }
  return out;
}

}  // namespace harness
