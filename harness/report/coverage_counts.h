// The coverage counts' shape in summary.json (docs/COVERAGE.md, docs/REPORTS.md): cases per name
// in each group, and per invariant the cases in which its precondition held. The explorer writes
// them (harness/explore/coverage.h counts one run's cases); `hiccup report merge` sums the shards'
// (report/merge.h). Both read the shape from here, so the report layer needs nothing of explore.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace harness {

/// The groups of name → cases counts, in summary.json order: (the explorer's group name, its
/// summary.json key): fault/faults, finish/finishes, status/statuses, provider/providers,
/// position/positions, session/sessions, id/ids. The invariants ("invariants": {name: {"cases",
/// "precondition"}}) and "unexercised" (names, catalogue order) come after them.
const std::vector<std::pair<std::string_view, std::string_view>>& coverage_count_groups();

/// "invariant NAME was never exercised: in no case PRECONDITION".
std::string coverage_warning_line(std::string_view invariant, std::string_view precondition);

/// Sums coverage objects (the coverage of shards of one run) into the whole run's: `cases` and the
/// counts per name added, `unexercised` recomputed (invariant_catalogue() order, then names this
/// build does not know). Non-objects are skipped; none at all gives null.
nlohmann::json merge_coverage_json(const std::vector<nlohmann::json>& parts);

/// One coverage_warning_line per name of `coverage`'s "unexercised", with its precondition.
std::vector<std::string> coverage_warnings(const nlohmann::json& coverage);

}  // namespace harness
