// Delta debugging of counterexamples; see minimize.h.
#include "harness/explore/minimize.h"

#include <algorithm>
#include <exception>
#include <memory>
#include <string>
#include <unordered_set>

#include "harness/oracle.h"
#include "harness/scenario_io.h"

namespace harness::explore {
namespace {

std::string turn_ptr(std::size_t t) { return "/turns/" + std::to_string(t); }
std::string attempt_ptr(std::size_t t, std::size_t a) { return turn_ptr(t) + "/attempts/" + std::to_string(a); }

mock::Attempt& attempt_at(Scenario& s, std::size_t t, std::size_t a) { return s.script.turns[t].attempts[a]; }

bool is_catalogue_invariant(const std::string& name) {
  for (const auto& info : invariant_catalogue()) {
    if (info.name == name) return true;
  }
  return false;
}


/// Deletes turn t; the user's interrupt goes with it, or moves back one turn when it is later.
void erase_turn(Scenario& x, std::size_t t) {
  x.script.turns.erase(x.script.turns.begin() + static_cast<long>(t));
  if (x.interrupt && x.interrupt->turn == static_cast<int>(t)) x.interrupt.reset();
  if (x.interrupt && x.interrupt->turn > static_cast<int>(t)) --x.interrupt->turn;
}

/// Deletes attempt a of turn t, moving an interrupt's attempt or backoff point back with it.
void erase_attempt(Scenario& x, std::size_t t, std::size_t a) {
  auto& at = x.script.turns[t].attempts;
  at.erase(at.begin() + static_cast<long>(a));
  if (x.interrupt && x.interrupt->attempt && x.interrupt->turn == static_cast<int>(t)) {
    if (*x.interrupt->attempt == static_cast<int>(a)) x.interrupt.reset();
    else if (*x.interrupt->attempt > static_cast<int>(a)) --*x.interrupt->attempt;
  }
  if (x.interrupt && x.interrupt->before_attempt && x.interrupt->turn == static_cast<int>(t)) {
    // the backoff before attempt b follows attempt b - 1: deleting it or an
    // earlier one moves the point back; none left before it, no backoff
    if (*x.interrupt->before_attempt > static_cast<int>(a)) --*x.interrupt->before_attempt;
    if (*x.interrupt->before_attempt < 1) x.interrupt.reset();
  }
}

/// Deletes event e of attempt (t, a), keeping its fault and an interrupt after the same events.
void erase_event(Scenario& x, std::size_t t, std::size_t a, std::size_t e) {
  mock::Attempt& at = attempt_at(x, t, a);
  const int n = static_cast<int>(at.events.size());
  if (at.fault) {
    // Keep the fault after the same events: one fewer of them when the
    // deleted event was delivered before it; a cut inside the deleted call
    // no longer has a call to cut.
    const int after = mock::fault_after_event(*at.fault, at.events.size());
    std::visit([&](auto& f) {
      if (f.after_event && after > static_cast<int>(e)) f.after_event = after - 1;
      if (f.after_event && after == static_cast<int>(e)) f.after_fragment.reset();
      if (!f.after_event && after == n) f.after_fragment.reset();
    }, *at.fault);
  }
  // A max_tokens finish that cut the deleted call has no call to cut.
  if (e + 1 < at.events.size()) {
    if (auto* f = std::get_if<mock::FinishEvent>(&at.events[e + 1])) f->after_fragment.reset();
  }
  at.events.erase(at.events.begin() + static_cast<long>(e));
  auto& in = x.interrupt;
  if (in && in->after_event && in->turn == static_cast<int>(t) &&
      in->attempt == static_cast<int>(a)) {
    if (*in->after_event == static_cast<int>(e)) in.reset();
    else if (*in->after_event > static_cast<int>(e)) --*in->after_event;
  }
}

}  // namespace

std::string_view edit_kind_name(Edit::Kind kind) {
  switch (kind) {
    case Edit::Kind::kTurn: return "turn";
    case Edit::Kind::kAttempt: return "attempt";
    case Edit::Kind::kEvent: return "event";
    case Edit::Kind::kFault: return "fault";
    case Edit::Kind::kSlicing: return "slicing";
    case Edit::Kind::kInterrupt: return "interrupt";
    case Edit::Kind::kSession: return "session";
    case Edit::Kind::kRuntime: return "runtime";
    case Edit::Kind::kSimplify: return "simplify";
  }
  return "?";
}

std::vector<Edit> deletions(const Scenario& s) {
  std::vector<Edit> out;
  const auto& turns = s.script.turns;
  // Largest units first: a whole session prompt with the turns its run used (the turns of one
  // prompt are contiguous: the first prompt's come first, the last prompt's last), then turns; one
  // accepted turn deletion saves many event deletions. Deleting a prompt alone leaves its turns to
  // the neighbouring prompt, which rarely still fails the same way.
  if (!s.session.empty()) {
    for (std::size_t t = 0; t + 1 < turns.size(); ++t) {
      out.push_back({Edit::Kind::kSession, "/prompt", "delete the first prompt and turns 0.." + std::to_string(t),
                     [t](Scenario& x) {
                       x.prompt = x.session.front().prompt;
                       x.session.erase(x.session.begin());
                       x.script.turns.erase(x.script.turns.begin(), x.script.turns.begin() + static_cast<long>(t + 1));
                       if (x.interrupt && x.interrupt->turn <= static_cast<int>(t)) x.interrupt.reset();
                       if (x.interrupt) x.interrupt->turn -= static_cast<int>(t + 1);
                     }});
    }
    for (std::size_t t = 1; t < turns.size(); ++t) {
      out.push_back({Edit::Kind::kSession, "/session/" + std::to_string(s.session.size() - 1),
                     "delete the last session prompt and turns " + std::to_string(t) + "..",
                     [t](Scenario& x) {
                       x.session.pop_back();
                       x.script.turns.erase(x.script.turns.begin() + static_cast<long>(t), x.script.turns.end());
                       if (x.interrupt && x.interrupt->turn >= static_cast<int>(t)) x.interrupt.reset();
                     }});
    }
  }
  for (std::size_t t = 0; t < turns.size(); ++t) {
    out.push_back({Edit::Kind::kTurn, turn_ptr(t), "delete turn", [t](Scenario& x) { erase_turn(x, t); }});
  }
  for (std::size_t t = 0; t < turns.size(); ++t) {
    for (std::size_t a = 0; a < turns[t].attempts.size(); ++a) {
      out.push_back({Edit::Kind::kAttempt, attempt_ptr(t, a), "delete attempt",
                     [t, a](Scenario& x) { erase_attempt(x, t, a); }});
    }
  }
  for (std::size_t t = 0; t < turns.size(); ++t) {
    for (std::size_t a = 0; a < turns[t].attempts.size(); ++a) {
      for (std::size_t e = 0; e < turns[t].attempts[a].events.size(); ++e) {
        out.push_back({Edit::Kind::kEvent, attempt_ptr(t, a) + "/events/" + std::to_string(e), "delete event",
                       [t, a, e](Scenario& x) { erase_event(x, t, a, e); }});
      }
    }
  }
  for (std::size_t t = 0; t < turns.size(); ++t) {
    for (std::size_t a = 0; a < turns[t].attempts.size(); ++a) {
      if (turns[t].attempts[a].fault) {
        out.push_back({Edit::Kind::kFault, attempt_ptr(t, a) + "/fault", "delete fault",
                       [t, a](Scenario& x) { attempt_at(x, t, a).fault.reset(); }});
      }
    }
  }
  for (std::size_t t = 0; t < turns.size(); ++t) {
    for (std::size_t a = 0; a < turns[t].attempts.size(); ++a) {
      // The WebSocket mode's own faults (a close code, a forgotten response): one fault, deleted whole.
      if (turns[t].attempts[a].websocket) {
        out.push_back({Edit::Kind::kFault, attempt_ptr(t, a) + "/websocket", "delete websocket fault",
                       [t, a](Scenario& x) { attempt_at(x, t, a).websocket.reset(); }});
      }
    }
  }
  for (std::size_t t = 0; t < turns.size(); ++t) {
    for (std::size_t a = 0; a < turns[t].attempts.size(); ++a) {
      if (turns[t].attempts[a].slice_bytes) {
        out.push_back({Edit::Kind::kSlicing, attempt_ptr(t, a) + "/slice_bytes", "delete slicing",
                       [t, a](Scenario& x) { attempt_at(x, t, a).slice_bytes.reset(); }});
      }
    }
  }
  if (s.interrupt) {
    out.push_back({Edit::Kind::kInterrupt, "/interrupt", "delete interrupt", [](Scenario& x) { x.interrupt.reset(); }});
  }
  if (s.interrupt && s.interrupt->after_fragment) {
    out.push_back({Edit::Kind::kInterrupt, "/interrupt/after_fragment", "cancel after the call whole",
                   [](Scenario& x) { x.interrupt->after_fragment.reset(); }});
  }
  for (std::size_t i = 0; i < s.session.size(); ++i) {
    out.push_back({Edit::Kind::kSession, "/session/" + std::to_string(i), "delete session prompt",
                   [i](Scenario& x) { x.session.erase(x.session.begin() + static_cast<long>(i)); }});
  }
  return out;
}

std::vector<Edit> coarse_deletions(const Scenario& s) {
  std::vector<Edit> out;
  const auto& turns = s.script.turns;
  const std::size_t n = turns.size();
  // Runs of turns: the first k kept (what followed the failure), then the last k (what led to it).
  if (n >= 3) {
    for (std::size_t k = 1; k < n; ++k) {
      out.push_back({Edit::Kind::kTurn, turn_ptr(k), "delete turns " + std::to_string(k) + "..",
                     [k](Scenario& x) {
                       for (std::size_t t = x.script.turns.size(); t-- > k;) erase_turn(x, t);
                     }});
      out.push_back({Edit::Kind::kTurn, turn_ptr(0), "delete turns 0.." + std::to_string(n - k - 1),
                     [k, n](Scenario& x) {
                       for (std::size_t t = n - k; t-- > 0;) erase_turn(x, t);
                     }});
    }
  }
  // Each turn alone: what the runs above cannot take out, a turn between two the failure needs
  // (the first and the last turn alone are runs above already). Before any attempt or event of a
  // turn is cut, so that no edit is spent inside a turn that goes whole later.
  for (std::size_t t = n >= 3 ? 1 : 0; t < (n >= 3 ? n - 1 : n); ++t) {
    if (n < 2) break;
    out.push_back({Edit::Kind::kTurn, turn_ptr(t), "delete turn", [t](Scenario& x) { erase_turn(x, t); }});
  }
  // Runs of a turn's failed attempts (all of them, then each half), its last attempt kept.
  for (std::size_t t = 0; t < n; ++t) {
    const std::size_t failed = turns[t].attempts.empty() ? 0 : turns[t].attempts.size() - 1;
    if (failed < 2) continue;
    const auto range = [t](std::size_t from, std::size_t to) {
      return Edit{Edit::Kind::kAttempt, attempt_ptr(t, from),
                  "delete attempts " + std::to_string(from) + ".." + std::to_string(to - 1),
                  [t, from, to](Scenario& x) {
                    for (std::size_t a = to; a-- > from;) erase_attempt(x, t, a);
                  }};
    };
    out.push_back(range(0, failed));
    out.push_back(range(0, failed / 2));
    out.push_back(range(failed / 2, failed));
  }
  // The events no attempt delivers, all at once: those after every fault that ends its stream
  // (all but a stall or a malformed frame, which go on, and a cut, which sends the start of the
  // next frame; after a partly sent call, the events after that call). The agent sees the same
  // bytes, so this is mostly kept in one candidate, where the runs below would spend one a turn.
  struct Tail {
    std::size_t t, a, from, count;
  };
  std::vector<Tail> tails;
  for (std::size_t t = 0; t < n; ++t) {
    for (std::size_t a = 0; a < turns[t].attempts.size(); ++a) {
      const mock::Attempt& at = turns[t].attempts[a];
      if (!at.fault || std::holds_alternative<mock::StallFault>(*at.fault) ||
          std::holds_alternative<mock::MalformedFault>(*at.fault) || std::holds_alternative<mock::CutFault>(*at.fault)) {
        continue;
      }
      const std::size_t count = at.events.size();
      const auto after = static_cast<std::size_t>(std::max(0, mock::fault_after_event(*at.fault, count)));
      const bool partly = std::visit([](const auto& f) { return f.after_fragment.has_value(); }, *at.fault);
      const std::size_t from = std::min(count, after + (partly ? 1 : 0));
      if (from < count) tails.push_back({t, a, from, count});
    }
  }
  if (tails.size() >= 2) {
    out.push_back({Edit::Kind::kEvent,
                   attempt_ptr(tails.front().t, tails.front().a) + "/events/" + std::to_string(tails.front().from),
                   "delete the events after every fault that ends its stream (" + std::to_string(tails.size()) +
                       " attempts)",
                   [tails](Scenario& x) {
                     for (const Tail& tail : tails) {
                       for (std::size_t e = tail.count; e-- > tail.from;) erase_event(x, tail.t, tail.a, e);
                     }
                   }});
  }
  // Runs of an attempt's events: those after its fault (never delivered when the fault ends the
  // stream), then each half.
  for (std::size_t t = 0; t < n; ++t) {
    for (std::size_t a = 0; a < turns[t].attempts.size(); ++a) {
      const mock::Attempt& at = turns[t].attempts[a];
      const std::size_t count = at.events.size();
      const auto range = [t, a](std::size_t from, std::size_t to) {
        return Edit{Edit::Kind::kEvent, attempt_ptr(t, a) + "/events/" + std::to_string(from),
                    "delete events " + std::to_string(from) + ".." + std::to_string(to - 1),
                    [t, a, from, to](Scenario& x) {
                      for (std::size_t e = to; e-- > from;) erase_event(x, t, a, e);
                    }};
      };
      std::size_t tail_from = count;  // the undelivered tail, when there is one
      if (at.fault) {
        const auto after = static_cast<std::size_t>(std::max(0, mock::fault_after_event(*at.fault, count)));
        if (after + 2 <= count) out.push_back(range(tail_from = after, count));
      }
      if (count >= 4) {
        if (count / 2 != tail_from) out.push_back(range(count / 2, count));
        out.push_back(range(0, count / 2));
      }
    }
  }
  return out;
}

std::vector<Edit> focus_deletions(const Scenario& s) {
  std::vector<Edit> out;
  const auto& turns = s.script.turns;
  std::size_t failed_total = 0;
  for (const mock::Turn& t : turns) failed_total += t.attempts.empty() ? 0 : t.attempts.size() - 1;
  if (failed_total < 2) return out;
  for (std::size_t t = 0; t < turns.size(); ++t) {
    for (std::size_t a = 0; a + 1 < turns[t].attempts.size(); ++a) {
      out.push_back({Edit::Kind::kAttempt, attempt_ptr(t, a), "delete every failed attempt but this one",
                     [t, a](Scenario& x) {
                       // Highest index first, so that the indices still to delete stay valid.
                       for (std::size_t u = x.script.turns.size(); u-- > 0;) {
                         const std::size_t n = x.script.turns[u].attempts.size();
                         for (std::size_t b = n == 0 ? 0 : n - 1; b-- > 0;) {
                           if (u != t || b != a) erase_attempt(x, u, b);
                         }
                       }
                     }});
    }
  }
  return out;
}

std::vector<Edit> simplifications(const Scenario& s) {
  std::vector<Edit> out;
  const RuntimeSettings& rt = s.runtime;
  auto reset = [&out](bool set, const char* field, std::function<void(RuntimeSettings&)> f) {
    if (!set) return;
    out.push_back({Edit::Kind::kRuntime, std::string("/runtime/") + field, "reset to the default",
                   [f](Scenario& x) { f(x.runtime); }});
  };
  reset(rt.model.has_value(), "model", [](RuntimeSettings& r) { r.model.reset(); });
  reset(rt.max_attempts.has_value(), "max_attempts", [](RuntimeSettings& r) { r.max_attempts.reset(); });
  reset(rt.backoff_s.has_value(), "backoff_s", [](RuntimeSettings& r) { r.backoff_s.reset(); });
  reset(rt.fallback_model.has_value(), "fallback_model", [](RuntimeSettings& r) { r.fallback_model.reset(); });
  reset(rt.idle_timeout_s.has_value(), "idle_timeout_s", [](RuntimeSettings& r) { r.idle_timeout_s.reset(); });
  reset(rt.consumer.has_value(), "consumer", [](RuntimeSettings& r) { r.consumer.reset(); });
  reset(rt.stream.has_value(), "stream", [](RuntimeSettings& r) { r.stream.reset(); });
  reset(rt.recovery.has_value(), "recovery", [](RuntimeSettings& r) { r.recovery.reset(); });
  reset(rt.continuation_prompt.has_value(), "continuation_prompt",
        [](RuntimeSettings& r) { r.continuation_prompt.reset(); });

  const auto& turns = s.script.turns;
  for (std::size_t t = 0; t < turns.size(); ++t) {
    for (std::size_t a = 0; a < turns[t].attempts.size(); ++a) {
      const mock::Attempt& at = turns[t].attempts[a];
      const std::string p = attempt_ptr(t, a);
      if (at.retry_after_s) {
        out.push_back({Edit::Kind::kSimplify, p + "/retry_after_s", "drop Retry-After",
                       [t, a](Scenario& x) { attempt_at(x, t, a).retry_after_s.reset(); }});
      }
      if (at.fault) {
        if (mock::fault_after_fragment(*at.fault)) {
          out.push_back({Edit::Kind::kSimplify, p + "/fault/after_fragment", "drop after_fragment",
                         [t, a](Scenario& x) {
                           std::visit([](auto& f) { f.after_fragment.reset(); }, *attempt_at(x, t, a).fault);
                         }});
        }
        if (const auto* d = std::get_if<mock::DisconnectFault>(&*at.fault); d && d->delay_ms != 0) {
          out.push_back({Edit::Kind::kSimplify, p + "/fault/delay_ms", "delay_ms → 0", [t, a](Scenario& x) {
                           std::get<mock::DisconnectFault>(*attempt_at(x, t, a).fault).delay_ms = 0;
                         }});
        }
        if (const auto* r = std::get_if<mock::ResetFault>(&*at.fault); r && r->idle_ms != 0) {
          out.push_back({Edit::Kind::kSimplify, p + "/fault/idle_ms", "idle_ms → 0", [t, a](Scenario& x) {
                           std::get<mock::ResetFault>(*attempt_at(x, t, a).fault).idle_ms = 0;
                         }});
        }
      }
      for (std::size_t e = 0; e < at.events.size(); ++e) {
        const std::string ep = p + "/events/" + std::to_string(e);
        const mock::Event& ev = at.events[e];
        if (const auto* text = std::get_if<mock::TextEvent>(&ev); text && text->text != "ok") {
          out.push_back({Edit::Kind::kSimplify, ep + "/text", "text → \"ok\"", [t, a, e](Scenario& x) {
                           std::get<mock::TextEvent>(attempt_at(x, t, a).events[e]).text = "ok";
                         }});
        }
        if (const auto* call = std::get_if<mock::CallEvent>(&ev)) {
          if (!call->args.empty()) {
            out.push_back({Edit::Kind::kSimplify, ep + "/call/args", "args → {}", [t, a, e](Scenario& x) {
                             std::get<mock::CallEvent>(attempt_at(x, t, a).events[e]).args = nlohmann::json::object();
                           }});
          }
          if (!call->id.empty()) {
            out.push_back({Edit::Kind::kSimplify, ep + "/call/id", "drop id", [t, a, e](Scenario& x) {
                             auto& c = std::get<mock::CallEvent>(attempt_at(x, t, a).events[e]);
                             c.id.clear();
                             c.reuse_id = false;  // no id, nothing reused
                           }});
          }
          if (call->fragments != 0) {
            out.push_back({Edit::Kind::kSimplify, ep + "/call/fragments", "drop fragments", [t, a, e](Scenario& x) {
                             std::get<mock::CallEvent>(attempt_at(x, t, a).events[e]).fragments = 0;
                           }});
          }
        }
        if (const auto* fin = std::get_if<mock::FinishEvent>(&ev); fin && fin->reason == mock::FinishReason::kMaxTokens) {
          if (fin->after_fragment) {
            out.push_back({Edit::Kind::kSimplify, ep + "/after_fragment", "drop after_fragment", [t, a, e](Scenario& x) {
                             std::get<mock::FinishEvent>(attempt_at(x, t, a).events[e]).after_fragment.reset();
                           }});
          }
          out.push_back({Edit::Kind::kSimplify, ep + "/finish", "max_tokens → stop", [t, a, e](Scenario& x) {
                           auto& f = std::get<mock::FinishEvent>(attempt_at(x, t, a).events[e]);
                           f.reason = mock::FinishReason::kStop;
                           f.after_fragment.reset();  // only a max_tokens finish cuts a call
                         }});
        }
      }
    }
  }
  return out;
}

std::set<std::string> failure_target(const std::vector<Violation>& violations) {
  std::set<std::string> invariants, expects;
  for (const auto& v : violations) (is_catalogue_invariant(v.invariant) ? invariants : expects).insert(v.invariant);
  return invariants.empty() ? expects : invariants;
}

bool breaks_all(const std::vector<Violation>& violations, const std::set<std::string>& target) {
  if (target.empty()) return false;
  for (const auto& name : target) {
    if (std::none_of(violations.begin(), violations.end(), [&](const Violation& v) { return v.invariant == name; })) {
      return false;
    }
  }
  return true;
}

void FailureJudge::keep_content(const Scenario& base) {
  keep_content_ = true;
  for (const mock::Turn& t : base.script.turns) {
    answers_.push_back(t.attempts.empty() ? mock::Attempt{} : t.attempts.back());
    for (const mock::Attempt& a : t.attempts) {
      for (const mock::Event& e : a.events) {
        if (const auto* text = std::get_if<mock::TextEvent>(&e)) texts_.insert(text->text);
        if (const auto* call = std::get_if<mock::CallEvent>(&e)) args_.insert(call->args.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      }
    }
  }
}

bool FailureJudge::content_kept(const Scenario& candidate) const {
  if (!keep_content_) return true;
  if (candidate.script.turns.size() != answers_.size()) return false;
  for (std::size_t t = 0; t < answers_.size(); ++t) {
    const auto& attempts = candidate.script.turns[t].attempts;
    if (attempts.empty() || !(attempts.back() == answers_[t])) return false;
  }
  for (const mock::Turn& t : candidate.script.turns) {
    for (const mock::Attempt& a : t.attempts) {
      for (const mock::Event& e : a.events) {
        if (const auto* text = std::get_if<mock::TextEvent>(&e); text && !texts_.count(text->text)) return false;
        if (const auto* call = std::get_if<mock::CallEvent>(&e); call && !args_.count(call->args.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))) return false;
      }
    }
  }
  return true;
}

std::optional<CaseResult> FailureJudge::fails(const Scenario& candidate) {
  ++runs_;
  if (!recovery_.empty() && candidate.runtime.recovery.value_or("hold") != recovery_) return std::nullopt;
  if (!content_kept(candidate)) return std::nullopt;
  try {
    Scenario s = candidate;
    s.expect = oracle_expect(s);
    CaseResult r = run_scenario(s, options_);
    if (!breaks_all(r.violations, target_)) return std::nullopt;
    if (!passes_without_defects(s)) return std::nullopt;
    // Lint only what would be kept: write it and load it back, as `hiccup lint` would.
    if (!parse_scenario(write_scenario(s), s.name + ".json").problems.empty()) return std::nullopt;
    return r;
  } catch (const std::exception&) {
    return std::nullopt;  // a candidate the harness cannot run is not a counterexample
  }
}

bool FailureJudge::passes_without_defects(const Scenario& candidate) const {
  if (options_.extra_defects.empty() && candidate.runtime.defects.empty()) return true;
  Scenario reference = candidate;
  reference.runtime.defects.clear();
  RunOptions options = options_;
  options.extra_defects.clear();
  return run_scenario(reference, options).passed();
}

std::vector<Edit> failing_deletions(const Scenario& scenario, FailureJudge& judge) {
  std::vector<Edit> out;
  for (Edit& d : deletions(scenario)) {
    Scenario candidate = scenario;
    d.apply(candidate);
    if (judge.fails(candidate)) out.push_back(std::move(d));
  }
  return out;
}

MinimizeByResult minimize_by(const Scenario& start, const StillFails& fails, int max_tries,
                             const std::function<bool()>& stop, bool black_box,
                             const std::function<void(const Edit&, const Scenario&)>& kept) {
  MinimizeByResult out;
  out.scenario = start;
  using Enumerate = std::vector<Edit> (*)(const Scenario&);
  const Enumerate phases[] = {&focus_deletions, &coarse_deletions, &deletions, &simplifications};
  bool progressed = true;
  bool first_pass = true;
  while (progressed) {
    progressed = false;
    for (Enumerate enumerate : phases) {
      // Runs of units are a head start, tried on the first pass only: 1-minimality is a matter of
      // single deletions, and a run rejected once would mostly be rejected again. A black box's
      // candidates cost agent runs each: no simplification, which leaves the size as it is.
      if ((enumerate == &focus_deletions || enumerate == &coarse_deletions) && !(black_box && first_pass)) continue;
      if (enumerate == &simplifications && black_box) continue;
      std::vector<Edit> edits = enumerate(out.scenario);
      // After a kept edit the list is enumerated again and the walk goes on at the same index: the
      // edits before it were tried on a larger scenario and are tried again on the next pass.
      for (std::size_t i = 0; i < edits.size();) {
        if (out.tries >= max_tries || (stop && stop())) return out;  // one_minimal stays false
        Scenario candidate = out.scenario;
        edits[i].apply(candidate);
        ++out.tries;
        if (std::optional<Scenario> still = fails(candidate)) {
          out.scenario = std::move(*still);
          ++out.accepted;
          progressed = true;
          const Edit done = std::move(edits[i]);
          if (kept) kept(done, out.scenario);
          edits = enumerate(out.scenario);
          // Runs of turns come first and their number depends on the turns left, so the same
          // index would skip what follows them: the walk goes on at the same edit when the new
          // list has it (the next middle turn, shifted into the place of the one deleted).
          if (enumerate == &coarse_deletions) {
            const auto same = std::find_if(edits.begin(), edits.end(), [&](const Edit& e) {
              return e.description == done.description && e.pointer == done.pointer;
            });
            if (same != edits.end()) i = static_cast<std::size_t>(same - edits.begin());
          }
        } else {
          ++i;
        }
      }
    }
    first_pass = false;
  }
  out.one_minimal = true;
  return out;
}

StillFails remember_rejections(StillFails fails, int& repeats) {
  auto rejected = std::make_shared<std::unordered_set<std::string>>();
  return [fails = std::move(fails), rejected, &repeats](const Scenario& candidate) -> std::optional<Scenario> {
    std::string file = write_scenario(candidate);
    if (rejected->contains(file)) {
      ++repeats;
      return std::nullopt;
    }
    std::optional<Scenario> kept = fails(candidate);
    if (!kept) rejected->insert(std::move(file));
    return kept;
  };
}

MinimizeResult minimize(const Scenario& start, const CaseResult& start_result, FailureJudge& judge, int max_tries) {
  Scenario first = start;
  first.expect = oracle_expect(first);
  CaseResult last = start_result;  // the run of the last candidate kept
  const MinimizeByResult found = minimize_by(
      first,
      [&](const Scenario& candidate) -> std::optional<Scenario> {
        std::optional<CaseResult> r = judge.fails(candidate);
        if (!r) return std::nullopt;
        last = std::move(*r);
        return last.scenario;
      },
      max_tries);
  MinimizeResult out;
  out.scenario = found.scenario;
  out.result = std::move(last);
  out.tries = found.tries;
  out.accepted = found.accepted;
  out.one_minimal = found.one_minimal;
  return out;
}

}  // namespace harness::explore
