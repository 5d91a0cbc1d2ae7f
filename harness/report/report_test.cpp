// Report writers against stored baselines, with volatile fields (times) normalised.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "harness/report/report.h"

namespace harness {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void feed(ReportListener& l) {
  l.run_starting(RunInfo{"run", 7, "http", {"keep-calls-on-retry"}, ""});
  ReportCase ok;
  ok.name = "plain-answer";
  ok.classname = "hiccup.basics";
  ok.digest = "00000000000000aa";
  ok.wall_ms = 1.5;
  l.case_ended(ok);
  ReportCase bad;
  bad.name = "midstream-reset-after-call";
  bad.classname = "hiccup.mid-stream";
  bad.passed = false;
  bad.violations = {Violation{"at-most-once", "call 0 (\"shell\") of turn 0 ran 2 times <&>", 1, 0, 1}};
  bad.digest = "00000000000000bb";
  l.case_ended(bad);
  l.run_ended(RunTotals{1, 1, 0, 3.0});
}

TEST_CASE("junit.xml matches its baseline, with the seed as a property and escaped messages") {
  const std::string path = (std::filesystem::temp_directory_path() / "hiccup_report_test_junit.xml").string();
  auto l = make_junit_listener(path);
  feed(*l);
  const std::string got = std::regex_replace(slurp(path), std::regex(R"(time="[^"]*")"), R"(time="T")");
  const std::string want = R"(<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="hiccup" tests="2" failures="1" time="T">
  <testsuite name="hiccup.run" tests="2" failures="1" errors="0" skipped="0" time="T">
    <properties>
      <property name="seed" value="7"/>
      <property name="transport" value="http"/>
      <property name="defects" value="keep-calls-on-retry"/>
    </properties>
    <testcase classname="hiccup.basics" name="plain-answer" time="T"/>
    <testcase classname="hiccup.mid-stream" name="midstream-reset-after-call" time="T">
      <failure message="at-most-once" type="violation">at-most-once [request 1, turn 0, attempt 1]: call 0 (&quot;shell&quot;) of turn 0 ran 2 times &lt;&amp;&gt;
</failure>
      <system-out>digest 00000000000000bb</system-out>
    </testcase>
  </testsuite>
</testsuites>
)";
  CHECK(got == want);
}

TEST_CASE("summary.json carries seed, digests and violations per case") {
  const std::string path = (std::filesystem::temp_directory_path() / "hiccup_report_test_summary.json").string();
  auto l = make_summary_listener(path);
  feed(*l);
  const auto j = nlohmann::json::parse(slurp(path));
  CHECK(j["seed"] == 7);
  CHECK(j["passed"] == 1);
  CHECK(j["failed"] == 1);
  REQUIRE(j["cases"].size() == 2);
  CHECK(j["cases"][0]["digest"] == "00000000000000aa");
  CHECK(j["cases"][1]["violations"][0]["invariant"] == "at-most-once");
  CHECK(j["cases"][1]["violations"][0]["turn"] == 0);
}

TEST_CASE("the console ends with the N passed, N failed line") {
  std::ostringstream out;
  auto l = make_console_listener(out);
  feed(*l);
  const std::string s = out.str();
  CHECK(s.find("FAIL midstream-reset-after-call") != std::string::npos);
  CHECK(s.substr(s.rfind('\n', s.size() - 2) + 1) == "1 passed, 1 failed\n");
}

}  // namespace
}  // namespace harness
