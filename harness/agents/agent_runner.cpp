// run_agent_scenario and the black-box judge. The judge turns the ledger and the exit code into the
// same rut::RunResult shape the reference runtime produces, so the lead's invariant checkers judge
// external agents unchanged; only checks that need the runtime's insides are left out (n/a).
#include "harness/agents/agent_runner.h"

#include "harness/scenario_io.h"
#include "harness/transcript.h"
#include "harness/stopwatch.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "harness/oracle.h"
#include "mock_server/http_server.h"
#include "mock_server/json_text.h"
#include "mock_server/script_engine.h"
#include "mock_server/wire_format.h"

namespace harness::agents {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// `expect` fields a black box cannot show (see not_applicable_checks()).
std::vector<std::string> unjudged_expect_fields(const Expect& x) {
  std::vector<std::string> out;
  if (x.error) out.push_back("expect.error");
  if (x.requests) out.push_back("expect.requests");
  if (x.waited_s) out.push_back("expect.waited_s");
  return out;
}

/// Whether `output` shows `text`: as is, or JSON-escaped (structured output such as stream-json).
bool shows(const std::string& output, const std::string& text) {
  if (text.empty()) return true;
  if (output.find(text) != std::string::npos) return true;
  const std::string quoted = json(text).dump();
  return output.find(quoted.substr(1, quoted.size() - 2)) != std::string::npos;
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

/// The text the output's lines show by the recipe's shown_text rule; nullopt when the recipe has
/// none.
std::optional<std::string> shown_text(const std::vector<json>& lines, const Recipe& recipe) {
  if (recipe.shown_text_pointer.empty()) return std::nullopt;
  std::map<std::string, json> where;
  for (const auto& [pointer, want] : recipe.shown_text_where) where[pointer] = want == "{model}" ? recipe.model : want;
  const json::json_pointer text(recipe.shown_text_pointer);
  std::string shown;
  for (const json& j : lines) {
    if (holds(j, where) && j.contains(text) && j.at(text).is_string()) shown += j.at(text).get<std::string>();
  }
  return shown;
}

/// Replaces {name} variables in one pass (substituted text is never re-scanned).
std::string expand(const std::string& s, const std::map<std::string, std::string>& vars) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == '{') {
      const auto close = s.find('}', i);
      if (close != std::string::npos) {
        auto it = vars.find(s.substr(i + 1, close - i - 1));
        if (it != vars.end()) {
          out += it->second;
          i = close + 1;
          continue;
        }
      }
    }
    out += s[i++];
  }
  return out;
}

/// `expand` applied to every string inside `j` (keys are left alone).
json expand_json(const json& j, const std::map<std::string, std::string>& vars) {
  if (j.is_string()) return expand(j.get<std::string>(), vars);
  if (j.is_array()) {
    json out = json::array();
    for (const json& v : j) out.push_back(expand_json(v, vars));
    return out;
  }
  if (j.is_object()) {
    json out = json::object();
    for (const auto& [k, v] : j.items()) out[k] = expand_json(v, vars);
    return out;
  }
  return j;
}

std::string tail_of(const std::string& path, std::size_t max_lines) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > 400) line = line.substr(0, 400) + "…";
    lines.push_back(line);
    if (lines.size() > max_lines) lines.erase(lines.begin());
  }
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

bool is_model_request(const mock::JournalEntry& e) {
  return e.played != "preflight" && e.played != "not-found";
}

/// Whether a text part shows the prompt: equal to it, or ending with it after a preamble that
/// the wire format joined into the same text (qwen-code's `<system-reminder>` parts).
bool is_prompt_part(const json& part, const std::string& prompt) {
  if (!part.is_object() || !part.contains("text") || !part["text"].is_string()) return false;
  const std::string& text = part["text"].get_ref<const std::string&>();
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

/// Agents send their own context around the prompt: gemini-cli a `<session_context>` text part
/// before it in the same content, qwen-code `<system-reminder>` parts that the Chat format joins
/// into the prompt's text, codex an `<environment_context>` user message before it. When
/// the prompt is a text part of a user content that only text-only user contents precede, those
/// contents and the content's other text parts are dropped for judging, so history-integrity
/// compares turns, not preambles.
void strip_preamble(mock::Journal& journal, const std::string& prompt) {
  for (mock::JournalEntry& e : journal) {
    if (!e.contents.is_array() || e.contents.empty()) continue;
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
      }
    }
    first["parts"] = kept;
  }
}

std::string make_scratch() {
  const char* base = std::getenv("HICCUP_SCRATCH_DIR");
  std::string tmpl = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/hiccup-agent-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("cannot create a scratch folder " + tmpl);
  return tmpl;
}

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string base_url_variable(const std::string& provider) {
  if (provider == "gemini") return "GOOGLE_GEMINI_BASE_URL";
  if (provider == "openai-chat" || provider == "openai-responses") return "OPENAI_BASE_URL";
  if (provider == "anthropic") return "ANTHROPIC_BASE_URL";
  return "";
}

}  // namespace

const std::vector<BlackBoxCheck>& black_box_verdicts() {
  static const std::vector<BlackBoxCheck> kVerdicts = {
      {"scenario-coverage", "the agent requested every turn a correct client reaches in the scenario (an agent that never contacts the server fails every scenario that scripts a turn)"},
      {"outcome-agreement", "where a correct client completes, the agent reports success (its exit code and output) and its output shows the final text"},
      {"liveness", "the agent exits within its timeout"},
  };
  return kVerdicts;
}

const std::vector<BlackBoxCheck>& not_applicable_checks() {
  static const std::vector<BlackBoxCheck> kNa = {
      {"clean-output", "unless the recipe says where its JSON-lines output shows the model's text (output.shown_text), hiccup cannot tell shown text from the rest of what a CLI prints"},
      {"expect.error", "the error code (retries_exhausted, content_filter, ...) lives inside the runtime; the exit code only says success or failure"},
      {"expect.requests", "the count follows the scenario's runtime budget and schedule, which an agent does not use; scenario-coverage and bounded-retries judge its requests"},
      {"expect.waited_s", "virtual backoff of the reference runtime; an agent's real gaps are judged against Retry-After instead"},
  };
  return kNa;
}

std::vector<std::string> not_applicable_invariants() {
  std::vector<std::string> out;
  for (const BlackBoxCheck& c : not_applicable_checks()) out.push_back(c.name);
  return out;
}

std::vector<std::string> AgentCaseResult::violated() const {
  std::set<std::string> names;
  for (const Violation& v : violations) names.insert(v.invariant);
  for (const Violation& v : differences) names.insert(v.invariant);
  return {names.begin(), names.end()};
}

std::vector<std::string> check_agent_scenario(const Scenario& scenario, const Recipe& recipe) {
  std::vector<std::string> problems;
  if (scenario.script.provider != recipe.provider) {
    problems.push_back("/provider: agent " + recipe.name + " speaks " + recipe.provider + ", the scenario " +
                       scenario.script.provider);
  }
  if (!scenario.session.empty()) {
    problems.push_back("/session: an external agent is run headless with one prompt; sessions of several prompts "
                       "play against the reference runtime only");
  }
  if (scenario.interrupt) {
    problems.push_back("/interrupt: a scripted user interrupt plays against the reference runtime only (an external "
                       "agent runs headless, with no user to press Esc)");
  }
  for (std::size_t t = 0; t < scenario.script.turns.size(); ++t) {
    const auto& attempts = scenario.script.turns[t].attempts;
    for (std::size_t a = 0; a < attempts.size(); ++a) {
      for (std::size_t i = 0; i < attempts[a].events.size(); ++i) {
        const auto* c = std::get_if<mock::CallEvent>(&attempts[a].events[i]);
        if (c == nullptr || !has_placeholder(c->args) || recipe.tool_name.empty()) continue;
        const std::string at = "/turns/" + std::to_string(t) + "/attempts/" + std::to_string(a) + "/events/" +
                               std::to_string(i) + "/call";
        if (c->name != recipe.tool_name) {
          problems.push_back(at + "/name: the ledger placeholder needs agent " + recipe.name + "'s shell tool \"" +
                             recipe.tool_name + "\", found \"" + c->name + "\"");
        } else if (!c->args.contains(recipe.tool_command_arg) || !has_placeholder(c->args[recipe.tool_command_arg])) {
          problems.push_back(at + "/args: the ledger placeholder belongs in \"" + recipe.tool_command_arg +
                             "\" (the command " + recipe.tool_name + " runs)");
        }
      }
    }
  }
  return problems;
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

void judge_agent_run(AgentCaseResult& result, const Recipe& recipe, const std::string& cap_message, bool strict) {
  judge_black_box(result, recipe, token_executions(result.ledger, result.journal, result.scenario), cap_message, strict);
}

void judge_black_box(AgentCaseResult& result, const Recipe& recipe, const std::vector<rut::LedgerEntry>& executions,
                     const std::string& cap_message, bool strict) {
  const Scenario& s = result.scenario;
  mock::Journal journal = result.journal;
  strip_preamble(journal, s.prompt);

  rut::RunResult run;
  const bool success_exit = result.process.started && !result.process.timed_out &&
                            std::find(recipe.success_exit_codes.begin(), recipe.success_exit_codes.end(),
                                      result.process.exit_code) != recipe.success_exit_codes.end();
  std::string marker;
  for (const std::string& m : recipe.failure_markers) {
    if (result.output.find(m) != std::string::npos) {
      marker = json(m).dump();
      break;
    }
  }
  // The output's JSON lines, parsed once for the failure rules and the shown text.
  const std::vector<json> lines = recipe.failure_lines.empty() && recipe.shown_text_pointer.empty()
                                      ? std::vector<json>{}
                                      : json_object_lines(result.output);
  for (const json& j : lines) {
    if (!marker.empty()) break;
    for (const auto& rule : recipe.failure_lines) {
      if (holds(j, rule)) {
        marker = "a line with " + json(rule).dump();
        break;
      }
    }
  }
  run.completed = success_exit && marker.empty();
  result.completed = run.completed;
  run.final_history = nullptr;  // unknown from outside
  run.requests = static_cast<int>(std::count_if(journal.begin(), journal.end(), is_model_request));
  run.ledger = executions;

  // A correct client of this scenario with the agent's own attempt budget (no fallback model: an
  // agent has none that the scenario knows of).
  Scenario correct_client = s;
  correct_client.runtime = RuntimeSettings{};
  correct_client.runtime.max_attempts = recipe.max_attempts;
  const OracleResult correct = predict(correct_client);
  const bool expect_completed = s.expect.outcome ? *s.expect.outcome == "completed" : correct.completed;
  const std::string expect_text = s.expect.final_text ? *s.expect.final_text
                                  : correct.completed ? correct.final_text : std::string();

  result.violations.clear();
  if (!cap_message.empty()) result.violations.push_back({"liveness", cap_message});
  const Evidence evidence{s, run, journal, recipe.max_attempts, "", /*real_time=*/true};
  for (Violation& v : check_invariants(evidence)) {
    if (v.invariant == "clean-output") continue;  // judged below from the recipe's shown text
    // Its failure branch asks for a clear error code, which only the runtime's insides hold.
    if (v.invariant == "honest-outcome" && (!run.completed || !cap_message.empty())) continue;
    result.violations.push_back(std::move(v));
  }
  if (const auto shown = shown_text(lines, recipe); shown && cap_message.empty()) {
    std::string committed;
    for (const mock::JournalEntry& e : journal) {
      if (e.completed) committed += e.delivered_text;
    }
    if (*shown != committed) {
      const std::string seen = shown->empty() ? "no line of the agent's output matched the recipe's shown_text rule (pointer " +
                                                    recipe.shown_text_pointer + ")"
                                              : "the agent showed " + json(*shown).dump();
      result.violations.push_back({"clean-output", seen + ", but only completed attempts' text " + json(committed).dump() +
                                                       " should be shown"});
    }
  }
  const bool claimed_false_success = std::any_of(result.violations.begin(), result.violations.end(),
                                                 [](const Violation& v) { return v.invariant == "honest-outcome"; });

  const std::string shown_as = recipe.output_stream == "stderr" ? "its stderr" : "its output";
  std::string exit_text = "exited " + std::to_string(result.process.exit_code);
  if (auto it = recipe.exit_code_meanings.find(result.process.exit_code); it != recipe.exit_code_meanings.end()) {
    exit_text += " (" + it->second + ")";
  }
  if (cap_message.empty()) {
    if (run.requests == 0 && correct.turns_reached > 0) {
      result.violations.push_back(
          {"scenario-coverage", "the agent made no request to the mock server; a correct client requests turn" +
                                    std::string(correct.turns_reached > 1 ? "s 0-" + std::to_string(correct.turns_reached - 1)
                                                                          : " 0") +
                                    " of this scenario (was it pointed at the base URL, in the " +
                                    s.script.provider + " format?)"});
    } else {
      std::set<int> requested;
      for (const mock::JournalEntry& e : journal) {
        if (is_model_request(e) && e.turn >= 0) requested.insert(e.turn);
      }
      for (int t = 0; t < correct.turns_reached; ++t) {
        if (requested.contains(t)) continue;
        result.violations.push_back({"scenario-coverage",
                                     "turn " + std::to_string(t) + " was never requested, but a correct client reaches it (" +
                                         std::to_string(correct.turns_reached) + " turn(s), " +
                                         (correct.completed ? "then completes" : "then fails: " + correct.error) + ")"});
        break;
      }
    }
    if (expect_completed && !run.completed) {
      std::string why = "the agent " + exit_text;
      if (success_exit && !marker.empty()) why += ", but " + shown_as + " reports a failure (" + marker + ")";
      result.violations.push_back({"outcome-agreement", "a correct client completes this scenario; " + why});
    } else if (expect_completed && !shows(result.output, expect_text)) {
      result.violations.push_back({"outcome-agreement", "the agent reports success, but " + shown_as +
                                                            " does not show the final text " + json(expect_text).dump()});
    } else if (!expect_completed && run.completed && !claimed_false_success) {
      std::string shown;
      for (const mock::JournalEntry& e : journal) {
        if (!e.delivered_text.empty() && shows(result.output, e.delivered_text)) shown = e.delivered_text;
      }
      result.violations.push_back(
          {"honest-outcome", "the agent " + exit_text + " and reports success" +
                                 (shown.empty() ? std::string() : ", showing " + json(shown).dump()) +
                                 ", but a correct client cannot complete this scenario (" +
                                 (correct.error.empty() ? std::string("it fails") : correct.error) + ")"});
    }
  }
  const std::vector<std::string> unjudged = unjudged_expect_fields(s.expect);
  // A killed agent's ledger and outcome are cut short: liveness says why, the expect fields
  // would only echo it.
  for (Violation& v : cap_message.empty() ? check_expect(evidence) : std::vector<Violation>{}) {
    // outcome and final text are judged above, as outcome-agreement and honest-outcome.
    if (v.invariant == "expect.outcome" || v.invariant == "expect.final_text") continue;
    if (std::find(unjudged.begin(), unjudged.end(), v.invariant) == unjudged.end()) {
      result.violations.push_back(std::move(v));
    }
  }
  if (!result.stray_ledger_lines.empty()) {
    result.violations.push_back({"at-most-once", "the ledger holds " + std::to_string(result.stray_ledger_lines.size()) +
                                                     " line(s) that are not hiccup tokens, first: " +
                                                     json(result.stray_ledger_lines.front()).dump()});
  }
  result.not_applicable.clear();
  if (recipe.shown_text_pointer.empty()) result.not_applicable.push_back("clean-output");

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
  for (const std::string& f : unjudged) result.not_applicable.push_back(f);

  // The review transcript for report.html's timeline: the journal as the server saw it, each
  // ledger execution under the request that delivered its call, the outcome and shown text. No
  // runtime lane (a black box's retries are only visible as its requests) and no virtual times.
  if (const auto shown = shown_text(lines, recipe)) run.final_text = *shown;
  if (!run.completed) run.error_message = "the agent " + (marker.empty() ? exit_text : exit_text + ", " + shown_as + " reports a failure (" + marker + ")");
  result.transcript = make_review_transcript(s, run, journal, result.violations, {});
}

AgentCaseResult run_agent_scenario(const Scenario& scenario, const Recipe& recipe, const AgentRunOptions& options) {
  const Stopwatch stopwatch;
  AgentCaseResult result;
  result.scenario = scenario;
  result.agent = recipe.name;
  auto finish = [&]() -> AgentCaseResult& {
    result.wall_ms = stopwatch.elapsed_ms();
    return result;
  };

  std::string binary;
  if (!recipe.binary.empty()) {
    binary = fs::path(recipe.binary).is_absolute() ? recipe.binary : repo_root() + "/" + recipe.binary;
    if (access(binary.c_str(), X_OK) != 0) {
      result.harness_error = "agent " + recipe.name + " is not installed: " + binary +
                             " is missing or not executable; run " +
                             (recipe.install_hint.empty() ? std::string("scripts/install_agents.sh") : recipe.install_hint);
      return finish();
    }
  }
  for (const std::string& p : check_agent_scenario(scenario, recipe)) {
    result.harness_error += (result.harness_error.empty() ? "" : "; ") + p;
  }
  if (!result.harness_error.empty()) return finish();

  try {
    const fs::path scratch = make_scratch();
    result.scratch_dir = scratch.string();
    const fs::path home = scratch / "home", tmp = scratch / "tmp", work = scratch / "work";
    fs::create_directories(home);
    fs::create_directories(tmp);
    fs::create_directories(work);
    const std::string ledger = (scratch / "ledger").string();
    const std::string out_path = (scratch / "stdout").string(), err_path = (scratch / "stderr").string();

    mock::ScriptEngine engine(scenario.script, [ledger](int turn, int attempt, mock::Attempt& a) {
      substitute_ledger(turn, attempt, a, ledger);
    });
    mock::ServerOptions server_options;
    server_options.max_delay_ms = -1;       // real idle_ms / delay_ms: clients tell cuts apart by timing
    server_options.stall_ms_per_s = 1000;   // a virtual second of stall is a real second
    mock::MockHttpServer server(engine, server_options);
    server.start();

    const std::map<std::string, std::string> vars = {
        {"binary", binary}, {"prompt", scenario.prompt}, {"model", recipe.model},
        {"base_url", server.base_url()}, {"home", home.string()}, {"tmpdir", tmp.string()},
        {"workdir", work.string()}, {"ledger", ledger}};
    for (const auto& [rel, content] : recipe.home_files) {
      if (rel.back() == '/') {
        fs::create_directories(home / rel);
        continue;
      }
      const json expanded = expand_json(content, vars);
      write_file(home / rel, expanded.is_string() ? expanded.get<std::string>() : expanded.dump(2) + "\n");
    }

    ProcessSpec spec;
    for (const std::string& a : recipe.argv) spec.argv.push_back(expand(a, vars));
    const char* path = std::getenv("PATH");
    std::map<std::string, std::string> env = {
        {"PATH", path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin"},
        {"HOME", home.string()}, {"TMPDIR", tmp.string()}, {"LANG", "C.UTF-8"},
        {"HICCUP_BASE_URL", server.base_url()}, {"HICCUP_PROMPT", scenario.prompt},
        {"HICCUP_LEDGER", ledger}, {"HICCUP_SCENARIO", scenario.name},
        {"HICCUP_INVOKE_DIR", fs::current_path().string()}};
    if (!recipe.model.empty()) env["HICCUP_MODEL"] = recipe.model;
    if (const std::string var = base_url_variable(scenario.script.provider); !var.empty()) env[var] = server.base_url();
    for (const auto& [k, v] : recipe.env) env[k] = expand(v, vars);
    for (const auto& [k, v] : env) spec.env.push_back(k + "=" + v);
    spec.cwd = work.string();
    spec.stdout_path = out_path;
    spec.stderr_path = err_path;
    spec.timeout_s = options.timeout_s > 0 ? options.timeout_s : recipe.timeout_s;

    result.process = run_process(spec);
    const bool strict = options.strict;
    server.stop();
    result.journal = engine.journal();
    result.ledger = read_ledger(ledger, &result.stray_ledger_lines);
    result.output_tail = "stderr:\n" + tail_of(err_path, 8) + "stdout:\n" + tail_of(out_path, 8);
    {
      std::ifstream shown(recipe.output_stream == "stderr" ? err_path : out_path, std::ios::binary);
      std::stringstream text;
      text << shown.rdbuf();
      result.output = text.str();
    }

    const bool no_request = std::none_of(result.journal.begin(), result.journal.end(), is_model_request);
    if (server.internal_errors() > 0) {
      // The mock server answered some request 500 after an exception of its own: what the agent
      // did next says nothing about it.
      result.harness_error = "harness: the mock server met " + std::to_string(server.internal_errors()) +
                             " internal error(s) while the agent ran";
      result.internal_error = true;
    } else if (!result.process.started) {
      result.harness_error = "agent " + recipe.name + ": " + result.process.error;
    } else if (!result.process.timed_out && no_request &&
               (result.process.exit_code == 126 || result.process.exit_code == 127)) {
      // The shell's "cannot execute" / "not found": the agent never ran, which is no verdict on it.
      result.harness_error = "agent " + recipe.name + " could not start (exit " + std::to_string(result.process.exit_code) +
                             ": a command was not found or not executable; it runs in a scratch folder, so a relative "
                             "path needs $HICCUP_INVOKE_DIR, and its PATH is hiccup's)\n" + tail_of(err_path, 4);
    } else {
      std::string cap;
      if (result.process.timed_out) {
        std::ostringstream m;
        m << "agent " << recipe.name << " did not exit within " << spec.timeout_s << " s and was killed ("
          << result.journal.size() << " request(s) seen)";
        cap = m.str();
      }
      judge_agent_run(result, recipe, cap, strict);
    }

    if (!options.output_dir.empty()) {
      const fs::path dir = fs::path(options.output_dir) / scenario.name;
      fs::create_directories(dir);
      for (const char* f : {"stdout", "stderr", "ledger"}) {
        std::error_code ec;
        fs::copy_file(scratch / f, dir / f, fs::copy_options::overwrite_existing, ec);
      }
      json j = json::array();
      for (const auto& e : result.journal) j.push_back(mock::journal_entry_to_json(e));
      write_file(dir / "journal.json", j.dump(2) + "\n");
    }
    if (!options.keep_scratch) {
      std::error_code ec;
      fs::remove_all(scratch, ec);
    }
  } catch (const std::exception& e) {
    result.harness_error = "harness: " + mock::json_text::escape_input(e.what(), 1000);
    result.internal_error = true;
  }
  return finish();
}

ReportCase to_report_case(const AgentCaseResult& r, const Recipe& recipe, std::string classname) {
  ReportCase c;
  c.name = r.scenario.name;
  c.classname = std::move(classname);
  c.passed = r.passed();
  c.violations = r.violations;
  c.wall_ms = r.wall_ms;
  c.extra = {{"agent", r.agent}, {"outcome", r.completed ? "completed" : "failed"},
             {"verdict", !r.harness_error.empty() ? "error" : !r.violations.empty() ? "fail"
                         : !r.differences.empty() ? "difference" : "pass"},
             {"exit_code", r.process.exit_code}, {"timed_out", r.process.timed_out},
             {"agent_wall_ms", r.process.wall_ms}, {"not_applicable", r.not_applicable}};
  if (auto it = recipe.exit_code_meanings.find(r.process.exit_code); it != recipe.exit_code_meanings.end()) {
    c.extra["exit_meaning"] = it->second;
  }
  int requests = 0;
  for (const auto& e : r.journal) requests += is_model_request(e) ? 1 : 0;
  c.extra["requests"] = requests;
  if (!r.differences.empty()) {
    c.extra["differences"] = json::array();
    for (const Violation& v : r.differences) c.extra["differences"].push_back(violation_to_json(v));
  }
  c.extra["ledger"] = json::array();
  for (const LedgerToken& t : r.ledger) c.extra["ledger"].push_back(token_text(t));
  if (!r.scenario.source_path.empty()) c.extra["file"] = r.scenario.source_path;
  if (!r.scenario.tags.empty()) c.extra["tags"] = r.scenario.tags;
  c.transcript = r.transcript;
  if (!r.transcript.is_null()) c.extra["scenario_text"] = write_scenario(r.scenario);
  std::ostringstream detail;
  if (!r.harness_error.empty()) {
    detail << "error: " << r.harness_error;
  } else {
    detail << "agent " << r.agent << " exited " << r.process.exit_code;
    if (c.extra.contains("exit_meaning")) detail << " (" << c.extra["exit_meaning"].get<std::string>() << ")";
    if (r.process.timed_out) detail << " after its timeout";
    detail << "; ledger " << r.ledger.size() << " execution(s)\n" << r.output_tail;
  }
  c.detail = detail.str();
  return c;
}

}  // namespace harness::agents
