// `hiccup defects`, `hiccup faults`, `hiccup invariants`: print the catalogues.
#include <algorithm>
#include <iomanip>
#include <iostream>

#include "harness/cli/commands.h"
#include "harness/agents/agent_runner.h"
#include "harness/invariants.h"
#include "mock_server/faults.h"
#include "runtime_under_test/defects.h"

namespace harness::cli {
namespace {

bool wants_help(const Args& args, const char* usage) {
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << usage;
      return true;
    }
  }
  return false;
}

int reject_args(const Args& args, std::string_view command) {
  if (args.empty()) return -1;
  return usage_error(command, "unexpected argument \"" + args.front() + "\"");
}

}  // namespace

int defects_command(const Args& args) {
  constexpr const char* kUsage =
      "usage: hiccup defects\n  lists the reference runtime's seeded defects (use with --defect NAME)\n";
  if (wants_help(args, kUsage)) return kExitPassed;
  if (int rc = reject_args(args, "defects"); rc >= 0) return rc;
  std::size_t width = 0;
  for (const rut::DefectInfo& d : rut::defect_catalogue()) width = std::max(width, d.name.size());
  for (const rut::DefectInfo& d : rut::defect_catalogue()) {
    std::cout << std::left << std::setw(static_cast<int>(width) + 2) << d.name << d.doc
              << (d.design.empty() ? std::string() : " (" + std::string(d.design) + " only)")
              << (d.transport.empty() ? std::string() : " (--transport " + std::string(d.transport) + " only)") << '\n';
  }
  return kExitPassed;
}

int faults_command(const Args& args) {
  constexpr const char* kUsage =
      "usage: hiccup faults\n  lists the fault kinds a scenario attempt may carry, with their fields\n";
  if (wants_help(args, kUsage)) return kExitPassed;
  if (int rc = reject_args(args, "faults"); rc >= 0) return rc;
  for (const mock::FaultKindInfo& f : mock::fault_catalogue()) {
    std::cout << std::left << std::setw(13) << f.name << f.doc << '\n';
    std::cout << "             " << std::setw(16) << "after_event"
              << "integer  events fully delivered before the fault (default: all)\n";
    for (const mock::FaultFieldInfo& field : f.fields) {
      if (field.name == "after_event") continue;
      std::cout << "             " << std::setw(16) << field.name << std::setw(9) << field.type << field.doc << '\n';
    }
  }
  return kExitPassed;
}

int invariants_command(const Args& args) {
  constexpr const char* kUsage =
      "usage: hiccup invariants\n  lists the invariants every run is checked against, the verdicts black-box\n"
      "  agent runs get on top, and what stays n/a for them and why\n";
  if (wants_help(args, kUsage)) return kExitPassed;
  if (int rc = reject_args(args, "invariants"); rc >= 0) return rc;
  constexpr int kWidth = 35;
  std::cout << "invariants (every run; for external agents too, clean-output when the recipe says where its output shows text):\n";
  for (const InvariantInfo& i : invariant_catalogue()) {
    std::cout << "  " << std::left << std::setw(kWidth) << i.name << i.doc << '\n';
  }
  std::cout << "\nblack-box verdicts (run --agent, run --agent-cmd, matrix; judged in real time):\n";
  for (const agents::BlackBoxCheck& c : agents::black_box_verdicts()) {
    std::cout << "  " << std::left << std::setw(kWidth) << c.name << c.doc << '\n';
  }
  std::cout << "\nn/a for external agents:\n";
  for (const agents::BlackBoxCheck& c : agents::not_applicable_checks()) {
    std::cout << "  " << std::left << std::setw(kWidth) << c.name << c.doc << '\n';
  }
  return kExitPassed;
}

}  // namespace harness::cli
