// The JUnit XML listener: cumulative (totals go in the testsuite element), written at run end.
// The seed, transport and defects are testsuite properties.
#include <fstream>
#include <sstream>

#include "harness/report/report.h"

namespace harness {
namespace {

/// html_escape (XML's five entities), with control characters XML 1.0 forbids made spaces.
std::string xml_escape(std::string_view s) {
  std::string clean(s);
  for (char& c : clean) {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') c = ' ';
  }
  return html_escape(clean);
}

class JunitListener final : public ReportListener {
 public:
  explicit JunitListener(std::string path) : path_(std::move(path)) {}
  void run_starting(const RunInfo& info) override { info_ = info; }
  void case_ended(const ReportCase& c) override { cases_.push_back(c); }
  void run_ended(const RunTotals& t) override {
    std::ostringstream x;
    x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    x << "<testsuites name=\"hiccup\" tests=\"" << cases_.size() << "\" failures=\"" << t.failed
      << "\" time=\"" << t.wall_ms / 1000.0 << "\">\n";
    x << "  <testsuite name=\"hiccup." << xml_escape(info_.command) << "\" tests=\"" << cases_.size()
      << "\" failures=\"" << t.failed << "\" errors=\"0\" skipped=\"0\" time=\"" << t.wall_ms / 1000.0 << "\">\n";
    x << "    <properties>\n";
    if (info_.agent.empty() || info_.command == "explore") {
      x << "      <property name=\"seed\" value=\"" << info_.seed << "\"/>\n";
    }
    if (!info_.agent.empty()) x << "      <property name=\"agent\" value=\"" << xml_escape(info_.agent) << "\"/>\n";
    // A black-box exploration: that its verdicts may vary between runs.
    if (t.extra.contains("black_box") && t.extra["black_box"].is_object() && t.extra["black_box"].contains("note") &&
        t.extra["black_box"]["note"].is_string()) {
      x << "      <property name=\"note\" value=\"" << xml_escape(t.extra["black_box"]["note"].get<std::string>()) << "\"/>\n";
    }
    x << "      <property name=\"transport\" value=\"" << xml_escape(info_.transport) << "\"/>\n";
    std::string defects;
    for (const auto& d : info_.defects) defects += (defects.empty() ? "" : ",") + d;
    x << "      <property name=\"defects\" value=\"" << xml_escape(defects) << "\"/>\n";
    x << "    </properties>\n";
    for (const ReportCase& c : cases_) {
      x << "    <testcase classname=\"" << xml_escape(c.classname) << "\" name=\"" << xml_escape(c.name)
        << "\" time=\"" << c.wall_ms / 1000.0 << "\"";
      if (c.passed) {
        x << "/>\n";
        continue;
      }
      x << ">\n";
      std::string first = c.violations.empty() ? "failed" : c.violations.front().invariant;
      std::ostringstream body;
      for (const Violation& v : c.violations) {
        body << v.invariant;
        body << violation_location(v);
        body << ": " << v.message << "\n";
      }
      if (!c.detail.empty()) body << c.detail << "\n";
      x << "      <failure message=\"" << xml_escape(first) << "\" type=\"violation\">" << xml_escape(body.str())
        << "</failure>\n";
      if (!c.digest.empty()) x << "      <system-out>digest " << c.digest << "</system-out>\n";
      x << "    </testcase>\n";
    }
    x << "  </testsuite>\n</testsuites>\n";
    write_report_file(path_, x.str());
  }

 private:
  std::string path_;
  RunInfo info_;
  std::vector<ReportCase> cases_;
};

}  // namespace

std::unique_ptr<ReportListener> make_junit_listener(std::string path) {
  return std::make_unique<JunitListener>(std::move(path));
}

}  // namespace harness
