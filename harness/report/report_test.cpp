// Report writers against stored baselines, with volatile fields (times) normalised.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include "harness/report/coverage_counts.h"
#include "harness/report/merge.h"
#include "harness/report/report.h"
#include "harness/transcript.h"
#include "tests/test_temp.h"

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
  bad.transcript = {{"version", 1}, {"requests", nlohmann::json::array()}};
  l.case_ended(bad);
  l.run_ended(RunTotals{1, 1, 0, 3.0});
}

TEST_CASE("junit.xml matches its baseline, with the seed as a property and escaped messages") {
  const std::string path = hiccup_test::temp_path("hiccup_report_test_junit.xml").string();
  auto l = make_junit_listener(path);
  feed(*l);
  const std::string got = std::regex_replace(slurp(path), std::regex(R"(time="[^"]*")"), R"(time="T")");
  std::filesystem::remove(path);
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

TEST_CASE("a report file that cannot be written is an error naming it, and the other reports are still written") {
  const auto dir = hiccup_test::temp_path("hiccup_report_test_unwritable");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "junit.xml");  // a folder where the file should go
  FanoutListener report;
  report.add(make_junit_listener((dir / "junit.xml").string()));
  report.add(make_summary_listener((dir / "summary.json").string()));
  std::string error;
  try {
    feed(report);
  } catch (const ReportWriteError& e) {
    error = e.what();
  }
  CHECK(error.find((dir / "junit.xml").string() + ": cannot write") == 0);
  CHECK(std::filesystem::is_regular_file(dir / "summary.json"));  // the listener after it still ran
  CHECK_THROWS_AS(write_report_file("/proc/self/summary.json", "{}"), ReportWriteError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("summary.json carries seed, digests and violations per case") {
  const std::string path = hiccup_test::temp_path("hiccup_report_test_summary.json").string();
  auto l = make_summary_listener(path);
  feed(*l);
  const auto j = nlohmann::json::parse(slurp(path));
  std::filesystem::remove(path);
  CHECK(j["seed"] == 7);
  CHECK(j["passed"] == 1);
  CHECK(j["failed"] == 1);
  REQUIRE(j["cases"].size() == 2);
  CHECK(j["cases"][0]["digest"] == "00000000000000aa");
  CHECK(j["cases"][1]["violations"][0]["invariant"] == "at-most-once");
  CHECK(j["cases"][1]["violations"][0]["turn"] == 0);
  CHECK(j["schema"] == kSummarySchemaVersion);
  CHECK_FALSE(j["cases"][0].contains("transcript"));  // none recorded: no field
  CHECK(j["cases"][1]["transcript"]["version"] == 1);
}

TEST_CASE("summary.json merges the totals' extra fields into its top level") {
  const std::string path = hiccup_test::temp_path("hiccup_report_test_extra.json").string();
  auto l = make_summary_listener(path);
  l->run_starting(RunInfo{"explore", 3, "memory", {}, ""});
  RunTotals t{0, 0, 0, 1.0};
  t.extra["digest"] = "0123456789abcdef";
  l->run_ended(t);
  const auto j = nlohmann::json::parse(slurp(path));
  std::filesystem::remove(path);
  CHECK(j["digest"] == "0123456789abcdef");
  CHECK(j["command"] == "explore");
}

TEST_CASE("a summary.json replayed through the summary listener comes back unchanged") {
  nlohmann::json first, second;
  auto a = make_summary_json_listener([&](const nlohmann::json& j) { first = j; });
  feed(*a);
  first["cases"][1]["file"] = "scenarios/x.json";  // an extra field travels too
  first["digest"] = "00000000000000cc";
  auto b = make_summary_json_listener([&](const nlohmann::json& j) { second = j; });
  replay_summary(first, *b);
  CHECK(second == first);
  CHECK(violation_from_json(first["cases"][1]["violations"][0]) ==
        Violation{"at-most-once", "call 0 (\"shell\") of turn 0 ran 2 times <&>", 1, 0, 1});
  CHECK(violation_from_json(nlohmann::json{{"invariant", "expect.error"}, {"message", "m"}}) ==
        Violation{"expect.error", "m", -1, -1, -1});
}

TEST_CASE("merging shards refuses overlap, a missing shard and other settings, naming the directories") {
  auto shard = [](int k, int n, std::uint64_t seed) {
    nlohmann::json j = {{"schema", kSummarySchemaVersion}, {"command", "explore"}, {"seed", seed},
                        {"transport", "memory"}, {"defects", nlohmann::json::array()}, {"provider", ""},
                        {"passed", 1}, {"failed", 0}, {"wall_ms", 1.0}, {"hiccup_version", "0.10.0"},
                        {"shard", {{"index", k}, {"count", n}}}, {"cases_requested", 4}, {"keep_going", false},
                        {"failing_cases", nlohmann::json::array()}};
    j["case_digests"] = nlohmann::json::array();
    for (int i = k - 1; i < 4; i += n) j["case_digests"].push_back({i, "000000000000000" + std::to_string(i)});
    j["cases"] = {{{"name", "explore/at-most-once"}, {"passed", true}, {"cases_run", j["case_digests"].size()},
                   {"wall_ms", 1.0}, {"violations", nlohmann::json::array()}}};
    return ShardReport{"shard-" + std::to_string(k), j};
  };
  const auto merged = merge_shard_reports({shard(2, 2, 1), shard(1, 2, 1)}, "out");
  CHECK(merged.summary["case_digests"].size() == 4);
  CHECK(merged.summary["case_digests"][1][0] == 1);
  CHECK(merged.summary["cases"][0]["cases_run"] == 4);
  CHECK(merged.summary["digest"] == fnv1a_hex("0 0000000000000000\n1 0000000000000001\n2 0000000000000002\n3 0000000000000003\n"));
  CHECK_THROWS_WITH(merge_shard_reports({shard(1, 2, 1), shard(1, 2, 1)}, "out"), Catch::Contains("both shard 1/2"));
  CHECK_THROWS_WITH(merge_shard_reports({shard(1, 2, 1)}, "out"), Catch::Contains("shard 2/2 missing"));
  CHECK_THROWS_WITH(merge_shard_reports({shard(1, 2, 1), shard(2, 2, 9)}, "out"),
                    Catch::Contains("shard-2 ran with seed 9, shard-1 with 1"));
  CHECK_THROWS_WITH(merge_shard_reports({shard(1, 2, 1), shard(2, 3, 1)}, "out"), Catch::Contains("shard count"));
  auto run = shard(1, 1, 1);
  run.summary["command"] = "run";
  CHECK_THROWS_WITH(merge_shard_reports({run}, "out"), Catch::Contains("a `run` report"));
  // Hand-edited shards: the file, the JSON pointer and what was expected.
  auto edited = shard(2, 2, 1);
  edited.summary["cases"][0]["cases_run"] = "4";
  CHECK_THROWS_WITH(merge_shard_reports({shard(1, 2, 1), edited}, "out"),
                    Catch::Contains("shard-2/summary.json: /cases/0/cases_run: expected an integer") &&
                        Catch::Contains("found the string \"4\""));
  edited = shard(2, 2, 1);
  edited.summary["case_digests"].push_back({0, "0000000000000000"});
  CHECK_THROWS_WITH(merge_shard_reports({shard(1, 2, 1), edited}, "out"), Catch::Contains("case 0 does not belong to shard 2/2"));
  edited = shard(2, 2, 1);
  edited.summary["case_digests"].push_back({1, "0000000000000001"});
  CHECK_THROWS_WITH(merge_shard_reports({shard(1, 2, 1), edited}, "out"), Catch::Contains("case 1 is listed twice"));
  edited = shard(2, 2, 1);
  edited.summary["shard"]["index"] = 4294967298ULL;
  CHECK_THROWS_WITH(merge_shard_reports({shard(1, 2, 1), edited}, "out"), Catch::Contains("/shard/index: expected an integer from 1 to 2"));
  // Over HTTP: the cases judged on a slower re-run and those that differ from memory, of every
  // shard, in index order; each must be a case its shard ran, once.
  auto http1 = shard(1, 2, 1), http2 = shard(2, 2, 1);
  for (auto* h : {&http1, &http2}) h->summary["transport"] = "http";
  http1.summary["http_rerun_cases"] = {0, 2};
  http1.summary["http_differs_from_memory"] = {2};
  http2.summary["http_rerun_cases"] = {3};
  http2.summary["http_differs_from_memory"] = {1, 3};
  const auto over_http = merge_shard_reports({http2, http1}, "out");
  CHECK(over_http.summary["http_rerun_cases"] == nlohmann::json({0, 2, 3}));
  CHECK(over_http.summary["http_differs_from_memory"] == nlohmann::json({1, 2, 3}));
  // A shard without the fields (--http-reruns 0) does not hide the others'.
  auto plain1 = http1;
  plain1.summary.erase("http_rerun_cases");
  plain1.summary.erase("http_differs_from_memory");
  CHECK(merge_shard_reports({plain1, http2}, "out").summary["http_differs_from_memory"] == nlohmann::json({1, 3}));
  auto edited_http = http2;
  edited_http.summary["http_differs_from_memory"] = {0};
  CHECK_THROWS_WITH(merge_shard_reports({http1, edited_http}, "out"),
                    Catch::Contains("/http_differs_from_memory/0: case 0 is not in this shard's case_digests"));
  edited_http.summary["http_differs_from_memory"] = {1, 1};
  CHECK_THROWS_WITH(merge_shard_reports({http1, edited_http}, "out"), Catch::Contains("case 1 is listed twice"));
  http2.summary["http_differs_from_memory"] = {"3"};
  CHECK_THROWS_WITH(merge_shard_reports({http1, http2}, "out"),
                    Catch::Contains("shard-2/summary.json: /http_differs_from_memory/0: expected a case index below 4"));
}

TEST_CASE("summary.md says how many cases over http were judged on a slower re-run or differ from memory") {
  const auto dir = hiccup_test::temp_path("hiccup_report_test_md_http");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string md = (dir / "summary.md").string();
  auto read = [&] {
    std::ifstream in(md);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  auto explore = make_markdown_listener(md, "");
  explore->run_starting(RunInfo{"explore", 1, "http", {}, ""});
  RunTotals totals{3, 0, 0, 1.0};
  totals.extra["http_rerun_cases"] = {0, 2};
  totals.extra["http_differs_from_memory"] = {1};
  explore->run_ended(totals);
  CHECK_THAT(read(), Catch::Contains("2 case(s) over http judged on a slower re-run") &&
                         Catch::Contains("**1 case(s) over http differ from the in-memory run at every speed**"));
  auto run = make_markdown_listener(md, "");
  run->run_starting(RunInfo{"run", 1, "http", {}, ""});
  ReportCase rerun;
  rerun.name = "a";
  rerun.extra["http_slower_reruns"] = 1;
  run->case_ended(rerun);
  run->run_ended(RunTotals{1, 0, 0, 1.0});
  CHECK_THAT(read(), Catch::Contains("1 case(s) over http judged on a slower re-run") && !Catch::Contains("differ from"));
  auto plain = make_markdown_listener(md, "");
  plain->run_starting(RunInfo{"run", 1, "http", {}, ""});
  plain->run_ended(RunTotals{0, 0, 0, 1.0});
  CHECK_THAT(read(), !Catch::Contains("re-run"));
}

TEST_CASE("summary.md of a black-box exploration says whether its failures were confirmed by re-runs") {
  const auto dir = hiccup_test::temp_path("hiccup_report_test_md_black_box");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string md = (dir / "summary.md").string();
  auto written = [&](int confirm) {
    auto l = make_markdown_listener(md, "");
    l->run_starting(RunInfo{"explore", 1, "http", {}, ""});
    RunTotals totals{0, 1, 0, 1.0};
    totals.extra["black_box"] = {{"confirm", confirm}, {"distinct_failures", nlohmann::json::array({{{"signature", "x"}}})},
                                 {"flaky", nlohmann::json::array()}, {"note", "n"}};
    l->run_ended(totals);
    std::ifstream in(md);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  CHECK_THAT(written(3), Catch::Contains("1 distinct failure(s), confirmed and shrunk"));
  CHECK_THAT(written(0), Catch::Contains("1 distinct failure(s), shrunk, not re-run (--confirm 0)") && !Catch::Contains("confirmed and"));
}

TEST_CASE("summary.md lists each failing case with its violations and replay line, and appends to the step summary") {
  const auto dir = hiccup_test::temp_path("hiccup_report_test_md");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string md = (dir / "summary.md").string(), step = (dir / "step.md").string();
  std::ofstream(step) << "earlier\n";
  auto l = make_markdown_listener(md, step);
  l->run_starting(RunInfo{"run", 7, "http", {"keep-calls-on-retry"}, ""});
  ReportCase bad;
  bad.name = "midstream-reset-after-call";
  bad.classname = "hiccup.mid-stream";
  bad.passed = false;
  bad.violations = {Violation{"at-most-once", "ran 2 times <b>*", 1, 0, 1}};
  bad.extra["replay"] = "build/hiccup run x.json --defect keep-calls-on-retry";
  l->case_ended(bad);
  ReportCase ok;
  ok.name = "plain-answer";
  l->case_ended(ok);
  l->run_ended(RunTotals{1, 1, 0, 3.0});
  const std::string want =
      "### hiccup run: 1 passed, 1 failed\n\n"
      "seed 7 · transport http · provider each scenario's own · defects keep-calls-on-retry\n\n"
      "**FAIL** `midstream-reset-after-call` (hiccup.mid-stream)\n"
      "- **at-most-once** \\[request 1, turn 0, attempt 1\\]: ran 2 times &lt;b&gt;\\*\n"
      "- replay: `build/hiccup run x.json --defect keep-calls-on-retry`\n\n";
  CHECK(slurp(md) == want);
  CHECK(slurp(step) == "earlier\n" + want + "\n");
  std::filesystem::remove_all(dir);
}

TEST_CASE("summary.md caps the failing cases and violations it lists and says how many more") {
  const std::string md = hiccup_test::temp_path("hiccup_report_test_cap.md").string();
  auto l = make_markdown_listener(md);
  l->run_starting(RunInfo{"explore", 1, "memory", {}, ""});
  const int failing = kSummaryMdMaxCases + 5;
  for (int i = 0; i < failing; ++i) {
    ReportCase c;
    c.name = "case-" + std::to_string(i);
    c.passed = false;
    for (int v = 0; v < kSummaryMdMaxViolations + 2; ++v) c.violations.push_back(Violation{"liveness", "m", -1, -1, -1});
    c.detail = "seed 1\nreplay: build/hiccup run c" + std::to_string(i) + ".json";
    l->case_ended(c);
  }
  l->run_ended(RunTotals{0, failing, 0, 1.0});
  const std::string s = slurp(md);
  std::filesystem::remove(md);
  CHECK(s.find("`case-" + std::to_string(kSummaryMdMaxCases - 1) + "`") != std::string::npos);
  CHECK(s.find("`case-" + std::to_string(kSummaryMdMaxCases) + "`") == std::string::npos);
  CHECK(s.find("… and 5 more failing case(s): see summary.json") != std::string::npos);
  CHECK(s.find("- … and 2 more violation(s)") != std::string::npos);
  CHECK(s.find("- replay: `build/hiccup run c0.json`") != std::string::npos);  // from the detail
}

TEST_CASE("a violation names its own request and every request its message lists") {
  CHECK(requests_named(Violation{"at-most-once", "ran 2 times (delivered by requests 0, 1)", 1, 0, 1}) ==
        std::vector<int>{0, 1});
  CHECK(requests_named(Violation{"pairing", "request 4 answers a call of request 2", -1, -1, -1}) ==
        std::vector<int>{2, 4});
  CHECK(requests_named(Violation{"x", "requests 3, 5 and 7", 6, -1, -1}) == std::vector<int>{3, 5, 6, 7});
  CHECK(requests_named(Violation{"expect.requests", "expected 3 requests, saw 4", -1, -1, -1}).empty());
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

namespace harness {
namespace {

std::string console_header(const RunInfo& info) {
  std::ostringstream out;
  make_console_listener(out)->run_starting(info);
  return out.str();
}

TEST_CASE("the console header names the defects the scenario files switch on themselves, and whose they are") {
  RunInfo info{"run", 1, "memory", {}, ""};
  CHECK(console_header(info) == "hiccup run: seed 1, transport memory\n");
  info.scenario_defects = {"keep-calls-on-retry"};
  info.scenarios_with_defects = 1;
  info.scenarios = 1;
  CHECK(console_header(info) ==
        "hiccup run: seed 1, transport memory, defects keep-calls-on-retry (runtime.defects of the scenario file)\n");
  // --defect names one of them: each is named once, the files' own after the --defect ones.
  info.defects = {"eager-execution", "keep-calls-on-retry"};
  CHECK(console_header(info) == "hiccup run: seed 1, transport memory, defects eager-execution keep-calls-on-retry\n");
  info.defects = {"eager-execution"};
  info.scenario_defects = {"keep-calls-on-retry", "no-pairing-guard"};
  info.scenarios = 5;
  info.scenarios_with_defects = 2;
  CHECK(console_header(info) == "hiccup run: seed 1, transport memory, defects eager-execution and keep-calls-on-retry "
                                "no-pairing-guard (runtime.defects of 2 of 5 scenario files)\n");
}

}  // namespace
}  // namespace harness

namespace harness {
namespace {

TEST_CASE("coverage counts of shards sum per name, and the invariants never exercised are recomputed from the sums") {
  nlohmann::json a = {{"cases", 2},
                      {"faults", {{"reset", 1}, {"end", 0}}},
                      {"providers", {{"gemini", 2}}},
                      {"sessions", nlohmann::json::object()},
                      {"invariants", {{"pairing", {{"cases", 0}, {"precondition", "a request carried function responses"}}},
                                      {"at-most-once", {{"cases", 0}, {"precondition", "p0"}}}}}};
  nlohmann::json b = {{"cases", 3},
                      {"faults", {{"reset", 2}, {"end", 1}}},
                      {"providers", {{"anthropic", 3}}},
                      {"sessions", {{"2 prompts", 1}}},
                      {"invariants", {{"pairing", {{"cases", 0}, {"precondition", "a request carried function responses"}}},
                                      {"at-most-once", {{"cases", 4}, {"precondition", "p0"}}},
                                      {"from-a-newer-build", {{"cases", 0}, {"precondition", "p9"}}}}}};
  const nlohmann::json sum = merge_coverage_json({a, nullptr, b});
  CHECK(sum["cases"] == 5);
  CHECK(sum["faults"] == nlohmann::json({{"reset", 3}, {"end", 1}}));
  CHECK(sum["providers"] == nlohmann::json({{"gemini", 2}, {"anthropic", 3}}));
  CHECK(sum["sessions"] == nlohmann::json({{"2 prompts", 1}}));
  CHECK(sum["invariants"]["at-most-once"]["cases"] == 4);
  // Catalogue order, then names this build does not know.
  CHECK(sum["unexercised"] == nlohmann::json({"pairing", "from-a-newer-build"}));
  CHECK(coverage_warnings(sum) ==
        std::vector<std::string>{"invariant pairing was never exercised: in no case a request carried function responses",
                                 "invariant from-a-newer-build was never exercised: in no case p9"});
  CHECK(merge_coverage_json({nullptr, "not an object"}).is_null());
}

}  // namespace
}  // namespace harness
