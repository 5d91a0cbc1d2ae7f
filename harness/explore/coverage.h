// Coverage of an exploration: what its cases exercised, counted in cases. Per fault kind (a fault of
// that kind fired), finish reason (a finish of that reason was delivered), HTTP status answered,
// provider, fault position and session prompts reached, and per invariant the cases in which its precondition held — the
// dangerous state the invariant guards (docs/COVERAGE.md). An invariant whose precondition never
// held was never exercised: a green run says nothing about it, and the explorer warns.
//
// Everything is read from the server's journal and the scenario (what was played and delivered),
// never from the runtime under test, so a defect cannot hide its own precondition.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/runner.h"

namespace harness::explore {

/// One invariant's precondition.
struct InvariantPrecondition {
  std::string_view invariant;  ///< a name of invariant_catalogue()
  std::string_view holds_when; ///< one line, e.g. "a call was delivered by an attempt that then failed"
  /// Whether it held in `result`'s run.
  bool (*held)(const CaseResult& result);
};

/// One precondition per invariant of invariant_catalogue(), in catalogue order.
const std::vector<InvariantPrecondition>& invariant_preconditions();

/// Fault positions counted: "before any event" (the fault fired with no event delivered), "after a
/// call" (the last event delivered before it was a call), "inside arguments" (it cut a call between
/// argument fragments), "in the last turn" (it fired in the script's last turn).
const std::vector<std::string_view>& fault_positions();

/// What one case exercised: the names it counts once under each group.
struct CaseCoverage {
  std::vector<std::string> faults;      ///< fault kinds that fired
  std::vector<std::string> finishes;    ///< finish reasons delivered ("stop", "max_tokens", …)
  std::vector<std::string> statuses;    ///< HTTP error statuses answered ("503", …), rejections included
  std::vector<std::string> positions;   ///< of fault_positions()
  std::vector<std::string> invariants;  ///< invariants whose precondition held
  std::string provider;
  /// "N prompt(s)": how many of the session's prompts its requests carried ("" when no request was
  /// sent)
  std::string session;
  /// Of call_id_kinds(): how a call whose id the provider repeated (reuse_id) reached the client
  std::vector<std::string> ids;
  /// Of reasoning_kinds(): how reasoning reached the client and came back
  std::vector<std::string> reasoning;
};

/// Reasoning counted (docs/POLICY.md "Reasoning"): "delivered" (a reasoning event reached the
/// client), "before a call" (and the call it leads to reached it whole, so its history must send the
/// reasoning back), "fault after it" (a fault fired right after a reasoning event: inside the
/// thinking block, before the part it leads to), "sent back" (a later request owed the reasoning
/// of a call it held, and the server accepted it: JournalEntry::reasoning_due).
const std::vector<std::string_view>& reasoning_kinds();

/// A provider's repeated call ids counted: "in one answer" (an earlier call of the same answer has
/// the id), "from an earlier turn" (only a call of an earlier turn has it), "replay" (the call
/// repeats that call's name and arguments too), "collision" (it does not).
const std::vector<std::string_view>& call_id_kinds();

/// What `result`'s run exercised.
CaseCoverage case_coverage(const CaseResult& result);

/// Counts over many cases. Every fault kind of the catalogue, finish reason, position and invariant
/// is listed, with 0 when never exercised; providers and statuses only as seen.
class Coverage {
 public:
  Coverage();
  void add(const CaseCoverage& c);
  int cases() const { return cases_; }
  /// Cases per name in `group` ("fault", "finish", "status", "provider", "position", "session",
  /// "invariant");
  /// 0 for a name never counted.
  int count(const std::string& group, const std::string& name) const;
  /// Invariants whose precondition never held, in catalogue order.
  std::vector<std::string> unexercised() const;
  /// One warning line per unexercised invariant: "invariant NAME was never exercised: no case had
  /// PRECONDITION".
  std::vector<std::string> warnings() const;
  /// {"cases", "faults": {kind: n}, "finishes", "statuses", "providers", "positions", "sessions",
  ///  "invariants": {name: {"cases": n, "precondition": text}}, "unexercised": [names]}: the shape
  ///  of report/coverage_counts.h, which sums the coverage of shards (merge_coverage_json).
  nlohmann::json to_json() const;
  /// The console table printed at the end of `hiccup explore`.
  void print(std::ostream& out) const;

 private:
  int cases_ = 0;
  std::map<std::string, std::map<std::string, int>> counts_;  ///< group → name → cases
  std::map<std::string, std::vector<std::string>> order_;     ///< group → names listed first, in order
};

}  // namespace harness::explore
