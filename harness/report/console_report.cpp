// The console listener: streams one line per case, indented violation lines, and the closing
// `N passed, N failed` line that CI log readers look for.
#include <algorithm>
#include <iomanip>

#include "harness/report/report.h"

namespace harness {
namespace {

class ConsoleListener final : public ReportListener {
 public:
  explicit ConsoleListener(std::ostream& out) : out_(out) {}
  void run_starting(const RunInfo& info) override {
    out_ << "hiccup " << info.command << ": ";
    if (info.agent.empty()) out_ << "seed " << info.seed;
    else out_ << "agent " << info.agent << " (black box, real time)";
    out_ << ", transport " << info.transport;
    if (!info.provider.empty()) out_ << ", provider " << info.provider;
    if (!info.recovery.empty()) out_ << ", recovery " << info.recovery;
    if (!info.defects.empty()) {
      out_ << ", defects";
      for (const auto& d : info.defects) out_ << ' ' << d;
    }
    // The files' own defects (a replayed counterexample fails without --defect): named, and whose.
    std::vector<std::string> own;
    for (const auto& d : info.scenario_defects) {
      if (std::find(info.defects.begin(), info.defects.end(), d) == info.defects.end()) own.push_back(d);
    }
    if (!own.empty()) {
      out_ << (info.defects.empty() ? ", defects" : " and");
      for (const auto& d : own) out_ << ' ' << d;
      out_ << " (runtime.defects of ";
      if (info.scenarios <= 1) out_ << "the scenario file";
      else out_ << info.scenarios_with_defects << " of " << info.scenarios << " scenario files";
      out_ << ')';
    }
    out_ << '\n';
  }
  void case_ended(const ReportCase& c) override {
    const bool differs = c.passed && c.extra.contains("differences");
    out_ << (!c.passed ? "FAIL " : differs ? "DIFF " : "PASS ") << c.name;
    if (c.extra.contains("design") && c.extra["design"].is_string()) {  // a black box's recovery design
      out_ << " (" << c.extra["design"].get<std::string>() << ")";
    }
    // A max_tokens finish ended the answer: a passing run says so too (the outcome is not whole).
    if (c.extra.contains("truncated") && c.extra["truncated"] == true) out_ << " (answer truncated at the token limit)";
    out_ << "  (" << std::fixed << std::setprecision(1) << c.wall_ms << " ms)\n";
    if (differs) {  // a black box that failed honestly where docs/POLICY.md would have retried
      out_ << "    a policy difference, not a bug (--strict makes it fail):\n";
      for (const auto& d : c.extra["differences"]) {
        out_ << "    " << d.value("invariant", "") << ": " << d.value("message", "") << '\n';
      }
    }
    for (const Violation& v : c.violations) {
      out_ << "    " << v.invariant;
      out_ << violation_location(v);
      out_ << ": " << v.message << '\n';
    }
    if (!c.passed && !c.detail.empty()) out_ << "    " << c.detail << '\n';
    if (c.extra.contains("not_applicable") && !c.extra["not_applicable"].empty()) {  // black-box runs
      out_ << "    n/a:";
      for (const auto& name : c.extra["not_applicable"]) out_ << ' ' << name.get<std::string>();
      out_ << '\n';
    }
  }
  void run_ended(const RunTotals& t) override {
    out_ << t.passed << " passed, " << t.failed << " failed";
    if (t.differences > 0) out_ << " (" << t.differences << " of the passed: a policy difference, not a bug)";
    out_ << std::endl;
  }

 private:
  std::ostream& out_;
};

}  // namespace

std::unique_ptr<ReportListener> make_console_listener(std::ostream& out) {
  return std::make_unique<ConsoleListener>(out);
}

}  // namespace harness
