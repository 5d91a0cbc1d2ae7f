// The summary.md listener: cumulative, written at run end; the counts and each failing case with
// its violations and replay line, short enough for a CI job summary ($GITHUB_STEP_SUMMARY).
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "harness/report/report.h"

namespace harness {
namespace {

/// Text safe inside a Markdown paragraph or list item: one line, no emphasis or HTML.
std::string md_text(std::string_view s, std::size_t max_chars = 300) {
  std::string out;
  std::size_t n = 0;
  for (char c : s) {
    // Cut at a character boundary (never inside a UTF-8 sequence).
    if (n++ >= max_chars && (static_cast<unsigned char>(c) & 0xC0) != 0x80) {
      out += "…";
      break;
    }
    switch (c) {
      case '\n': case '\r': out += ' '; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '\\': case '`': case '*': case '_': case '[': case ']': case '|': case '#':
        out += '\\';
        out += c;
        break;
      default: out += c;
    }
  }
  return out;
}

/// A command in a code span (backticks inside are not expected in paths or options).
std::string md_code(std::string_view s) {
  std::string out;
  for (char c : s) out += (c == '`' || c == '\n') ? ' ' : c;
  return "`" + out + "`";
}

std::string replay_line(const RunInfo& info, const ReportCase& c) {
  if (c.extra.contains("replay") && c.extra["replay"].is_string()) return c.extra["replay"].get<std::string>();
  std::istringstream lines(c.detail);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("replay: ", 0) == 0) return line.substr(8);
  }
  if (!info.agent.empty() && c.extra.contains("file") && c.extra["file"].is_string()) {
    const std::string file = c.extra["file"].get<std::string>();
    // `--agent-cmd` runs are named "agent-cmd"; the command itself is not in the report.
    if (info.agent == "agent-cmd") return running_binary() + " run --agent-cmd CMD " + shell_quote(absolute_path(file));
    return running_binary() + " run --agent " + shell_quote(info.agent) + " " + shell_quote(absolute_path(file));
  }
  return "";
}

class MarkdownListener final : public ReportListener {
 public:
  MarkdownListener(std::string path, std::string append_path)
      : path_(std::move(path)), append_path_(std::move(append_path)) {}
  void run_starting(const RunInfo& info) override { info_ = info; }
  void case_ended(const ReportCase& c) override {
    // `run` over http: cases judged on a slower re-run, or different from memory at every speed.
    if (c.extra.contains("http_differs_from_memory")) ++http_differs_;
    else if (c.extra.contains("http_slower_reruns")) ++http_reruns_;
    if (c.passed) return;
    ++failing_;
    if (failing_ > kSummaryMdMaxCases) return;
    std::ostringstream m;
    m << "**FAIL** " << md_code(c.name) << " (" << md_text(c.classname) << ")";
    if (c.extra.contains("design") && c.extra["design"].is_string()) {  // a black box's recovery design
      m << ", design " << md_text(c.extra["design"].get<std::string>());
    }
    m << "\n";
    int shown = 0;
    for (const Violation& v : c.violations) {
      if (shown++ == kSummaryMdMaxViolations) {
        m << "- … and " << c.violations.size() - kSummaryMdMaxViolations << " more violation(s)\n";
        break;
      }
      m << "- **" << md_text(v.invariant) << "**" << md_text(violation_location(v)) << ": " << md_text(v.message) << "\n";
    }
    if (c.violations.empty() && !c.detail.empty()) m << "- " << md_text(c.detail.substr(0, c.detail.find('\n'))) << "\n";
    const std::string replay = replay_line(info_, c);
    if (!replay.empty()) m << "- replay: " << md_code(replay) << "\n";
    m << "\n";
    failures_ += m.str();
  }
  void run_ended(const RunTotals& t) override {
    std::ostringstream m;
    m << "### hiccup " << info_.command << ": " << t.passed << " passed, " << t.failed << " failed\n\n";
    if (info_.agent.empty()) m << "seed " << info_.seed;
    else m << "agent " << md_text(info_.agent);
    if (!info_.agent.empty() && info_.command == "explore") m << " · seed " << info_.seed;
    m << " · transport " << md_text(info_.transport);
    m << " · provider "
      << (!info_.provider.empty() ? md_text(info_.provider)
          : info_.command == "explore" ? std::string("drawn per case") : std::string("each scenario's own"));
    if (!info_.defects.empty()) {
      m << " · defects";
      for (const auto& d : info_.defects) m << ' ' << md_text(d);
    }
    if (t.differences > 0) m << " · " << t.differences << " policy difference(s), not bugs";
    m << "\n\n";
    // Over http (docs/POLICY.md "Time over HTTP"): explore lists the cases, run marks each case.
    int reruns = http_reruns_, differs = http_differs_;
    if (t.extra.contains("http_rerun_cases") && t.extra["http_rerun_cases"].is_array()) {
      reruns += static_cast<int>(t.extra["http_rerun_cases"].size());
    }
    if (t.extra.contains("http_differs_from_memory") && t.extra["http_differs_from_memory"].is_array()) {
      differs += static_cast<int>(t.extra["http_differs_from_memory"].size());
    }
    if (reruns > 0) {
      m << reruns << " case(s) over http judged on a slower re-run: their first run met an idle timeout and "
        << "differed from the in-memory run (the machine's load).\n\n";
    }
    if (differs > 0) {
      m << "**" << differs << " case(s) over http differ from the in-memory run at every speed** (a difference "
        << "of the HTTP path, or a machine too loaded even for the slowest re-run): see summary.json "
        << "`http_differs_from_memory`.\n\n";
    }
    // A black-box exploration (explore --agent): how many distinct failures, the flaky ones apart,
    // and that a black box's verdicts may vary.
    if (t.extra.contains("black_box") && t.extra["black_box"].is_object()) {
      const nlohmann::json& b = t.extra["black_box"];
      auto count = [&](const char* key) { return b.contains(key) && b[key].is_array() ? b[key].size() : std::size_t{0}; };
      const bool rerun = !(b.contains("confirm") && b["confirm"].is_number_integer() && b["confirm"].get<long long>() <= 0);
      m << count("distinct_failures") << " distinct failure(s), " << (rerun ? "confirmed and shrunk" : "shrunk, not re-run (--confirm 0)")
        << "; " << count("flaky") << " flaky (not confirmed, not shrunk)\n\n";
      if (count("distinct_failures") > 0) {
        // Each distinct failure's shrinking: what a reader weighs a counterexample by.
        m << "| signature | cases | failed | case → counterexample (turns/attempts/events) | shrinking | agent runs | "
             "not run (fault gone / rejected before) | 1-minimal |\n|---|---|---|---|---|---|---|---|\n";
        // Read defensively: a field of the wrong type shows as 0 or "", never throws.
        auto num = [](const nlohmann::json& o, const char* key) {
          return o.is_object() && o.contains(key) && o[key].is_number() ? o[key].get<double>() : 0.0;
        };
        auto whole = [&](const nlohmann::json& o, const char* key) {
          return std::to_string(static_cast<long long>(num(o, key)));
        };
        auto size = [&](const nlohmann::json& f, const char* key) {
          const nlohmann::json& z = f.contains(key) ? f[key] : f;
          return whole(z, "turns") + "/" + whole(z, "attempts") + "/" + whole(z, "events");
        };
        for (const nlohmann::json& f : b["distinct_failures"]) {
          if (!f.is_object()) continue;
          const nlohmann::json& rate = f.contains("rate") ? f["rate"] : f;
          std::ostringstream shrink_s;
          shrink_s << std::fixed << std::setprecision(1) << num(f, "shrink_ms") / 1000 << " s";
          m << "| " << md_text(f.contains("signature") && f["signature"].is_string() ? f["signature"].get<std::string>() : "")
            << " | " << (f.contains("cases") && f["cases"].is_array() ? f["cases"].size() : std::size_t{0}) << " | "
            << whole(rate, "failed") << " of " << whole(rate, "runs") << " | " << size(f, "original_size") << " → "
            << size(f, "shrunk_size") << " | " << shrink_s.str() << " | " << whole(f, "shrink_runs") << " | "
            << whole(f, "shrink_ruled_out") << " / " << whole(f, "shrink_repeats") << " | "
            << (f.contains("one_minimal") && f["one_minimal"].is_boolean() && f["one_minimal"].get<bool>()
                    ? "yes"
                    : "no (budget spent)")
            << " |\n";
        }
        m << "\n";
      }
      if (b.contains("flaky") && b["flaky"].is_array()) {
        for (const nlohmann::json& f : b["flaky"]) {
          if (!f.is_object() || !f.contains("signature") || !f["signature"].is_string()) continue;
          m << "- flaky: " << md_text(f["signature"].get<std::string>());
          if (f.contains("rate") && f["rate"].is_object() && f["rate"].value("runs", 0) > 0) {
            m << " (failed " << f["rate"].value("failed", 0) << " of " << f["rate"].value("runs", 0) << " runs)";
          }
          m << "\n";
        }
        if (count("flaky") > 0) m << "\n";
      }
      if (b.contains("note") && b["note"].is_string()) m << "_" << md_text(b["note"].get<std::string>()) << "_\n\n";
    }
    if (failing_ == 0) {
      m << "No failing case.\n";
    } else {
      m << failures_;
      if (failing_ > kSummaryMdMaxCases) {
        m << "… and " << failing_ - kSummaryMdMaxCases << " more failing case(s): see summary.json\n";
      }
    }
    const std::string text = m.str();
    write_report_file(path_, text);
    if (!append_path_.empty()) write_report_file(append_path_, text + '\n', /*append=*/true);
  }

 private:
  std::string path_, append_path_;
  RunInfo info_;
  int failing_ = 0;
  int http_reruns_ = 0, http_differs_ = 0;
  std::string failures_;
};

}  // namespace

std::unique_ptr<ReportListener> make_markdown_listener(std::string path, std::string append_path) {
  return std::make_unique<MarkdownListener>(std::move(path), std::move(append_path));
}

std::string github_step_summary_path() {
  const char* p = std::getenv("GITHUB_STEP_SUMMARY");
  return p ? p : "";
}

}  // namespace harness
