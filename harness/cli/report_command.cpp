// `hiccup report DIR`: regenerates DIR/report.html from DIR/summary.json (a report directory of
// `run`, `explore` or `matrix`, e.g. one downloaded from CI). `hiccup report merge OUT DIR…`: joins
// the report directories of `explore --shard K/N` runs into OUT (report/merge.h).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>

#include <unistd.h>

#include "harness/cli/commands.h"
#include "harness/scenario_io.h"
#include "harness/report/merge.h"
#include "harness/report/report.h"
#include "harness/version.h"

namespace harness::cli {
namespace {

constexpr const char* kReportUsage =
    "usage: hiccup report DIR\n"
    "       hiccup report merge OUT DIR...\n"
    "\n"
    "hiccup report DIR\n"
    "  writes DIR/report.html (one self-contained page: index, filters, a timeline per failing case)\n"
    "  from DIR/summary.json, the report directory of `run`, `explore` or `matrix`; through a\n"
    "  temporary file renamed over it: a symlink at report.html is replaced, never followed\n"
    "\n"
    "hiccup report merge OUT DIR...\n"
    "  joins the report directories of one exploration run in shards (`hiccup explore --shard K/N\n"
    "  --report-dir DIR`, one per CI job or pod) into OUT: junit.xml, summary.json, summary.md\n"
    "  (also appended to $GITHUB_STEP_SUMMARY when set), report.html and the counterexample files,\n"
    "  as the unsharded run would have written them (same verdicts, same run digest when the shards\n"
    "  ran the same cases). Refuses shards that overlap, a missing shard, and shards that ran with\n"
    "  another seed, case count, defect set, provider, transport or hiccup version. Writes to a\n"
    "  staging directory beside OUT first: OUT is left as it was when anything goes wrong.\n"
    "\n"
    "exit codes: 0 written, 1 merged and some property failed, 2 usage error,\n"
    "            3 missing or invalid summary.json (the file, JSON pointer and what was expected:\n"
    "            a value of the wrong type, a number beyond a double's range such as 1e999),\n"
    "            shards that do not merge, or OUT inside a shard directory\n";

/// DIR/summary.json parsed, or an error printed and nullopt.
std::optional<nlohmann::json> read_summary(const std::filesystem::path& dir) {
  const std::filesystem::path summary_path = dir / "summary.json";
  std::error_code ec;
  if (std::filesystem::exists(summary_path, ec) && !std::filesystem::is_regular_file(summary_path, ec)) {
    // A folder opens as a stream that throws on its first read (an internal error, exit 5).
    std::cerr << "error: " << summary_path.string() << ": not a file (is " << dir.string()
              << " a report directory of hiccup run, explore or matrix?)\n";
    return std::nullopt;
  }
  std::ifstream in(summary_path);
  if (!in) {
    std::cerr << "error: " << summary_path.string() << ": cannot read it (is " << dir.string()
              << " a report directory of hiccup run, explore or matrix?)\n";
    return std::nullopt;
  }
  // Depth-limited as the scenario loader is: a summary nested 100,000 deep parsed, then crashed
  // the merge's recursive copy (SIGSEGV) instead of exiting 3.
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::string error;
  std::optional<nlohmann::json> parsed =
      parse_json_text(text, {/*ignore_comments=*/false, /*refuse_duplicate_keys=*/false}, error);
  if (!parsed) {
    std::cerr << "error: " << summary_path.string() << ": " << error << '\n';
    return std::nullopt;
  }
  nlohmann::json summary = std::move(*parsed);
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
  // A value of the wrong type names its pointer and what was expected (render_html would throw a
  // type_error that names no field).
  if (const std::optional<std::string> problem = summary_type_problem(summary)) {
    std::cerr << "error: " << summary_path.string() << ": " << *problem << '\n';
    return std::nullopt;
  }
  return summary;
}

/// Whether `inner` is `outer` or lies below it (both absolute and normal).
bool is_within(const std::filesystem::path& inner, const std::filesystem::path& outer) {
  auto [o, i] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  return o == outer.end();
}

int merge_command(const Args& args, const std::vector<std::string>& positionals) {
  namespace fs = std::filesystem;
  if (positionals.size() < 2) {
    return usage_error("report", "merge expects OUT and at least one shard report directory");
  }
  for (std::size_t i = 0; i < positionals.size(); ++i) {
    if (positionals[i].empty()) {
      return usage_error("report", i == 0 ? "merge: OUT is an empty path" : "merge: a shard directory is an empty path");
    }
  }
  std::error_code ec;
  const fs::path out_dir = positionals.front();
  const fs::path abs_out = fs::weakly_canonical(fs::absolute(out_dir, ec), ec);
  std::vector<ShardReport> shards;
  for (std::size_t i = 1; i < positionals.size(); ++i) {
    const fs::path dir = positionals[i];
    const fs::path abs_dir = fs::weakly_canonical(fs::absolute(dir, ec), ec);
    if (is_within(abs_out, abs_dir)) {
      std::cerr << "error: OUT " << out_dir.string() << (abs_out == abs_dir ? " is" : " lies inside") << " the shard directory "
                << dir.string() << ": write the merged report to a directory of its own\n";
      return kExitInvalidInput;
    }
    auto summary = read_summary(dir);
    if (!summary) return kExitInvalidInput;
    const nlohmann::json version = summary->value("hiccup_version", nlohmann::json(""));
    if (summary->value("command", nlohmann::json("")) == "explore" && version != std::string(kHiccupVersion)) {
      std::cerr << "error: " << dir.string() << ": written by hiccup "
                << (!version.is_string() ? version.dump() : version.get<std::string>().empty() ? "older than 0.10.0" : version.get<std::string>())
                << ", this is " << kHiccupVersion << ": merge with the version that ran the shards\n";
      return kExitInvalidInput;
    }
    shards.push_back({dir, std::move(*summary)});
  }
  if (fs::exists(out_dir, ec) && (!fs::is_directory(out_dir, ec) ||
                                  (!fs::is_empty(out_dir, ec) && !fs::exists(out_dir / "summary.json", ec)))) {
    std::cerr << "error: OUT " << out_dir.string()
              << " exists and is not a report directory: merge writes into a new directory or replaces an earlier report\n";
    return kExitInvalidInput;
  }
  MergedReport merged;
  try {
    merged = merge_shard_reports(shards, out_dir);
  } catch (const MergeError& e) {
    std::cerr << "error: " << e.what() << '\n';
    return kExitInvalidInput;
  }
  // Everything is written to a staging directory beside OUT first, so a failure leaves OUT as it was.
  const fs::path staging = abs_out.parent_path() / ("." + abs_out.filename().string() + ".merging-" + std::to_string(::getpid()));
  auto give_up = [&](const std::string& message) {
    fs::remove_all(staging, ec);
    std::cerr << "error: " << message << '\n';
    return kExitInvalidInput;
  };
  fs::remove_all(staging, ec);
  fs::create_directories(staging / "counterexamples", ec);
  if (ec) return give_up(staging.string() + ": cannot create it: " + ec.message());
  for (const CounterexampleCopy& c : merged.copies) {
    fs::copy_file(c.from, staging / "counterexamples" / c.to.filename(), fs::copy_options::overwrite_existing, ec);
    if (ec) return give_up("cannot copy counterexample " + c.from.string() + ": " + ec.message());
  }
  try {
    FanoutListener reports;
    reports.add(make_junit_listener((staging / "junit.xml").string()));
    reports.add(make_summary_listener((staging / "summary.json").string()));
    reports.add(make_markdown_listener((staging / "summary.md").string()));
    reports.add(make_html_listener((staging / "report.html").string()));
    reports.set_command_line(command_line("report", args));
    replay_summary(merged.summary, reports);
  } catch (const nlohmann::json::exception& e) {
    return give_up("a shard's summary.json holds a case the reports cannot read (" + std::string(e.what()) + ")");
  }
  fs::create_directories(out_dir, ec);
  if (ec) return give_up(out_dir.string() + ": cannot create it: " + ec.message());
  fs::remove_all(out_dir / "counterexamples", ec);  // an earlier merge's, replaced whole
  for (const fs::directory_entry& e : fs::directory_iterator(staging)) {
    const fs::path target = out_dir / e.path().filename();
    fs::rename(e.path(), target, ec);
    if (ec) return give_up("cannot move " + e.path().string() + " to " + target.string() + ": " + ec.message());
  }
  fs::remove_all(staging, ec);
  if (const std::string step = github_step_summary_path(); !step.empty()) {
    std::ifstream md(out_dir / "summary.md");
    std::ofstream(step, std::ios::app) << md.rdbuf() << '\n';
  }
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
      std::cout << kReportUsage;
      return kExitPassed;
    }
    if (a.rfind("-", 0) == 0) {
      return usage_error("report", "unknown option \"" + a + "\"");
    }
    positionals.push_back(a);
  }
  if (!positionals.empty() && positionals.front() == "merge") {
    return merge_command(args, std::vector<std::string>(positionals.begin() + 1, positionals.end()));
  }
  if (positionals.size() != 1) {
    return usage_error("report", positionals.empty() ? "expected a report directory" : "expected one report directory");
  }
  if (positionals.front().empty()) return usage_error("report", "the report directory is an empty path");
  const std::filesystem::path dir = positionals.front();
  const auto summary = read_summary(dir);
  if (!summary) return kExitInvalidInput;
  const std::filesystem::path out = dir / "report.html";
  std::string html;
  try {
    html = render_html(*summary);  // before writing the file: a bad summary leaves the old page
  } catch (const nlohmann::json::exception& e) {
    std::cerr << "error: " << (dir / "summary.json").string() << ": a field has an unexpected type (" << e.what() << ")\n";
    return kExitInvalidInput;
  }
  try {
    write_report_file(out.string(), html);  // replaces a symlink at report.html, never follows it
  } catch (const ReportWriteError& e) {
    std::cerr << "error: " << e.what() << '\n';
    return kExitInvalidInput;
  }
  std::cout << "wrote " << out.string() << '\n';
  return kExitPassed;
}

}  // namespace harness::cli
