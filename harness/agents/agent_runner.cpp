// run_agent_scenario and the black-box judge. The judge turns the ledger and the exit code into the
// same rut::RunResult shape the reference runtime produces, so the lead's invariant checkers judge
// external agents unchanged; only checks that need the runtime's insides are left out (n/a).
#include "harness/agents/agent_runner.h"
#include "harness/stopwatch.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "mock_server/http_server.h"
#include "mock_server/script_engine.h"

namespace harness::agents {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// `expect` fields a black box cannot show: the error code, shown text and virtual waits live
/// inside the runtime (its exit code only says completed or failed), and the request count follows
/// the scenario's `runtime` budget, which an external agent does not use.
std::vector<std::string> unjudged_expect_fields(const Expect& x) {
  std::vector<std::string> out;
  if (x.error) out.push_back("expect.error");
  if (x.final_text) out.push_back("expect.final_text");
  if (x.requests) out.push_back("expect.requests");
  if (x.waited_s) out.push_back("expect.waited_s");
  return out;
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

/// An agent's first user content may carry its own context before the prompt (gemini-cli sends a
/// `<session_context>` text part first). When the prompt is one of that content's text parts, the
/// other text parts are dropped for judging, so history-integrity compares turns, not preambles.
void strip_preamble(mock::Journal& journal, const std::string& prompt) {
  for (mock::JournalEntry& e : journal) {
    if (!e.contents.is_array() || e.contents.empty()) continue;
    json& first = e.contents[0];
    if (first.value("role", "") != "user" || !first.contains("parts") || !first["parts"].is_array()) continue;
    const json& parts = first["parts"];
    const bool has_prompt = std::any_of(parts.begin(), parts.end(), [&](const json& p) {
      return p.is_object() && p.contains("text") && p["text"] == prompt;
    });
    if (!has_prompt) continue;
    json kept = json::array();
    for (const json& p : parts) {
      if (p.is_object() && p.contains("text") && p["text"] != prompt) continue;
      kept.push_back(p);
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

const std::vector<std::string>& not_applicable_invariants() {
  static const std::vector<std::string> kNa = {"honest-outcome", "clean-output",
                                               "bounded-retries.retry-after-timing"};
  return kNa;
}

std::vector<std::string> AgentCaseResult::violated() const {
  std::set<std::string> names;
  for (const Violation& v : violations) names.insert(v.invariant);
  return {names.begin(), names.end()};
}

std::vector<std::string> check_agent_scenario(const Scenario& scenario, const Recipe& recipe) {
  std::vector<std::string> problems;
  if (scenario.script.provider != recipe.provider) {
    problems.push_back("/provider: agent " + recipe.name + " speaks " + recipe.provider + ", the scenario " +
                       scenario.script.provider);
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

void judge_agent_run(AgentCaseResult& result, const Recipe& recipe, const std::string& cap_message) {
  const Scenario& s = result.scenario;
  mock::Journal journal = result.journal;
  strip_preamble(journal, s.prompt);

  rut::RunResult run;
  run.completed = result.process.started && !result.process.timed_out &&
                  std::find(recipe.success_exit_codes.begin(), recipe.success_exit_codes.end(),
                            result.process.exit_code) != recipe.success_exit_codes.end();
  result.completed = run.completed;
  run.final_history = nullptr;  // unknown from outside
  run.requests = static_cast<int>(std::count_if(journal.begin(), journal.end(), is_model_request));
  for (const LedgerToken& t : result.ledger) {
    rut::LedgerEntry l;
    l.call_index = t.call;
    l.request_seq = -1;
    for (const mock::JournalEntry& e : journal) {
      if (e.turn == t.turn && e.attempt == t.attempt) l.request_seq = static_cast<int>(e.index);
    }
    // Name and args as scripted (placeholder unexpanded), so `expect.executions` reads as written.
    l.name = "?";
    if (t.turn < static_cast<int>(s.script.turns.size()) && !s.script.turns[t.turn].attempts.empty()) {
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
    run.ledger.push_back(std::move(l));
  }

  const Evidence evidence{s, run, journal, recipe.max_attempts, cap_message};
  static const std::set<std::string> kSkip = {"honest-outcome", "clean-output"};
  result.violations.clear();
  for (Violation& v : check_invariants(evidence)) {
    if (!kSkip.contains(v.invariant)) result.violations.push_back(std::move(v));
  }
  const std::vector<std::string> unjudged = unjudged_expect_fields(s.expect);
  for (Violation& v : check_expect(evidence)) {
    if (std::find(unjudged.begin(), unjudged.end(), v.invariant) == unjudged.end()) {
      result.violations.push_back(std::move(v));
    }
  }
  if (!result.stray_ledger_lines.empty()) {
    result.violations.push_back({"at-most-once", "the ledger holds " + std::to_string(result.stray_ledger_lines.size()) +
                                                     " line(s) that are not hiccup tokens, first: " +
                                                     json(result.stray_ledger_lines.front()).dump()});
  }
  result.not_applicable = not_applicable_invariants();
  for (const std::string& f : unjudged) result.not_applicable.push_back(f);
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
      write_file(home / rel, content.is_string() ? content.get<std::string>() : content.dump(2) + "\n");
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
    server.stop();
    result.journal = engine.journal();
    result.ledger = read_ledger(ledger, &result.stray_ledger_lines);
    result.output_tail = "stderr:\n" + tail_of(err_path, 8) + "stdout:\n" + tail_of(out_path, 8);

    if (!result.process.started) {
      result.harness_error = "agent " + recipe.name + ": " + result.process.error;
    } else {
      std::string cap;
      if (result.process.timed_out) {
        std::ostringstream m;
        m << "agent " << recipe.name << " did not exit within " << spec.timeout_s << " s and was killed";
        cap = m.str();
      }
      judge_agent_run(result, recipe, cap);
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
    result.harness_error = std::string("harness: ") + e.what();
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
             {"exit_code", r.process.exit_code}, {"timed_out", r.process.timed_out},
             {"agent_wall_ms", r.process.wall_ms}, {"not_applicable", r.not_applicable}};
  if (auto it = recipe.exit_code_meanings.find(r.process.exit_code); it != recipe.exit_code_meanings.end()) {
    c.extra["exit_meaning"] = it->second;
  }
  int requests = 0;
  for (const auto& e : r.journal) requests += is_model_request(e) ? 1 : 0;
  c.extra["requests"] = requests;
  c.extra["ledger"] = json::array();
  for (const LedgerToken& t : r.ledger) c.extra["ledger"].push_back(token_text(t));
  if (!r.scenario.source_path.empty()) c.extra["file"] = r.scenario.source_path;
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
