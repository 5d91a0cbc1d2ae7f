// report.html from summary.json objects: escaping of scenario text, a failing case's timeline lanes,
// violations pinned to their requests with the invariant's meaning, and an empty report.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/report/report.h"
#include "tests/test_temp.h"

namespace harness {
namespace {

using nlohmann::json;

std::size_t count(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

/// The failing case of `run midstream-reset-after-call --defect keep-calls-on-retry`, abridged.
json failing_summary(const std::string& evil = "") {
  json first = {{"index", 0}, {"turn", 0}, {"attempt", 0}, {"model", "gemini-2.5-flash"}, {"virtual_s", 0.0},
                {"sent", {{"calls_answered", json::array()}}},
                {"answer", {{"status", 200}, {"events_delivered", 1}, {"events_scripted", 1},
                            {"fault", {{"kind", "reset"}, {"after_event", 1}, {"fell_after_event", 1}}},
                            {"ended", "fault:reset"},
                            {"delivered_calls", json::array({{{"name", "shell"}, {"args", {{"command", "./deploy.sh " + evil}}}}})},
                            {"delivered_text", evil}}},
                {"executed", {0}}, {"violations", {0, 1}}};
  json second = first;
  second["index"] = 1;
  second["attempt"] = 1;
  second["answer"]["fault"] = nullptr;
  second["answer"]["ended"] = "completed";
  second["answer"]["events_delivered"] = 2;
  second["answer"]["events_scripted"] = 2;
  second["violations"] = {1};
  json transcript = {
      {"version", 1},
      {"requests", {first, second}},
      {"executions", {{{"name", "shell"}, {"args", {{"command", "./deploy.sh"}}}, {"call_index", 0}, {"request", 0}},
                      {{"name", "shell"}, {"args", {{"command", "./deploy.sh"}}}, {"call_index", 0}, {"request", 1}}}},
      {"runtime", {{"retries", {{{"request", 0}, {"turn", 0}, {"attempt", 0}, {"reason", "connection_lost"},
                                 {"message", "connection lost before the terminal frame"}, {"wait_s", 10.0}, {"model", "gemini-2.5-flash"}}}},
                   {"commits", {{{"request", 1}, {"turn", 0}}}},
                   {"outcome", {{"completed", true}, {"final_text", "Deployed."}}}}},
      {"violations", {{{"index", 0}, {"invariant", "at-most-once"}, {"requests", {0}}},
                      {{"index", 1}, {"invariant", "at-most-once"}, {"requests", {0, 1}}}}}};
  json c = {{"name", "midstream-reset-after-call" + evil}, {"classname", "hiccup.mid-stream"}, {"passed", false},
            {"digest", "aae05fede7ffa05a"}, {"wall_ms", 3.0},
            {"replay", "build/hiccup run x.json --defect keep-calls-on-retry"},
            {"violations", {{{"invariant", "at-most-once"}, {"message", "ran from request 0, an attempt that did not complete" + evil},
                             {"request", 0}, {"turn", 0}, {"attempt", 0}},
                            {{"invariant", "at-most-once"}, {"message", "call 0 (\"shell\") of turn 0 ran 2 times"}, {"request", 1}}}},
            {"transcript", transcript}};
  json ok = {{"name", "plain-answer"}, {"classname", "hiccup.basics"}, {"passed", true}, {"digest", ""}, {"wall_ms", 1.0},
             {"violations", json::array()}};
  return {{"schema", 2}, {"command", "run"}, {"seed", 7}, {"transport", "http"}, {"defects", {"keep-calls-on-retry"}},
          {"provider", ""}, {"passed", 1}, {"failed", 1}, {"wall_ms", 4.0}, {"cases", {ok, c}}};
}

TEST_CASE("report.html escapes scenario text so no markup or script from a scenario reaches the page") {
  const std::string evil = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>&amp;";
  const std::string html = render_html(failing_summary(evil));
  CHECK(html.find("<script>alert") == std::string::npos);
  CHECK(html.find("<img") == std::string::npos);
  CHECK(html.find("\"'>") == std::string::npos);
  CHECK(html.find("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&gt;&lt;img src=x onerror=alert(2)&gt;&amp;amp;") != std::string::npos);
  // The page's own script is the only one.
  CHECK(count(html, "<script>") == 1);
  CHECK(html_escape("a<b>&\"'") == "a&lt;b&gt;&amp;&quot;&#39;");
}

TEST_CASE("report.html draws a failing case's timeline with requests, tool executions and retries") {
  const std::string html = render_html(failing_summary());
  CHECK(html.find("id=\"case-1\"") != std::string::npos);
  CHECK(html.find("id=\"case-0\"") == std::string::npos);  // passing cases are only in the index
  CHECK(count(html, "class=\"box request") == 2);
  CHECK(count(html, "class=\"box tool\"") == 2);
  CHECK(count(html, "class=\"box retry\"") == 1);
  CHECK(html.find("retried: connection lost") != std::string::npos);
  CHECK(html.find("cut short by the injected fault (reset)") != std::string::npos);
  CHECK(html.find("completed normally") != std::string::npos);
  CHECK(count(html, "class=\"fault-mark\"") == 1);
  CHECK(html.find("build/hiccup run x.json --defect keep-calls-on-retry</code><button class=\"copy\"") != std::string::npos);
  CHECK(html.find("http://") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
}

TEST_CASE("report.html shows a black box's screens at the user's cancel and at the end, escaped") {
  json summary = failing_summary();
  json& c = summary["cases"][1];
  c["screens"] = {{"at_cancel", "{\"type\":\"message\",\"content\":\"Once upon\"}\n"},
                  {"at_end", "<b>Bye.</b>\n"}};
  const std::string html = render_html(summary);
  const std::size_t screens = html.find("<h3>Screens</h3>");
  REQUIRE(screens != std::string::npos);
  CHECK(html.find("at the cancel (SIGINT)", screens) != std::string::npos);
  CHECK(html.find("&quot;content&quot;:&quot;Once upon&quot;", screens) != std::string::npos);
  CHECK(html.find("&lt;b&gt;Bye.&lt;/b&gt;", screens) != std::string::npos);
  CHECK(html.find("<b>Bye.</b>") == std::string::npos);
  // A case without a cancel has none.
  CHECK(render_html(failing_summary()).find("<h3>Screens</h3>") == std::string::npos);
  // An agent that showed nothing before the cancel: the screen says so, not an empty box.
  c["screens"]["at_cancel"] = "";
  const std::string empty = render_html(summary);
  CHECK(empty.find("at the cancel (SIGINT)</figcaption><p class=\"meaning\">(nothing shown)</p>") != std::string::npos);
  CHECK(empty.find("<pre></pre>") == std::string::npos);
}

TEST_CASE("report.html names a black box's request by its real arrival, and hiccup's answer past the script") {
  json summary = failing_summary();
  json& requests = summary["cases"][1]["transcript"]["requests"];
  const std::string virtual_html = render_html(summary);
  CHECK(virtual_html.find("turn 0, attempt 1") != std::string::npos);
  CHECK(virtual_html.find("sent at 0.0 s (virtual)") != std::string::npos);
  // A black box: no virtual time, the real arrival; a request past the script's last turn,
  // answered with hiccup's final text (two events no scenario scripted).
  for (json& r : requests) {
    r["virtual_s"] = nullptr;
    r["arrived_ms"] = 3878.97507;
  }
  requests[1]["turn"] = -1;
  requests[1]["attempt"] = -1;
  requests[1]["answer"] = {{"status", 200}, {"played", "unscripted"}, {"events_delivered", 2}, {"events_scripted", 0},
                           {"fault", nullptr}, {"ended", "unscripted"}, {"delivered_calls", json::array()},
                           {"delivered_text", "hiccup: this scenario scripts no more turns."}};
  const std::string html = render_html(summary);
  CHECK(html.find("s (virtual)") == std::string::npos);
  CHECK(count(html, "arrived 3.879 s after the server started (real time)") == 2);
  CHECK(html.find("attempt -1") == std::string::npos);
  CHECK(html.find("turn -1") == std::string::npos);
  CHECK(html.find("no scripted turn") != std::string::npos);
  CHECK(html.find("2 of 0 event(s)") == std::string::npos);
  CHECK(html.find("2 event(s) delivered (none scripted: hiccup's own answer)") != std::string::npos);
  CHECK(html.find("answered by hiccup with a final text: the scenario scripts no more turns") != std::string::npos);
  // The reference runtime's unscripted request gets a 500: still "not in the scenario's script",
  // and no events counted (none were scripted, none delivered).
  requests[1]["answer"]["status"] = 500;
  requests[1]["answer"]["events_delivered"] = 0;
  const std::string refused = render_html(summary);
  CHECK(refused.find("not in the scenario&#39;s script") != std::string::npos);
  CHECK(refused.find("0 of 0 event(s)") == std::string::npos);
  // A request of a known turn the server answered itself (a 400 for a broken history).
  requests[1]["turn"] = 1;
  requests[1]["answer"]["status"] = 400;
  requests[1]["answer"]["played"] = "rejected";
  requests[1]["answer"]["ended"] = "rejected";
  const std::string rejected = render_html(summary);
  CHECK(rejected.find("turn 1, no scripted attempt") != std::string::npos);
  CHECK(rejected.find("attempt ?") == std::string::npos);
  CHECK(rejected.find("server answered HTTP 400<div") != std::string::npos);
  // Values of the wrong type fall back instead of throwing.
  requests[1]["turn"] = "zero";
  requests[1]["arrived_ms"] = "soon";
  requests[1]["answer"]["events_delivered"] = "two";
  CHECK_NOTHROW(render_html(summary));
  // A negative count (a hand-edited summary) is no count: never "-3 of 1".
  requests[1]["answer"]["played"] = "stream";
  requests[1]["answer"]["events_delivered"] = -3;
  requests[1]["answer"]["events_scripted"] = 1;
  const std::string negative = render_html(summary);
  CHECK(negative.find("-3 of") == std::string::npos);
  CHECK(negative.find("0 of 1 event(s) delivered") != std::string::npos);
}

TEST_CASE("report.html pins each violation to its requests with the invariant's meaning") {
  const std::string html = render_html(failing_summary());
  std::string meaning;
  for (const InvariantInfo& i : invariant_catalogue()) {
    if (i.name == "at-most-once") meaning = html_escape(std::string(i.doc));
  }
  REQUIRE(!meaning.empty());
  CHECK(html.find("call 0 (&quot;shell&quot;) of turn 0 ran 2 times") != std::string::npos);
  CHECK(html.find("what it means: " + meaning) != std::string::npos);
  // Request 0 carries both violations, request 1 one: three pins, each with the meaning on hover.
  CHECK(count(html, "<abbr title=\"" + meaning + "\">at-most-once</abbr>") == 3);
  CHECK(count(html, "<div class=\"pin\">violation 2: <abbr") == 2);
  CHECK(count(html, "box request faulted violated") == 1);
}

TEST_CASE("report.html of a run without cases says so and still has its filters") {
  const json empty = {{"schema", 2}, {"command", "explore"}, {"seed", 1}, {"transport", "memory"}, {"defects", json::array()},
                      {"provider", ""}, {"passed", 0}, {"failed", 0}, {"wall_ms", 0.0}, {"cases", json::array()}};
  const std::string html = render_html(empty);
  CHECK(html.find("No cases in this report.") != std::string::npos);
  CHECK(html.find("id=\"f-verdict\"") != std::string::npos);
  CHECK(html.find("provider drawn per case") != std::string::npos);
  CHECK(html.find("class=\"case\"") == std::string::npos);
  CHECK(render_html(json::object()).find("No cases in this report.") != std::string::npos);
}

TEST_CASE("the html listener writes report.html from the same object as summary.json") {
  const auto dir = hiccup_test::temp_path("hiccup_html_listener_test");
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "report.html").string();
  auto l = make_html_listener(path);
  l->run_starting(RunInfo{"run", 7, "http", {}, ""});
  ReportCase bad;
  bad.name = "broken<case>";
  bad.classname = "hiccup.x";
  bad.passed = false;
  bad.violations = {Violation{"liveness", "never finished", -1, -1, -1}};
  l->case_ended(bad);
  l->run_ended(RunTotals{0, 1, 0, 2.0});
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  CHECK(s.str().find("broken&lt;case&gt;") != std::string::npos);
  CHECK(s.str().find("never finished") != std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace harness

namespace harness {
namespace {

TEST_CASE("report.html says how each kill-matrix row caught its defect, or that it survived") {
  json summary = {{"schema", 2}, {"command", "run"}, {"passed", 1}, {"failed", 1}, {"cases", json::array()}};
  summary["cases"].push_back({{"name", "a catches keep-calls-on-retry"}, {"classname", "hiccup.kill-matrix"}, {"passed", true},
                              {"violations", json::array()}, {"defect", "keep-calls-on-retry"},
                              {"caught_by", {"at-most-once", "at-most-once", "expect.executions"}}});
  summary["cases"].push_back({{"name", "b catches retry-non-retryable"}, {"classname", "hiccup.kill-matrix"}, {"passed", false},
                              {"violations", json::array()}, {"defect", "retry-non-retryable"}, {"caught_by", json::array()}});
  const std::string html = render_html(summary);
  CHECK(html.find("catches defect keep-calls-on-retry: with it switched on, this scenario breaks at-most-once, expect.executions") !=
        std::string::npos);
  CHECK(html.find("defect retry-non-retryable survived") != std::string::npos);
  CHECK(count(html, "<section class=\"case\"") == 1);  // the survivor; a caught defect has no transcript here
  CHECK(html.find("<option value=\"expect.executions\"") != std::string::npos);  // caught_by feeds the invariant filter
}

TEST_CASE("report.html filters by folder and tag, and gives passing cases with a transcript a timeline") {
  json summary = failing_summary();
  json passing = summary["cases"][1];
  passing["name"] = "with-transcript";
  passing["passed"] = true;
  passing["violations"] = json::array();
  passing["file"] = "scenarios/basics/plain-answer.json";
  passing["tags"] = {"smoke", "text-only"};
  passing["scenario_text"] = "{\"name\": \"<b>x</b>\"}\n";
  summary["cases"][1]["file"] = "scenarios/mid-stream/x.json";
  json bare = passing;
  bare["name"] = "no-transcript";
  bare.erase("transcript");
  summary["cases"].push_back(passing);
  summary["cases"].push_back(bare);
  const std::string html = render_html(summary);
  CHECK(html.find("<option value=\"scenarios/basics\">") != std::string::npos);
  CHECK(html.find("<option value=\"scenarios/mid-stream\">") != std::string::npos);
  CHECK(html.find("<option value=\"smoke\">") != std::string::npos);
  CHECK(html.find("data-folder=\"scenarios/basics\" data-tags=\"[&quot;smoke&quot;,&quot;text-only&quot;]\"") != std::string::npos);
  CHECK(html.find("<span class=\"pass\">PASS</span> with-transcript") != std::string::npos);
  CHECK(html.find("None: every invariant held.") != std::string::npos);
  CHECK(html.find("<a href=\"#case-2\">with-transcript</a>") != std::string::npos);
  CHECK(html.find("<a href=\"#case-0\">") == std::string::npos);  // no transcript, no section to link
  CHECK(html.find("<a href=\"#case-3\">") == std::string::npos);
  CHECK(count(html, "<section class=\"case\"") == 2);
  CHECK(html.find("<summary>the scenario as played</summary><pre>{&quot;name&quot;: &quot;&lt;b&gt;x&lt;/b&gt;&quot;}") != std::string::npos);
}

}  // namespace
}  // namespace harness
