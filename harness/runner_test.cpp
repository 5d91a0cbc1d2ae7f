// The runner end to end over the bundled suite: it passes without defects on both transports with
// identical verdicts and digests, every defect is caught by the scenarios that say they catch it,
// and no-pairing-guard is pinned in the combination that makes it visible.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <set>

#include "harness/explore/explorer.h"
#include "harness/oracle.h"
#include "harness/runner.h"
#include "harness/scenario_io.h"
#include "harness/transcript.h"
#include "runtime_under_test/defects.h"

namespace harness {
namespace {

std::vector<Scenario> load_suite() {
  std::vector<LoadProblem> problems;
  const auto files = collect_scenario_files({std::string(HICCUP_SOURCE_DIR) + "/scenarios"}, problems);
  REQUIRE(problems.empty());
  std::vector<Scenario> out;
  for (const auto& f : files) {
    LoadResult r = load_scenario_file(f);
    INFO(f);
    REQUIRE(r.problems.empty());
    out.push_back(*r.scenario);
  }
  REQUIRE(out.size() >= 25);
  return out;
}

RunOptions memory() {
  RunOptions o;
  o.transport = TransportKind::kMemory;
  return o;
}

std::string describe(const CaseResult& r) {
  std::string s = r.scenario.name + ":";
  for (const auto& v : r.violations) s += "\n  " + v.invariant + ": " + v.message;
  return s;
}

bool has_violation(const CaseResult& r, std::string_view invariant) {
  for (const auto& v : r.violations) {
    if (v.invariant == invariant) return true;
  }
  return false;
}

/// The suite with every scenario played in `provider`'s wire format (as `hiccup run --provider`).
std::vector<Scenario> load_suite_as(const std::string& provider) {
  std::vector<Scenario> suite = load_suite();
  // As `hiccup run --provider`: a scenario the format cannot say (a per-day quota in Anthropic) is skipped.
  std::erase_if(suite, [&](const Scenario& s) { return unplayable_in(s, provider).has_value(); });
  for (Scenario& s : suite) s.script.provider = provider;
  return suite;
}

void check_suite_passes(const std::string& provider, const std::string& recovery = "hold") {
  RunOptions raw;  // the first HTTP run as it came: the equivalence is what is tested here
  raw.http_slower_reruns = 0;
  for (const Scenario& original : load_suite_as(provider)) {
    const Scenario s = played_under(original, recovery);  // as `hiccup run --recovery`
    const CaseResult http = run_scenario(s, raw);
    const CaseResult mem = run_scenario(s, memory());
    INFO(provider << " " << describe(http));
    INFO(describe(mem));
    CHECK(http.passed());
    CHECK(mem.passed());
    CHECK(http.digest == mem.digest);
    // Evidence that the format was really spoken: every scripted request was answered by it.
    for (const auto& e : http.journal) CHECK(e.provider == provider);
  }
}

TEST_CASE("the suite passes without defects over HTTP and in memory, with identical digests: gemini") {
  check_suite_passes("gemini");
}
TEST_CASE("the suite passes without defects over HTTP and in memory, with identical digests: openai-chat") {
  check_suite_passes("openai-chat");
}
TEST_CASE("the suite passes without defects over HTTP and in memory, with identical digests: openai-responses") {
  check_suite_passes("openai-responses");
}
TEST_CASE("the suite passes without defects over HTTP and in memory, with identical digests: anthropic") {
  check_suite_passes("anthropic");
}

TEST_CASE("the suite passes under the continue design over HTTP and in memory, with identical digests: gemini") {
  check_suite_passes("gemini", "continue");
}
TEST_CASE("the suite passes under the continue design over HTTP and in memory, with identical digests: openai-chat") {
  check_suite_passes("openai-chat", "continue");
}
TEST_CASE("the suite passes under the continue design over HTTP and in memory, with identical digests: openai-responses") {
  check_suite_passes("openai-responses", "continue");
}
TEST_CASE("the suite passes under the continue design over HTTP and in memory, with identical digests: anthropic") {
  check_suite_passes("anthropic", "continue");
}

TEST_CASE("played_under replaces only the expect fields the designs disagree on, and leaves pinned scenarios alone") {
  const std::vector<Scenario> suite = load_suite();
  const auto it = std::find_if(suite.begin(), suite.end(),
                               [](const Scenario& s) { return s.name == "midstream-reset-after-call"; });
  REQUIRE(it != suite.end());
  const Scenario cont = played_under(*it, "continue");
  CHECK(cont.runtime.recovery == "continue");
  CHECK(cont.expect.requests == 2);                    // the cut turn is kept: no retry
  CHECK(cont.expect.final_text == it->expect.final_text);  // the designs agree: the author's value
  CHECK(cont.expect.executions == it->expect.executions);
  CHECK(played_under(cont, "hold") == cont);           // pinned now
  CHECK(played_under(*it, "hold") == *it);             // already hold
}

TEST_CASE("the same scenario run twice gives the same digest") {
  const auto suite = load_suite();
  for (std::size_t i = 0; i < suite.size(); i += 5) {
    CHECK(run_scenario(suite[i], memory()).digest == run_scenario(suite[i], memory()).digest);
  }
}

TEST_CASE("an abandoned run ends at its next request, capped") {
  const auto suite = load_suite();
  std::atomic<bool> abandoned{false};
  for (const TransportKind transport : {TransportKind::kMemory, TransportKind::kHttp}) {
    RunOptions o = memory();
    o.transport = transport;
    o.abandoned = &abandoned;
    abandoned = false;
    const CaseResult whole = run_scenario(suite.front(), o);
    CHECK_FALSE(whole.cap_reached);
    CHECK(whole.run.requests > 0);
    abandoned = true;
    const CaseResult cut = run_scenario(suite.front(), o);
    CHECK(cut.cap_reached);
    CHECK(cut.run.requests == 0);
    CHECK(cut.journal.empty());
  }
}

/// The suite's first scenario with its first attempt replaced: "Hi", a stop, and a stall of
/// `seconds` before the first event.
Scenario stalled_scenario(double seconds) {
  Scenario s = load_suite().front();
  REQUIRE_FALSE(s.script.turns.empty());
  mock::Attempt& a = s.script.turns[0].attempts[0];
  a = mock::Attempt{};
  a.events = {mock::TextEvent{"Hi"}, mock::FinishEvent{}};
  a.fault = mock::Fault(mock::StallFault{0, seconds, std::nullopt});
  return s;
}

TEST_CASE("an HTTP run that differs from its in-memory run is judged on a slower re-run that agrees") {
  // A reset after 25 ms of silence (idle_ms, the runner's cap on it) while the real idle timeout is
  // 5 ms: over HTTP the runtime gives up before the reset arrives (idle_timeout, not reset), the
  // scheduling delay of a loaded machine made large. In memory there is no real time: the reset.
  Scenario s = stalled_scenario(0);
  mock::Attempt& a = s.script.turns[0].attempts[0];
  a.fault = mock::Fault(mock::ResetFault{1, 25, std::nullopt});
  s.script.turns[0].attempts.insert(s.script.turns[0].attempts.begin() + 1, mock::Attempt{});
  s.script.turns[0].attempts[1].events = {mock::TextEvent{"Hi"}, mock::FinishEvent{}};
  RunOptions o;
  o.stall_ms_per_s = 0.001;
  o.min_idle_timeout_ms = 5;  // x4: 20 ms, still short of the reset; x16: 80 ms
  const CaseResult in_memory = run_scenario(s, memory());
  INFO(describe(in_memory));
  o.http_slower_reruns = 0;
  const CaseResult first = run_scenario(s, o);
  CHECK(first.digest != in_memory.digest);  // the artifact is real: judged as it came, it differs
  CHECK(first.slower_reruns == 0);
  o.http_slower_reruns = 2;
  const CaseResult judged = run_scenario(s, o);
  CHECK(judged.digest == in_memory.digest);
  CHECK(judged.memory_digest == in_memory.digest);
  CHECK(judged.slower_reruns >= 1);
  CHECK_FALSE(judged.differs_from_memory);
  CHECK(judged.passed() == in_memory.passed());
  // A run that met no idle timeout is what it would be on an idle machine: not compared, not re-run.
  const CaseResult plain = run_scenario(stalled_scenario(0), RunOptions{});
  CHECK(plain.slower_reruns == 0);
  CHECK(plain.memory_digest.empty());
  // One that met a scripted idle timeout is compared, agrees, and is not re-run.
  Scenario timed_out = stalled_scenario(0);
  timed_out.script.turns[0].attempts[0].fault = mock::Fault(mock::StallFault{1, 1e6, std::nullopt});
  timed_out.script.turns[0].attempts.insert(timed_out.script.turns[0].attempts.begin() + 1, mock::Attempt{});
  timed_out.script.turns[0].attempts[1].events = {mock::TextEvent{"Hi"}, mock::FinishEvent{}};
  timed_out.runtime.idle_timeout_s = 2;
  const CaseResult compared = run_scenario(timed_out, RunOptions{});
  CHECK(compared.slower_reruns == 0);
  CHECK(compared.memory_digest == compared.digest);
}

TEST_CASE("an idle timeout far below a millisecond, set in code, ends over HTTP instead of hanging") {
  // The loader refuses idle_timeout_s below kMinIdleTimeoutS; set in code, 500 ms / 1e-307 s used
  // to overflow the real-time scale to infinity: the mock's stall and the runtime's read both
  // waited for ever. The stall (1 s, past the idle timeout) times out; the retry answers.
  Scenario s = stalled_scenario(1);
  s.script.turns[0].attempts.insert(s.script.turns[0].attempts.begin() + 1, mock::Attempt{});
  s.script.turns[0].attempts[1].events = {mock::TextEvent{"Hi"}, mock::FinishEvent{}};
  s.runtime.idle_timeout_s = 1e-307;
  RunOptions o;
  o.http_slower_reruns = 0;
  const CaseResult r = run_scenario(s, o);
  CHECK(r.run.requests >= 1);
  CHECK_FALSE(r.cap_reached);
  CHECK(run_scenario(s, memory()).run.completed);
}

TEST_CASE("a run past the runtime's turn cap ends with max_turns, as the oracle predicts and lint accepts") {
  // 33 turns that each call a tool, then an answer: the reference runtime stops after 32 turns
  // (docs/POLICY.md "Retries"). It broke honest-outcome, which did not know the error, and
  // expect.error "max_turns" was refused by the loader.
  // Per prompt, `calling` turns that each call a tool, then an answer.
  auto with_turns = [](std::vector<std::size_t> calling_per_prompt) {
    Scenario s = stalled_scenario(0);
    s.script.turns.clear();
    s.session.clear();
    s.interrupt.reset();
    for (std::size_t p = 0; p < calling_per_prompt.size(); ++p) {
      for (std::size_t t = 0; t < calling_per_prompt[p]; ++t) {
        mock::Attempt a;
        a.events = {mock::CallEvent{"step", nlohmann::json{{"n", s.script.turns.size()}}, ""}, mock::FinishEvent{}};
        s.script.turns.push_back(mock::Turn{{a}});
      }
      mock::Attempt done;
      done.events = {mock::TextEvent{"Done."}, mock::FinishEvent{}};
      s.script.turns.push_back(mock::Turn{{done}});
      if (p > 0) s.session.push_back(SessionPrompt{"next"});
    }
    s.expect = {};
    return s;
  };
  Scenario capped = with_turns({33});
  const CaseResult r = run_scenario(capped, memory());
  CHECK(r.violations.empty());
  CHECK_FALSE(r.run.completed);
  CHECK(r.run.error == "max_turns");
  CHECK(r.run.requests == kReferenceMaxTurns);
  const OracleResult predicted = predict(capped);
  CHECK(predicted.error == "max_turns");
  CHECK(predicted.requests == kReferenceMaxTurns);
  CHECK(predict(capped, std::nullopt).completed);  // a client without the cap (an external agent)
  capped.expect = oracle_expect(capped);
  CHECK(capped.expect.error == "max_turns");
  CHECK(run_scenario(capped, memory()).violations.empty());
  const LoadResult loaded = parse_scenario(write_scenario(capped), "capped.json");
  CHECK(loaded.problems.empty());
  // The cap counts one prompt's run: 31 calling turns and an answer, then 20 and an answer.
  const Scenario two = with_turns({31, 20});
  const CaseResult both = run_scenario(two, memory());
  CHECK(both.violations.empty());
  CHECK(both.run.completed);
  CHECK(predict(two).completed);
}

TEST_CASE("an HTTP run that differs from memory at every speed is judged on its slowest run and flagged") {
  // A reset after 200 ms of silence (the runner's cap on idle_ms raised to let it) with a real idle
  // timeout of 5 ms, re-run once at 4x (20 ms): over HTTP the runtime always times out first, so
  // the difference persists and is reported.
  Scenario s = stalled_scenario(0);
  s.script.turns[0].attempts[0].fault = mock::Fault(mock::ResetFault{1, 200, std::nullopt});
  s.script.turns[0].attempts.insert(s.script.turns[0].attempts.begin() + 1, mock::Attempt{});
  s.script.turns[0].attempts[1].events = {mock::TextEvent{"Hi"}, mock::FinishEvent{}};
  RunOptions o;
  o.stall_ms_per_s = 0.001;
  o.min_idle_timeout_ms = 5;
  o.max_delay_ms = 200;
  o.http_slower_reruns = 1;
  const CaseResult judged = run_scenario(s, o);
  CHECK(judged.slower_reruns == 1);
  CHECK(judged.differs_from_memory);
  CHECK_FALSE(judged.memory_digest.empty());
  CHECK(judged.digest != judged.memory_digest);
  CHECK(judged.memory_digest == run_scenario(s, memory()).digest);
}

TEST_CASE("an abandoned run over HTTP ends the stall it waits in") {
  // A 3000 s stall (it ends before the cap, so the watchdog waits it out: 60 s of real time at the
  // default 20 ms a virtual second) and a runtime without an idle timeout: the case waits in the
  // mock's pause until it is abandoned (explore over HTTP once waited up to 15 minutes here for
  // its last cases).
  Scenario s = stalled_scenario(3000);
  std::atomic<bool> abandoned{false};
  RunOptions o = memory();
  o.transport = TransportKind::kHttp;
  o.abandoned = &abandoned;
  o.extra_defects = {"no-idle-timeout"};
  auto run = std::async(std::launch::async, [&] { return run_scenario(s, o); });
  CHECK(run.wait_for(std::chrono::milliseconds(300)) == std::future_status::timeout);  // still waiting
  abandoned = true;
  REQUIRE(run.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  CHECK(run.get().cap_reached);
}

TEST_CASE("a hang over HTTP is judged once the stream outlasts every scripted silence, not the whole time left") {
  // A runtime with a 2 s idle timeout (so 250 real ms a virtual second over HTTP) and no idle limit
  // in force meets a day-long stall: waiting out the 600 virtual seconds left took 150 s of real
  // time (15 minutes at the default cap); the watch bound (watch_bound_s) is 2 s.
  // A stall of 1e15 s once overflowed the server's pause deadline and passed over HTTP as no stall.
  for (const double stall_s : {86400.0, 1e15}) {
    INFO("stall of " << stall_s << " s");
    Scenario s = stalled_scenario(stall_s);
    s.runtime.idle_timeout_s = 2;
    s.max_virtual_s = 600;
    RunOptions o = memory();
    o.extra_defects = {"no-idle-timeout"};
    const CaseResult in_memory = run_scenario(s, o);
    o.transport = TransportKind::kHttp;
    auto run = std::async(std::launch::async, [&] { return run_scenario(s, o); });
    REQUIRE(run.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
    const CaseResult over_http = run.get();
    CHECK(over_http.cap_reached);
    CHECK(has_violation(over_http, "liveness"));
    CHECK(over_http.digest == in_memory.digest);
  }
}

TEST_CASE("the watch bound lies beyond every stall that ends before the cap") {
  mock::Script script;
  auto stall = [](double seconds) {
    mock::Attempt a;
    a.events = {mock::FinishEvent{}};
    a.fault = mock::Fault(mock::StallFault{0, seconds, std::nullopt});
    return a;
  };
  CHECK(watch_bound_s(script, 3600, 2) == 2);          // no stall: the idle timeout as margin
  CHECK(watch_bound_s(script, 3600, rut::kNoIdleLimit) == 60);
  script.turns.push_back(mock::Turn{{stall(5), stall(86400)}});
  script.turns.push_back(mock::Turn{{stall(1000)}});
  CHECK(watch_bound_s(script, 3600, 2) == 1000 + 2);  // the day-long stall outlasts the cap
  CHECK(watch_bound_s(script, 100000, 2) == 86400 + 2);
  CHECK(watch_bound_s(script, 3600, 5000) == 1000 + 60);  // a margin of at most 60 s
  // A long stall that ends before the cap is waited out, not judged a hang.
  const Scenario s = stalled_scenario(1000);
  RunOptions o = memory();
  o.extra_defects = {"no-idle-timeout"};
  const CaseResult r = run_scenario(s, o);
  CHECK_FALSE(r.cap_reached);
  CHECK_FALSE(has_violation(r, "liveness"));
}

/// Whether `defect` has no site a stream in `provider` reaches, as the defect catalogue says
/// (rut::DefectInfo::unreachable_in, e.g. malformed-call-as-stop in Anthropic).
/// A defect whose site is one transport (rut::DefectInfo::transport, e.g. replay-lost-context in
/// the WebSocket transport) is invisible in memory too: the kill matrix over websocket counts it.
bool invisible_in(const std::string& provider, std::string_view defect) {
  for (const rut::DefectInfo& d : rut::defect_catalogue()) {
    if (d.name == defect) return (!d.unreachable_in.empty() && d.unreachable_in == provider) || !d.transport.empty();
  }
  return false;
}

void check_kill_matrix(const std::string& provider) {
  std::set<std::string> caught;
  for (const Scenario& s : load_suite_as(provider)) {
    for (const std::string& defect : s.catches) {
      if (invisible_in(provider, defect)) continue;
      RunOptions o = memory();
      o.extra_defects = {defect};
      const CaseResult r = run_scenario(s, o);
      INFO(s.name << " under " << defect << " in " << provider);
      CHECK_FALSE(r.passed());
      if (!r.passed()) caught.insert(defect);
    }
  }
  for (const rut::DefectInfo& d : rut::defect_catalogue()) {
    if (d.name == "no-pairing-guard") continue;  // invisible alone; pinned below
    if (invisible_in(provider, d.name)) continue;
    INFO("defect " << d.name << " is caught by no scenario of the suite in " << provider);
    CHECK(caught.contains(std::string(d.name)));
  }
}

TEST_CASE("kill matrix: every scenario fails under each defect it catches, and every defect is caught: gemini") {
  check_kill_matrix("gemini");
}
TEST_CASE("kill matrix: every scenario fails under each defect it catches, and every defect is caught: openai-chat") {
  check_kill_matrix("openai-chat");
}
TEST_CASE("kill matrix: every scenario fails under each defect it catches, and every defect is caught: openai-responses") {
  check_kill_matrix("openai-responses");
}
TEST_CASE("kill matrix: every scenario fails under each defect it catches, and every defect is caught: anthropic") {
  check_kill_matrix("anthropic");
}

TEST_CASE("kill matrix over websocket: every defect whose site is the WebSocket transport is caught by a suite scenario there") {
  // The other defects' kill matrix runs in memory (above), where a transport's own defect has no
  // site: each WebSocket-only defect is counted here, over the WebSocket mode, by the scenarios
  // that claim it; each of them passes there without it.
  std::set<std::string> caught;
  for (const Scenario& s : load_suite()) {
    if (s.script.provider != "openai-responses") continue;
    for (const std::string& defect : s.catches) {
      const auto info = std::find_if(rut::defect_catalogue().begin(), rut::defect_catalogue().end(),
                                     [&](const rut::DefectInfo& d) { return d.name == defect; });
      if (info == rut::defect_catalogue().end() || info->transport != "websocket") continue;
      RunOptions o;
      o.transport = TransportKind::kWebSocket;
      const CaseResult good = run_scenario(s, o);
      INFO(describe(good));
      CHECK(good.passed());
      o.extra_defects = {defect};
      const CaseResult bad = run_scenario(s, o);
      INFO(s.name << " under " << defect << " over websocket: " << describe(bad));
      CHECK_FALSE(bad.passed());
      if (!bad.passed()) caught.insert(defect);
      // In memory the defect has no site: the scenario passes with it on.
      RunOptions in_memory = memory();
      in_memory.extra_defects = {defect};
      CHECK(run_scenario(s, in_memory).passed());
    }
  }
  int websocket_only = 0;
  for (const rut::DefectInfo& d : rut::defect_catalogue()) {
    if (d.transport != "websocket") continue;
    ++websocket_only;
    INFO("defect " << d.name << " is caught by no scenario of the suite over websocket");
    CHECK(caught.contains(std::string(d.name)));
  }
  CHECK(websocket_only >= 1);
}

TEST_CASE("replay-lost-context: the tool result sent without its lost context is the provider's 400, and the session is dead") {
  Scenario s;
  for (const Scenario& candidate : load_suite()) {
    if (candidate.name == "websocket-forgotten-response-after-call") s = candidate;
  }
  REQUIRE(s.name == "websocket-forgotten-response-after-call");
  RunOptions o;
  o.transport = TransportKind::kWebSocket;
  o.extra_defects = {"replay-lost-context"};
  const CaseResult r = run_scenario(s, o);
  INFO(describe(r));
  bool dead = false;
  for (const auto& v : r.violations) {
    if (v.invariant == "pairing" && v.message.rfind("the session is dead: the API rejects request 1", 0) == 0 &&
        v.message.find("No tool call found for function call output") != std::string::npos) {
      dead = true;
    }
  }
  CHECK(dead);
  CHECK(has_violation(r, "no-rejected-request"));
  REQUIRE(r.journal.size() == 2);
  CHECK(r.journal[1].played == "rejected");
  CHECK(r.journal[1].transport == "websocket");
}

TEST_CASE("drop-reasoning-in-history kills the session with the provider's 400, which names the dropped reasoning") {
  Scenario base;
  for (const Scenario& candidate : load_suite()) {
    if (candidate.name == "reasoning-thinking-before-call") base = candidate;
  }
  REQUIRE(base.name == "reasoning-thinking-before-call");
  const std::vector<std::pair<std::string, std::string>> named = {
      {"anthropic", "Expected `thinking` or `redacted_thinking`, but found `tool_use`"},
      {"gemini", "Function call is missing a thought_signature in functionCall parts"},
      {"openai-responses", "of type 'function_call' was provided without its required 'reasoning' item"}};
  for (const auto& [provider, words] : named) {
    Scenario s = base;
    s.script.provider = provider;
    RunOptions o = memory();
    CHECK(run_scenario(s, o).passed());
    o.extra_defects = {"drop-reasoning-in-history"};
    const CaseResult r = run_scenario(s, o);
    INFO(provider << " " << describe(r));
    CHECK_FALSE(r.passed());
    bool named_in_pairing = false;
    for (const auto& v : r.violations) {
      if (v.invariant == "pairing" && v.message.rfind("the session is dead: the API rejects request 1", 0) == 0 &&
          v.message.find(words) != std::string::npos) {
        named_in_pairing = true;
      }
    }
    CHECK(named_in_pairing);
    CHECK(has_violation(r, "no-rejected-request"));
    CHECK(r.journal.at(1).played == "rejected");
  }
  // Chat Completions sends no reasoning: nothing to drop, the defect changes nothing.
  Scenario chat = base;
  chat.script.provider = "openai-chat";
  RunOptions o = memory();
  o.extra_defects = {"drop-reasoning-in-history"};
  CHECK(run_scenario(chat, o).passed());
}

TEST_CASE("no-pairing-guard is visible only together with keep-calls-on-retry") {
  Scenario s;
  for (const Scenario& candidate : load_suite()) {
    if (candidate.name == "midstream-reset-after-call") s = candidate;
  }
  REQUIRE(s.name == "midstream-reset-after-call");
  auto invariants_of = [&](std::vector<std::string> defects, TransportKind t) {
    RunOptions o;
    o.transport = t;
    o.extra_defects = std::move(defects);
    std::set<std::string> names;
    for (const auto& v : run_scenario(s, o).violations) names.insert(v.invariant);
    return names;
  };
  for (TransportKind t : {TransportKind::kMemory, TransportKind::kHttp}) {
    CHECK(invariants_of({"no-pairing-guard"}, t).empty());
    // The guard drops the orphan response: only the duplicate execution shows.
    const auto alone = invariants_of({"keep-calls-on-retry"}, t);
    CHECK(alone.contains("at-most-once"));
    CHECK_FALSE(alone.contains("pairing"));
    // Without the guard the server answers 400: pairing breaks too.
    const auto both = invariants_of({"keep-calls-on-retry", "no-pairing-guard"}, t);
    CHECK(both.contains("at-most-once"));
    CHECK(both.contains("pairing"));
    CHECK(both.contains("no-rejected-request"));
  }
}

TEST_CASE("a run never hangs: unbounded retries reach the request cap as bounded-retries") {
  Scenario s;
  s.name = "always-503";
  s.prompt = "go";
  s.script.turns = {mock::Turn{{mock::Attempt{503, std::nullopt, {}, std::nullopt, std::nullopt}}}};
  s.runtime.backoff_s = std::vector<double>{1};
  RunOptions o = memory();
  o.extra_defects = {"unbounded-retry"};
  const CaseResult r = run_scenario(s, o);
  CHECK(r.cap_reached);
  CHECK(r.run.requests == 64);
  REQUIRE_FALSE(r.violations.empty());
  CHECK(r.violations.front().invariant == "bounded-retries");
}

/// A stream that goes silent for a day after one text part, then a clean retry; capped at 60 s.
Scenario stall_forever(const std::string& provider, bool stream) {
  Scenario s;
  s.name = "stall-forever";
  s.prompt = "go";
  s.script.provider = provider;
  s.runtime.idle_timeout_s = 10;
  if (!stream) s.runtime.stream = false;
  s.max_virtual_s = 60;
  mock::Attempt first;
  first.events = {mock::TextEvent{"a"}, mock::FinishEvent{}};
  first.fault = mock::Fault(mock::StallFault{1, 86400, std::nullopt});
  mock::Attempt retry;
  retry.events = {mock::TextEvent{"b"}, mock::FinishEvent{}};
  s.script.turns = {mock::Turn{{first, retry}}};
  s.expect = oracle_expect(s);
  return s;
}

TEST_CASE("liveness: a runtime without an idle timeout is still waiting at the virtual-time cap, on both transports") {
  for (const std::string provider : {"gemini", "openai-chat", "openai-responses", "anthropic"}) {
    for (const bool stream : {true, false}) {
      for (const TransportKind transport : {TransportKind::kMemory, TransportKind::kHttp}) {
        if (transport == TransportKind::kHttp && (provider != "gemini" || !stream)) continue;  // real time: one is enough
        const Scenario s = stall_forever(provider, stream);
        INFO(provider << (stream ? " streaming" : " non-streaming") << " over " << transport_name(transport));
        RunOptions o;
        o.transport = transport;
        const CaseResult good = run_scenario(s, o);
        INFO(describe(good));
        CHECK(good.passed());
        o.extra_defects = {"no-idle-timeout"};
        const CaseResult bad = run_scenario(s, o);
        INFO(describe(bad));
        CHECK(bad.cap_reached);
        std::set<std::string> names;
        for (const Violation& v : bad.violations) names.insert(v.invariant);
        CHECK(names.contains("liveness"));
        CHECK_FALSE(names.contains("bounded-retries"));  // a hang, not a retry storm
        CHECK(bad.run.requests == 1);
      }
    }
  }
}

TEST_CASE("liveness: a stall shorter than the cap is only a delay, even without an idle timeout") {
  Scenario s = stall_forever("gemini", true);
  std::get<mock::StallFault>(*s.script.turns[0].attempts[0].fault).seconds = 30;
  RunOptions o = memory();
  o.extra_defects = {"no-idle-timeout"};
  const CaseResult r = run_scenario(s, o);
  CHECK_FALSE(r.cap_reached);
  for (const Violation& v : r.violations) CHECK(v.invariant != "liveness");
}

TEST_CASE("a session sends its prompts in order over one history, and history-integrity checks their order") {
  Scenario s;
  s.name = "session";
  s.prompt = "first";
  s.session = {SessionPrompt{"second"}};
  s.runtime.max_attempts = 2;
  s.runtime.backoff_s = std::vector<double>{1};
  mock::Attempt answer;
  answer.events = {mock::TextEvent{"one"}, mock::FinishEvent{}};
  mock::Attempt unavailable;
  unavailable.status = 503;
  s.script.turns = {mock::Turn{{answer}}, mock::Turn{{unavailable}}};
  s.expect = oracle_expect(s);
  CHECK(s.expect.requests == 3);
  for (const TransportKind transport : {TransportKind::kMemory, TransportKind::kHttp}) {
    RunOptions o;
    o.transport = transport;
    const CaseResult good = run_scenario(s, o);
    INFO(describe(good));
    CHECK(good.passed());
    REQUIRE(good.journal.size() == 3);
    // The second prompt's request: the first prompt, its answer, then the second prompt.
    const auto& contents = good.journal[1].contents;
    REQUIRE(contents.size() == 3);
    CHECK(contents[2]["parts"][0]["text"] == "second");
    // restart-run-on-failure starts the failed second prompt over from a fresh history.
    o.extra_defects = {"restart-run-on-failure"};
    const CaseResult bad = run_scenario(s, o);
    bool order = false;
    for (const Violation& v : bad.violations) {
      order |= v.invariant == "history-integrity" && v.message.find("the session's prompt 0 \"first\"") != std::string::npos;
    }
    INFO(describe(bad));
    CHECK(order);
  }
}

/// One non-streaming scenario: an attempt with `fault` (or `events` alone), then a clean retry.
Scenario non_streaming(const std::string& provider, std::vector<mock::Event> events, std::optional<mock::Fault> fault) {
  Scenario s;
  s.name = "non-streaming";
  s.prompt = "go";
  s.script.provider = provider;
  s.runtime.stream = false;
  s.runtime.idle_timeout_s = 10;
  mock::Attempt first;
  first.events = std::move(events);
  first.fault = std::move(fault);
  mock::Attempt retry;
  retry.events = {mock::TextEvent{"b"}, mock::FinishEvent{}};
  s.script.turns = {mock::Turn{{first, retry}}};
  s.expect = oracle_expect(s);
  return s;
}

TEST_CASE("non-streaming: every fault kind plays, is journaled and is judged as the oracle predicts, in every format") {
  const std::vector<mock::Fault> faults = {
      mock::DisconnectFault{1, 5}, mock::ResetFault{1, 20}, mock::EndFault{1}, mock::CutFault{1, 7},
      mock::ErrorEventFault{1, 503}, mock::ErrorEventFault{1, 400}, mock::MalformedFault{1},
      mock::StallFault{1, 20}, mock::StallFault{1, 2}};
  for (const char* provider : {"gemini", "openai-chat", "openai-responses", "anthropic"}) {
    for (const mock::Fault& f : faults) {
      const Scenario s = non_streaming(provider, {mock::TextEvent{"a"}, mock::FinishEvent{}}, f);
      const CaseResult http = run_scenario(s, RunOptions{});
      const CaseResult mem = run_scenario(s, memory());
      INFO(provider << " " << mock::fault_name(f) << " " << describe(http) << " " << describe(mem));
      CHECK(http.passed());
      CHECK(mem.passed());
      CHECK(http.digest == mem.digest);
      REQUIRE_FALSE(http.journal.empty());
      CHECK_FALSE(http.journal[0].streaming);
      CHECK(http.journal[0].fault == mock::fault_name(f));
      const bool short_stall = std::holds_alternative<mock::StallFault>(f) && std::get<mock::StallFault>(f).seconds < 10;
      CHECK(http.journal[0].completed == short_stall);
    }
    // A content filter: a blocked answer, never a success; the text before it is not delivered
    // (Anthropic's refusal keeps it).
    const Scenario filtered = non_streaming(
        provider, {mock::TextEvent{"a"}, mock::FinishEvent{mock::FinishReason::kContentFilter}}, std::nullopt);
    const CaseResult r = run_scenario(filtered, RunOptions{});
    INFO(provider << " content filter " << describe(r));
    CHECK(r.passed());
    CHECK(r.run.error == "content_filter");
    CHECK(r.journal[0].delivered_text == (provider == std::string("anthropic") ? "a" : ""));
  }
}

TEST_CASE("double-result-after-cancel: the guard keeps the duplicate off the next request, the kept history holds it when the cancel ends the session") {
  for (const char* provider : {"gemini", "openai-chat", "openai-responses", "anthropic"}) {
    int seen = 0;
    for (const Scenario& s : load_suite_as(provider)) {
      RunOptions o = memory();
      INFO(provider << " " << s.name);
      if (s.name == "cancel-while-tools-run") {
        ++seen;
        o.extra_defects = {"double-result-after-cancel"};
        CHECK(run_scenario(s, o).passed());  // the guard drops the duplicate before the next prompt's request
        o.extra_defects = {"double-result-after-cancel", "no-pairing-guard"};
        CHECK_FALSE(run_scenario(s, o).passed());
      }
      if (s.name == "cancel-while-tools-run-last-prompt") {
        ++seen;
        CHECK(run_scenario(s, o).passed());
        o.extra_defects = {"double-result-after-cancel"};
        const CaseResult r = run_scenario(s, o);
        std::set<std::string> names;
        for (const Violation& v : r.violations) names.insert(v.invariant);
        CHECK(names == std::set<std::string>{"pairing"});  // in the final history only: no request followed
        CHECK(r.journal.size() == 1u);
        CHECK(r.run.error == "cancelled");
        o.extra_defects = {"orphan-call-after-cancel"};  // the two calls that never started keep no result
        const CaseResult orphan = run_scenario(s, o);
        std::set<std::string> orphan_names;
        for (const Violation& v : orphan.violations) orphan_names.insert(v.invariant);
        CHECK(orphan_names == std::set<std::string>{"pairing"});
        CHECK(orphan.run.error == "cancelled");
      }
    }
    CHECK(seen == 2);
  }
}

TEST_CASE("cancellation over HTTP and in memory: results of the cancelled turn in one user turn, the next prompt's request valid") {
  Scenario tools, stream;
  for (const Scenario& s : load_suite()) {
    if (s.name == "cancel-while-tools-run") tools = s;
    if (s.name == "cancel-while-answer-streams") stream = s;
  }
  REQUIRE(tools.name == "cancel-while-tools-run");
  REQUIRE(stream.name == "cancel-while-answer-streams");
  for (const RunOptions& o : {RunOptions{}, memory()}) {
    const CaseResult r = run_scenario(tools, o);
    INFO(describe(r));
    CHECK(r.passed());
    const nlohmann::json& h = r.run.final_history;
    REQUIRE(h.size() == 5);  // prompt, 3 calls, their 3 results, next prompt, answer
    CHECK(h[1]["parts"].size() == 3);
    REQUIRE(h[2]["parts"].size() == 3);
    CHECK(h[2]["parts"][0]["functionResponse"]["response"] == nlohmann::json{{"output", "list_dir: ok"}});
    CHECK(h[2]["parts"][1]["functionResponse"]["response"] == nlohmann::json{{"error", "cancelled by the user"}});
    CHECK(h[2]["parts"][2]["functionResponse"]["response"] == nlohmann::json{{"error", "cancelled by the user"}});
    CHECK(h[3]["parts"][0]["text"] == "Never mind, just tell me what is there.");
    REQUIRE(r.run.ledger.size() == 1);
    for (const auto& e : r.journal) CHECK(e.validated);

    const CaseResult m = run_scenario(stream, o);
    INFO(describe(m));
    CHECK(m.passed());
    CHECK(m.run.ledger.empty());
    CHECK(m.run.shown_output == "tmp/ holds a and b.");  // the cancelled turn's text is never shown
    REQUIRE(m.run.final_history.size() == 3);             // the two prompts, then the answer
    CHECK(m.run.final_history[1]["parts"][0]["text"] == "Stop, only list them.");
    REQUIRE(m.journal.size() == 2);
    CHECK(m.journal[1].turn == 0);  // the dropped turn's index is played again
    CHECK(m.journal[1].attempt == 1);
  }
}

TEST_CASE("a cancel inside a call's arguments fires after the call's start and that many fragments, in each format that streams them") {
  Scenario s;
  for (const Scenario& c : load_suite()) {
    if (c.name == "cancel-inside-call-arguments") s = c;
  }
  REQUIRE(s.name == "cancel-inside-call-arguments");
  for (const std::string provider : {"openai-chat", "openai-responses", "anthropic"}) {
    for (int fragment : {0, 1, 2}) {
      INFO(provider << ", after_fragment " << fragment);
      Scenario x = s;
      x.script.provider = provider;
      x.interrupt->after_fragment = fragment;
      const CaseResult r = run_scenario(x, memory());
      INFO(describe(r));
      CHECK(r.passed());
      CHECK(r.run.ledger.empty());
      const auto cancel = std::find_if(r.run.events.begin(), r.run.events.end(),
                                       [](const nlohmann::json& e) { return e.value("type", "") == "cancel"; });
      REQUIRE(cancel != r.run.events.end());
      CHECK((*cancel)["after_fragment"] == fragment);
      CHECK((*cancel)["after_event"] == 2);
      // The whole migrate_db call arrived before the cancel; the half-streamed deploy never did.
      int calls_seen = 0;
      for (const nlohmann::json& e : r.run.events) calls_seen += e.value("type", "") == "tool_call" ? 1 : 0;
      CHECK(calls_seen == 1);
    }
  }
  // Over HTTP too (the server may have written the whole answer: the runtime stops reading).
  const CaseResult h = run_scenario(s, RunOptions{});
  INFO(describe(h));
  CHECK(h.passed());
  CHECK(h.run.ledger.empty());
  REQUIRE(h.journal.size() == 2);
  CHECK(h.journal[1].turn == 0);  // the dropped turn's index is played again for the next prompt
}

TEST_CASE("without its next prompt a cancelled run fails as cancelled, and no-execution-after-cancel catches a call run after the cancel") {
  Scenario s;
  for (const Scenario& c : load_suite()) {
    if (c.name == "cancel-while-tools-run") s = c;
  }
  REQUIRE(s.name == "cancel-while-tools-run");
  s.session.clear();
  s.expect = Expect{};
  const CaseResult r = run_scenario(s, memory());
  INFO(describe(r));
  CHECK(r.passed());
  CHECK_FALSE(r.run.completed);
  CHECK(r.run.error == "cancelled");
  RunOptions o = memory();
  o.extra_defects = {"execute-after-cancel"};
  const CaseResult bad = run_scenario(s, o);
  std::set<std::string> names;
  for (const auto& v : bad.violations) names.insert(v.invariant);
  CHECK(names == std::set<std::string>{"no-execution-after-cancel"});
}

TEST_CASE("no-request-after-cancel names the retry that fires after a cancel in its backoff, and the loop that goes on after a cancel while tools run, in every provider") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"cancel-during-backoff", "retry-after-cancel"},
      {"cancel-during-retry-after-wait-last-prompt", "retry-after-cancel"},
      {"cancel-while-tools-run-loop-stops", "continue-loop-after-cancel"},
      {"cancel-while-tools-run-loop-stops-last-prompt", "continue-loop-after-cancel"},
  };
  for (const std::string provider : {"gemini", "openai-chat", "openai-responses", "anthropic"}) {
    int found = 0;
    for (const Scenario& s : load_suite_as(provider)) {
      for (const auto& [name, defect] : cases) {
        if (s.name != name) continue;
        ++found;
        INFO(provider << " " << name);
        const CaseResult good = run_scenario(s, memory());
        INFO(describe(good));
        CHECK(good.passed());
        CHECK(std::any_of(good.run.events.begin(), good.run.events.end(),
                          [](const nlohmann::json& e) { return e.value("type", "") == "cancel"; }));
        RunOptions o = memory();
        o.extra_defects = {defect};
        const CaseResult bad = run_scenario(s, o);
        INFO(describe(bad));
        REQUIRE(has_violation(bad, "no-request-after-cancel"));
        for (const Violation& v : bad.violations) {
          if (v.invariant != "no-request-after-cancel") continue;
          CHECK(v.message.rfind("a request the user did not ask for: request 1 (turn ", 0) == 0);
          CHECK(v.request == 1);
        }
        // The other cancellation defects do not send a request after the cancel.
        for (const char* other : {"orphan-call-after-cancel", "cancel-results-split", "execute-after-cancel"}) {
          RunOptions x = memory();
          x.extra_defects = {other};
          CHECK_FALSE(has_violation(run_scenario(s, x), "no-request-after-cancel"));
        }
      }
    }
    CHECK(found == 4);
  }
}

TEST_CASE("no-request-after-cancel passes a runtime that keeps the cancelled turn's text or answers its calls with cancelled results") {
  // The next prompt's request is judged by the prompt it carries, not by what else it keeps.
  Scenario s;
  for (const Scenario& c : load_suite()) {
    if (c.name == "cancel-while-answer-streams") s = c;
  }
  REQUIRE(s.name == "cancel-while-answer-streams");
  mock::Journal journal(2);
  journal[0].turn = 0;
  journal[0].attempt = 0;
  journal[0].script_attempt = 0;
  journal[0].contents = nlohmann::json::parse(R"([{"role":"user","parts":[{"text":"Delete the temporary files."}]}])");
  journal[1].index = 1;
  journal[1].turn = 1;
  journal[1].attempt = 0;
  // The cut turn kept with its text and a "cancelled" result for its call, then the next prompt
  // wrapped in text of the agent's own.
  journal[1].contents = nlohmann::json::parse(R"([
    {"role":"user","parts":[{"text":"Delete the temporary files."}]},
    {"role":"model","parts":[{"text":"Deleting them now."},{"functionCall":{"name":"delete","args":{"path":"tmp/a"}}}]},
    {"role":"user","parts":[{"functionResponse":{"name":"delete","response":{"error":"cancelled"}}},
                             {"text":"[interrupted by the user] Stop, only list them."}]}])");
  rut::RunResult run;
  Evidence ev{s, run, journal};
  auto named = [&] {
    for (const Violation& v : check_invariants(ev)) {
      if (v.invariant == "no-request-after-cancel") return true;
    }
    return false;
  };
  REQUIRE(interrupted_request(s, journal) == 0);
  CHECK_FALSE(named());
  // Without the next prompt, the same request is one nobody asked for.
  journal[1].contents[2]["parts"][1]["text"] = "[interrupted by the user]";
  CHECK(named());
}

}  // namespace
}  // namespace harness

namespace harness {
namespace {

TEST_CASE("the review transcript tells request by request where the fault fell and which request delivered each execution") {
  LoadResult loaded = load_scenario_file(std::string(HICCUP_SOURCE_DIR) + "/scenarios/mid-stream/midstream-reset-after-call.json");
  REQUIRE(loaded.scenario);
  RunOptions http;
  http.extra_defects = {"keep-calls-on-retry"};
  RunOptions mem = memory();
  mem.extra_defects = http.extra_defects;
  for (const RunOptions& o : {http, mem}) {
    const CaseResult r = run_scenario(*loaded.scenario, o);
    const auto t = make_review_transcript(r.scenario, r.run, r.journal, r.violations, r.sent_at_s);
    INFO(t.dump(2));
    REQUIRE(t["requests"].size() == 3);
    const auto& first = t["requests"][0];
    CHECK(first["answer"]["ended"] == "fault:reset");
    CHECK(first["answer"]["fault"]["kind"] == "reset");
    CHECK(first["answer"]["fault"]["fell_after_event"] == 1);
    CHECK(first["answer"]["delivered_calls"].size() == 1);
    CHECK(first["virtual_s"] == 0.0);
    CHECK(t["requests"][1]["virtual_s"] == 10.0);  // after the 10 s backoff
    CHECK(t["requests"][1]["answer"]["ended"] == "completed");
    CHECK(t["requests"][2]["sent"]["calls_answered"].size() == 1);
    CHECK(t["requests"][2]["sent"]["function_responses"].size() == 1);  // the committed call, answered
    CHECK(first["executed"] == nlohmann::json::array({0}));
    CHECK(t["executions"][1]["request"] == 1);
    CHECK(t["runtime"]["retries"][0]["reason"] == "connection_lost");
    CHECK(t["runtime"]["outcome"]["final_text"] == "Deployed.");
    CHECK(first.contains("arrived_ms") == (o.transport == TransportKind::kHttp));
  }
}

TEST_CASE("the streamed transcript digest equals the digest of the built transcript") {
  // The explorer digests cases without building their transcripts (RunOptions::keep_transcript
  // off); its digests must be the ones `hiccup run` and the determinism checks compute.
  std::vector<std::pair<Scenario, std::vector<std::string>>> runs;
  for (const Scenario& s : load_suite()) {
    for (const char* provider : {"gemini", "openai-chat", "openai-responses", "anthropic"}) {
      Scenario p = s;
      p.script.provider = provider;
      runs.emplace_back(p, std::vector<std::string>{});
      runs.emplace_back(p, std::vector<std::string>{"keep-calls-on-retry", "no-pairing-guard", "keep-partial-text"});
    }
  }
  for (int i = 0; i < 200; ++i) {  // generated cases: interrupts, session prompts, every fault
    runs.emplace_back(explore::with_oracle_expect(explore::generate_case(11, i, "").value()),
                      std::vector<std::string>{i % 2 ? "keep-calls-on-retry" : "execute-after-cancel"});
  }
  int interrupted = 0, with_ledger = 0;
  for (const auto& [scenario, defects] : runs) {
    RunOptions kept = memory();
    kept.extra_defects = defects;
    RunOptions streamed = kept;
    streamed.keep_transcript = false;
    const CaseResult a = run_scenario(scenario, kept);
    const CaseResult b = run_scenario(scenario, streamed);
    INFO(scenario.name << " in " << scenario.script.provider);
    REQUIRE(a.transcript.is_object());
    CHECK(b.transcript.is_null());
    CHECK(transcript_digest(scenario, a.run, a.journal, a.tool_calls) == transcript_digest(a.transcript));
    CHECK(b.digest == a.digest);
    interrupted += interrupted_request(scenario, a.journal) >= 0;
    with_ledger += !a.run.ledger.empty();
  }
  CHECK(interrupted >= 5);  // the interrupted request's journal entry is written differently
  CHECK(with_ledger > 50);
}

}  // namespace
}  // namespace harness

