// Tests of the explorer: generated scenarios are valid v1 files, exploration is reproducible and
// shardable, every seeded defect is found and shrunk small (the kill matrix), a correct runtime
// survives, and a written counterexample replays its failure.
#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "harness/explore/explore_testing.h"
#include "harness/explore/explorer.h"
#include "harness/explore/generators.h"
#include "harness/oracle.h"
#include "harness/runner.h"
#include "harness/scenario_io.h"
#include "runtime_under_test/defects.h"
#include "tests/test_scale.h"
#include "tests/test_temp.h"

namespace hx = harness::explore;
using hiccup_test::invisible_in;
using hiccup_test::passes_without_defects;
using hiccup_test::quiet_options;
using hiccup_test::require_every_defect_found;
using hiccup_test::require_found;
using hiccup_test::total_attempts;

namespace {

std::string temp_dir(const std::string& name) {
  const auto dir = hiccup_test::temp_path("hiccup-explore-test-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace

TEST_CASE("generated scenarios round-trip through the writer and the loader without problems",
          "[explore]") {
  for (int i = 0; i < 300; ++i) {
    const harness::Scenario s = hx::with_oracle_expect(hx::generate_case(7, i).value());
    const std::string text = harness::write_scenario(s);
    const harness::LoadResult loaded = harness::parse_scenario(text, s.name + ".json");
    std::string problems;
    for (const auto& p : loaded.problems) problems += harness::format_problem(p) + "\n";
    INFO(text << problems);
    REQUIRE(loaded.problems.empty());
    REQUIRE(loaded.scenario.has_value());
    harness::Scenario back = *loaded.scenario;
    back.source_path.clear();
    REQUIRE(back == s);
  }
}

TEST_CASE("generated scenarios stay inside the v1 space the issue asks for", "[explore]") {
  rc::prop("turns, calls, attempts, timings and statuses are in range", [](std::uint64_t seed, std::uint16_t index) {
    const harness::Scenario s = hx::generate_case(seed, index).value();
    RC_ASSERT(s.script.turns.size() >= 1u);
    // an interrupt adds the answer to its session's next prompt, if any (place_interrupt); without
    // one, a session's further 1-2 prompts add 1-3 turns each (place_session)
    if (s.interrupt) {
      RC_ASSERT(s.session.size() <= 1u);
      RC_ASSERT(s.script.turns.size() <= 6u + s.session.size());
    } else if (s.runtime.recovery) {
      // under continue: no session, and as many plain answers after the script as it has turns
      RC_ASSERT(s.session.empty());
      RC_ASSERT(s.script.turns.size() <= 12u);
      RC_ASSERT(s.script.turns.size() % 2 == 0u);
    } else {
      RC_ASSERT(s.session.size() <= 2u);
      RC_ASSERT(s.script.turns.size() <= 6u + 3u * s.session.size());
      RC_ASSERT(s.script.turns.size() >= 1u + s.session.size());
    }
    const double idle = s.runtime.idle_timeout_s.value();
    RC_ASSERT(idle >= 2);
    RC_ASSERT(idle <= 10);
    if (s.runtime.max_attempts) RC_ASSERT(*s.runtime.max_attempts >= 1 && *s.runtime.max_attempts <= 6);
    for (const auto& turn : s.script.turns) {
      RC_ASSERT(!turn.attempts.empty());
      for (const auto& a : turn.attempts) {
        int calls = 0;
        for (const auto& e : a.events) calls += std::holds_alternative<mock::CallEvent>(e);
        RC_ASSERT(calls <= 4);
        if (a.status) {
          const auto st = hx::attempt_statuses(s.script.provider);
          RC_ASSERT(std::find(st.begin(), st.end(), *a.status) != st.end());
          RC_ASSERT(a.events.empty());
        }
        if (a.fault) {
          if (const auto* stall = std::get_if<mock::StallFault>(&*a.fault)) {
            RC_ASSERT((stall->seconds <= idle / 2 || stall->seconds >= 2 * idle));
          }
          if (const auto* e = std::get_if<mock::ErrorEventFault>(&*a.fault)) {
            // only statuses the drawn provider sends
            RC_ASSERT(!mock::wire_format(s.script.provider)->status_note(e->status));
          }
        }
      }
    }
  });
}

TEST_CASE("the generator reaches every fault kind, status, finish reason and setting", "[explore]") {
  std::set<std::string> faults;
  std::set<int> statuses;
  std::set<std::string> finishes;
  bool retry_after = false, slice = false, fallback = false, cut_in_terminal = false, parallel = false;
  bool non_streaming = false, fragments = false, in_arguments = false, token_cut = false;
  std::set<std::string> providers;
  std::map<std::string, std::set<std::string>> interrupts;  // provider -> "after_event" / "after_calls"
  std::map<std::string, std::set<std::size_t>> sessions;     // provider -> prompts, without an interrupt
  std::set<std::string> cancel_ends_session;                 // providers with an interrupt and no next prompt
  // provider -> "in one answer" / "from an earlier turn", each "replay" / "collision" (a repeated call id)
  std::map<std::string, std::set<std::string>> reused_ids;
  for (int i = 0; i < 2000; ++i) {
    const harness::Scenario s = hx::generate_case(3, i).value();
    std::vector<std::vector<mock::CallEvent>> turn_calls;  // per turn, the calls of its attempts
    for (const auto& turn : s.script.turns) {
      turn_calls.emplace_back();
      for (const auto& a : turn.attempts) {
        std::vector<mock::CallEvent> seen;
        for (const auto& e : a.events) {
          const auto* c = std::get_if<mock::CallEvent>(&e);
          if (c == nullptr) continue;
          if (c->reuse_id) {
            bool in_answer = false, replay = false;
            for (const auto& x : seen) {
              if (x.id != c->id) continue;
              in_answer = true;
              replay |= x.name == c->name && x.args == c->args;
            }
            for (std::size_t t = 0; !in_answer && t + 1 < turn_calls.size(); ++t) {
              for (const auto& x : turn_calls[t]) {
                if (x.id == c->id) replay |= x.name == c->name && x.args == c->args;
              }
            }
            reused_ids[s.script.provider].insert(std::string(in_answer ? "in one answer" : "from an earlier turn") + ", " +
                                                 (replay ? "replay" : "collision"));
          }
          seen.push_back(*c);
        }
        turn_calls.back().insert(turn_calls.back().end(), seen.begin(), seen.end());
      }
    }
    fallback |= s.runtime.fallback_model.has_value();
    non_streaming |= s.runtime.stream == std::optional<bool>(false);
    providers.insert(s.script.provider);
    if (s.interrupt) interrupts[s.script.provider].insert(s.interrupt->after_event ? "after_event" : "after_calls");
    if (s.interrupt && s.session.empty()) cancel_ends_session.insert(s.script.provider);
    if (!s.interrupt) sessions[s.script.provider].insert(1 + s.session.size());
    for (const auto& turn : s.script.turns) {
      for (const auto& a : turn.attempts) {
        if (a.status) statuses.insert(*a.status);
        retry_after |= a.retry_after_s.has_value();
        slice |= a.slice_bytes.has_value();
        int calls = 0;
        for (const auto& e : a.events) {
          calls += std::holds_alternative<mock::CallEvent>(e);
          if (const auto* c = std::get_if<mock::CallEvent>(&e)) fragments |= c->fragments >= 2;
          if (const auto* f = std::get_if<mock::FinishEvent>(&e)) {
            finishes.insert(std::string(mock::finish_name(f->reason)));
            token_cut |= f->after_fragment.has_value();  // a max_tokens finish inside a call's arguments
          }
        }
        parallel |= calls >= 2;
        if (a.fault) {
          faults.insert(std::string(mock::fault_name(*a.fault)));
          in_arguments |= mock::fault_after_fragment(*a.fault).has_value();
          if (std::holds_alternative<mock::CutFault>(*a.fault)) {
            cut_in_terminal |= !a.events.empty() && std::holds_alternative<mock::FinishEvent>(a.events.back()) &&
                               mock::fault_after_event(*a.fault, a.events.size()) ==
                                   static_cast<int>(a.events.size()) - 1;
          }
        }
      }
    }
  }
  CHECK(faults.size() == mock::fault_catalogue().size());
  CHECK(statuses.size() == hx::attempt_statuses().size());
  CHECK(finishes.size() == 4u);
  CHECK(retry_after);
  CHECK(slice);
  CHECK(fallback);
  CHECK(cut_in_terminal);
  CHECK(parallel);
  CHECK(non_streaming);
  CHECK(fragments);
  CHECK(in_arguments);
  CHECK(token_cut);
  CHECK(providers.size() == 4u);
  for (const std::string& p : providers) {
    INFO(p);
    CHECK(interrupts[p].size() == 2u);  // both kinds of user interrupt, in every provider
    CHECK(sessions[p] == std::set<std::size_t>{1, 2, 3});  // sessions of 2 and 3 prompts without one
    CHECK(cancel_ends_session.contains(p));  // and a cancel that ends the session
    // a provider that repeats a call id, in one answer and from an earlier turn, replaying the call or not
    CHECK(reused_ids[p] == std::set<std::string>{"in one answer, replay", "in one answer, collision",
                                                 "from an earlier turn, replay", "from an earlier turn, collision"});
  }
}

TEST_CASE("the same seed generates the same cases and different seeds differ", "[explore]") {
  for (int i = 0; i < 50; ++i) {
    REQUIRE(harness::write_scenario(hx::generate_case(11, i).value()) ==
            harness::write_scenario(hx::generate_case(11, i).value()));
  }
  int same = 0;
  for (int i = 0; i < 50; ++i) {
    harness::Scenario a = hx::generate_case(11, i).value(), b = hx::generate_case(12, i).value();
    b.name = a.name;
    same += a == b;
  }
  CHECK(same < 5);
}

TEST_CASE("exploring twice with one seed gives the same cases, digests and verdicts", "[explore]") {
  std::ostringstream log1, log2;
  const auto a = hx::explore(quiet_options(5, 60), log1);
  const auto b = hx::explore(quiet_options(5, 60), log2);
  REQUIRE(a.records.size() == b.records.size());
  for (std::size_t i = 0; i < a.records.size(); ++i) {
    CHECK(a.records[i].index == b.records[i].index);
    CHECK(a.records[i].digest == b.records[i].digest);
    CHECK(a.records[i].passed == b.records[i].passed);
  }
}

TEST_CASE("the number of jobs changes neither the cases, the digests nor the verdicts", "[explore]") {
  std::ostringstream log1, log2;
  auto one = quiet_options(11, 80);
  one.jobs = 1;
  auto many = quiet_options(11, 80);
  many.jobs = 5;
  const auto a = hx::explore(one, log1);
  const auto b = hx::explore(many, log2);
  REQUIRE(a.records.size() == 80);
  REQUIRE(a.records.size() == b.records.size());
  for (std::size_t i = 0; i < a.records.size(); ++i) {
    CHECK(a.records[i].index == b.records[i].index);
    CHECK(a.records[i].digest == b.records[i].digest);
  }
}

TEST_CASE("shards of one seed cover every case exactly once", "[explore]") {
  for (int n : {1, 2, 3, 7}) {
    std::vector<int> seen(100, 0);
    for (int k = 1; k <= n; ++k)
      for (int i = 0; i < 100; ++i) seen[i] += hx::in_shard(i, k, n);
    for (int i = 0; i < 100; ++i) REQUIRE(seen[i] == 1);
  }
  // And the sharded runs are the unsharded run's cases.
  std::ostringstream log;
  auto whole = hx::explore(quiet_options(9, 30), log);
  std::map<int, std::string> digests;
  for (int k = 1; k <= 3; ++k) {
    auto o = quiet_options(9, 30);
    o.shard_index = k;
    o.shard_count = 3;
    for (const auto& r : hx::explore(o, log).records) {
      REQUIRE(digests.count(r.index) == 0);
      digests[r.index] = r.digest;
    }
  }
  REQUIRE(digests.size() == whole.records.size());
  for (const auto& r : whole.records) CHECK(digests[r.index] == r.digest);
}

TEST_CASE("determinism selection re-runs the requested share of cases", "[explore]") {
  int ten = 0, all = 0, none = 0;
  for (int i = 0; i < 1000; ++i) {
    ten += hx::determinism_selected(i, 10);
    all += hx::determinism_selected(i, 100);
    none += hx::determinism_selected(i, 0);
  }
  CHECK(ten == 100);
  CHECK(all == 1000);
  CHECK(none == 0);
  auto o = quiet_options(2, 40);
  o.determinism_pct = 100;
  std::ostringstream log;
  const auto out = hx::explore(o, log);
  CHECK(out.determinism_checked == 40);
  CHECK(out.determinism_mismatches.empty());
  // By default every 100th case is re-run: explore/determinism never passes on no re-run at all.
  const auto by_default = hx::explore(quiet_options(2, 250), log);
  CHECK(by_default.determinism_checked == 3);  // cases 0, 100 and 200
}

TEST_CASE("a correct runtime survives 1000 generated cases in memory", "[explore]") {
  std::ostringstream log;
  const auto out = hx::explore(quiet_options(1, 1000), log);
  INFO(log.str());
  CHECK(out.cases_run == 1000);
  CHECK(out.failed == 0);
  CHECK(out.exit_code() == 0);
}

TEST_CASE("a correct runtime survives generated cases over HTTP", "[explore][http]") {
  auto o = quiet_options(1, 60);
  o.transport = harness::TransportKind::kHttp;
  std::ostringstream log;
  const auto out = hx::explore(o, log);
  INFO(log.str());
  CHECK(out.cases_run == 60);
  CHECK(out.failed == 0);
}

TEST_CASE("exploration finds every seeded defect with providers drawn per case (seeds 1-3)", "[explore][kill-matrix]") {
  require_every_defect_found("");
}

TEST_CASE("exploration over websocket finds replay-lost-context and shrinks it to a 1-minimal case (seeds 1-3)",
          "[explore][kill-matrix]") {
  // The forgotten response is drawn over the WebSocket transport only (GenerateLimits::
  // websocket_faults); the counterexample is confirmed there, and passes there without the defect.
  const auto seeds = static_cast<std::uint64_t>(hiccup_test::scaled(3));
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    auto o = quiet_options(seed, 200);
    o.defects = {"replay-lost-context"};
    o.transport = harness::TransportKind::kWebSocket;
    // Every shrink candidate runs in real time here: a shorter walk down RapidCheck's tree (the
    // minimizer still deletes until nothing more can go) keeps the three seeds within minutes.
    o.max_shrink_tries = 60;
    // And idle timeouts of 500 ms real, not the 2 s the other network explorations here wait:
    // the shrink candidates' stalls took minutes at 2 s (9.5 minutes for the three seeds).
    o.http_idle_floor_ms = 500;
    o.provider = "openai-responses";
    std::ostringstream log;
    const auto out = hx::explore(o, log);
    INFO("seed " << seed << "\n" << log.str());
    REQUIRE(out.failure.has_value());
    CHECK(out.exit_code() == 1);
    const harness::Scenario& shrunk = out.failure->shrunk;
    CHECK(out.failure->one_minimal);
    CHECK(shrunk.script.turns.size() <= 3u);
    CHECK(total_attempts(shrunk) <= 3);
    int forgotten = 0;
    for (const auto& t : shrunk.script.turns) {
      for (const auto& a : t.attempts) forgotten += a.websocket && a.websocket->forget_response ? 1 : 0;
    }
    CHECK(forgotten == 1);  // the forgotten response is what the defect needs
    harness::Scenario clean = shrunk;
    clean.runtime.defects.clear();
    harness::RunOptions ws;
    ws.transport = harness::TransportKind::kWebSocket;
    const harness::CaseResult r = harness::run_scenario(clean, ws);
    for (const auto& v : r.violations) UNSCOPED_INFO("without the defect: " << v.invariant << ": " << v.message);
    CHECK(r.passed());
  }
}

TEST_CASE("the forgotten response is drawn over websocket only, and leaves the other transports' cases as they were",
          "[explore]") {
  hx::GenerateLimits ws;
  ws.websocket_faults = true;
  int forgotten = 0;
  for (int i = 0; i < 60; ++i) {
    const harness::Scenario plain = hx::generate_case(3, i, "openai-responses").value();
    const harness::Scenario over_ws = hx::generate_case(3, i, "openai-responses", "", ws).value();
    for (const auto& t : plain.script.turns) {
      for (const auto& a : t.attempts) CHECK_FALSE((a.websocket && a.websocket->forget_response));
    }
    for (const auto& t : over_ws.script.turns) {
      for (const auto& a : t.attempts) forgotten += a.websocket && a.websocket->forget_response ? 1 : 0;
    }
  }
  CHECK(forgotten >= 5);
}

TEST_CASE("no-pairing-guard is found together with keep-calls-on-retry as a pairing violation",
          "[explore][kill-matrix]") {
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    auto o = quiet_options(seed, 200);
    o.defects = {"keep-calls-on-retry", "no-pairing-guard"};
    std::ostringstream log;
    const auto out = hx::explore(o, log);
    INFO(log.str());
    REQUIRE(out.failure.has_value());
    bool pairing = false;
    for (const auto& v : out.failure->violations) pairing |= v.invariant == "pairing" || v.invariant == "no-rejected-request";
    CHECK(pairing);
  }
}

TEST_CASE("double-result-after-cancel is found together with no-pairing-guard, where the provider rejects the duplicate",
          "[explore][kill-matrix]") {
  const auto seeds = static_cast<std::uint64_t>(hiccup_test::scaled(3));  // 1 under the sanitizers
  for (const std::string provider : {"", "gemini", "openai-chat", "openai-responses", "anthropic"}) {
    for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
      require_found({"double-result-after-cancel", "no-pairing-guard"}, seed, provider);
    }
  }
}

TEST_CASE("exploration finds every seeded defect for seeds 1-10", "[.kill-matrix-full]") {
  for (const auto& info : rut::defect_catalogue()) {
    if (info.defect == rut::Defect::kNoPairingGuard) continue;
    for (const std::string provider : {"", "gemini", "openai-chat", "openai-responses", "anthropic"}) {
      if (invisible_in(provider, info.defect)) continue;
      for (std::uint64_t seed = 1; seed <= 10; ++seed) require_found({std::string(info.name)}, seed, provider);
    }
  }
  for (std::uint64_t seed = 1; seed <= 10; ++seed) require_found({"keep-calls-on-retry", "no-pairing-guard"}, seed);
  for (const std::string provider : {"gemini", "openai-chat", "openai-responses", "anthropic"}) {
    for (std::uint64_t seed = 1; seed <= 10; ++seed) {
      require_found({"double-result-after-cancel", "no-pairing-guard"}, seed, provider);
    }
  }
}

TEST_CASE("execute-after-cancel is found in both forms: a call streamed after the cancel, and a committed call not yet started",
          "[explore][kill-matrix]") {
  // The streaming form on every generated case that reaches it: an interrupt after event e of an
  // attempt that streams a call after e. The careful runtime stops reading there; under the
  // defect that call runs, and no-execution-after-cancel names it.
  for (const std::string provider : {"gemini", "openai-chat", "openai-responses", "anthropic"}) {
    int reached = 0;
    for (int i = 0; i < 600 && reached < 5; ++i) {
      harness::Scenario s = hx::generate_case(7, i, provider).value();
      if (!s.interrupt || !s.interrupt->after_event) continue;
      const auto& events = s.script.turns[static_cast<std::size_t>(s.interrupt->turn)]
                               .attempts[static_cast<std::size_t>(*s.interrupt->attempt)].events;
      bool call_after = false;
      // Inside a call's arguments (after_fragment) that call itself arrives after the cancel.
      const std::size_t first_after = static_cast<std::size_t>(*s.interrupt->after_event) + (s.interrupt->after_fragment ? 0 : 1);
      for (std::size_t k = first_after; k < events.size(); ++k) {
        call_after |= std::holds_alternative<mock::CallEvent>(events[k]);
      }
      s = hx::with_oracle_expect(s);
      harness::RunOptions o;
      o.transport = harness::TransportKind::kMemory;
      o.extra_defects = {"execute-after-cancel"};
      const harness::CaseResult r = harness::run_scenario(s, o);
      const bool named = std::any_of(r.violations.begin(), r.violations.end(), [](const harness::Violation& v) {
        return v.invariant == "no-execution-after-cancel";
      });
      // The interrupt fires unless an earlier failure ended the run: then nothing ran after it.
      const bool fired = std::any_of(r.run.events.begin(), r.run.events.end(),
                                     [](const nlohmann::json& e) { return e.value("type", "") == "cancel"; });
      INFO(provider << " case " << i << "\n" << harness::write_scenario(s));
      if (call_after && fired) {
        ++reached;
        CHECK(named);
      } else {
        CHECK_FALSE(named);
      }
    }
    INFO(provider);
    CHECK(reached == 5);
  }
  // The explorer's shrunk counterexamples show both forms over seeds 1-10.
  std::set<std::string> forms;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    auto o = quiet_options(seed, 200);
    o.defects = {"execute-after-cancel"};
    std::ostringstream log;
    const auto out = hx::explore(o, log);
    INFO(log.str());
    REQUIRE(out.failure.has_value());
    REQUIRE(out.failure->shrunk.interrupt.has_value());
    forms.insert(out.failure->shrunk.interrupt->after_event ? "after_event" : "after_calls");
  }
  CHECK(forms == std::set<std::string>{"after_event", "after_calls"});
}

TEST_CASE("the explorer draws interrupts during a backoff in a small share of cases, and retry-after-cancel's counterexample keeps one",
          "[explore][kill-matrix]") {
  int backoff = 0;
  int interrupts = 0;
  for (int i = 0; i < 600; ++i) {
    const harness::Scenario s = hx::generate_case(7, i).value();
    if (!s.interrupt) continue;
    ++interrupts;
    if (!s.interrupt->before_attempt) continue;
    ++backoff;
    // It follows a failed attempt, within the budget (lint checks both).
    const auto& attempts = s.script.turns[static_cast<std::size_t>(s.interrupt->turn)].attempts;
    const auto& failed = attempts[static_cast<std::size_t>(*s.interrupt->before_attempt - 1)];
    CHECK((failed.status || failed.fault));
  }
  INFO(backoff << " of " << interrupts << " interrupts during a backoff");
  CHECK(backoff >= 10);
  CHECK(backoff * 4 <= interrupts);
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    for (const char* defect : {"retry-after-cancel", "continue-loop-after-cancel"}) {
      auto o = quiet_options(seed, 200);
      o.defects = {defect};
      std::ostringstream log;
      const auto out = hx::explore(o, log);
      INFO(defect << " seed " << seed << "\n" << log.str());
      REQUIRE(out.failure.has_value());
      REQUIRE(out.failure->shrunk.interrupt.has_value());
      CHECK(out.failure->shrunk.interrupt->before_attempt.has_value() == (std::string(defect) == "retry-after-cancel"));
      const bool named = std::any_of(out.failure->violations.begin(), out.failure->violations.end(),
                                     [](const harness::Violation& v) { return v.invariant == "no-request-after-cancel"; });
      CHECK(named);
    }
  }
}

TEST_CASE("the explorer draws interrupts inside a call's arguments where the format streams them, never in Gemini, and the oracle agrees",
          "[explore]") {
  for (const std::string provider : {"gemini", "openai-chat", "openai-responses", "anthropic"}) {
    int inside = 0;
    int mid_stream = 0;
    for (int i = 0; i < 2000; ++i) {  // about one case in 200 draws it
      harness::Scenario s = hx::generate_case(7, i, provider).value();
      if (!s.interrupt || !s.interrupt->after_event) continue;
      ++mid_stream;
      if (!s.interrupt->after_fragment) continue;
      ++inside;
      const auto& event = s.script.turns[static_cast<std::size_t>(s.interrupt->turn)]
                              .attempts[static_cast<std::size_t>(*s.interrupt->attempt)]
                              .events[static_cast<std::size_t>(*s.interrupt->after_event)];
      const auto* call = std::get_if<mock::CallEvent>(&event);
      REQUIRE(call != nullptr);
      CHECK(*s.interrupt->after_fragment < call->fragments);
      // A correct runtime passes: the oracle's prediction and the run agree on where it fires.
      s = hx::with_oracle_expect(s);
      harness::RunOptions o;
      o.transport = harness::TransportKind::kMemory;
      const harness::CaseResult r = harness::run_scenario(s, o);
      INFO(provider << " case " << i << "\n" << harness::write_scenario(s));
      CHECK(r.passed());
    }
    INFO(provider << ": " << inside << " of " << mid_stream << " mid-stream interrupts inside a call's arguments");
    if (provider == "gemini") {
      CHECK(inside == 0);
    } else {
      CHECK(inside >= 5);
    }
  }
}

TEST_CASE("a shrunk counterexample passes without its defect (orphan-call-after-cancel, seed 7)", "[explore]") {
  // Shrinking deleted the answer's text and the interrupt: an empty assistant turn that Anthropic
  // rejects on the next prompt's request failed pairing without any defect.
  auto o = quiet_options(7, 200);
  o.defects = {"orphan-call-after-cancel"};
  std::ostringstream log;
  const auto out = hx::explore(o, log);
  INFO(log.str());
  REQUIRE(out.failure.has_value());
  CHECK(out.failure->shrunk.interrupt.has_value());
  CHECK(passes_without_defects(out.failure->shrunk));
}

TEST_CASE("a written counterexample is a valid scenario that fails again when run", "[explore]") {
  auto o = quiet_options(1, 200);
  o.defects = {"keep-calls-on-retry"};
  o.write_counterexample = true;
  o.report_dir = temp_dir("counterexample");
  std::ostringstream log;
  const auto out = hx::explore(o, log);
  INFO(log.str());
  REQUIRE(out.failure.has_value());
  REQUIRE(!out.failure->path.empty());
  CHECK(out.failure->path == o.report_dir + "/counterexamples/explore-s1-c" +
                                 std::to_string(out.failure->case_index) + ".json");
  CHECK(log.str().find("replay:  build/hiccup run " + out.failure->path) != std::string::npos);
  CHECK(log.str().find("--seed 1 --cases 200 --defect keep-calls-on-retry") != std::string::npos);

  const harness::LoadResult loaded = harness::load_scenario_file(out.failure->path);
  REQUIRE(loaded.problems.empty());
  const harness::Scenario& s = *loaded.scenario;
  CHECK(s.runtime.defects == std::vector<std::string>{"keep-calls-on-retry"});
  CHECK(s.catches == std::vector<std::string>{"keep-calls-on-retry"});
  CHECK(s.expect == harness::oracle_expect(s));

  harness::RunOptions run;
  run.transport = harness::TransportKind::kMemory;
  CHECK_FALSE(harness::run_scenario(s, run).passed());
  run.transport = harness::TransportKind::kHttp;
  CHECK_FALSE(harness::run_scenario(s, run).passed());
  // Without the defect the same file passes: the failure is the defect's, not the harness's.
  harness::Scenario clean = s;
  clean.runtime.defects.clear();
  CHECK(harness::run_scenario(clean, run).passed());
  std::filesystem::remove_all(o.report_dir);  // kept when a REQUIRE above stops the test
}

TEST_CASE("1000 generated cases give the same verdicts and digests over HTTP and in memory",
          "[explore][http]") {
  std::ostringstream log;
  // 250 under the sanitizers (HICCUP_TEST_SCALE=0.1), never fewer: the share of each format
  // below needs that many cases.
  const int cases = std::max(hiccup_test::scaled(1000), 250);
  auto mem_options = quiet_options(21, cases);
  mem_options.stop_at_first_failure = false;
  auto http_options = mem_options;
  http_options.transport = harness::TransportKind::kHttp;
  http_options.http_slower_reruns = 0;  // each HTTP run as it came: the equivalence is what is tested
  const auto mem = hx::explore(mem_options, log);
  const auto http = hx::explore(http_options, log);
  REQUIRE(mem.records.size() == static_cast<std::size_t>(cases));
  REQUIRE(http.records.size() == static_cast<std::size_t>(cases));
  // Providers are drawn per case: the equivalence covers every format, each in at least 15% of them.
  std::map<std::string, int> per_provider;
  for (int i = 0; i < cases; ++i) ++per_provider[hx::generate_case(21, i).value().script.provider];
  for (const std::string provider : {"gemini", "openai-chat", "openai-responses", "anthropic"}) {
    INFO(provider);
    CHECK(per_provider[provider] * 1000 >= 150 * cases);
  }
  int mismatches = 0;
  for (std::size_t i = 0; i < mem.records.size(); ++i) {
    CHECK(mem.records[i].passed);
    if (mem.records[i].digest == http.records[i].digest) continue;
    // A real transport difference persists; a timing flake of a loaded machine does not. Re-run
    // the case alone over HTTP and compare again.
    const harness::Scenario s = hx::with_oracle_expect(hx::generate_case(21, mem.records[i].index).value());
    harness::RunOptions alone;
    alone.min_idle_timeout_ms = hiccup_test::kTestIdleFloorMs;
    alone.http_slower_reruns = 0;
    const auto again = harness::run_scenario(s, alone);
    WARN("case " << mem.records[i].index << " differed over HTTP on the first run; re-run digest "
                 << again.digest << ", memory digest " << mem.records[i].digest);
    CHECK(again.digest == mem.records[i].digest);
    ++mismatches;
  }
  CHECK(mismatches <= 3);
}

TEST_CASE("over HTTP a failure is shrunk in memory and then confirmed over HTTP", "[explore][http]") {
  // keep-partial-text, seed 2: shrinking it over HTTP waited through real-time stalls (27.7 s).
  auto over_http = quiet_options(2, 200);
  over_http.defects = {"keep-partial-text"};
  over_http.transport = harness::TransportKind::kHttp;
  auto in_memory = over_http;
  in_memory.transport = harness::TransportKind::kMemory;
  std::ostringstream http_log, memory_log;
  const auto http = hx::explore(over_http, http_log);
  const auto memory = hx::explore(in_memory, memory_log);
  INFO(http_log.str());
  REQUIRE(http.failure.has_value());
  REQUIRE(memory.failure.has_value());
  CHECK(http_log.str().find("shrunk in memory") != std::string::npos);
  CHECK(http_log.str().find("the counterexample fails over http too") != std::string::npos);
  // The replay command line carries the floor that is not the default, and only over HTTP.
  CHECK(http.failure->explore_command.find(" --http-idle-floor-ms 2000") != std::string::npos);
  CHECK(memory.failure->explore_command.find("--http-idle-floor-ms") == std::string::npos);
  CHECK(http.failure->explore_command.find("--http-reruns") == std::string::npos);
  // The same counterexample as an exploration in memory finds, and its transcript is the HTTP run's.
  CHECK(http.failure->case_index == memory.failure->case_index);
  CHECK(harness::write_scenario(http.failure->shrunk) == harness::write_scenario(memory.failure->shrunk));
  CHECK(http.failure->one_minimal);
  REQUIRE(!http.failure->transcript["requests"].empty());
  CHECK(http.failure->transcript["requests"][0].contains("arrived_ms"));
  // It fails over HTTP, and without the defect it passes there.
  harness::RunOptions run;
  run.min_idle_timeout_ms = hiccup_test::kTestIdleFloorMs;
  CHECK_FALSE(harness::run_scenario(http.failure->shrunk, run).passed());
  harness::Scenario clean = http.failure->shrunk;
  clean.runtime.defects.clear();
  CHECK(harness::run_scenario(clean, run).passed());
}

TEST_CASE("the run digest is the same for the same seed and differs for another seed or defect", "[explore]") {
  std::ostringstream log;
  const auto a = hx::explore(quiet_options(5, 40), log);
  const auto b = hx::explore(quiet_options(5, 40), log);
  REQUIRE(a.digest.size() == 16);
  CHECK(a.digest == b.digest);
  CHECK(hx::explore(quiet_options(6, 40), log).digest != a.digest);
  auto with_defect = quiet_options(5, 40);
  with_defect.defects = {"keep-calls-on-retry"};
  with_defect.stop_at_first_failure = false;
  with_defect.max_shrink_tries = 0;
  CHECK(hx::explore(with_defect, log).digest != a.digest);
}

TEST_CASE("a shrunk failure keeps both sizes and both review transcripts", "[explore]") {
  std::ostringstream log;
  auto o = quiet_options(1, 200);
  o.defects = {"keep-calls-on-retry"};
  const auto out = hx::explore(o, log);
  REQUIRE(out.failure);
  const auto& f = *out.failure;
  CHECK(f.original_size.turns == static_cast<int>(f.original.script.turns.size()));
  CHECK(f.original_size.attempts == total_attempts(f.original));
  CHECK(f.shrunk_size.attempts == total_attempts(f.shrunk));
  CHECK(f.shrunk_size.attempts <= f.original_size.attempts);
  CHECK(f.shrunk_size.events <= f.original_size.events);
  // The shrunk transcript's violations are the shrunk run's, linked to its requests.
  REQUIRE(f.transcript["violations"].size() == f.violations.size());
  CHECK(f.transcript["requests"].size() >= 2);
  CHECK(f.original_transcript["requests"].size() >= f.transcript["requests"].size());
  for (const auto& r : out.records) CHECK(r.transcript.is_null());  // only with `transcripts`
}
