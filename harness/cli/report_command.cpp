// `hiccup report DIR`: regenerates DIR/report.html from DIR/summary.json (a report directory of
// `run`, `explore` or `matrix`, e.g. one downloaded from CI). `hiccup report merge OUT DIR…`: joins
// the report directories of `explore --shard K/N` runs into OUT (report/merge.h).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "harness/cli/commands.h"
#include "harness/report/merge.h"
#include "harness/report/report.h"
#include "harness/version.h"

namespace harness::cli {
namespace {

constexpr const char* kUsage =
    "usage: hiccup report DIR\n"
    "       hiccup report merge OUT DIR...\n"
    "\n"
    "hiccup report DIR\n"
    "  writes DIR/report.html (one self-contained page: index, filters, a timeline per failing case)\n"
    "  from DIR/summary.json, the report directory of `run`, `explore` or `matrix`\n"
    "\n"
    "hiccup report merge OUT DIR...\n"
    "  joins the report directories of one exploration run in shards (`hiccup explore --shard K/N\n"
    "  --report-dir DIR`, one per CI job or pod) into OUT: junit.xml, summary.json, summary.md\n"
    "  (also appended to $GITHUB_STEP_SUMMARY when set), report.html and the counterexample files,\n"
    "  as the unsharded run would have written them (same verdicts, same run digest when the shards\n"
    "  ran the same cases). Refuses shards that overlap, a missing shard, and shards that ran with\n"
    "  another seed, case count, defect set, provider, transport or hiccup version.\n"
    "\n"
    "exit codes: 0 written, 1 merged and some property failed, 2 usage error,\n"
    "            3 missing or invalid summary.json, or shards that do not merge\n";

/// DIR/summary.json parsed, or an error printed and nullopt.
std::optional<nlohmann::json> read_summary(const std::filesystem::path& dir) {
  const std::filesystem::path summary_path = dir / "summary.json";
  std::ifstream in(summary_path);
  if (!in) {
    std::cerr << "error: " << summary_path.string() << ": cannot read it (is " << dir.string()
              << " a report directory of hiccup run, explore or matrix?)\n";
    return std::nullopt;
  }
  nlohmann::json summary;
  try {
    summary = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    std::cerr << "error: " << summary_path.string() << ": not valid JSON: " << e.what() << '\n';
    return std::nullopt;
  }
  if (!summary.is_object() || !summary.contains("cases") || !summary["cases"].is_array() ||
      !summary.contains("schema") || !summary["schema"].is_number_integer()) {
    std::cerr << "error: " << summary_path.string() << ": not a hiccup summary (expected an object with \"schema\" and \"cases\")\n";
    return std::nullopt;
  }
  if (summary["schema"].get<int>() > kSummarySchemaVersion) {
    std::cerr << "error: " << summary_path.string() << ": schema version " << summary["schema"].get<int>()
              << " is newer than this hiccup reads (" << kSummarySchemaVersion << ")\n";
    return std::nullopt;
  }
  return summary;
}

int merge_command(const Args& args, const std::vector<std::string>& positionals) {
  if (positionals.size() < 2) {
    std::cerr << "error: expected OUT and at least one shard report directory\n" << kUsage;
    return kExitUsage;
  }
  const std::filesystem::path out_dir = positionals.front();
  std::vector<ShardReport> shards;
  for (std::size_t i = 1; i < positionals.size(); ++i) {
    const std::filesystem::path dir = positionals[i];
    std::error_code ec;
    if (std::filesystem::exists(out_dir, ec) && std::filesystem::equivalent(dir, out_dir, ec)) {
      std::cerr << "error: " << dir.string() << " is also OUT: write the merged report to a directory of its own\n";
      return kExitUsage;
    }
    auto summary = read_summary(dir);
    if (!summary) return kExitInvalidInput;
    const std::string version = summary->value("hiccup_version", "");
    if (summary->value("command", "") == "explore" && version != kHiccupVersion) {
      std::cerr << "error: " << dir.string() << ": written by hiccup " << (version.empty() ? "older than 0.10.0" : version)
                << ", this is " << kHiccupVersion << ": merge with the version that ran the shards\n";
      return kExitInvalidInput;
    }
    shards.push_back({dir, std::move(*summary)});
  }
  MergedReport merged;
  try {
    merged = merge_shard_reports(shards, out_dir);
  } catch (const MergeError& e) {
    std::cerr << "error: " << e.what() << '\n';
    return kExitInvalidInput;
  }
  std::error_code ec;
  std::filesystem::create_directories(out_dir / "counterexamples", ec);
  if (ec) {
    std::cerr << "error: " << out_dir.string() << ": cannot create it: " << ec.message() << '\n';
    return kExitInvalidInput;
  }
  for (const CounterexampleCopy& c : merged.copies) {
    std::filesystem::copy_file(c.from, c.to, std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) {
      std::cerr << "error: cannot copy counterexample " << c.from.string() << " to " << c.to.string() << ": "
                << ec.message() << '\n';
      return kExitInvalidInput;
    }
  }
  FanoutListener reports;
  reports.add(make_junit_listener((out_dir / "junit.xml").string()));
  reports.add(make_summary_listener((out_dir / "summary.json").string()));
  reports.add(make_markdown_listener((out_dir / "summary.md").string(), github_step_summary_path()));
  reports.add(make_html_listener((out_dir / "report.html").string()));
  reports.set_command_line(command_line("report", args));
  replay_summary(merged.summary, reports);
  const nlohmann::json& s = merged.summary;
  std::cout << "merged " << shards.size() << " shard(s) of seed " << s.value("seed", nlohmann::json()).dump() << ", "
            << s["case_digests"].size() << " of " << s.value("cases_requested", 0) << " cases run: "
            << s.value("passed", 0) << " passed, " << s.value("failed", 0) << " failed; run digest "
            << s.value("digest", "") << "\nwrote " << out_dir.string() << "/{junit.xml,summary.json,summary.md,report.html}\n";
  return s.value("failed", 0) > 0 ? kExitFailed : kExitPassed;
}

}  // namespace

int report_command(const Args& args) {
  std::vector<std::string> positionals;
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return kExitPassed;
    }
    if (a.rfind("-", 0) == 0) {
      std::cerr << "error: unknown option \"" << a << "\"\n" << kUsage;
      return kExitUsage;
    }
    positionals.push_back(a);
  }
  if (!positionals.empty() && positionals.front() == "merge") {
    return merge_command(args, std::vector<std::string>(positionals.begin() + 1, positionals.end()));
  }
  if (positionals.size() != 1) {
    std::cerr << "error: " << (positionals.empty() ? "expected a report directory" : "expected one report directory") << "\n" << kUsage;
    return kExitUsage;
  }
  const std::filesystem::path dir = positionals.front();
  const auto summary = read_summary(dir);
  if (!summary) return kExitInvalidInput;
  const std::filesystem::path out = dir / "report.html";
  std::ofstream file(out);
  file << render_html(*summary);
  file.close();
  if (!file) {
    std::cerr << "error: " << out.string() << ": cannot write it\n";
    return kExitInvalidInput;
  }
  std::cout << "wrote " << out.string() << '\n';
  return kExitPassed;
}

}  // namespace harness::cli
