// RapidCheck generators for scenarios over the whole v1 space (SCENARIO-FORMAT.md): runtime
// settings, turns of 0–4 parallel calls with text before, between and after them, attempts that are
// HTTP statuses (with or without Retry-After) or streams with any finish reason and any fault at any
// position (the terminal frame included), and slice_bytes. Everything is built by composing
// `rc::Gen` values so RapidCheck's shrinking works on the structure: fewer turns and attempts,
// earlier faults, simpler alternatives (the first alternative of every choice is the simplest).
//
// Every choice is drawn from rc::Random (a splittable generator fully specified by Claessen & Palka
// 2013) by plain `next() % n` arithmetic: no std:: distributions, no size scaling. Call
// `gen(random, kGenSize)`; the size argument is ignored, except that gen::resize fixes the length
// bounds of the turn and attempt containers (so shrinking can remove any turn or attempt).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <rapidcheck.h>

#include "harness/scenario.h"
#include "harness/scenario_io.h"
#include "mock_server/faults.h"
#include "mock_server/wire_format.h"
#include "mock_server/script.h"

namespace harness::explore {

/// The size handed to generators (RapidCheck's nominal size; our generators do not scale with it).
inline constexpr int kGenSize = 100;

/// Tool names calls are drawn from.
inline const std::vector<std::string>& tool_names() {
  static const std::vector<std::string> names = {"shell", "write_file", "deploy", "read_file", "search"};
  return names;
}

/// HTTP statuses a status attempt is drawn from (retryable and not), over all providers.
inline const std::vector<int>& attempt_statuses() {
  static const std::vector<int> statuses = {503, 429, 500, 502, 504, 529, 400, 401, 403, 404};
  return statuses;
}

/// The statuses of `all` that `provider` sends (mock::WireFormat::status_note), in order; all of
/// them for an unknown provider.
inline std::vector<int> statuses_sent_by(const std::string& provider, const std::vector<int>& all) {
  const mock::WireFormat* format = mock::wire_format(provider);
  std::vector<int> out;
  for (int s : all) {
    if (format == nullptr || !format->status_note(s)) out.push_back(s);
  }
  return out;
}

/// attempt_statuses() that `provider` sends: a generated scenario lints clean in its own format.
inline std::vector<int> attempt_statuses(const std::string& provider) {
  return statuses_sent_by(provider, attempt_statuses());
}

/// The model a generated fallback uses.
inline constexpr const char* kFallbackModel = "gemini-2.5-pro";
/// The continuation prompt drawn for one continue case in two (HagiCode sends such a message).
inline constexpr const char* kContinuationPrompt = "Continue from where you stopped.";

/// The generator `make()` builds for `key`, built once per thread and key and copied after that.
/// A generator is an immutable function of its parameters (RapidCheck counts its references
/// atomically), so a copy generates exactly what a new one would: caching changes no case, only
/// the cost of building the same generator graph for every turn and attempt. Each call site has a
/// cache of its own (`make` is its lambda); keys are small (event counts, idle timeouts,
/// providers), so the caches stay small.
template <typename Key, typename Make>
std::invoke_result_t<Make> memo_gen(const Key& key, Make make) {
  thread_local std::map<Key, std::invoke_result_t<Make>> cache;
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, make()).first;
  return it->second;
}

// ---------------------------------------------------------------------------------------------
// Primitive choices. Uniform by `next() % n`; they shrink towards their first value.

/// An integer in [lo, hi] (inclusive), uniform, shrinking towards `lo`.
inline rc::Gen<int> gen_int(int lo, int hi) {
  return [lo, hi](const rc::Random& random, int) {
    const auto span = static_cast<std::uint64_t>(hi - lo + 1);
    const int value = lo + static_cast<int>(rc::Random(random).next() % span);
    return rc::shrinkable::shrinkRecur(value, [lo](int x) { return rc::shrink::towards<int>(x, lo); });
  };
}

/// An index in [0, weights.size()) with the given weights, shrinking towards 0 (the simplest).
/// The weights are shared, not copied, by every copy of the generator (RapidCheck copies a
/// generator's function each time a mapcat generates).
inline rc::Gen<int> gen_weighted_index(std::vector<int> weights) {
  std::uint64_t total = 0;
  for (int w : weights) total += static_cast<std::uint64_t>(w);
  auto shared = std::make_shared<const std::vector<int>>(std::move(weights));
  return [shared, total](const rc::Random& random, int) {
    const std::vector<int>& ws = *shared;
    std::uint64_t roll = rc::Random(random).next() % total;
    int index = 0;
    while (roll >= static_cast<std::uint64_t>(ws[static_cast<std::size_t>(index)])) {
      roll -= static_cast<std::uint64_t>(ws[static_cast<std::size_t>(index)]);
      ++index;
    }
    return rc::shrinkable::shrinkRecur(index, [](int x) { return rc::shrink::towards<int>(x, 0); });
  };
}

/// One of `values`, uniform, shrinking towards values[0].
template <typename T>
rc::Gen<T> gen_pick(std::vector<T> values) {
  const int last = static_cast<int>(values.size()) - 1;
  auto shared = std::make_shared<const std::vector<T>>(std::move(values));
  return rc::gen::map(gen_int(0, last), [shared](int i) { return (*shared)[static_cast<std::size_t>(i)]; });
}

/// One of `gens` with `weights`; shrinks to earlier alternatives, then within the chosen one.
template <typename T>
rc::Gen<T> gen_weighted(std::vector<std::pair<int, rc::Gen<T>>> choices) {
  std::vector<int> weights;
  auto gens = std::make_shared<std::vector<rc::Gen<T>>>();
  weights.reserve(choices.size());
  gens->reserve(choices.size());
  for (auto& [w, g] : choices) {
    weights.push_back(w);
    gens->push_back(std::move(g));
  }
  return rc::gen::mapcat(gen_weighted_index(std::move(weights)),
                         [gens = std::shared_ptr<const std::vector<rc::Gen<T>>>(std::move(gens))](int i) {
                           return (*gens)[static_cast<std::size_t>(i)];
                         });
}

/// nullopt with weight `none`, else a value of `gen` with weight `some`; shrinks to nullopt.
template <typename T>
rc::Gen<std::optional<T>> gen_optional(rc::Gen<T> gen, int none, int some) {
  return gen_weighted<std::optional<T>>(
      {{none, rc::gen::just(std::optional<T>())},
       {some, rc::gen::map(gen, [](T v) { return std::optional<T>(std::move(v)); })}});
}

// ---------------------------------------------------------------------------------------------
// Runtime settings.

/// max_attempts 1–6 (or unset = 4), a backoff schedule, fallback on or off, idle_timeout_s 2–10
/// (always set, so generated stalls can sit well below or well above it), streaming (unset) or,
/// one case in eight, the provider's non-streaming endpoint; the recovery design: hold (unset) or,
/// one case in three, continue, then one in two with a continuation prompt (docs/POLICY.md
/// "Recovery designs").
/// `recovery`: "" draws the design as above; "hold" or "continue" fixes it (an exploration of
/// defects that have a site in one design only).
inline rc::Gen<RuntimeSettings> gen_runtime(const std::string& recovery = "") {
  return memo_gen(recovery, [&] {
    using Schedule = std::vector<double>;
    return rc::gen::apply(
        [](std::optional<int> max_attempts, std::optional<Schedule> backoff,
           std::optional<std::string> fallback, int idle, std::optional<bool> stream,
           std::optional<std::string> recovery, std::optional<std::string> continuation_prompt) {
          RuntimeSettings rt;
          rt.max_attempts = max_attempts;
          rt.backoff_s = std::move(backoff);
          rt.fallback_model = std::move(fallback);
          rt.idle_timeout_s = idle;
          rt.stream = stream;
          rt.recovery = std::move(recovery);
          if (rt.recovery) rt.continuation_prompt = std::move(continuation_prompt);
          return rt;
        },
        gen_optional(gen_int(1, 6), 1, 5),
        gen_optional(gen_pick<Schedule>({Schedule{1}, Schedule{}, Schedule{2, 4}, Schedule{10, 20, 60},
                                         Schedule{5}, Schedule{0, 3}}),
                     1, 3),
        gen_optional(rc::gen::just(std::string(kFallbackModel)), 1, 1), gen_int(2, 10),
        gen_optional(rc::gen::just(false), 7, 1),
        recovery == "hold"       ? rc::gen::just(std::optional<std::string>())
        : recovery == "continue" ? rc::gen::just(std::optional<std::string>("continue"))
                                 : gen_optional(rc::gen::just(std::string("continue")), 2, 1),
        gen_optional(rc::gen::just(std::string(kContinuationPrompt)), 1, 1));
  });
}

/// The wire formats a case is played in, drawn per case.
inline const std::vector<std::string>& providers() {
  static const std::vector<std::string> names = {"gemini", "openai-chat", "openai-responses", "anthropic"};
  return names;
}

// ---------------------------------------------------------------------------------------------
// Faults. `events` = the attempt's event count (finish included), `idle_s` the idle timeout.

/// A stall that is only a delay (seconds in [0.5, idle/2], half-second steps).
inline rc::Gen<double> gen_short_stall_s(int idle_s) {
  return memo_gen(idle_s, [&] {
    return rc::gen::map(gen_int(1, std::max(1, idle_s)), [](int halves) { return halves * 0.5; });
  });
}

/// A stall that never ends within a run: one virtual day, past the runner's virtual-time cap. A
/// runtime with an idle timeout fails the attempt; one without it hangs (`liveness`).
inline constexpr double kHangStallS = 86400;

/// A stall that trips the idle timeout (seconds in [2·idle, 2·idle + 2]), or one time in five a
/// stall that outlasts the run (kHangStallS).
inline rc::Gen<double> gen_long_stall_s(int idle_s) {
  return memo_gen(idle_s, [&] {
    return gen_weighted<double>(
        {{4, rc::gen::map(gen_int(2 * idle_s, 2 * idle_s + 2), [](int s) { return static_cast<double>(s); })},
         {1, rc::gen::just(kHangStallS)}});
  });
}

/// `after_event`: unset (= after every event) or a position in [0, events]; shrinks to 0.
inline rc::Gen<std::optional<int>> gen_after_event(int events) {
  return memo_gen(events, [&] {
    return gen_weighted<std::optional<int>>(
        {{6, rc::gen::map(gen_int(0, events), [](int p) { return std::optional<int>(p); })},
         {1, rc::gen::just(std::optional<int>())}});
  });
}

/// Any fault kind of the catalogue with small fields, at any position (inside the terminal frame
/// for `cut` at the finish, after it when positioned at `events`).
inline rc::Gen<mock::Fault> gen_fault(int events, int idle_s, const std::string& provider) {
  return memo_gen(std::tuple(events, idle_s, provider), [&] {
    using mock::Fault;
    // Captured values are shared, not copied: RapidCheck copies a mapcat's function each time it
    // generates (here and below).
    auto error_statuses =
        std::make_shared<const std::vector<int>>(statuses_sent_by(provider, {503, 529, 500, 429}));
    return rc::gen::mapcat(gen_after_event(events), [idle_s, error_statuses](std::optional<int> at) {
      return gen_weighted<Fault>({
          {2, rc::gen::just(Fault(mock::EndFault{at, std::nullopt}))},
          {2, rc::gen::map(gen_int(0, 5), [at](int ms) { return Fault(mock::DisconnectFault{at, ms, std::nullopt}); })},
          {2, rc::gen::map(gen_int(0, 5), [at](int ms) { return Fault(mock::ResetFault{at, ms, std::nullopt}); })},
          {2, rc::gen::map(gen_weighted<int>({{3, gen_int(1, 12)}, {2, gen_int(60, 200)}}),
                           [at](int b) { return Fault(mock::CutFault{at, b, std::nullopt}); })},
          {2, rc::gen::map(gen_pick<int>(*error_statuses),
                           [at](int st) { return Fault(mock::ErrorEventFault{at, st, std::nullopt}); })},
          {2, rc::gen::just(Fault(mock::MalformedFault{at, std::nullopt}))},
          {1, rc::gen::map(gen_short_stall_s(idle_s), [at](double s) { return Fault(mock::StallFault{at, s, std::nullopt}); })},
          {2, rc::gen::map(gen_long_stall_s(idle_s), [at](double s) { return Fault(mock::StallFault{at, s, std::nullopt}); })},
      });
    });
  });
}

/// A fault that cannot fail the attempt: a short stall anywhere, or any fault after the terminal
/// frame (the runtime stops reading there).
inline rc::Gen<mock::Fault> gen_harmless_fault(int events, int idle_s, const std::string& provider) {
  return memo_gen(std::tuple(events, idle_s, provider), [&] {
    using mock::Fault;
    return gen_weighted<Fault>(
        {{1, rc::gen::apply([](int at, double s) { return Fault(mock::StallFault{at, s, std::nullopt}); },
                            gen_int(0, events), gen_short_stall_s(idle_s))},
         {1, rc::gen::map(gen_fault(events, idle_s, provider), [events](Fault f) {
            std::visit([events](auto& k) { k.after_event = events; }, f);
            return f;
          })}});
  });
}

// ---------------------------------------------------------------------------------------------
// Attempts. A turn's stream attempts share its calls (names; args are filled in by position, see
// assign_call_args); texts are drawn per attempt so a failed attempt's text is distinguishable.

/// Short text parts.
inline rc::Gen<std::string> gen_text() {
  return memo_gen(0, [&] {
    return gen_pick<std::string>({"Done.", "Checking.", "On it. ", "Step ok.", "Retrying later.", "All set!"});
  });
}

/// The events of one stream with `calls` calls: optional text before, between and after the calls;
/// no finish. The calls have no name yet: gen_turn names them (name_calls), so the generators below
/// depend on the call count only and are built once per count (memo_gen).
inline rc::Gen<std::vector<mock::Event>> gen_body(std::size_t calls) {
  return memo_gen(calls, [&] {
    return rc::gen::map(
        rc::gen::container<std::vector<std::optional<std::string>>>(calls + 1, gen_optional(gen_text(), 1, 1)),
        [calls](const std::vector<std::optional<std::string>>& texts) {
          std::vector<mock::Event> events;
          for (std::size_t i = 0; i <= calls; ++i) {
            if (texts[i]) events.push_back(mock::TextEvent{*texts[i]});
            if (i < calls) events.push_back(mock::CallEvent{"", nlohmann::json::object(), ""});
          }
          return events;
        });
  });
}

/// Optional slice_bytes (stream written in pieces of at most this many bytes).
inline rc::Gen<std::optional<int>> gen_slice_bytes() {
  return memo_gen(0, [&] {
    return gen_optional(gen_pick<int>({7, 1, 3, 16, 64}), 4, 1);
  });
}

/// Optional argument fragments for a stream's calls (formats that stream arguments send this many
/// pieces; 0 = the format's default, one piece).
inline rc::Gen<int> gen_fragments() {
  return memo_gen(0, [&] {
    return gen_weighted<int>({{3, rc::gen::just(0)}, {2, gen_int(2, 4)}});
  });
}

/// A stream attempt with `finish` (nullopt = no terminal event) and a fault drawn by `fault_gen`
/// over the event count (or no fault when `fault_gen` is nullopt). When the fault sits right before
/// a call, it may cut that call after its start and `after_fragment` argument fragments. A
/// max_tokens finish right after a call streamed in fragments may cut that call (its
/// `after_fragment`, clamped by assign_call_args once the arguments are known), unless the fault
/// already cuts it.
template <typename FaultGen>
rc::Gen<mock::Attempt> gen_stream(std::size_t calls, rc::Gen<std::optional<mock::FinishReason>> finish,
                                  FaultGen fault_gen) {
  return rc::gen::mapcat(
      rc::gen::pair(gen_body(calls), finish), [fault_gen](std::pair<std::vector<mock::Event>,
                                                                    std::optional<mock::FinishReason>> p) {
        std::vector<mock::Event> events = std::move(p.first);
        if (p.second) events.push_back(mock::FinishEvent{*p.second});
        const int n = static_cast<int>(events.size());
        return rc::gen::apply(
            [events = std::make_shared<const std::vector<mock::Event>>(std::move(events))](
                std::optional<mock::Fault> fault, std::optional<int> slice, int fragments,
                std::optional<int> after_fragment, std::optional<int> token_cut) {
              mock::Attempt a;
              a.events = *events;
              for (auto& e : a.events) {
                if (auto* c = std::get_if<mock::CallEvent>(&e)) c->fragments = fragments;
              }
              int fault_cuts = -1;  // the call event the fault cuts, if any
              if (fault && after_fragment) {
                const int at = mock::fault_after_event(*fault, a.events.size());
                if (at < static_cast<int>(a.events.size()) &&
                    std::holds_alternative<mock::CallEvent>(a.events[static_cast<std::size_t>(at)])) {
                  std::visit([&](auto& f) {
                    f.after_event = at;
                    f.after_fragment = std::min(*after_fragment, std::max(fragments, 1) - 1);
                  }, *fault);
                  fault_cuts = at;
                }
              }
              const std::size_t n = a.events.size();
              // The answer keeps a text or a whole call: a turn whose only part the limit cut would
              // commit an empty model content, which a session's next prompt cannot send
              // (scenarios/README.md "session").
              const bool keeps_a_part = n >= 2 && std::count_if(a.events.begin(), a.events.end() - 2, [](const mock::Event& e) {
                                          return !std::holds_alternative<mock::FinishEvent>(e);
                                        }) > 0;
              // Nor a fault between the cut call and its finish (lint: it would claim the call whole).
              const bool fault_before_finish =
                  fault && mock::fault_after_event(*fault, n) == static_cast<int>(n) - 1;  // `fault`: a.fault is set below
              if (token_cut && fragments >= 2 && keeps_a_part && !fault_before_finish && static_cast<int>(n) - 2 != fault_cuts &&
                  std::holds_alternative<mock::CallEvent>(a.events[n - 2])) {
                if (auto* f = std::get_if<mock::FinishEvent>(&a.events[n - 1]); f && f->reason == mock::FinishReason::kMaxTokens) {
                  f->after_fragment = std::min(*token_cut, fragments - 1);
                }
              }
              a.fault = std::move(fault);
              a.slice_bytes = slice;
              return a;
            },
            fault_gen(n), gen_slice_bytes(), gen_fragments(), gen_optional(gen_int(0, 3), 1, 1),
            gen_optional(gen_int(1, 3), 1, 1));
      });
}

inline rc::Gen<std::optional<mock::FinishReason>> gen_finish_completing() {
  return memo_gen(0, [&] {
    using F = std::optional<mock::FinishReason>;
    return gen_weighted<F>({{6, rc::gen::just(F(mock::FinishReason::kStop))},
                            {1, rc::gen::just(F(mock::FinishReason::kMaxTokens))}});
  });
}

inline rc::Gen<std::optional<mock::FinishReason>> gen_finish_any() {
  return memo_gen(0, [&] {
    using F = std::optional<mock::FinishReason>;
    return gen_weighted<F>({{4, rc::gen::just(F(mock::FinishReason::kStop))},
                            {1, rc::gen::just(F(mock::FinishReason::kMaxTokens))},
                            {3, rc::gen::just(F(mock::FinishReason::kContentFilter))},
                            {2, rc::gen::just(F(mock::FinishReason::kMalformedCall))},
                            {1, rc::gen::just(F())}});
  });
}

inline rc::Gen<std::optional<mock::FinishReason>> gen_finish_abnormal() {
  return memo_gen(0, [&] {
    using F = std::optional<mock::FinishReason>;
    return gen_weighted<F>({{3, rc::gen::just(F(mock::FinishReason::kContentFilter))},
                            {2, rc::gen::just(F(mock::FinishReason::kMalformedCall))},
                            {1, rc::gen::just(F())}});
  });
}

/// An HTTP error attempt: a status of attempt_statuses(provider), with or without retry_after_s.
inline rc::Gen<mock::Attempt> gen_status_attempt(const std::string& provider) {
  return memo_gen(provider, [&] {
    return rc::gen::apply(
        [](int status, std::optional<int> retry_after) {
          mock::Attempt a;
          a.status = status;
          if (retry_after) a.retry_after_s = *retry_after;
          return a;
        },
        gen_pick<int>(attempt_statuses(provider)), gen_optional(gen_pick<int>({30, 1, 5, 15, 90}), 1, 1));
  });
}

/// An attempt that usually fails: a status, a stream with a fault before its terminal frame, a
/// content-filter / malformed-call / missing finish, or any stream with any fault anywhere.
inline rc::Gen<mock::Attempt> gen_failing_attempt(std::size_t calls, int idle_s, const std::string& provider) {
  return memo_gen(std::tuple(calls, idle_s, provider), [&] {
    using OF [[maybe_unused]] = std::optional<mock::Fault>;
    auto prov = std::make_shared<const std::string>(provider);
    return gen_weighted<mock::Attempt>({
        {2, gen_status_attempt(provider)},
        {4, gen_stream(calls, gen_finish_completing(),
                       [idle_s, prov](int n) {
                         // Position strictly before the terminal frame, or inside it (cut).
                         return rc::gen::map(gen_fault(std::max(0, n - 1), idle_s, *prov), [](mock::Fault f) { return OF(f); });
                       })},
        {2, gen_stream(calls, gen_finish_abnormal(),
                       [idle_s, prov](int n) { return gen_optional(gen_harmless_fault(n, idle_s, *prov), 3, 1); })},
        {2, gen_stream(calls, gen_finish_any(),
                       [idle_s, prov](int n) { return gen_optional(gen_fault(n, idle_s, *prov), 1, 2); })},
    });
  });
}

/// The last scripted attempt of a turn: usually one that completes (stop / max_tokens, at most a
/// harmless fault), sometimes any failing attempt (it then repeats until the budget runs out).
/// `completing_only`: never a failing attempt (GenerateLimits::final_attempt_completes).
inline rc::Gen<mock::Attempt> gen_final_attempt(std::size_t calls, int idle_s, const std::string& provider,
                                                bool completing_only = false) {
  return memo_gen(std::tuple(calls, idle_s, provider, completing_only), [&] {
    auto prov = std::make_shared<const std::string>(provider);
    auto completing = gen_stream(calls, gen_finish_completing(),
                                 [idle_s, prov](int n) { return gen_optional(gen_harmless_fault(n, idle_s, *prov), 3, 1); });
    if (completing_only) return completing;
    return gen_weighted<mock::Attempt>({
        {8, completing},
        {1, gen_failing_attempt(calls, idle_s, provider)},
    });
  });
}

/// Names the calls of every attempt of `turn`: the k-th call event of an attempt gets calls[k]
/// (gen_body leaves them unnamed).
inline void name_calls(mock::Turn& turn, const std::vector<std::string>& calls) {
  for (mock::Attempt& a : turn.attempts) {
    std::size_t k = 0;
    for (mock::Event& e : a.events) {
      if (auto* c = std::get_if<mock::CallEvent>(&e)) c->name = calls[k++];
    }
  }
}

/// One turn: its call names (min_calls–max_calls), then 0–`max_failing` (at most 4) failing
/// attempts and a final one (`completing_final`: one that completes, gen_final_attempt).
inline rc::Gen<mock::Turn> gen_turn(int min_calls, int max_calls, int idle_s, const std::string& provider,
                                    int max_failing = 4, bool completing_final = false) {
  return memo_gen(std::tuple(min_calls, max_calls, idle_s, provider, max_failing, completing_final), [&] {
    return rc::gen::mapcat(
        rc::gen::mapcat(gen_int(min_calls, max_calls),
                        [](int c) {
                          return rc::gen::container<std::vector<std::string>>(static_cast<std::size_t>(c),
                                                                              gen_pick(tool_names()));
                        }),
        [idle_s, max_failing, completing_final,
         prov = std::make_shared<const std::string>(provider)](std::vector<std::string> calls) {
          const std::string& provider = *prov;
          const std::size_t count = calls.size();
          // 0–4 failing attempts: a size-bounded container, so shrinking removes any of them.
          return rc::gen::apply(
              [calls = std::make_shared<const std::vector<std::string>>(std::move(calls))](
                  std::vector<mock::Attempt> attempts, mock::Attempt last) {
                attempts.push_back(std::move(last));
                mock::Turn turn{std::move(attempts)};
                name_calls(turn, *calls);
                return turn;
              },
              rc::gen::resize(max_failing, rc::gen::container<std::vector<mock::Attempt>>(gen_failing_attempt(count, idle_s, provider))),
              gen_final_attempt(count, idle_s, provider, completing_final));
        });
  });
}

/// Deterministic small args for the call at (turn, position among the attempt's calls).
inline nlohmann::json call_args(const std::string& name, std::size_t turn, std::size_t index) {
  const std::string tag = "t" + std::to_string(turn) + "c" + std::to_string(index);
  // Member by member: an initializer list copies each value once more (1.6% of a case's
  // instructions went here).
  nlohmann::json args = nlohmann::json::object();
  if (name == "shell") {
    args["command"] = "./step.sh " + tag;
  } else if (name == "write_file") {
    args["path"] = "out/" + tag + ".txt";
    args["content"] = tag;
  } else if (name == "deploy") {
    args["target"] = "staging-" + tag;
  } else if (name == "read_file") {
    args["path"] = "src/" + tag + ".cc";
  } else {
    args["query"] = tag;
  }
  return args;
}

/// Clamps every max_tokens finish's `after_fragment` to the argument fragments its call sends
/// (fewer than all of them; none when the call sends fewer than two): run after a call's args change.
inline void clamp_token_cuts(mock::Script& script) {
  for (auto& turn : script.turns) {
    for (auto& attempt : turn.attempts) {
      // A max_tokens finish cuts inside the arguments: fewer fragments than the call sends.
      for (std::size_t i = 1; i < attempt.events.size(); ++i) {
        auto* f = std::get_if<mock::FinishEvent>(&attempt.events[i]);
        const auto* call = std::get_if<mock::CallEvent>(&attempt.events[i - 1]);
        if (f == nullptr || !f->after_fragment || call == nullptr) continue;
        const int sent = static_cast<int>(mock::split_fragments(call->args.dump(), std::max(call->fragments, 1)).size());
        if (sent < 2) f->after_fragment.reset();
        else f->after_fragment = std::min(*f->after_fragment, sent - 1);
      }
    }
  }
}

/// Fills every call's args from its turn and position (so a turn's attempts stream the same calls).
inline void assign_call_args(mock::Script& script) {
  for (std::size_t t = 0; t < script.turns.size(); ++t) {
    for (auto& attempt : script.turns[t].attempts) {
      std::size_t k = 0;
      for (auto& event : attempt.events) {
        if (auto* call = std::get_if<mock::CallEvent>(&event)) call->args = call_args(call->name, t, k++);
      }
    }
  }
  clamp_token_cuts(script);
}

/// For a non-streaming case: no slicing, argument fragments, cuts between fragments (by a fault or a
/// max_tokens finish) or faults past
/// the finish, which the answer (one body) cannot have and lint rejects. Drawn anyway, so the stream of random choices
/// is the same for both kinds of case.
inline void drop_streaming_only_fields(mock::Script& script) {
  for (mock::Turn& turn : script.turns) {
    for (mock::Attempt& a : turn.attempts) {
      a.slice_bytes.reset();
      if (a.fault) std::visit([](auto& f) { f.after_fragment.reset(); }, *a.fault);
      // A fault past the finish never plays on one body (lint rejects it there).
      const auto finish = std::find_if(a.events.begin(), a.events.end(),
                                       [](const mock::Event& e) { return std::holds_alternative<mock::FinishEvent>(e); });
      if (a.fault && finish != a.events.end() &&
          mock::fault_after_event(*a.fault, a.events.size()) > static_cast<int>(finish - a.events.begin())) {
        a.fault.reset();
      }
      for (mock::Event& e : a.events) {
        if (auto* c = std::get_if<mock::CallEvent>(&e)) c->fragments = 0;
        if (auto* f = std::get_if<mock::FinishEvent>(&e)) f->after_fragment.reset();
      }
    }
  }
}

/// The drawn choices behind a user interrupt: `while_tools` (after_calls, else after_event) and
/// three selectors reduced modulo what the script offers (see place_interrupt).
struct InterruptDraw {
  bool while_tools = true;
  int turn = 0;
  int attempt = 0;
  int point = 0;
  /// A session prompt follows the cancel (else the cancel ends the session: the run fails as
  /// cancelled, and what the runtime keeps is its final history).
  bool next_prompt = true;
};

/// One case in three draws an interrupt; one interrupt in two ends the session.
inline rc::Gen<std::optional<InterruptDraw>> gen_interrupt_draw() {
  return memo_gen(0, [&] {
    return gen_optional(
        rc::gen::apply([](bool tools, int t, int a, int p, bool next) { return InterruptDraw{tools, t, a, p, next}; },
                       rc::gen::map(gen_int(0, 2), [](int k) { return k != 0; }), gen_int(0, 63), gen_int(0, 63),
                       gen_int(0, 63), rc::gen::map(gen_int(0, 1), [](int k) { return k != 0; })),
        2, 1);
  });
}

/// Gives every attempt of `turn` (the last turn of a session prompt that another prompt follows) a
/// text, so the answer that ends the prompt is not an empty model content on the next prompt's
/// request (scenarios/README.md "session"); a fault or an interrupt after event e of that attempt
/// stays after the same event.
inline void give_answer_text(mock::Turn& turn, int turn_index, Scenario& s) {
  for (mock::Attempt& a : turn.attempts) {
    if (a.status) continue;
    const bool has_text = std::any_of(a.events.begin(), a.events.end(),
                                      [](const mock::Event& e) { return std::holds_alternative<mock::TextEvent>(e); });
    if (has_text) continue;
    a.events.insert(a.events.begin(), mock::TextEvent{"Done."});
    if (a.fault) {
      std::visit([](auto& f) {
        if (f.after_event) ++*f.after_event;
      }, *a.fault);
    }
    if (s.interrupt && s.interrupt->after_event && s.interrupt->turn == turn_index &&
        s.interrupt->attempt == static_cast<int>(&a - turn.attempts.data())) {
      ++*s.interrupt->after_event;  // still after the same event
    }
  }
}

/// The turns of one further session prompt: 0–2 turns that stream 1–4 calls, then an answer turn.
inline rc::Gen<std::vector<mock::Turn>> gen_prompt_turns(int idle_s, const std::string& provider) {
  return memo_gen(std::tuple(idle_s, provider), [&] {
    return rc::gen::map(rc::gen::pair(rc::gen::resize(2, rc::gen::container<std::vector<mock::Turn>>(
                                                             gen_turn(1, 4, idle_s, provider))),
                                      gen_turn(0, 0, idle_s, provider)),
                        [](std::pair<std::vector<mock::Turn>, mock::Turn> p) {
                          p.first.push_back(std::move(p.second));
                          return std::move(p.first);
                        });
  });
}

/// One case in four (of those without an interrupt) is a session of 2–3 prompts: the turns of each
/// further prompt (gen_prompt_turns).
inline rc::Gen<std::optional<std::vector<std::vector<mock::Turn>>>> gen_session_draw(int idle_s,
                                                                                    const std::string& provider) {
  return memo_gen(std::tuple(idle_s, provider), [&] {
    return gen_optional(rc::gen::mapcat(gen_int(1, 2),
                                        [idle_s, prov = std::make_shared<const std::string>(provider)](int n) {
                                          return rc::gen::container<std::vector<std::vector<mock::Turn>>>(
                                              static_cast<std::size_t>(n), gen_prompt_turns(idle_s, *prov));
                                        }),
                        3, 1);
  });
}

/// Appends the further prompts `prompts` (turns per prompt) to `s`: one session prompt each, its
/// turns after the script's, the previous prompt's answer turn given a text (give_answer_text).
inline void place_session(Scenario& s, const std::vector<std::vector<mock::Turn>>& prompts) {
  auto& turns = s.script.turns;
  for (std::size_t k = 0; k < prompts.size(); ++k) {
    give_answer_text(turns.back(), static_cast<int>(turns.size() - 1), s);
    s.session.push_back(SessionPrompt{"Now go on with step " + std::to_string(k + 2) + "."});
    turns.insert(turns.end(), prompts[k].begin(), prompts[k].end());
  }
}

/// Places `draw` on `s`: one draw in four (draw.attempt % 4 == 3) during the backoff before a
/// retry, when the script has a failed attempt another follows; else while tools run, after k
/// (0 … n-1) of the n calls of a turn before the last (each has calls); while the answer streams (streaming cases only), after a text or call event
/// of a streamed attempt of any turn. Unless the draw ends the session there, adds one session
/// prompt so the requests after the cancel are sent, and gives every attempt of the last turn a
/// text (give_answer_text), then a last turn that answers the next prompt if the interrupt never
/// fires. No eligible point: no interrupt. `while_streaming` (GenerateLimits::
/// interrupts_while_streaming): every draw is placed while the answer streams, on an attempt
/// without a fault.
inline void place_interrupt(Scenario& s, const InterruptDraw& draw, bool while_streaming = false) {
  auto& turns = s.script.turns;
  std::optional<Interrupt> in;
  if (draw.attempt % 4 == 3 && !while_streaming) {
    // One interrupt in four lands during a backoff when the script has one: the wait before
    // attempt a (scripted, within the budget) of a turn whose attempt a - 1 failed with a status
    // the runtime retries or a fault.
    std::vector<std::pair<int, int>> backoffs;
    const std::size_t budget = static_cast<std::size_t>(s.runtime.max_attempts.value_or(4));
    for (std::size_t t = 0; t < turns.size(); ++t) {
      for (std::size_t a = 1; a < std::min(turns[t].attempts.size(), budget); ++a) {
        const mock::Attempt& failed = turns[t].attempts[a - 1];
        if (failed.fault || (failed.status && (*failed.status == 429 || (*failed.status >= 500 && *failed.status != 501)))) {
          backoffs.push_back({static_cast<int>(t), static_cast<int>(a)});
        }
      }
    }
    if (!backoffs.empty()) {
      const auto& [t, a] = backoffs[static_cast<std::size_t>(draw.turn * 64 + draw.point) % backoffs.size()];
      in = Interrupt{t, std::nullopt, std::nullopt, std::nullopt, a};
    }
  }
  if (in) {
    // placed during a backoff
  } else if (s.runtime.stream == false || (draw.while_tools && !while_streaming)) {
    if (turns.size() < 2) return;
    const int t = draw.turn % static_cast<int>(turns.size() - 1);
    int calls = 0;
    for (const mock::Attempt& a : turns[static_cast<std::size_t>(t)].attempts) {
      int n = 0;
      for (const mock::Event& e : a.events) n += std::holds_alternative<mock::CallEvent>(e) ? 1 : 0;
      calls = std::max(calls, n);
    }
    if (calls == 0) return;
    in = Interrupt{t, std::nullopt, std::nullopt, draw.point % calls};
  } else {
    std::vector<std::pair<int, int>> streams;  // (turn, attempt) with a text or call event before the finish
    std::vector<int> points;
    for (std::size_t t = 0; t < turns.size(); ++t) {
      for (std::size_t a = 0; a < turns[t].attempts.size(); ++a) {
        const mock::Attempt& at = turns[t].attempts[a];
        if (while_streaming && at.fault) continue;
        int n = 0;
        while (!at.status && n < static_cast<int>(at.events.size()) &&
               !std::holds_alternative<mock::FinishEvent>(at.events[static_cast<std::size_t>(n)])) {
          ++n;
        }
        // A call its max_tokens finish cuts never reaches the runtime: no point to cancel after.
        if (n > 0 && mock::cut_by_finish(at.events, static_cast<std::size_t>(n - 1))) --n;
        if (n == 0) continue;
        streams.push_back({static_cast<int>(t), static_cast<int>(a)});
        points.push_back(n);
      }
    }
    if (streams.empty()) return;
    const std::size_t i = static_cast<std::size_t>(draw.turn * 64 + draw.attempt) % streams.size();
    in = Interrupt{streams[i].first, streams[i].second, draw.point % points[i], std::nullopt};
    // One mid-stream cancel in two that falls on a call streamed in fragments lands inside its
    // arguments (Gemini sends a call whole: never there).
    const mock::Event& at = turns[static_cast<std::size_t>(streams[i].first)]
                                .attempts[static_cast<std::size_t>(streams[i].second)]
                                .events[static_cast<std::size_t>(*in->after_event)];
    const auto* call = std::get_if<mock::CallEvent>(&at);
    if (call != nullptr && call->fragments >= 2 && s.script.provider != "gemini" && (draw.turn / 8) % 2 == 1) {
      in->after_fragment = (draw.point / 8) % call->fragments;
    }
  }
  s.interrupt = in;
  if (!draw.next_prompt) return;  // the cancel ends the session
  s.session = {SessionPrompt{"Continue where you stopped."}};
  give_answer_text(turns.back(), static_cast<int>(turns.size() - 1), s);
  // The next prompt's answer when the interrupt never fired (the first prompt then used every
  // turn); unused when it fired.
  mock::Attempt answer;
  answer.events = {mock::TextEvent{"Continued."}, mock::FinishEvent{}};
  turns.push_back(mock::Turn{{answer}});
}

/// Provider misbehaviour with call ids (docs/POLICY.md "Call ids"): one call repeats the id of an
/// earlier call, of its own answer or of an earlier turn, and with it the call's name and arguments
/// (a replay, answered and never run again) or not (a collision: a new call under a used id).
/// `pick` selects the pair of calls among those the script offers (place_call_ids).
struct IdDraw {
  bool earlier_turn = false;
  bool replay = false;
  int pick = 0;
};

/// One case in four draws a repeated call id.
inline rc::Gen<std::optional<IdDraw>> gen_id_draw() {
  return memo_gen(0, [&] {
    return gen_optional(rc::gen::apply([](int turn, int replay, int pick) { return IdDraw{turn != 0, replay != 0, pick}; },
                                       gen_int(0, 1), gen_int(0, 1), gen_int(0, 63)),
                        3, 1);
  });
}

/// The id generated cases give the calls whose id a provider repeats: no pattern the mock's own
/// ids (call_J_C, call_hiccup_J_C, toolu_hiccup_J_C) can produce.
inline constexpr const char* kReusedCallId = "tool_call_1";

/// Places `draw` on `s` (its calls named and their arguments assigned): the pair's earlier call
/// gets kReusedCallId in every attempt of its turn, the later one the same id marked `reuse_id`
/// and, for a replay, the earlier call's name and arguments. A pair in one answer is two calls of
/// one turn (every stream attempt of a turn has the same calls); across turns, a call of an
/// earlier turn and one of a later turn. When the script offers no pair of the drawn kind, the
/// other kind is used; when it offers none, nothing changes.
inline void place_call_ids(Scenario& s, const IdDraw& draw) {
  auto& turns = s.script.turns;
  auto calls_of = [&](std::size_t t) {
    int most = 0;
    for (const mock::Attempt& a : turns[t].attempts) {
      int n = 0;
      for (const mock::Event& e : a.events) n += std::holds_alternative<mock::CallEvent>(e) ? 1 : 0;
      most = std::max(most, n);
    }
    return most;
  };
  struct Pair {
    std::size_t first_turn;
    int first;
    std::size_t second_turn;
    int second;
  };
  std::vector<Pair> in_answer, across;
  for (std::size_t t = 0; t < turns.size(); ++t) {
    const int n = calls_of(t);
    for (int j = 0; j < n; ++j) {
      for (int k = j + 1; k < n; ++k) in_answer.push_back({t, j, t, k});
      for (std::size_t u = t + 1; u < turns.size(); ++u) {
        for (int k = 0; k < calls_of(u); ++k) across.push_back({t, j, u, k});
      }
    }
  }
  const std::vector<Pair>& pairs = (draw.earlier_turn ? across : in_answer).empty() ? (draw.earlier_turn ? in_answer : across)
                                                                                   : (draw.earlier_turn ? across : in_answer);
  if (pairs.empty()) return;
  const Pair& p = pairs[static_cast<std::size_t>(draw.pick) % pairs.size()];
  // The call at position `k` of every attempt of turn `t`.
  auto each_call = [&](std::size_t t, int k, const auto& f) {
    for (mock::Attempt& a : turns[t].attempts) {
      int i = 0;
      for (mock::Event& e : a.events) {
        if (auto* c = std::get_if<mock::CallEvent>(&e); c && i++ == k) f(*c);
      }
    }
  };
  std::optional<mock::CallEvent> first;
  each_call(p.first_turn, p.first, [&](mock::CallEvent& c) {
    c.id = kReusedCallId;
    if (!first) first = c;
  });
  each_call(p.second_turn, p.second, [&](mock::CallEvent& c) {
    c.id = kReusedCallId;
    c.reuse_id = true;
    if (draw.replay && first) {
      c.name = first->name;
      c.args = first->args;
    }
  });
}

/// Reasoning a model attaches to its answer (docs/POLICY.md "Reasoning"): `every_call` puts a
/// reasoning event before every call of each streamed attempt (interleaved thinking), else before
/// the first call only, or before the first text of an attempt without calls; `signed_by_script`
/// gives them a scripted signature (the same in every attempt) instead of the server's
/// per-request one.
struct ReasoningDraw {
  bool every_call = false;
  bool signed_by_script = false;
};

/// One case in five draws reasoning.
inline rc::Gen<std::optional<ReasoningDraw>> gen_reasoning_draw() {
  return memo_gen(0, [&] {
    return gen_optional(rc::gen::apply([](int every, int signed_) { return ReasoningDraw{every != 0, signed_ != 0}; },
                                       gen_int(0, 1), gen_int(0, 1)),
                        4, 1);
  });
}

/// What the tools do (SCENARIO-FORMAT.md "Tools"; docs/POLICY.md "Tools"): per name of
/// tool_names(), the behaviours of that tool's first calls (0–2 of them: an error result, a
/// JSON-RPC error, a lost reply, a hang, a call slower than the runtime's tool timeout, a slow
/// success); every later call answers at once.
struct ToolsDraw {
  std::vector<std::vector<mock::mcp::ToolCall>> calls;  ///< parallel to tool_names()
};

/// The behaviour of one drawn tool call.
inline rc::Gen<mock::mcp::ToolCall> gen_tool_call() {
  return memo_gen(0, [&] {
    return rc::gen::map(gen_int(0, 5), [](int k) {
      mock::mcp::ToolCall c;
      switch (k) {
        case 0: c.is_error = true; break;
        case 1: c.jsonrpc_error = mock::mcp::JsonRpcError{-32603, "Internal error"}; break;
        case 2: c.reply_lost = true; c.duration_s = 1; break;
        case 3: c.hang = true; break;
        case 4: c.duration_s = 90; break;  // past the reference runtime's 60 s tool timeout
        default: c.duration_s = 2; break;
      }
      return c;
    });
  });
}

/// One case in four scripts its tools.
inline rc::Gen<std::optional<ToolsDraw>> gen_tools_draw() {
  return memo_gen(0, [&] {
    const auto n = tool_names().size();
    return gen_optional(rc::gen::map(rc::gen::container<std::vector<std::vector<mock::mcp::ToolCall>>>(
                                         n, rc::gen::resize(2, rc::gen::container<std::vector<mock::mcp::ToolCall>>(
                                                                   gen_tool_call()))),
                                     [](std::vector<std::vector<mock::mcp::ToolCall>> calls) { return ToolsDraw{std::move(calls)}; }),
                        3, 1);
  });
}

/// Places `draw` on `s`: a tool (not idempotent) for each name of tool_names() some call of the
/// script uses, whose first calls do what the draw says and every later one answers at once.
inline void place_tools(Scenario& s, const ToolsDraw& draw) {
  std::set<std::string> used;
  for (const mock::Turn& t : s.script.turns) {
    for (const mock::Attempt& a : t.attempts) {
      for (const mock::Event& e : a.events) {
        if (const auto* c = std::get_if<mock::CallEvent>(&e)) used.insert(c->name);
      }
    }
  }
  for (std::size_t i = 0; i < tool_names().size() && i < draw.calls.size(); ++i) {
    if (!used.contains(tool_names()[i])) continue;
    mock::mcp::Tool tool;
    tool.name = tool_names()[i];
    tool.calls = draw.calls[i];
    tool.calls.push_back(mock::mcp::ToolCall{});
    s.tools.tools.push_back(std::move(tool));
  }
}

/// Places `draw` on `s`: inserts reasoning events (place_reasoning's positions) into every
/// attempt that streams events, after its faults and interrupt are placed: a fault or an interrupt
/// after event e moves with that event, so a fault that came right before a call now falls right
/// after its reasoning (inside the thinking block).
inline void place_reasoning(Scenario& s, const ReasoningDraw& draw) {
  auto& turns = s.script.turns;
  for (std::size_t t = 0; t < turns.size(); ++t) {
    for (std::size_t a = 0; a < turns[t].attempts.size(); ++a) {
      mock::Attempt& at = turns[t].attempts[a];
      if (at.status) continue;
      std::vector<std::size_t> before;  // event indexes to put reasoning before, ascending
      for (std::size_t i = 0; i < at.events.size(); ++i) {
        if (!std::holds_alternative<mock::CallEvent>(at.events[i])) continue;
        before.push_back(i);
        if (!draw.every_call) break;
      }
      if (before.empty()) {
        for (std::size_t i = 0; i < at.events.size(); ++i) {
          if (std::holds_alternative<mock::TextEvent>(at.events[i])) {
            before.push_back(i);
            break;
          }
        }
      }
      for (std::size_t k = before.size(); k-- > 0;) {
        const std::size_t i = before[k];
        mock::ReasoningEvent r{"Plan step " + std::to_string(k + 1) + " of turn " + std::to_string(t) + ".", ""};
        if (draw.signed_by_script) r.signature = "c2lnbmVkLXR1cm4t" + std::to_string(t) + "-" + std::to_string(k);
        at.events.insert(at.events.begin() + static_cast<long>(i), mock::Event(std::move(r)));
        if (at.fault) {
          std::visit([i](auto& f) {
            if (f.after_event && static_cast<std::size_t>(*f.after_event) >= i) ++*f.after_event;
          }, *at.fault);
        }
        auto& in = s.interrupt;
        if (in && in->after_event && in->turn == static_cast<int>(t) && in->attempt == static_cast<int>(a) &&
            static_cast<std::size_t>(*in->after_event) >= i) {
          ++*in->after_event;  // still after the same text or call event
        }
      }
    }
  }
}

/// What a generated scenario may hold. The default is the whole v1 space (the reference runtime's
/// exploration); an external agent (a black box) can play a narrower one (`hiccup explore --agent`,
/// harness/agents/agent_explorer.h): one wire format, its own tool and attempt budget, no user to
/// interrupt it, one prompt, and real time, so waits stay short.
struct GenerateLimits {
  /// Every case under these runtime settings instead of drawn ones (gen_runtime); their
  /// idle_timeout_s (else 60) sizes the stalls. nullopt: drawn.
  std::optional<RuntimeSettings> runtime;
  /// When set, every call is this tool with the args {tool_command_arg: "{{ledger}} && echo tTcK"}
  /// (T its turn, K its position): the ledger placeholder (harness/agents/ledger.h) makes each
  /// real execution leave a line. "": calls drawn from tool_names() with call_args().
  std::string tool_name;
  std::string tool_command_arg = "command";
  /// Turns in the script at most: 1..6 (a session's or an interrupt's further turns aside).
  int max_turns = 6;
  /// Failing attempts scripted before a turn's last one, per turn: 0..4.
  int max_failing_attempts = 4;
  /// A turn's last attempt always completes (no turn that fails until the budget runs out).
  bool final_attempt_completes = false;
  /// > 0: every stall lasts at most this many seconds (no stall that trips an idle timeout or
  /// outlasts the run); 0: any.
  double max_stall_s = 0;
  /// > 0: every Retry-After is at most this many seconds; 0: any.
  double max_retry_after_s = 0;
  bool interrupts = true;     ///< a user interrupt may be drawn (place_interrupt)
  /// Every drawn interrupt lands while an answer streams, on an attempt that scripts no fault (a
  /// black box: its runner holds the stream at the point and signals there; a cancel while a tool
  /// runs or during a backoff it cannot time, and a fault on that attempt would take the hold's
  /// slot), so a draw for a tool or a backoff is placed mid-stream instead of being lost.
  bool interrupts_while_streaming = false;
  bool sessions = true;       ///< a session of several prompts may be drawn (place_session)
  bool repeated_ids = true;   ///< a provider that repeats a call id may be drawn (place_call_ids)
  bool reasoning = true;      ///< reasoning the model attaches may be drawn (place_reasoning)
  bool tools = true;          ///< what the scenario's tools do may be drawn (place_tools)
  /// Every case gets reasoning (the draw's placement where one case in five draws it, else
  /// ReasoningDraw{}); the draws stay the same. For measuring (bench/bench_main.cpp); needs `reasoning`.
  bool reasoning_every_case = false;
  /// The WebSocket mode's own faults may be drawn (place_forgotten_response): the explorer sets it
  /// over `--transport websocket` only. Off, nothing else is drawn differently.
  bool websocket_faults = false;
  /// A max_tokens finish on an attempt without a call only in the scenario's last turn; elsewhere
  /// it becomes `stop` (apply_limits). For an agent that asks for more of such an answer
  /// (Recipe::resumes_truncated_answer: claude-code): a session prompt's truncated last answer
  /// would take the next turn's answer for its continuation, and the script's turns no longer meet
  /// the agent's. Off, nothing is drawn differently.
  bool truncated_answer_last_only = false;
  bool operator==(const GenerateLimits&) const = default;
};

/// The args GenerateLimits::tool_name gives the call at (turn, position): the ledger placeholder,
/// then a tag that keeps the calls of one turn apart.
inline nlohmann::json limited_tool_args(const GenerateLimits& limits, std::size_t turn, std::size_t index) {
  return {{limits.tool_command_arg, "{{ledger}} && echo t" + std::to_string(turn) + "c" + std::to_string(index)}};
}

/// Applies the per-value limits of `limits` to a generated scenario (names and args of calls,
/// stall and Retry-After ceilings); the structural ones are drawn that way (gen_scenario).
inline void apply_limits(Scenario& s, const GenerateLimits& limits) {
  for (std::size_t t = 0; t < s.script.turns.size(); ++t) {
    for (mock::Attempt& a : s.script.turns[t].attempts) {
      if (limits.truncated_answer_last_only && t + 1 < s.script.turns.size() &&
          std::none_of(a.events.begin(), a.events.end(), [](const mock::Event& e) { return std::holds_alternative<mock::CallEvent>(e); })) {
        for (mock::Event& e : a.events) {
          if (auto* f = std::get_if<mock::FinishEvent>(&e); f && f->reason == mock::FinishReason::kMaxTokens) {
            f->reason = mock::FinishReason::kStop;
          }
        }
      }
      if (limits.max_retry_after_s > 0 && a.retry_after_s && *a.retry_after_s > limits.max_retry_after_s) {
        a.retry_after_s = limits.max_retry_after_s;
      }
      if (limits.max_stall_s > 0 && a.fault) {
        if (auto* stall = std::get_if<mock::StallFault>(&*a.fault); stall && stall->seconds > limits.max_stall_s) {
          stall->seconds = limits.max_stall_s;
        }
      }
      if (limits.tool_name.empty()) continue;
      std::size_t k = 0;
      for (mock::Event& e : a.events) {
        if (auto* c = std::get_if<mock::CallEvent>(&e)) {
          c->name = limits.tool_name;
          c->args = limited_tool_args(limits, t, k++);
        }
      }
    }
  }
  if (!limits.tool_name.empty()) clamp_token_cuts(s.script);
}

/// A whole scenario named `name`: its provider (`provider`, or drawn from providers() when ""),
/// runtime settings, then 1–6 turns (every turn but the last streams 1–4 calls in its completing
/// attempt so the run goes on; the last streams none), and in one case in three a user interrupt
/// with a second session prompt or, one in two, without one (place_interrupt); without an
/// interrupt, one case in four is a session of 2–3 prompts (place_session); in one case in four a
/// provider repeats a call id (place_call_ids); in one case in five the model attaches reasoning
/// (place_reasoning); in one case in four its tools fail, hang or lose replies (place_tools).
/// With `limits.websocket_faults`, one case in two the server forgets a response a later request
/// continues from (place_forgotten_response).
/// `expect` is left empty: the oracle fills it.
/// `recovery` fixes the recovery design ("hold", "continue"; "" draws it: gen_runtime).
/// `limits` narrows the space (GenerateLimits; the default leaves it whole and draws exactly what
/// a call without it draws).
/// Makes the server forget (websocket.forget_response) the response of the `k`-th (modulo their
/// number) attempt that completes in a turn some other turn follows: the next request, a
/// continuation over the WebSocket mode, is answered previous_response_not_found (400). An attempt
/// completes (`response.completed`, the response a continuation names) when it has a `stop`
/// finish and neither a status nor a fault. No such attempt: unchanged.
inline void place_forgotten_response(Scenario& s, int k) {
  std::vector<mock::Attempt*> completing;
  for (std::size_t t = 0; t + 1 < s.script.turns.size(); ++t) {
    for (mock::Attempt& a : s.script.turns[t].attempts) {
      const bool finished = std::any_of(a.events.begin(), a.events.end(), [](const mock::Event& e) {
        const auto* f = std::get_if<mock::FinishEvent>(&e);
        return f != nullptr && f->reason == mock::FinishReason::kStop;
      });
      if (finished && !a.status && !a.fault) completing.push_back(&a);
    }
  }
  if (completing.empty()) return;
  mock::Attempt& a = *completing[static_cast<std::size_t>(k) % completing.size()];
  if (!a.websocket) a.websocket = mock::WebSocketChoices{};
  a.websocket->forget_response = true;
}

inline rc::Gen<Scenario> gen_scenario_drawn(std::string name, std::string provider, std::string recovery,
                                            GenerateLimits limits);

inline rc::Gen<Scenario> gen_scenario(std::string name, std::string provider = "", std::string recovery = "",
                                      GenerateLimits limits = {}) {
  if (!limits.websocket_faults) return gen_scenario_drawn(std::move(name), std::move(provider), std::move(recovery), std::move(limits));
  rc::Gen<Scenario> drawn = gen_scenario_drawn(std::move(name), std::move(provider), std::move(recovery), std::move(limits));
  // One case in two; the first completing attempt one time in two (a later one may not be reached:
  // a turn before it can end the run), else one of the next 7 (modulo their number).
  return rc::gen::map(rc::gen::pair(std::move(drawn), gen_optional(gen_weighted_index({8, 1, 1, 1, 1, 1, 1, 1}), 1, 1)),
                      [](std::pair<Scenario, std::optional<int>> p) {
                        if (p.second) place_forgotten_response(p.first, *p.second);
                        return std::move(p.first);
                      });
}

inline rc::Gen<Scenario> gen_scenario_drawn(std::string name, std::string provider, std::string recovery,
                                            GenerateLimits limits) {
  // A drawn provider does not shrink: a counterexample stays in the format the failure was found in.
  const rc::Gen<std::string> provider_gen =
      provider.empty() ? rc::gen::noShrink(gen_pick(providers())) : rc::gen::just(provider);
  const rc::Gen<RuntimeSettings> runtime_gen = limits.runtime ? rc::gen::just(*limits.runtime) : gen_runtime(recovery);
  auto shared_limits = std::make_shared<const GenerateLimits>(std::move(limits));
  return rc::gen::mapcat(rc::gen::pair(runtime_gen, provider_gen),
                         [name, shared_limits](const std::pair<RuntimeSettings, std::string>& settings) {
    const RuntimeSettings& rt = settings.first;
    const std::string provider = settings.second;
    const int idle = static_cast<int>(rt.idle_timeout_s.value_or(60));
    const GenerateLimits& lim = *shared_limits;
    const int failing = std::clamp(lim.max_failing_attempts, 0, 4);
    const int before_last = std::clamp(lim.max_turns, 1, 6) - 1;
    return rc::gen::map(
        // 0–5 turns before the last: a size-bounded container, so shrinking removes any of them.
        rc::gen::tuple(rc::gen::resize(before_last, rc::gen::container<std::vector<mock::Turn>>(
                                              gen_turn(1, 4, idle, provider, failing, lim.final_attempt_completes))),
                       gen_turn(0, 0, idle, provider, failing, lim.final_attempt_completes), gen_interrupt_draw(),
                       gen_session_draw(idle, provider), gen_id_draw(), gen_reasoning_draw(), gen_tools_draw()),
        [head = std::make_shared<const std::tuple<std::string, RuntimeSettings, std::string>>(name, rt, provider),
         shared_limits](
            std::tuple<std::vector<mock::Turn>, mock::Turn, std::optional<InterruptDraw>,
                       std::optional<std::vector<std::vector<mock::Turn>>>, std::optional<IdDraw>,
                       std::optional<ReasoningDraw>, std::optional<ToolsDraw>> p) {
          const auto& [name, rt, provider] = *head;
          const GenerateLimits& lim = *shared_limits;
          Scenario s;
          s.name = name;
          s.description = "generated by hiccup explore";
          s.tags = {"explore"};
          s.prompt = "Run the generated task.";
          s.runtime = rt;
          s.script.provider = provider;
          s.script.turns = std::move(std::get<0>(p));
          s.script.turns.push_back(std::move(std::get<1>(p)));
          assign_call_args(s.script);
          if (rt.stream == false) drop_streaming_only_fields(s.script);
          // An interrupt is defined under hold only (docs/POLICY.md "Recovery designs").
          if (lim.interrupts && std::get<2>(p) && !rt.recovery) {
            place_interrupt(s, *std::get<2>(p), lim.interrupts_while_streaming);
          }
          // Sessions and interrupts are drawn under hold only (a kept cut turn moves a prompt's
          // run into turns its script gave the next prompt).
          if (lim.sessions && !s.interrupt && std::get<3>(p) && !rt.recovery) {
            place_session(s, *std::get<3>(p));
            assign_call_args(s.script);  // the further prompts' turns
            if (rt.stream == false) drop_streaming_only_fields(s.script);
          }
          if (lim.repeated_ids && std::get<4>(p)) place_call_ids(s, *std::get<4>(p));
          if (lim.reasoning && (std::get<5>(p) || lim.reasoning_every_case)) {
            place_reasoning(s, std::get<5>(p).value_or(ReasoningDraw{}));
          }
          if (lim.tools && std::get<6>(p)) place_tools(s, *std::get<6>(p));
          if (rt.recovery) {
            // Under continue each turn may keep a cut turn once and move on: as many plain answers
            // after the script as it has turns, so no case runs past its script.
            mock::Attempt answer;
            answer.events = {mock::TextEvent{"Done."}, mock::FinishEvent{mock::FinishReason::kStop}};
            const std::size_t n = s.script.turns.size();
            for (std::size_t i = 0; i < n; ++i) s.script.turns.push_back(mock::Turn{{answer}});
          }
          apply_limits(s, lim);
          // A cancel its attempt's own fault or finish would pass by never fires: not drawn.
          if (s.interrupt && unreachable_interrupt(s)) s.interrupt.reset();
          return s;
        });
  });
}

// ---------------------------------------------------------------------------------------------
// `hiccup explore --from FILE`: fault schedules drawn onto a given scenario (a recording or any
// scenario file) instead of a generated one. The base's turns, texts, calls, runtime settings and
// provider stay as they are; what is drawn is only what goes wrong before each turn's answer.

/// One failure drawn before a turn's scripted attempts: an HTTP status attempt, or the turn's own
/// answer (its events as the base has them) streamed with a fault.
struct BaseFaultDraw {
  bool status = false;
  mock::Attempt status_attempt;  ///< when `status`
  mock::Fault fault;             ///< otherwise; its after_event is clamped to the answer when placed
};

/// A BaseFaultDraw: a fault of any kind (gen_fault, positions up to 7) three times in four, else a
/// status attempt the provider sends (gen_status_attempt); shrinks towards the fault.
inline rc::Gen<BaseFaultDraw> gen_base_fault_draw(int idle_s, const std::string& provider) {
  return memo_gen(std::tuple(idle_s, provider), [&] {
    return gen_weighted<BaseFaultDraw>({
        {3, rc::gen::map(gen_fault(7, idle_s, provider), [](mock::Fault f) {
           BaseFaultDraw d;
           d.fault = std::move(f);
           return d;
         })},
        {1, rc::gen::map(gen_status_attempt(provider), [](mock::Attempt a) {
           BaseFaultDraw d;
           d.status = true;
           d.status_attempt = std::move(a);
           return d;
         })},
    });
  });
}

/// Puts `draws[t]` before the scripted attempts of turn t of `s` (turns beyond draws untouched). A
/// fault draw copies the turn's answer, the last stream attempt of the turn (its events, slicing
/// and WebSocket choices, not its own fault), with the fault's after_event at most the answer's
/// last event (before the finish: the fault hits the answer, never after it). A turn without a
/// stream attempt takes only status draws. The interrupt's attempt indexes move with the
/// attempts inserted before them.
inline void place_base_faults(Scenario& s, const std::vector<std::vector<BaseFaultDraw>>& draws) {
  for (std::size_t t = 0; t < s.script.turns.size() && t < draws.size(); ++t) {
    mock::Turn& turn = s.script.turns[t];
    const mock::Attempt* answer = nullptr;
    for (const mock::Attempt& a : turn.attempts) {
      if (!a.status) answer = &a;
    }
    std::vector<mock::Attempt> inserted;
    for (const BaseFaultDraw& d : draws[t]) {
      if (d.status) {
        inserted.push_back(d.status_attempt);
        continue;
      }
      if (answer == nullptr) continue;
      mock::Attempt a;
      a.events = answer->events;
      a.slice_bytes = answer->slice_bytes;
      a.websocket = answer->websocket;
      const int last = std::max(0, static_cast<int>(a.events.size()) - 1);
      mock::Fault f = d.fault;
      std::visit([last](auto& k) { k.after_event = std::min(k.after_event.value_or(last), last); }, f);
      a.fault = f;
      inserted.push_back(std::move(a));
    }
    if (inserted.empty()) continue;
    if (s.interrupt && s.interrupt->turn == static_cast<int>(t)) {
      const int n = static_cast<int>(inserted.size());
      if (s.interrupt->attempt) *s.interrupt->attempt += n;
      if (s.interrupt->before_attempt) *s.interrupt->before_attempt += n;
    }
    turn.attempts.insert(turn.attempts.begin(), inserted.begin(), inserted.end());
  }
}

/// `hiccup explore --from`: `base` (expect dropped: the oracle fills it) named `name`, with 0-2
/// failures drawn before each turn's scripted attempts (gen_base_fault_draw, place_base_faults).
/// Shrinking removes draws and simplifies them; the base itself is never drawn, so it never
/// shrinks here (minimization may still delete what the failure does not need).
inline rc::Gen<Scenario> gen_from_base(std::string name, Scenario base) {
  const int idle = static_cast<int>(base.runtime.idle_timeout_s.value_or(60));
  const std::string provider = base.script.provider;
  const int turns = static_cast<int>(base.script.turns.size());
  auto shared = std::make_shared<const Scenario>(std::move(base));
  return rc::gen::map(
      rc::gen::container<std::vector<std::vector<BaseFaultDraw>>>(
          static_cast<std::size_t>(turns),
          rc::gen::resize(2, rc::gen::container<std::vector<BaseFaultDraw>>(gen_base_fault_draw(idle, provider)))),
      [shared, name](const std::vector<std::vector<BaseFaultDraw>>& draws) {
        Scenario s = *shared;
        s.name = name;
        s.description = "drawn by hiccup explore --from onto \"" + shared->name + "\"";
        s.expect = {};
        s.catches.clear();
        place_base_faults(s, draws);
        return s;
      });
}

}  // namespace harness::explore
