// The black-box judge; see judge.h. Moved out of agent_runner.cpp (process handling stays there)
// so that `run --agent`, `matrix` and the control API's sessions share one judge.
#include "harness/agents/judge.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "harness/oracle.h"
#include "harness/strings.h"
#include "harness/transcript.h"
#include "mock_server/wire_format.h"

namespace harness::agents {
using nlohmann::json;

namespace {

/// `expect` fields a black box cannot show (see not_applicable_checks()).
std::vector<std::string> unjudged_expect_fields(const Expect& x) {
  std::vector<std::string> out;
  if (x.error) out.push_back("expect.error");
  if (x.requests) out.push_back("expect.requests");
  if (x.waited_s) out.push_back("expect.waited_s");
  if (x.truncated) out.push_back("expect.truncated");
  return out;
}

/// `text` as a JSON string for a message. The agent's output and ledger are the agent's bytes:
/// invalid UTF-8 is replaced (U+FFFD), never thrown on (type_error.316).
std::string json_quoted(const std::string& text) { return json(text).dump(-1, ' ', false, json::error_handler_t::replace); }

/// Whether `output` shows `text`: as is, or JSON-escaped (structured output such as stream-json).
bool shows(const std::string& output, const std::string& text) {
  if (text.empty()) return true;
  if (output.find(text) != std::string::npos) return true;
  const std::string escaped = json(text).dump();
  return output.find(escaped.substr(1, escaped.size() - 2)) != std::string::npos;
}

/// The lines of a JSON-lines output that are JSON objects, parsed (other lines skipped).
std::vector<json> json_object_lines(const std::string& output) {
  std::vector<json> out;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    json j = mock::parse_json(line);  // depth-limited: the output is the agent's, not ours
    if (j.is_object()) out.push_back(std::move(j));
  }
  return out;
}

/// Whether `j` holds the given value at every JSON pointer of `fields`.
bool holds(const json& j, const std::map<std::string, json>& fields) {
  return std::all_of(fields.begin(), fields.end(), [&](const auto& kv) {
    const json::json_pointer p(kv.first);
    return j.contains(p) && j.at(p) == kv.second;
  });
}

/// Removes the notices `text` ends with (recipe.h Recipe::Notice): from the last `starts` to the
/// end, when the text ends with `ends` after it; again while one is left at the end.
void strip_notices(std::string& text, const std::vector<Recipe::Notice>& notices) {
  for (bool removed = true; removed;) {
    removed = false;
    for (const Recipe::Notice& n : notices) {
      const std::size_t at = text.rfind(n.starts);
      if (at == std::string::npos || text.size() - at < n.starts.size() + n.ends.size() ||
          !std::string_view(text).substr(at + n.starts.size()).ends_with(n.ends)) {
        continue;
      }
      text.resize(at);
      removed = true;
    }
  }
}

}  // namespace

/// The text the output's lines show by the recipe's shown_text rule; nullopt when the recipe has
/// none. The recipe's notices are removed from each line's text, and a retract line takes back the
/// latest run of shown-text lines when only the abandoned attempt's own lines came after it
/// (recipe.h shown_text_retract).
std::optional<std::string> shown_text(const std::vector<json>& lines, const Recipe& recipe) {
  if (recipe.shown_text_pointer.empty()) return std::nullopt;
  std::map<std::string, json> where;
  for (const auto& [pointer, want] : recipe.shown_text_where) where[pointer] = want == "{model}" ? recipe.model : want;
  const json::json_pointer text(recipe.shown_text_pointer);
  std::string shown;
  std::size_t run_start = 0;   // where the text of the latest run of shown-text lines begins
  bool run_retractable = false;  // only that run and the attempt's own lines since its start
  bool in_run = false;
  for (const json& j : lines) {
    if (!recipe.shown_text_retract.empty() && holds(j, recipe.shown_text_retract)) {
      if (run_retractable) shown.resize(run_start);
      run_retractable = in_run = false;
      continue;
    }
    if (holds(j, where)) {
      if (!in_run) {
        run_start = shown.size();
        in_run = run_retractable = true;
      }
      if (j.contains(text) && j.at(text).is_string()) {
        std::string piece = j.at(text).get<std::string>();
        strip_notices(piece, recipe.shown_text_notices);
        shown += piece;
      }
      continue;
    }
    in_run = false;
    const bool attempt_line = std::any_of(recipe.shown_text_attempt_lines.begin(), recipe.shown_text_attempt_lines.end(),
                                          [&](const std::map<std::string, json>& rule) { return holds(j, rule); });
    if (!attempt_line) run_retractable = false;
  }
  return shown;
}

namespace {

/// Whether attempt `a` delivers a malformed-call finish: one is scripted and no fault falls
/// before it (an agent never sees a finish the stream was cut ahead of).
bool delivers_malformed_finish(const mock::Attempt& a) {
  for (std::size_t k = 0; k < a.events.size(); ++k) {
    const auto* f = std::get_if<mock::FinishEvent>(&a.events[k]);
    if (f == nullptr || f->reason != mock::FinishReason::kMalformedCall) continue;
    return !a.fault || mock::fault_after_event(*a.fault, a.events.size()) > static_cast<int>(k);
  }
  return false;
}

/// Whether an attempt of `s` delivers a malformed-call finish after at least one call.
bool has_malformed_call_with_calls(const Scenario& s) {
  for (const mock::Turn& t : s.script.turns) {
    for (const mock::Attempt& a : t.attempts) {
      const bool call = std::any_of(a.events.begin(), a.events.end(),
                                    [](const mock::Event& ev) { return std::holds_alternative<mock::CallEvent>(ev); });
      if (call && delivers_malformed_finish(a)) return true;
    }
  }
  return false;
}

/// `s` with the calls of every attempt that delivers a malformed-call finish removed (its text and
/// finish stay; a fault's position is moved back past the calls removed before it): what an agent
/// that drops a malformed answer's calls and keeps its text is owed (judge_black_box's fourth
/// reading).
void drop_malformed_calls(Scenario& s) {
  for (mock::Turn& t : s.script.turns) {
    for (mock::Attempt& a : t.attempts) {
      if (!delivers_malformed_finish(a)) continue;
      std::vector<mock::Event> kept;
      int removed_before_fault = 0;
      const int fault_at = a.fault ? mock::fault_after_event(*a.fault, a.events.size()) : -1;
      for (std::size_t k = 0; k < a.events.size(); ++k) {
        if (std::holds_alternative<mock::CallEvent>(a.events[k])) {
          if (static_cast<int>(k) < fault_at) ++removed_before_fault;
          continue;
        }
        kept.push_back(a.events[k]);
      }
      a.events = std::move(kept);
      // A fault inside a removed call's arguments falls where that call was: after the events
      // before it, the fragment gone with the call.
      const bool inside_call = a.fault && mock::fault_after_fragment(*a.fault).has_value();
      if (a.fault && (removed_before_fault > 0 || inside_call)) {
        std::visit(
            [&](auto& f) {
              f.after_event = fault_at - removed_before_fault;
              if (inside_call) f.after_fragment.reset();
            },
            *a.fault);
      }
    }
  }
}

/// The text the black box kept of the cut attempt journal[i] (kept_cut_text, when not empty and a
/// prefix of what the attempt delivered); nullopt when it kept none.
std::optional<std::string> kept_cut_prefix(const mock::Journal& journal, std::size_t i) {
  auto kept = kept_cut_text(journal, i, nullptr);
  if (!kept || kept->empty() || !journal[i].delivered_text.starts_with(*kept)) return std::nullopt;
  return kept;
}

/// The text a user should see: per turn, what the conversation kept of it, in order. A completed
/// attempt's text unless the agent asked for its turn again (answer_discarded), or, for an attempt
/// that was cut and whose turn the next request keeps (the `continue` design), kept_cut_prefix.
/// With `repeats` false, a continuation's start that repeated the kept text's end and was left
/// out of the turn it merged into (merged_repeat) is left out here too: the history's view, which
/// an agent may show instead of the stream's.
std::string kept_text(const mock::Journal& journal, bool repeats = true) {
  std::string out;
  for (std::size_t i = 0; i < journal.size(); ++i) {
    const mock::JournalEntry& e = journal[i];
    std::string part;
    if (e.completed) {
      if (!answer_discarded(journal, i)) part = e.delivered_text;
    } else if (const auto kept = kept_cut_prefix(journal, i)) {
      part = *kept;
    }
    if (!repeats && !part.empty()) {
      const std::string repeat = merged_repeat(journal, i);
      if (!repeat.empty() && part.starts_with(repeat)) part.erase(0, repeat.size());
    }
    out += part;
  }
  return out;
}

/// An agent that skips an undecodable frame (the `malformed` fault: one frame whose JSON does not
/// parse, then the stream goes on) has what the server wrote after it (JournalEntry::
/// past_undecodable); a correct client fails the attempt at the frame, which is what the entry's
/// delivered fields say. Each such entry is judged as the agent read it when what followed shows
/// that it read past the frame: a call it had not had before the frame ran from that request, or
/// the next model request went on to a later turn with a model turn for it that is not whole units
/// of what came before the frame, or it was the run's last model request and the agent reported
/// success (`reported_success`) or showed the text the server wrote after the frame (`shown`, the
/// recipe's shown text; nullopt when it has none). Returns the scripted attempts (turn,
/// script_attempt) so read.
std::set<std::pair<int, int>> read_past_undecodable(mock::Journal& journal, const std::vector<rut::LedgerEntry>& executions,
                                                    bool reported_success, const std::optional<std::string>& shown) {
  std::set<std::pair<int, int>> read;
  for (std::size_t i = 0; i < journal.size(); ++i) {
    mock::JournalEntry& e = journal[i];
    if (!e.past_undecodable || e.turn < 0) continue;
    bool read_on = std::any_of(executions.begin(), executions.end(), [&](const rut::LedgerEntry& l) {
      return l.request_seq == static_cast<int>(e.index) &&
             std::none_of(e.delivered_calls.begin(), e.delivered_calls.end(),
                          [&](const mock::DeliveredCall& d) { return d.call_index == l.call_index; });
    });
    const mock::JournalEntry* next = nullptr;
    for (std::size_t k = i + 1; k < journal.size() && next == nullptr; ++k) {
      if (is_model_request(journal[k])) next = &journal[k];
    }
    if (!read_on && next == nullptr) {
      // The run's last model request: the agent stopped there, having read on to the finish that
      // came after the frame, or having failed the attempt at the frame and given up (opencode
      // ends its run on the JSON parse error, budget left or not). The stop alone does not tell
      // them apart: the success it reports, or the text past the frame it shows, does.
      const std::string& text = e.past_undecodable->delivered_text;
      read_on = reported_success || (shown && text.size() > e.delivered_text.size() && shows(*shown, text));
    } else if (!read_on && next->turn >= 0 && next->contents.is_array()) {
      read_on = next->turn > e.turn && !keeps_cut_turn(next->contents, e);
    }
    if (!read_on) continue;
    mock::JournalEntry::PastUndecodable& past = *e.past_undecodable;
    e.events_delivered = past.events_delivered;
    e.completed = past.completed;
    e.delivered_calls = std::move(past.delivered_calls);
    e.delivered_text = std::move(past.delivered_text);
    e.past_undecodable.reset();
    read.insert({e.turn, e.script_attempt});
  }
  return read;
}

}  // namespace

bool is_model_request(const mock::JournalEntry& e) {
  return e.played != "preflight" && e.played != "not-found";
}

const mock::Attempt* scripted_attempt(const Scenario& s, const mock::JournalEntry& e) {
  if (!is_model_request(e) || e.turn < 0 || e.script_attempt < 0) return nullptr;
  if (static_cast<std::size_t>(e.turn) >= s.script.turns.size()) return nullptr;
  const auto& attempts = s.script.turns[static_cast<std::size_t>(e.turn)].attempts;
  if (static_cast<std::size_t>(e.script_attempt) >= attempts.size()) return nullptr;
  return &attempts[static_cast<std::size_t>(e.script_attempt)];
}

std::size_t first_finish(const mock::Attempt& a) {
  for (std::size_t k = 0; k < a.events.size(); ++k) {
    if (std::holds_alternative<mock::FinishEvent>(a.events[k])) return k;
  }
  return a.events.size();
}

/// Whether a text part shows the prompt: equal to it, or ending with it after a preamble that
/// the wire format joined into the same text (qwen-code's `<system-reminder>` parts), trailing
/// whitespace aside (claude-code's resumed session sends the first prompt back with a "\n").
bool is_prompt_part(const json& part, const std::string& prompt) {
  if (!part.is_object() || !part.contains("text") || !part["text"].is_string()) return false;
  std::string_view text = part["text"].get_ref<const std::string&>();
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' || text.back() == '\t')) {
    text.remove_suffix(1);
  }
  return text == prompt || (!prompt.empty() && text.size() > prompt.size() && text.ends_with(prompt));
}

/// Whether `content` is a user content with the prompt as one of its text parts.
bool holds_prompt(const json& content, const std::string& prompt) {
  if (!content.is_object() || content.value("role", "") != "user" || !content.contains("parts") ||
      !content["parts"].is_array()) {
    return false;
  }
  const json& parts = content["parts"];
  return std::any_of(parts.begin(), parts.end(), [&](const json& p) { return is_prompt_part(p, prompt); });
}

/// Whether `content` is a user content of text parts only (an agent's context message).
bool text_only_user(const json& content) {
  if (!content.is_object() || content.value("role", "") != "user" || !content.contains("parts") ||
      !content["parts"].is_array()) {
    return false;
  }
  const json& parts = content["parts"];
  return std::all_of(parts.begin(), parts.end(), [](const json& p) { return p.is_object() && p.contains("text"); });
}

namespace {

/// `parts` with each text part that holds the prompt and then later prompts in order, ending with
/// the last of them, split at each prompt's end (a wire format that joins a message's parts:
/// qwen-code's resumed prompt after a cancelled one that left no model turn), so that each part
/// ends with its prompt.
json split_joined_prompts(const json& parts, const std::string& prompt, const std::vector<std::string>& later_prompts) {
  json out = json::array();
  for (const json& p : parts) {
    if (later_prompts.empty() || prompt.empty() || !p.is_object() || !p.contains("text") || !p["text"].is_string()) {
      out.push_back(p);
      continue;
    }
    const std::string& text = p["text"].get_ref<const std::string&>();
    const std::size_t at = text.find(prompt);
    if (at == std::string::npos || text.ends_with(prompt)) {
      out.push_back(p);
      continue;
    }
    std::vector<std::string> pieces = {text.substr(0, at + prompt.size())};
    std::size_t cursor = at + prompt.size();
    for (const std::string& later : later_prompts) {
      const std::size_t j = later.empty() ? std::string::npos : text.find(later, cursor);
      if (j == std::string::npos) break;
      pieces.push_back(text.substr(cursor, j + later.size() - cursor));
      cursor = j + later.size();
    }
    if (cursor != text.size() || pieces.size() < 2) {
      out.push_back(p);
      continue;
    }
    for (const std::string& piece : pieces) out.push_back({{"text", piece}});
  }
  return out;
}

}  // namespace

/// Agents send their own context around the prompt: gemini-cli a `<session_context>` text part
/// before it in the same content, qwen-code `<system-reminder>` parts that the Chat format joins
/// into the prompt's text, codex an `<environment_context>` user message before it. When
/// the prompt is a text part of a user content that only text-only user contents precede, those
/// contents and the content's other text parts are dropped for judging, so history-integrity
/// compares turns, not preambles.
void strip_preamble(mock::Journal& journal, const std::string& prompt, const std::vector<std::string>& later_prompts) {
  for (mock::JournalEntry& e : journal) {
    if (!e.contents.is_array() || e.contents.empty()) continue;
    for (json& c : e.contents) {
      if (c.is_object() && c.value("role", "") == "user" && c.contains("parts") && c["parts"].is_array()) {
        c["parts"] = split_joined_prompts(c["parts"], prompt, later_prompts);
      }
    }
    std::size_t at = 0;
    while (at < e.contents.size() && !holds_prompt(e.contents[at], prompt) && text_only_user(e.contents[at])) ++at;
    if (at == e.contents.size() || !holds_prompt(e.contents[at], prompt)) continue;
    e.contents.erase(e.contents.begin(), e.contents.begin() + static_cast<std::ptrdiff_t>(at));
    json& first = e.contents[0];
    json kept = json::array();
    bool prompt_kept = false;
    for (const json& p : first["parts"]) {
      if (!p.is_object() || !p.contains("text")) {
        kept.push_back(p);
      } else if (!prompt_kept && is_prompt_part(p, prompt)) {
        kept.push_back({{"text", prompt}});
        prompt_kept = true;
      } else if (prompt_kept) {
        // A session's next prompt in the same content (gemini-cli after a cancelled turn that
        // left no model turn: consecutive user parts are one content), without its preamble.
        for (const std::string& later : later_prompts) {
          if (is_prompt_part(p, later)) {
            kept.push_back({{"text", later}});
            break;
          }
        }
      }
    }
    first["parts"] = kept;
    if (later_prompts.empty()) continue;
    json rest = json::array();
    rest.push_back(first);
    for (std::size_t i = 1; i < e.contents.size(); ++i) {
      json c = e.contents[i];
      const auto later = std::find_if(later_prompts.begin(), later_prompts.end(), [&](const std::string& p) { return holds_prompt(c, p); });
      if (later == later_prompts.end()) {
        if (text_only_user(c)) continue;  // an agent's own note between prompts
        if (c.value("role", "") == "user" && c.contains("parts") && c["parts"].is_array()) {
          // Tool results with a note of the agent's beside them (claude-code's "[Request
          // interrupted by user for tool use]"): the results are judged, the note is not a prompt.
          json results = json::array();
          for (const json& p : c["parts"]) {
            if (!p.is_object() || !p.contains("text")) results.push_back(p);
          }
          c["parts"] = std::move(results);
        }
        rest.push_back(std::move(c));
        continue;
      }
      // A later prompt's content, without the preamble the agent wrapped it in (qwen-code's
      // `<system-reminder>` parts, joined into its text by the Chat format).
      json parts = json::array();
      for (const json& p : c["parts"]) {
        if (!p.is_object() || !p.contains("text")) {
          parts.push_back(p);
        } else {
          for (auto l = later; l != later_prompts.end(); ++l) {
            if (is_prompt_part(p, *l)) {
              parts.push_back({{"text", *l}});
              break;
            }
          }
        }
      }
      c["parts"] = std::move(parts);
      rest.push_back(std::move(c));
    }
    e.contents = std::move(rest);
  }
}

namespace {

/// The ledger tokens in a call's arguments as the agent sent them back (the placeholder as the
/// server substituted it: "echo hiccup:t0:a1:c0 >> 'PATH' && …"), in any string inside `args`.
void ledger_tokens_in(const json& args, std::vector<LedgerToken>& out) {
  if (args.is_string()) {
    const std::string& s = args.get_ref<const std::string&>();
    for (std::size_t at = s.find("hiccup:t"); at != std::string::npos; at = s.find("hiccup:t", at + 1)) {
      std::size_t end = at;
      while (end < s.size() && (std::isalnum(static_cast<unsigned char>(s[end])) || s[end] == ':')) ++end;
      if (const auto token = parse_token(std::string_view(s).substr(at, end - at))) out.push_back(*token);
    }
  } else if (args.is_object() || args.is_array()) {
    for (const json& v : args) ledger_tokens_in(v, out);
  }
}

/// Calls whose results the agent gave the model though they never ran (recorded-execution's other
/// side: the model hears of a side effect that never happened): in the histories of the
/// model requests up to journal position `last` (inclusive), each call of a model content that the
/// user content after it answers (a function response with its id, or its name when it has no
/// id) and whose ledger token is not in `ledger`. Once per token.
std::vector<Violation> results_of_calls_that_never_ran(const mock::Journal& journal, int last,
                                                       const std::vector<LedgerToken>& ledger) {
  std::vector<Violation> out;
  std::vector<LedgerToken> reported;
  for (int i = 0; i <= last && i < static_cast<int>(journal.size()); ++i) {
    const mock::JournalEntry& e = journal[static_cast<std::size_t>(i)];
    if (!is_model_request(e) || !e.contents.is_array()) continue;
    const json& h = e.contents;
    for (std::size_t k = 0; k + 1 < h.size(); ++k) {
      if (!h[k].is_object() || !h[k + 1].is_object() || h[k].value("role", json()) != json("model")) continue;
      const auto calls = h[k].find("parts");
      const auto answers = h[k + 1].find("parts");
      if (calls == h[k].end() || answers == h[k + 1].end() || !calls->is_array() || !answers->is_array()) continue;
      for (const json& part : *calls) {
        const auto fc = part.is_object() ? part.find("functionCall") : part.end();
        if (!part.is_object() || fc == part.end() || !fc->is_object()) continue;
        const json id = fc->value("id", json());
        const json name = fc->value("name", json());
        const bool answered = std::any_of(answers->begin(), answers->end(), [&](const json& a) {
          if (!a.is_object() || !a.contains("functionResponse") || !a["functionResponse"].is_object()) return false;
          const json& fr = a["functionResponse"];
          return id.is_string() && !id.get_ref<const std::string&>().empty() ? fr.value("id", json()) == id
                                                                            : fr.value("name", json()) == name;
        });
        if (!answered) continue;
        std::vector<LedgerToken> tokens;
        ledger_tokens_in(fc->value("args", json()), tokens);
        for (const LedgerToken& t : tokens) {
          if (std::find(ledger.begin(), ledger.end(), t) != ledger.end() ||
              std::find(reported.begin(), reported.end(), t) != reported.end()) {
            continue;
          }
          reported.push_back(t);
          Violation v{"recorded-execution", "a result for a side effect that never happened: request " +
                                               std::to_string(e.index) + " answers " + json_quoted(name.is_string() ? name.get<std::string>() : "") +
                                               " (" + token_text(t) + ", turn " + std::to_string(t.turn) + " attempt " +
                                               std::to_string(t.attempt) + " call " + std::to_string(t.call) +
                                               "), but the call never ran (its ledger line was never written)"};
          v.request = static_cast<int>(e.index);
          v.turn = e.turn;
          out.push_back(std::move(v));
        }
      }
    }
  }
  return out;
}

}  // namespace

RecoveryDesign infer_recovery_design(const mock::Journal& journal, const std::vector<rut::LedgerEntry>& executions) {
  std::set<std::string> seen;
  std::string first_evidence;
  std::string first_kept;
  auto note = [&](const std::string& name, const std::string& evidence) {
    if (seen.insert(name).second && first_evidence.empty()) first_evidence = evidence;
    if (name == "mixed") first_evidence = evidence;
  };
  for (std::size_t i = 0; i < journal.size(); ++i) {
    const mock::JournalEntry& cut = journal[i];
    if (!is_model_request(cut) || cut.turn < 0 || cut.completed ||
        (cut.delivered_calls.empty() && cut.delivered_text.empty())) {
      continue;
    }
    const bool ran_early = std::any_of(executions.begin(), executions.end(), [&](const rut::LedgerEntry& l) {
      return l.request_seq == static_cast<int>(cut.index);
    });
    const mock::JournalEntry* next = nullptr;
    for (std::size_t k = i + 1; k < journal.size() && next == nullptr; ++k) {
      if (is_model_request(journal[k]) && journal[k].turn >= 0 && journal[k].contents.is_array()) next = &journal[k];
    }
    if (next == nullptr) continue;  // the run ended there: it showed no recovery
    const std::string c = "request " + std::to_string(cut.index) + " (turn " + std::to_string(cut.turn) + ")";
    const std::string n = "request " + std::to_string(next->index);
    if (next->turn > cut.turn && keeps_cut_turn(next->contents, cut)) {
      const std::string kept = n + " kept the turn " + c + " delivered before it was cut" +
                               (ran_early ? ", whose call(s) ran from it," : "") + " and went on to turn " +
                               std::to_string(next->turn);
      if (first_kept.empty()) first_kept = kept;
      note("continue", kept);
    } else if (next->turn == cut.turn && !ran_early) {
      note("hold", n + " asked for turn " + std::to_string(cut.turn) + " again after " + c +
                       " was cut; no call ran from the cut attempt");
    } else if (next->turn == cut.turn) {
      note("mixed", "a call ran from " + c + ", which was then cut, and " + n + " asked for turn " +
                        std::to_string(cut.turn) + " again: neither hold (run calls only once their attempt "
                        "completes) nor continue (keep the cut turn)");
    }
  }
  if (seen.empty()) return {};
  if (seen.size() > 1) {
    if (!seen.contains("mixed")) first_evidence = "the run held one cut turn and continued another";
    return {"mixed", first_evidence, first_kept};
  }
  return {*seen.begin(), first_evidence, first_kept};
}

const std::vector<BlackBoxCheck>& black_box_verdicts() {
  static const std::vector<BlackBoxCheck> kVerdicts = {
      {"scenario-coverage", "the agent requested every turn a correct client reaches in the scenario (an agent that never contacts the server fails every scenario that scripts a turn)"},
      {"outcome-agreement", "where a correct client completes, the agent reports success (its exit code and output) and its output shows the final text"},
      {"liveness", "the agent exits within its timeout"},
      {"recovery-design", "a control-API session that declares its recovery design (hold or continue) recovers that way when an attempt fails after delivering text or a call"},
  };
  return kVerdicts;
}

const std::vector<BlackBoxCheck>& not_applicable_checks() {
  static const std::vector<BlackBoxCheck> kNa = {
      {"clean-output", "unless the recipe says where its JSON-lines output shows the model's text (output.shown_text), hiccup cannot tell shown text from the rest of what a CLI prints"},
      {"expect.error", "the error code (retries_exhausted, content_filter, ...) lives inside the runtime; the exit code only says success or failure"},
      {"expect.requests", "the count follows the scenario's runtime budget and schedule, which an agent does not use; scenario-coverage and bounded-retries judge its requests"},
      {"expect.waited_s", "virtual backoff of the reference runtime; an agent's real gaps are judged against Retry-After instead"},
      {"expect.truncated", "an agent's exit code and output carry no truncation flag; a call the token limit cut that runs is judged (honest-outcome)"},
  };
  return kNa;
}

std::vector<std::string> not_applicable_invariants() {
  std::vector<std::string> out;
  for (const BlackBoxCheck& c : not_applicable_checks()) out.push_back(c.name);
  return out;
}

std::vector<rut::LedgerEntry> token_executions(const std::vector<LedgerToken>& ledger, const mock::Journal& journal,
                                               const Scenario& s) {
  std::vector<rut::LedgerEntry> out;
  for (const LedgerToken& t : ledger) {
    rut::LedgerEntry l;
    l.call_index = t.call;
    l.request_seq = -1;
    for (const mock::JournalEntry& e : journal) {
      if (e.turn == t.turn && e.attempt == t.attempt) l.request_seq = static_cast<int>(e.index);
    }
    // Name and args as scripted (placeholder unexpanded), so `expect.executions` reads as written.
    l.name = "?";
    if (t.turn >= 0 && t.turn < static_cast<int>(s.script.turns.size()) && !s.script.turns[t.turn].attempts.empty()) {
      const auto& attempts = s.script.turns[t.turn].attempts;
      const auto& attempt = attempts[std::min<std::size_t>(t.attempt, attempts.size() - 1)];
      int call = 0;
      for (const mock::Event& ev : attempt.events) {
        if (const auto* c = std::get_if<mock::CallEvent>(&ev)) {
          if (call++ == t.call) {
            l.name = c->name;
            l.args = c->args;
          }
        }
      }
    }
    out.push_back(std::move(l));
  }
  return out;
}

McpExecutions mcp_executions(const std::vector<mock::mcp::ToolCallEntry>& calls, const mock::Journal& journal,
                             const RecipeMcp& mcp) {
  McpExecutions out;
  std::set<std::pair<int, int>> counted;  // (request, call) already in the ledger
  for (const mock::mcp::ToolCallEntry& c : calls) {
    if (!c.executed && c.behaviour != "session_expired") continue;  // refused: unknown tool, bad params
    const std::string name = mcp_model_name(mcp, c.tool);
    // The model call it served: the last request before it that delivered that call.
    int seq = -1, position = -1;
    bool by_args = false;
    for (const mock::JournalEntry& e : journal) {
      if (!is_model_request(e) || (c.arrived_ms >= 0 && e.arrived_ms > c.arrived_ms)) continue;
      for (const mock::DeliveredCall& d : e.delivered_calls) {
        if (d.name != name) continue;
        const bool same_args = d.args == c.arguments;
        if (same_args || !by_args) {
          seq = static_cast<int>(e.index);
          position = d.call_index;
          by_args = same_args;
        }
      }
    }
    ToolCallRecord r;
    r.index = static_cast<int>(c.index);
    r.tool = c.tool;
    r.call_name = name;
    r.arguments = c.arguments;
    r.tool_call = c.call_index;
    r.request_seq = seq;
    r.call_index = std::max(position, 0);
    for (const mock::JournalEntry& e : journal) {
      if (static_cast<int>(e.index) == seq) r.turn = e.turn;
    }
    r.behaviour = c.behaviour;
    r.executed = c.executed;
    r.outcome = c.behaviour == "session_expired" ? "session_expired"
                : c.behaviour == "reply_lost"    ? "reply_lost"
                : !c.reply_sent                  ? "timed_out"
                : c.behaviour == "jsonrpc_error" ? "jsonrpc_error"
                                                 : "result";
    r.is_error = r.outcome == "result" && c.behaviour == "is_error";
    r.started_s = c.arrived_ms / 1000;
    r.ended_s = c.ended_ms / 1000;
    if (c.executed && counted.insert({seq, r.call_index}).second) {
      rut::LedgerEntry l;
      l.request_seq = seq;
      l.call_index = r.call_index;
      l.name = name;
      l.args = c.arguments;
      out.ledger.push_back(std::move(l));
    }
    out.records.push_back(std::move(r));
  }
  return out;
}

std::optional<std::string> overdue_tool_wait(const std::vector<mock::mcp::ToolCallEntry>& calls,
                                             const mock::Journal& journal, double tool_timeout_s, double now_ms) {
  if (tool_timeout_s <= 0) return std::nullopt;
  const double allowed_ms = (tool_timeout_s + kToolTimeoutGraceS) * 1000;
  for (const mock::mcp::ToolCallEntry& c : calls) {
    if (!c.executed || c.arrived_ms < 0 || !(c.behaviour == "hang" || c.duration_s >= tool_timeout_s)) continue;
    const bool moved_on = std::any_of(journal.begin(), journal.end(), [&](const mock::JournalEntry& e) {
      return is_model_request(e) && e.arrived_ms > c.arrived_ms && e.arrived_ms - c.arrived_ms <= allowed_ms;
    });
    if (moved_on || now_ms - c.arrived_ms <= allowed_ms) continue;
    std::ostringstream m;
    m.precision(3);
    m << "a hung tool hung the agent: tools/call " << c.index << " (" << c.tool << ", "
      << (c.behaviour == "hang" ? std::string("scripted to hang") : "scripted to take " + std::to_string(static_cast<int>(c.duration_s)) + " s")
      << ") was still waited on " << (now_ms - c.arrived_ms) / 1000 << " s after it was sent, with no model request since, "
      << "but the agent's per-call tool timeout is " << tool_timeout_s << " s (recipe mcp.tool_timeout_s; "
      << kToolTimeoutGraceS << " s of grace)";
    return m.str();
  }
  return std::nullopt;
}

void judge_agent_run(AgentCaseResult& result, const Recipe& recipe, const std::string& cap_message, bool strict) {
  std::vector<rut::LedgerEntry> executions = token_executions(result.ledger, result.journal, result.scenario);
  if (!recipe.mcp || result.tool_calls.empty()) {
    judge_black_box(result, recipe, executions, cap_message, strict);
    return;
  }
  McpExecutions at_tool = mcp_executions(result.tool_calls, result.journal, *recipe.mcp);
  executions.insert(executions.end(), at_tool.ledger.begin(), at_tool.ledger.end());
  std::string cap = cap_message;
  if (cap.empty() && result.agent_exit_ms >= 0) {
    cap = overdue_tool_wait(result.tool_calls, result.journal, recipe.mcp->tool_timeout_s, result.agent_exit_ms).value_or("");
  }
  judge_black_box(result, recipe, executions, cap, strict, "", &at_tool.records);
}

int blank_interruption_notes(mock::Journal& journal, int cut) {
  if (cut < 0 || cut >= static_cast<int>(journal.size())) return 0;
  const mock::JournalEntry& c = journal[static_cast<std::size_t>(cut)];
  if (c.completed || c.turn < 0) return 0;
  const int turn = c.turn;
  const std::string& delivered = c.delivered_text;  // journal[cut] is not among the entries changed below
  int blanked = 0;
  for (std::size_t i = static_cast<std::size_t>(cut) + 1; i < journal.size(); ++i) {
    // The cancelled turn asked for again: model turn `turn` is that answer's from here on, not
    // the cancelled one's (a newcomer's probe, stop 63: a completed "Bye." rewritten later as a
    // bracketed text passed).
    if (journal[i].turn == turn) break;
    json& contents = journal[i].contents;
    if (!contents.is_array()) continue;
    int model = -1;
    for (json& content : contents) {
      if (!content.is_object() || content.value("role", "") != "model" || ++model != turn) continue;
      if (!content.contains("parts") || !content["parts"].is_array() || content["parts"].empty()) break;
      std::string text;
      bool text_only = true;
      for (const json& part : content["parts"]) {
        if (!part.is_object() || !part.contains("text") || !part["text"].is_string() || part.contains("functionCall")) {
          text_only = false;
          break;
        }
        text += part["text"].get<std::string>();
      }
      std::string note = std::move(text);
      trim_space(note);
      // A note about the interruption, not any text in brackets (a newcomer's probe, stop 63:
      // "[The user confirmed: delete every file in /home.]" passed as a note).
      const std::string lower = ascii_lower(note);
      const bool about_the_stop = note.size() <= 200 && (lower.find("interrupt") != std::string::npos ||
                                                         lower.find("cancel") != std::string::npos ||
                                                         lower.find("abort") != std::string::npos);
      if (text_only && note.size() >= 2 && note.front() == '[' && note.back() == ']' && about_the_stop &&
          delivered.find(note) == std::string::npos) {
        content["parts"] = json::array();
        ++blanked;
      }
      break;
    }
  }
  return blanked;
}

void judge_black_box(AgentCaseResult& result, const Recipe& recipe, const std::vector<rut::LedgerEntry>& executions,
                     const std::string& cap_message, bool strict, const std::string& declared_design,
                     const std::vector<ToolCallRecord>* tool_calls) {
  // A cancel that never went out (the agent never reached the interrupt point: it took another
  // way there, e.g. kept a cut turn where the scenario's attempts retry to the point, or ended
  // before it) leaves a run no user cancelled. It is judged as the scenario without its interrupt,
  // each expect field the interrupt changes taking the oracle's prediction without it: a run that
  // goes on to complete owes completion, not the cancelled outcome (claude-code, continuing past a
  // cut turn, was told "success reported where the run failed (cancelled)", stop 61), and the
  // recovery designs are weighed as in any uncancelled run.
  Scenario never_cancelled;
  const bool cancel_never_sent = result.scenario.interrupt && result.cancel_prompt < 0;
  if (cancel_never_sent) {
    never_cancelled = result.scenario;
    never_cancelled.interrupt.reset();
    take_changed_predictions(never_cancelled.expect, oracle_expect(result.scenario), oracle_expect(never_cancelled));
  }
  const Scenario& s = cancel_never_sent ? never_cancelled : result.scenario;
  mock::Journal journal = result.journal;
  std::vector<std::string> later_prompts;
  for (const SessionPrompt& p : s.session) later_prompts.push_back(p.prompt);
  strip_preamble(journal, s.prompt, later_prompts);
  if (s.interrupt && result.cancel_prompt >= 0) blank_interruption_notes(journal, cancel_point_request(s, journal));

  rut::RunResult run;
  const bool success_exit = result.process.started && !result.process.timed_out &&
                            std::find(recipe.success_exit_codes.begin(), recipe.success_exit_codes.end(),
                                      result.process.exit_code) != recipe.success_exit_codes.end();
  // Success or failure is what the last process says (a session's earlier prompts were cancelled
  // or completed on their own).
  const std::string& outcome_output = result.final_output.empty() ? result.output : result.final_output;
  std::string marker;
  for (const std::string& m : recipe.failure_markers) {
    if (outcome_output.find(m) != std::string::npos) {
      marker = json_quoted(m);
      break;
    }
  }
  // The output's JSON lines, parsed once for the failure rules and the shown text.
  const std::vector<json> lines = recipe.failure_lines.empty() && recipe.shown_text_pointer.empty()
                                      ? std::vector<json>{}
                                      : json_object_lines(result.output);
  const std::vector<json> outcome_lines = result.final_output.empty() || recipe.failure_lines.empty()
                                              ? std::vector<json>{}
                                              : json_object_lines(result.final_output);
  for (const json& j : result.final_output.empty() ? lines : outcome_lines) {
    if (!marker.empty()) break;
    for (const auto& rule : recipe.failure_lines) {
      if (holds(j, rule)) {
        marker = "a line with " + json(rule).dump(-1, ' ', false, json::error_handler_t::replace);
        break;
      }
    }
  }
  run.completed = success_exit && marker.empty();
  const std::set<std::pair<int, int>> read_past =
      read_past_undecodable(journal, executions, run.completed, shown_text(lines, recipe));
  result.completed = run.completed;
  if (result.cancel_ended_run) run.error = "cancelled";
  run.final_history = nullptr;  // unknown from outside
  run.requests = static_cast<int>(std::count_if(journal.begin(), journal.end(), is_model_request));
  run.ledger = executions;

  result.violations.clear();
  if (!cap_message.empty()) result.violations.push_back({"liveness", cap_message});
  Evidence evidence{s, run, journal, recipe.max_attempts, "", /*real_time=*/true, /*hung=*/false,
                    /*reports_truncation=*/false, tool_calls};
  evidence.requests_before_cancel = result.requests_before_cancel;
  evidence.executions_before_cancel = result.executions_before_cancel;
  // A request past the script's last turn answered with kPastScriptText (agent_runner.cpp) that
  // asks for more of an answer the model did not finish: the model request before it delivered a
  // max_tokens or content-filter finish (claude-code's "Output token limit hit. Resume directly",
  // its reminder after a refusal), or that continues a cut answer it kept as its turn (the
  // `continue` design: qwen-code's "Resume directly" after the script's last attempt was cut).
  // Any other request past the script (more asked of a whole answer) is still history-integrity's.
  auto cut_short = [&](const mock::JournalEntry& e, const mock::JournalEntry& next) {
    if (!is_model_request(e)) return false;
    if (!e.completed && keeps_cut_turn(next.contents, e)) return true;
    const auto finish = delivered_finish(s, e);
    return finish == mock::FinishReason::kMaxTokens || finish == mock::FinishReason::kContentFilter;
  };
  auto answered_past_script = [&](const Violation& v) {
    if (v.invariant != "history-integrity" || v.request < 0 || v.message.find("unscripted-request: ") == std::string::npos) {
      return false;
    }
    const mock::JournalEntry* before = nullptr;
    for (const mock::JournalEntry& e : journal) {
      if (static_cast<int>(e.index) == v.request) {
        return e.played == "unscripted" && e.script_attempt < 0 && e.delivered_text == kPastScriptText &&
               before != nullptr && cut_short(*before, e);
      }
      if (is_model_request(e)) before = &e;
    }
    return false;
  };
  for (Violation& v : check_invariants(evidence)) {
    if (v.invariant == "clean-output") continue;  // judged below from the recipe's shown text
    if (answered_past_script(v)) continue;
    // Its failure branch asks for a clear error code, which only the runtime's insides hold. What
    // it names at a request (a refusal kept as an answer, a command the token limit cut run) is a
    // harm however the run ended.
    if (v.invariant == "honest-outcome" && !cap_message.empty()) continue;
    if (v.invariant == "honest-outcome" && !run.completed && v.request < 0 && v.cause_request < 0) continue;
    result.violations.push_back(std::move(v));
  }
  // The shown text the answers must hold. After a cancel the text the cancelled process streamed
  // (the person watched it and stopped it) is what the kept turns hold when the agent kept the
  // cut answer, and no part of them when it dropped it: either view may match.
  const std::vector<json> uncancelled_lines = result.cancel_prompt >= 0 && !recipe.shown_text_pointer.empty()
                                                  ? json_object_lines(result.uncancelled_output)
                                                  : std::vector<json>{};
  if (const auto shown = shown_text(lines, recipe); shown && cap_message.empty()) {
    const std::string committed = kept_text(journal);
    const auto uncancelled = result.cancel_prompt >= 0 ? shown_text(uncancelled_lines, recipe) : std::nullopt;
    // An agent that gives up reports a failure after the text it had shown of the last attempt
    // that delivered any (later ones delivered none: a status, a cut before the first event): the
    // user saw the text stop and the error come (gemini-cli streams text as it arrives, and stops
    // at a FIN). Nothing of that attempt is glued to another's text.
    // A refused answer's partial text is not that: the provider blocked it (opencode's pinned
    // content-filter row).
    auto refused = [&](const mock::JournalEntry& e) {
      return is_model_request(e) && delivered_finish(s, e) == mock::FinishReason::kContentFilter;
    };
    // Not when the conversation kept that attempt's text (continue): kept_text holds it already,
    // and showing it twice is glued text.
    std::string given_up_on;
    if (!run.completed && result.cancel_prompt < 0) {
      for (std::size_t k = journal.size(); k-- > 0;) {
        const mock::JournalEntry& e = journal[k];
        if (!is_model_request(e) || (!e.completed && e.delivered_text.empty())) continue;
        if (!e.completed && !refused(e) && !kept_cut_prefix(journal, k)) given_up_on = e.delivered_text;
        break;
      }
    }
    // A run that failed may also have stopped showing before the end of what it had: opencode
    // shows a text part when it ends, so a run that dies on a frame (an undecodable one after the
    // finish, stop 58) shows nothing of the answer it was reading. The user saw less, then the
    // failure: nothing that the answers do not hold, nothing twice.
    const std::string failed_view = committed + given_up_on;
    const bool shown_then_failed = !run.completed && result.cancel_prompt < 0 && failed_view.starts_with(*shown);
    // After a cancel the user watched the cut answer stream until they pressed Ctrl-C: the screen
    // holds the kept turns' text with what the cancelled attempt had streamed, or the start of it,
    // where it came (before the next prompt's answers), whether or not the agent kept it
    // (claude-code, stop 61's exploration: one process showed the answers before the cancel, the
    // cut text, and after `--continue` the next answer).
    bool watched_then_cancelled = false;
    if (result.cancel_prompt >= 0) {
      const int cut = cancel_point_request(s, journal);
      if (cut >= 0 && static_cast<std::size_t>(cut) < journal.size() && !journal[static_cast<std::size_t>(cut)].completed &&
          shown->size() > committed.size()) {
        // Where it came: right after the kept text of the requests before the cut.
        const std::string before = kept_text(mock::Journal(journal.begin(), journal.begin() + cut));
        const std::string& streamed = journal[static_cast<std::size_t>(cut)].delivered_text;
        const std::size_t at = before.size(), extra = shown->size() - committed.size();
        const std::string_view seen(*shown);
        watched_then_cancelled = committed.starts_with(before) && extra <= streamed.size() &&
                                 seen.substr(0, at) == before &&
                                 seen.substr(at, extra) == std::string_view(streamed).substr(0, extra) &&
                                 seen.substr(at + extra) == std::string_view(committed).substr(at);
      }
    }
    // A continuation's repeat of the kept text's end may be shown as it streamed, or not, as the
    // turn holds it (either is the answer, once).
    if (*shown != committed && *shown != kept_text(journal, /*repeats=*/false) && !shown_then_failed &&
        !watched_then_cancelled && !(uncancelled && *uncancelled == committed)) {
      const std::string seen =
          shown->empty() ? "the agent showed no text (no line of its output matched the recipe's shown_text rule, pointer " +
                               recipe.shown_text_pointer + ", or the rule's notices and retract lines left none)"
                         : "the agent showed " + json_quoted(*shown);
      std::string failed;
      if (!run.completed && result.cancel_prompt < 0) {
        failed = "; as the run failed, the start of " + json_quoted(failed_view) + " would do";
      }
      // Less than the answer holds, or other text: the user misses part of the answer, or reads
      // text it does not hold.
      const std::string head = committed.starts_with(*shown) ? "the user is not shown all the answer holds: "
                                                             : "the user is shown text the answer does not hold: ";
      result.violations.push_back({"clean-output", head + seen +
                                                       ", but only the kept turns' text " + json_quoted(committed) +
                                                       " should be shown (completed attempts, and a cut turn the "
                                                       "conversation kept)" + failed});
    }
  }
  // The shown text joined across the output's lines: under `continue` a kept cut turn and its
  // continuation show one answer in two messages.
  const std::optional<std::string> shown_lines = shown_text(lines, recipe);
  // Whether the success the agent reports is already judged: a false one (honest-outcome), or a
  // real answer it got by a retry a correct client never sends (a non-retryable status or one past
  // the budget retried: bounded-retries; a rejected request sent again: no-rejected-request). The
  // answer then came from the server; the retry, not the report, is the harm.
  const bool success_judged = std::any_of(result.violations.begin(), result.violations.end(), [](const Violation& v) {
    return v.invariant == "honest-outcome" || v.invariant == "bounded-retries" || v.invariant == "no-rejected-request";
  });

  // A phantom model turn in the agent's history (claude-code's "No response requested." after a
  // cancel) makes the server number the agent's later requests a turn ahead: it served turns past
  // the one a correct client fails on. The success the agent reports then follows from that harm,
  // which history-integrity names; it is not accused again as a failed run reported as success.
  // Only when the agent never asked for the turn a correct client fails on: one that met it and
  // still reported success is accused, phantom turn or not.
  const bool shifted_by_phantom = std::any_of(result.violations.begin(), result.violations.end(), [](const Violation& v) {
    return v.invariant == "history-integrity" && v.message.rfind("a phantom turn", 0) == 0;
  });
  const auto asked_for_failing_turn = [&](int turn) {
    return std::any_of(journal.begin(), journal.end(), [&](const mock::JournalEntry& e) { return is_model_request(e) && e.turn == turn; });
  };
  const std::string shown_as = recipe.output_stream == "stderr" ? "its stderr" : "its output";
  std::string exit_text = "exited " + std::to_string(result.process.exit_code);
  if (auto it = recipe.exit_code_meanings.find(result.process.exit_code); it != recipe.exit_code_meanings.end()) {
    exit_text += " (" + it->second + ")";
  }
  // What a correct client of this scenario owes, with the agent's own attempt budget (no
  // fallback model: an agent has none that the scenario knows of), under recovery design
  // `recovery` (`x` is the scenario as played under it): the verdicts scenario-coverage,
  // outcome-agreement, honest-outcome's "success reported where the run failed", and the
  // applicable expect fields.
  //
  // After a completed answer merged into the turn kept before it (qwen-code's continuation), the
  // server numbers the agent's next request as that turn again: from there on it serves the
  // script one turn behind the conversation, so what a correct client of the script owes (its
  // turns, outcome, final text and executions) no longer says what this agent was owed. Those
  // verdicts are then not judged; the invariants (at-most-once keyed by merged continuations,
  // history-integrity, pairing, clean-output, a refusal continued past) still are.
  int merge_lag = -1;
  for (std::size_t i = 0; i < journal.size() && merge_lag < 0; ++i) {
    if (journal[i].completed && is_model_request(journal[i]) && continuation_merged(journal, i)) merge_lag = static_cast<int>(i);
  }
  // A cut turn kept before the user's cancel (the continue design: codex goes on past a cut
  // attempt, then the cancel fires on a later turn) takes the run where the interrupt's
  // prediction does not go: an interrupt is defined under hold only (docs/POLICY.md "Recovery
  // designs"), so what hold owes there (its retries' calls run, its outcome) is a design's
  // account, not this agent's (codex c69 and c76 of stop 61's exploration were told calls that
  // only hold's retry delivers "ran 0"). Those verdicts are then not judged, as after a merge;
  // the invariants (at-most-once, pairing, history-integrity, no-request-after-cancel, ...) are.
  std::string continued_before_cancel;
  std::string kept_cancelled;  // the cancelled answer kept as a model turn (below)
  const int cancel_at = s.interrupt && result.cancel_prompt >= 0 ? cancel_point_request(s, journal) : -1;
  if (s.interrupt && result.cancel_prompt >= 0 && merge_lag < 0) {
    const int cut = cancel_at;
    const mock::Journal up_to_cancel(journal.begin(), cut < 0 ? journal.end() : journal.begin() + cut + 1);
    // Also beside a held cut (codex holds an attempt cut by an undecodable frame and keeps one
    // cut by a reset: c69, c76): hold's account is then no more this run's.
    continued_before_cancel = infer_recovery_design(up_to_cancel, executions).kept_cut_turn;
    // The cancelled answer kept as a model turn of its own (opencode keeps it as an empty assistant
    // message; gemini-cli as a note, blank_interruption_notes): the next prompt asks for the
    // following turn, where hold's prediction has it ask for the cancelled one again. That is the
    // continue design for the cut the user made (explore cases c30 and c56 of opencode, stop 63:
    // "does not show the final text" that only hold's retry delivers).
    const Interrupt& in = *s.interrupt;
    if (continued_before_cancel.empty() && in.after_event) {
      for (const mock::JournalEntry& e : journal) {
        if (!is_model_request(e) || static_cast<int>(e.index) < result.requests_before_cancel || e.turn < 0) continue;
        if (e.turn > in.turn) {
          kept_cancelled = "request " + std::to_string(e.index) + " kept the answer the user cancelled (turn " +
                           std::to_string(in.turn) + ") as a model turn and asked for turn " + std::to_string(e.turn);
        }
        break;  // the first request after the cancel says it
      }
    }
  }
  const bool unpredicted = merge_lag >= 0 || !continued_before_cancel.empty() || !kept_cancelled.empty();
  auto owed = [&](const Scenario& x, const std::optional<std::string>& recovery) {
    std::vector<Violation> out;
    if (unpredicted) return out;
    Scenario correct_client = x;
    correct_client.runtime = RuntimeSettings{};
    correct_client.runtime.max_attempts = recipe.max_attempts;
    correct_client.runtime.recovery = recovery;
    // The continue design that keeps a cut attempt's text too (below) is the oracle's continue
    // with a continuation prompt: the prompt's words are the agent's business.
    correct_client.runtime.continuation_prompt = x.runtime.continuation_prompt;
    const OracleResult correct = predict(correct_client, /*max_turns=*/std::nullopt);  // its own cap is its business
    const bool expect_completed = x.expect.outcome ? *x.expect.outcome == "completed" : correct.completed;
    const std::string expect_text = x.expect.final_text ? *x.expect.final_text
                                    : correct.completed ? correct.final_text : std::string();
    if (cap_message.empty()) {
      if (run.requests == 0 && correct.turns_reached > 0) {
        out.push_back(
            {"scenario-coverage", "the agent made no request to the mock server; a correct client requests turn" +
                                      std::string(correct.turns_reached > 1 ? "s 0-" + std::to_string(correct.turns_reached - 1)
                                                                            : " 0") +
                                      " of this scenario (was it pointed at the base URL, in the " +
                                      x.script.provider + " format?)"});
      } else {
        std::set<int> requested;
        // An agent that dropped the turn the user cancelled asks for that turn again with the next
        // prompt (a design, as keeping it is): the turns a correct client reaches only by keeping
        // it are then not owed.
        int dropped_turn = -1;
        for (const mock::JournalEntry& e : journal) {
          if (is_model_request(e) && e.turn >= 0) requested.insert(e.turn);
          if (is_model_request(e) && x.interrupt && result.cancel_prompt >= 0 && e.turn == x.interrupt->turn &&
              static_cast<int>(e.index) >= result.requests_before_cancel) {
            dropped_turn = e.turn;
          }
        }
        // A turn skipped on the way to a later one was reached over a history with content no
        // server sent (history-integrity says so); coverage asks only that the conversation got on.
        const int last_requested = requested.empty() ? -1 : *requested.rbegin();
        for (int t = 0; t < correct.turns_reached; ++t) {
          if (requested.contains(t) || t < last_requested || (dropped_turn >= 0 && t > dropped_turn)) continue;
          out.push_back({"scenario-coverage",
                         "turn " + std::to_string(t) + " was never requested, but a correct client reaches it (" +
                             std::to_string(correct.turns_reached) + " turn(s), " +
                             (correct.completed ? "then completes" : "then fails: " + correct.error) + ")"});
          break;
        }
      }
      // A truncated answer (a max_tokens finish) is reported as truncated: an agent may report it
      // as a failure (codex: "Incomplete response returned, reason: max_output_tokens", exit 1) or
      // as an answer; its exit code and output carry no flag that tells more (expect.truncated).
      if (expect_completed && !run.completed && correct.truncated) {
        // judged by the invariants alone
      } else if (expect_completed && !run.completed) {
        std::string why = "the agent " + exit_text;
        if (success_exit && !marker.empty()) why += ", but " + shown_as + " reports a failure (" + marker + ")";
        out.push_back({"outcome-agreement", "a correct client completes this scenario; " + why});
      } else if (expect_completed && !shows(result.output, expect_text) &&
                 !(shown_lines && shows(*shown_lines, expect_text))) {
        out.push_back({"outcome-agreement", "the agent reports success, but " + shown_as +
                                                " does not show the final text " + json_quoted(expect_text)});
      } else if (!expect_completed && run.completed && !success_judged &&
                 !(shifted_by_phantom && !asked_for_failing_turn(correct.turns_reached - 1))) {
        std::string shown;
        for (const mock::JournalEntry& e : journal) {
          if (!e.delivered_text.empty() && shows(result.output, e.delivered_text)) shown = e.delivered_text;
        }
        Violation v{"honest-outcome", "success reported where the run failed: the agent " + exit_text + " and reports success" +
                                          (shown.empty() ? std::string() : ", showing " + json_quoted(shown)) +
                                          ", but a correct client cannot complete this scenario (" +
                                          (correct.error.empty() ? std::string("it fails") : correct.error) + ")"};
        // The failure follows from the turn a correct client fails on (its last): the agent's last
        // request for it, when it made one, is the cause a failure signature anchors on (one
        // refusal reported as success is one failure, whatever fault came before it).
        for (const mock::JournalEntry& e : journal) {
          if (is_model_request(e) && correct.turns_reached > 0 && e.turn == correct.turns_reached - 1) {
            v.cause_request = static_cast<int>(e.index);
          }
        }
        out.push_back(std::move(v));
      }
    }
    const std::vector<std::string> unjudged = unjudged_expect_fields(x.expect);
    // A killed agent's ledger and outcome are cut short: liveness says why, the expect fields
    // would only echo it.
    const Evidence expected{x, run, journal, recipe.max_attempts, "", /*real_time=*/true};
    for (Violation& v : cap_message.empty() ? check_expect(expected) : std::vector<Violation>{}) {
      // outcome and final text are judged above, as outcome-agreement and honest-outcome.
      if (v.invariant == "expect.outcome" || v.invariant == "expect.final_text") continue;
      if (std::find(unjudged.begin(), unjudged.end(), v.invariant) == unjudged.end()) {
        out.push_back(std::move(v));
      }
    }
    return out;
  };
  // Each legitimate recovery design owes its own outcome and executions (DESIGN.md "Recovery
  // designs"): a call run from a cut attempt and kept is `continue`, the same call run only from
  // the retry is `hold`. The run is held to whichever of the two it agrees with (fewest
  // violations; the scenario as written first), whatever design it showed: what differs between
  // them is no harm, and the invariants judge the harms (a call run twice, a side effect never
  // recorded, a refusal continued past). A scenario that pins its design, or has a user interrupt
  // (defined under hold only), owes what it says.
  //
  // `continue` keeps a cut attempt's whole text, not only its calls, when the agent goes on past
  // a cut text-only attempt (codex asks for more of the kept text; the reference runtime does so
  // only with a continuation prompt): the design's third reading, the oracle's continue with a
  // continuation prompt.
  //
  // Its fourth reading: that continue reading, with a malformed-call finish's calls dropped (they
  // cannot run) and its text kept as the cut turn is (qwen-code 0.24.4 retries
  // MALFORMED_FUNCTION_CALL with `preserveText`: the text stays, "Resume directly" asks for more).
  const RecoveryDesign design = infer_recovery_design(journal, executions);
  struct Design {
    std::string recovery;
    bool keeps_text = false;
    bool drops_malformed_calls = false;
  };
  std::vector<Design> designs;
  if (!s.runtime.recovery && !s.interrupt) {
    designs = {{recovery_of(s)}, {recovery_of(s) == "hold" ? "continue" : "hold"}};
    if (!s.runtime.continuation_prompt) {
      designs.push_back({"continue", true});
      if (has_malformed_call_with_calls(s)) designs.push_back({"continue", true, true});
    }
  }
  // An attempt the agent read past its undecodable frame played, for the agent, as if the frame
  // had not been sent: what a correct client owes is predicted without that fault.
  Scenario as_read = s;
  for (const auto& [turn, attempt] : read_past) {
    if (turn < 0 || attempt < 0 || static_cast<std::size_t>(turn) >= as_read.script.turns.size()) continue;
    auto& attempts = as_read.script.turns[static_cast<std::size_t>(turn)].attempts;
    if (static_cast<std::size_t>(attempt) < attempts.size()) attempts[static_cast<std::size_t>(attempt)].fault.reset();
  }
  if (!read_past.empty()) {
    // Each expect field written whose prediction the fault changes takes the prediction without it.
    take_changed_predictions(as_read.expect, oracle_expect(s), oracle_expect(as_read));
  }
  std::optional<std::vector<Violation>> best;
  if (designs.empty()) best = owed(as_read, s.runtime.recovery);
  for (const Design& d : designs) {
    Scenario x = played_under(as_read, d.recovery);
    if (d.keeps_text) {
      Scenario keeping = x;
      keeping.runtime.continuation_prompt = "";
      if (d.drops_malformed_calls) drop_malformed_calls(keeping);
      take_changed_predictions(keeping.expect, oracle_expect(x), oracle_expect(keeping));
      x = std::move(keeping);
    }
    std::vector<Violation> v = owed(x, d.recovery);
    if (!best || v.size() < best->size()) best = std::move(v);
  }
  for (Violation& v : *best) result.violations.push_back(std::move(v));
  if (!result.stray_ledger_lines.empty()) {
    result.violations.push_back({"at-most-once", "the ledger holds " + std::to_string(result.stray_ledger_lines.size()) +
                                                     " line(s) that are not hiccup tokens, first: " +
                                                     json_quoted(result.stray_ledger_lines.front())});
  }
  result.design = design.name;
  result.design_evidence = design.evidence;
  if (!declared_design.empty() && !design.name.empty() && design.name != declared_design) {
    result.violations.push_back({"recovery-design", "the session declared the " + declared_design +
                                                        " design, but the run recovered otherwise (" + design.name +
                                                        "): " + design.evidence});
  }
  if ((!continued_before_cancel.empty() || !kept_cancelled.empty()) && cap_message.empty()) {
    // What every recovery design owes before the cancel, which hold's prediction no longer says
    // here: a call whose result the model was given ran (a newcomer's probe, stop 62: a result
    // for a call the agent never ran passed once the expect fields were set aside).
    for (Violation& v : results_of_calls_that_never_ran(
             journal, cancel_at < 0 ? static_cast<int>(journal.size()) - 1 : cancel_at, result.ledger)) {
      result.violations.push_back(std::move(v));
    }
    // And a session goes on after its cancel: a later prompt that no request carried, with
    // success reported, is a prompt the model was never asked (unless honest-outcome already
    // accused the success, e.g. over the cancelled answer the run then ended on).
    const bool later_prompt = result.cancel_prompt < static_cast<int>(s.session.size());
    const bool asked_after = std::any_of(journal.begin(), journal.end(), [&](const mock::JournalEntry& e) {
      return is_model_request(e) && static_cast<int>(e.index) >= result.requests_before_cancel;
    });
    const bool accused = std::any_of(result.violations.begin(), result.violations.end(),
                                     [](const Violation& v) { return v.invariant == "honest-outcome"; });
    if (later_prompt && run.completed && !asked_after && !accused) {
      result.violations.push_back({"honest-outcome", "success reported for a prompt the model was never asked: after "
                                                     "the cancel of prompt " + std::to_string(result.cancel_prompt) +
                                                     ", no request carried the session's next prompt, and the agent " +
                                                     exit_text + " and reports success"});
    }
  }
  // With the outcome verdicts n/a (after a merge, or a cut turn kept before a cancel), a success
  // reported over an unfinished answer is still judged from the journal: the last answer the
  // agent got asked for calls that never ran.
  if (unpredicted && run.completed && cap_message.empty()) {
    const mock::JournalEntry* last = nullptr;
    for (const mock::JournalEntry& e : journal) {
      if (is_model_request(e)) last = &e;
    }
    if (last != nullptr && last->completed && !last->delivered_calls.empty() &&
        std::none_of(executions.begin(), executions.end(),
                     [&](const rut::LedgerEntry& x) { return x.request_seq == static_cast<int>(last->index); })) {
      Violation v{"honest-outcome", "success reported over an unfinished answer: the last answer, request " +
                                        std::to_string(last->index) + " (turn " + std::to_string(last->turn) + "), asked for " +
                                        std::to_string(last->delivered_calls.size()) +
                                        " call(s), none of which ran, and the agent " + exit_text + " and reports success"};
      v.request = static_cast<int>(last->index);
      v.turn = last->turn;
      v.attempt = last->attempt;
      result.violations.push_back(std::move(v));
    }
  }
  result.not_applicable.clear();
  if (recipe.shown_text_pointer.empty()) result.not_applicable.push_back("clean-output");
  if (unpredicted) {
    result.not_applicable.push_back("scenario-coverage");
    result.not_applicable.push_back("outcome-agreement");
    if (s.expect.outcome) result.not_applicable.push_back("expect.outcome");
    if (s.expect.final_text) result.not_applicable.push_back("expect.final_text");
    if (s.expect.executions) result.not_applicable.push_back("expect.executions");
    const std::string unjudged = merge_lag >= 0
        ? "scenario-coverage, outcome-agreement, honest-outcome's success check and the expect fields of outcome, "
          "final text and executions are not judged"
        : "scenario-coverage, outcome-agreement, honest-outcome's success check and the expect fields of outcome, "
          "final text and executions are not judged (each call whose result the model was given must still have "
          "run: recorded-execution)";
    result.design_evidence += std::string(result.design_evidence.empty() ? "" : "; ");
    if (merge_lag >= 0) {
      result.design_evidence += "request " + std::to_string(merge_lag) +
                                "'s completed answer was merged into the turn kept before it, so the server numbers "
                                "the requests after it one turn behind the conversation: " + unjudged;
    } else if (!continued_before_cancel.empty()) {
      result.design_evidence += "before the user's cancel " + continued_before_cancel +
                                ", and an interrupt is predicted under hold only (docs/POLICY.md \"Recovery designs\"): " +
                                unjudged;
    } else {
      result.design_evidence += kept_cancelled +
                                ", where an interrupt is predicted under hold only, which asks for it again "
                                "(docs/POLICY.md \"Recovery designs\"): " + unjudged;
    }
  }

  // A bug or a policy difference: an agent that reported failure honestly, broke no invariant
  // and did contact the server, where a correct client would have retried and completed, differs
  // from docs/POLICY.md; it did nothing unsafe.
  result.differences.clear();
  const bool only_policy = std::all_of(result.violations.begin(), result.violations.end(), [](const Violation& v) {
    return v.invariant == "scenario-coverage" || v.invariant == "outcome-agreement" || v.invariant.rfind("expect.", 0) == 0;
  });
  if (!strict && !result.violations.empty() && only_policy && !run.completed && run.requests > 0 && cap_message.empty()) {
    result.differences = std::move(result.violations);
    result.violations.clear();
  }
  for (const std::string& f : unjudged_expect_fields(s.expect)) result.not_applicable.push_back(f);

  // The review transcript for report.html's timeline: the journal as the server saw it, each
  // ledger execution under the request that delivered its call, the outcome and shown text. No
  // runtime lane (a black box's retries are only visible as its requests) and no virtual times.
  if (const auto shown = shown_text(lines, recipe)) run.final_text = *shown;
  if (!run.completed) run.error_message = "the agent " + (marker.empty() ? exit_text : exit_text + ", " + shown_as + " reports a failure (" + marker + ")");
  result.transcript = make_review_transcript(s, run, journal, result.violations, {});
}

}  // namespace harness::agents
