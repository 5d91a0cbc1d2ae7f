// Joining the report directories of one exploration run in shards (`hiccup explore --shard K/N`,
// e.g. one CI job or Kubernetes pod per shard) into the report the unsharded run would have
// written: `hiccup report merge OUT DIR…`. Also replaying a summary.json object through report
// listeners, so a merged (or downloaded) summary becomes JUnit, summary.md and report.html again.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/invariants.h"

namespace harness {

class ReportListener;

/// One shard's report directory and its parsed summary.json.
struct ShardReport {
  std::filesystem::path dir;
  nlohmann::json summary;
};

/// Why shards cannot be merged; the message names the directories at fault and what differs.
class MergeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A counterexample file the merged report refers to: copy `from` (in a shard's directory) to `to`.
struct CounterexampleCopy {
  std::filesystem::path from;
  std::filesystem::path to;
};

struct MergedReport {
  nlohmann::json summary;                  ///< summary.json object (docs/summary.schema.json)
  std::vector<CounterexampleCopy> copies;  ///< counterexamples to copy into OUT/counterexamples/
};

/// Merges explore shard summaries into one summary.json object for report directory `out_dir`.
///
/// Requires every summary to come from `hiccup explore` (command "explore") with `shard`,
/// `cases_requested` and `case_digests`, all with the same seed, case count, defect set (order
/// ignored), provider, transport and `hiccup_version`, the same shard count N, and exactly one
/// directory per shard 1…N; otherwise throws MergeError (overlap: two directories are the same
/// shard; missing: which K of N are absent).
///
/// The result is the unsharded run's report: per property (explore's report cases) it passed when
/// every shard's passed; `cases_run`, `determinism_checked` and `exercised` are summed, and so is
/// `coverage` (report/coverage_counts.h merge_coverage_json, with `warnings` from the sums); a failing property keeps
/// the failure with the lowest case index (its violations, transcript, sizes, counterexample path
/// rewritten to OUT/counterexamples/ and its replay line with it); `determinism` keeps every shard's
/// violations. `digest` is recomputed over all shards' case digests in index order, so it equals
/// the digest of an unsharded run of the same cases. `wall_ms` is the slowest shard's; `shards`
/// lists each shard's directory, index, counts, time and command line.
MergedReport merge_shard_reports(const std::vector<ShardReport>& shards, const std::filesystem::path& out_dir);

/// `v` from its summary.json form (violation_to_json's inverse; absent locations are -1).
Violation violation_from_json(const nlohmann::json& v);

/// Sends a summary.json object through `listener` as run_starting, one case_ended per case and
/// run_ended, so any report writer can regenerate its file from it. Fields a listener has no slot
/// for travel in ReportCase::extra / RunTotals::extra.
void replay_summary(const nlohmann::json& summary, ReportListener& listener);

}  // namespace harness
