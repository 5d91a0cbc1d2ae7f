// Report writers behind one listener interface (Catch2's reporter habit): the console streams as it
// goes; JUnit, summary.json and summary.md are cumulative (JUnit needs totals first) and write at
// run end. Fan several out at once with FanoutListener. Every report carries the seed.
// summary.json's shape is docs/summary.schema.json (version kSummarySchemaVersion, docs/REPORTS.md).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/invariants.h"

namespace harness {

/// summary.json's `schema`: the version of docs/summary.schema.json it follows. 2 added
/// transcripts, `replay`, explore sizes and digests.
inline constexpr int kSummarySchemaVersion = 2;

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
  /// Defects the scenario files switch on themselves (`runtime.defects`: a replayed explore
  /// counterexample does), each once, in the order the files name them; `scenarios_with_defects`
  /// of the run's `scenarios` name any. The console header shows them beside `defects`. (Last,
  /// so positional initialisers keep working.)
  std::vector<std::string> scenario_defects;
  int scenarios_with_defects = 0;
  int scenarios = 0;
  /// The recovery design forced on every case (`--recovery`); "" = each case's own.
  std::string recovery;
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
  /// The review transcript (transcript.h make_review_transcript); null when not recorded.
  nlohmann::json transcript = nullptr;
};

struct RunTotals {
  int passed = 0;
  int failed = 0;
  int differences = 0;  ///< of the passed: black-box policy differences (DIFF), not bugs
  double wall_ms = 0;
  nlohmann::json extra = nlohmann::json::object();  ///< merged into summary.json's top level
};

class ReportListener {
 public:
  virtual ~ReportListener() = default;
  virtual void run_starting(const RunInfo& info) = 0;
  virtual void case_ended(const ReportCase& c) = 0;
  virtual void run_ended(const RunTotals& totals) = 0;
};

/// A report file that could not be written; what() is "PATH: reason" (the OS's reason when it
/// gave one), several joined by "; ".
class ReportWriteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Writes `text` to the file `path`, replacing it (through a temporary file beside it, renamed over
/// it: a symlink at `path` is replaced, never followed), or with `append` adding to its end. Throws
/// ReportWriteError when the file cannot be opened or written in full: a run must not end green
/// without its junit.xml (a report directory such as /proc/self, or one holding a folder named
/// summary.json, used to be skipped in silence).
void write_report_file(const std::string& path, std::string_view text, bool append = false);

/// Sends every event to each listener in order. run_ended reaches every listener even when one
/// throws ReportWriteError, then throws one ReportWriteError naming every file not written.
class FanoutListener final : public ReportListener {
 public:
  void add(std::unique_ptr<ReportListener> listener) { listeners_.push_back(std::move(listener)); }
  void run_starting(const RunInfo& info) override { for (auto& l : listeners_) l->run_starting(info); }
  void case_ended(const ReportCase& c) override { for (auto& l : listeners_) l->case_ended(c); }
  void run_ended(const RunTotals& t) override;
  /// The command line that started the run, added to every run_ended's totals.extra as
  /// `command_line` (summary.json, report.html); "" adds nothing.
  void set_command_line(std::string line) { command_line_ = std::move(line); }
 private:
  std::vector<std::unique_ptr<ReportListener>> listeners_;
  std::string command_line_;
};

/// One line per case (`PASS name` / `FAIL name` + one indented line per violation), last line
/// `N passed, N failed`.
std::unique_ptr<ReportListener> make_console_listener(std::ostream& out);
/// JUnit XML at `path` (testsuite with the seed as a property; a failure per failed case).
std::unique_ptr<ReportListener> make_junit_listener(std::string path);
/// summary.json at `path`: {schema, command, seed, transport, defects, provider, passed, failed,
/// wall_ms, cases:[{name, classname, passed, digest, wall_ms, violations:[…], detail?,
/// transcript?, …extra}], …totals.extra}; docs/summary.schema.json has every field.
std::unique_ptr<ReportListener> make_summary_listener(std::string path);

/// The summary.json object (same shape as make_summary_listener's file), handed to `sink` at run end.
std::unique_ptr<ReportListener> make_summary_json_listener(std::function<void(const nlohmann::json&)> sink);

/// report.html at `path`: render_html of the run's summary.json object, written at run end.
std::unique_ptr<ReportListener> make_html_listener(std::string path);

/// One self-contained HTML page (inline CSS and JS, no network) from a summary.json object
/// (docs/summary.schema.json): an index with counts, settings and filters by verdict, group and
/// invariant; per failing case its violations with each invariant's meaning, the replay command with
/// a copy button, and a timeline (requests and attempts, tool executions, the runtime's retries and
/// waits) with violations pinned to the requests they name. Every text is HTML-escaped. Tolerates
/// missing fields (renders what is there).
std::string render_html(const nlohmann::json& summary);

/// The first value of a summary.json object whose type render_html cannot read (it tolerates
/// missing fields, not mistyped ones): "/POINTER: expected WHAT, found WHAT" (e.g.
/// "/cases/0/passed: expected true or false, found a string"), or nullopt when it can read them all.
std::optional<std::string> summary_type_problem(const nlohmann::json& summary);

/// `s` as one shell word: unchanged when it holds only characters no POSIX shell treats specially
/// (letters, digits, - _ . / = , : + @ %), else in single quotes with each ' as '\''. For the
/// command lines reports print (replay, explore, command_line), so a copied line runs as shown.
std::string shell_quote(std::string_view s);

/// The running hiccup binary's absolute path (/proc/self/exe, symlinks resolved), shell-quoted, for
/// the command lines hiccup prints to be pasted in any folder (replay lines of run, matrix,
/// explore); "hiccup" (the one on PATH) when the system does not say.
std::string running_binary();

/// `path` made absolute against the working folder (lexically normal, symlinks kept), for printed
/// command lines; `path` unchanged when it is empty or the working folder cannot be read.
std::string absolute_path(const std::string& path);

/// `s` with & < > " ' as HTML entities: safe in element text and quoted attributes.
std::string html_escape(std::string_view s);

/// Most failing cases summary.md lists; the rest are counted ("… and N more").
inline constexpr int kSummaryMdMaxCases = 20;
/// Most violations summary.md lists per case.
inline constexpr int kSummaryMdMaxViolations = 5;

/// summary.md at `path`, short enough for a CI job summary: a heading with the counts, the run's
/// settings, then each failing case (at most kSummaryMdMaxCases) with its violations and its replay
/// line. When `append_path` is not empty the same text is appended to it (GitHub's
/// `$GITHUB_STEP_SUMMARY`). The replay line is the case's `extra.replay`, else the `replay:` line of
/// its detail, else `hiccup run --agent AGENT FILE` for a black-box case.
std::unique_ptr<ReportListener> make_markdown_listener(std::string path, std::string append_path = "");

/// `$GITHUB_STEP_SUMMARY`, or "" when unset.
std::string github_step_summary_path();

}  // namespace harness
