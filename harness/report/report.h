// Report writers behind one listener interface (Catch2's reporter habit): the console streams as it
// goes; JUnit and summary.json are cumulative (JUnit needs totals first) and write at run end.
// Fan several out at once with FanoutListener. Every report carries the seed.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/invariants.h"

namespace harness {

/// What a run is, for report headers.
struct RunInfo {
  std::string command;               ///< "run" or "explore"
  std::uint64_t seed = 0;
  std::string transport;             ///< "http" / "memory"
  std::vector<std::string> defects;  ///< defects switched on from the CLI
  /// The wire format every case was played in (`--provider`); "" = each scenario's own (run) or
  /// drawn per case (explore).
  std::string provider;
  /// The external agent's recipe name for a black-box run (`run --agent`, `matrix`); the seed
  /// means nothing there and is not shown. "" for the reference runtime.
  std::string agent;
};

/// One test case of a report: a scenario of `run`, or a property of `explore`.
struct ReportCase {
  std::string name;
  std::string classname;               ///< JUnit classname, e.g. "hiccup.mid-stream" or "hiccup.explore"
  bool passed = true;
  std::vector<Violation> violations;
  std::string digest;                  ///< transcript digest ("" when none)
  double wall_ms = 0;
  std::string detail;                  ///< extra text for failures (replay command, seed, …)
  nlohmann::json extra = nlohmann::json::object();  ///< merged into summary.json's case entry
};

struct RunTotals {
  int passed = 0;
  int failed = 0;
  int differences = 0;  ///< of the passed: black-box policy differences (DIFF), not bugs
  double wall_ms = 0;
};

class ReportListener {
 public:
  virtual ~ReportListener() = default;
  virtual void run_starting(const RunInfo& info) = 0;
  virtual void case_ended(const ReportCase& c) = 0;
  virtual void run_ended(const RunTotals& totals) = 0;
};

/// Sends every event to each listener in order.
class FanoutListener final : public ReportListener {
 public:
  void add(std::unique_ptr<ReportListener> listener) { listeners_.push_back(std::move(listener)); }
  void run_starting(const RunInfo& info) override { for (auto& l : listeners_) l->run_starting(info); }
  void case_ended(const ReportCase& c) override { for (auto& l : listeners_) l->case_ended(c); }
  void run_ended(const RunTotals& t) override { for (auto& l : listeners_) l->run_ended(t); }
 private:
  std::vector<std::unique_ptr<ReportListener>> listeners_;
};

/// One line per case (`PASS name` / `FAIL name` + one indented line per violation), last line
/// `N passed, N failed`.
std::unique_ptr<ReportListener> make_console_listener(std::ostream& out);
/// JUnit XML at `path` (testsuite with the seed as a property; a failure per failed case).
std::unique_ptr<ReportListener> make_junit_listener(std::string path);
/// summary.json at `path`: {command, seed, transport, defects, passed, failed, wall_ms,
/// cases:[{name, passed, digest, violations:[…], …extra}]}.
std::unique_ptr<ReportListener> make_summary_listener(std::string path);

}  // namespace harness
