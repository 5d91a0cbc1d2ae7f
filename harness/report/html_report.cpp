// report.html: one self-contained page (inline CSS and JS, no network, opens from file://) rendered
// from summary.json's object: an index with filters, then per failing case a timeline of requests,
// tool executions and the runtime's retries, with each violation pinned to the request it names.
// Every text from the summary is HTML-escaped; the script reads only data-* attributes.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "harness/report/report.h"
#include "harness/strings.h"
#include "harness/scenario_io.h"

namespace harness {

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

using nlohmann::json;

std::string str(const json& j, const char* key, std::string fallback = "") {
  if (!j.is_object() || !j.contains(key)) return fallback;
  const json& v = j[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return fallback;
  return v.dump();
}

std::string esc(const json& j, const char* key, std::string fallback = "") { return html_escape(str(j, key, fallback)); }

/// j[key] when it is an integer that fits an int, else `fallback`.
int int_or(const json& j, const char* key, int fallback) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number_integer()) return fallback;
  const json& v = j[key];
  if (v.is_number_unsigned()) return v.get<std::uint64_t>() <= 2147483647u ? static_cast<int>(v.get<std::uint64_t>()) : fallback;
  const std::int64_t n = v.get<std::int64_t>();
  return n >= -2147483647 - 1 && n <= 2147483647 ? static_cast<int>(n) : fallback;
}

/// A seconds figure with 3 decimals ("3.879").
std::string seconds3(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

/// A snake_case or kebab-case code read as words ("connection_lost" → "connection lost").
std::string words(std::string s) {
  for (char& c : s) if (c == '_' || c == '-') c = ' ';
  return s;
}

/// transcript answer.ended in words.
std::string ended_words(const std::string& ended) {
  if (ended == "completed") return "completed normally";
  if (ended.rfind("fault:", 0) == 0) return "cut short by the injected fault (" + words(ended.substr(6)) + ")";
  if (ended.rfind("status:", 0) == 0) return "answered with HTTP error " + ended.substr(7);
  if (ended.rfind("finish:", 0) == 0) return "stopped with finish reason " + words(ended.substr(7));
  if (ended == "rejected") return "rejected: the request broke the provider's rules";
  if (ended == "bad-request") return "refused as a bad request";
  if (ended == "not-found") return "refused: no such model or endpoint";
  if (ended == "unscripted") return "not in the scenario's script";
  if (ended == "preflight") return "a preflight request, not an attempt";
  if (ended == "incomplete") return "never finished (the client went away)";
  return words(ended);
}

/// The invariant's one-line meaning from the catalogue; scenario expectations are described.
std::string invariant_meaning(const std::string& name) {
  for (const InvariantInfo& i : invariant_catalogue()) {
    if (i.name == name) return std::string(i.doc);
  }
  if (name.rfind("expect.", 0) == 0) return "the scenario's own expectation about " + words(name.substr(7)) + " did not hold";
  return "";
}

/// A number of milliseconds to one decimal ("25.9").
std::string ms_text(const json& v) {
  if (!v.is_number()) return "";
  std::ostringstream o;
  o.precision(1);
  o << std::fixed << v.get<double>();
  return o.str();
}

std::string args_text(const json& args) { return args.is_null() ? std::string() : args.dump(); }

std::string call_text(const json& call) { return str(call, "name") + " " + args_text(call.value("args", json())); }

constexpr const char* kStyle = R"(
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header,main{padding:12px 24px}header{background:#1d2330;color:#fff}
h1{font-size:20px;margin:4px 0}h2{font-size:17px;margin:0 0 6px}h3{font-size:14px;margin:14px 0 6px}
.meta span{margin-right:18px}.pass{color:#17803d}.fail{color:#c0262d}
table{border-collapse:collapse;background:#fff;width:100%}td,th{border-bottom:1px solid #e2e5ea;padding:4px 8px;text-align:left;vertical-align:top}
.filters{margin:10px 0}.filters label{margin-right:16px}
.case{background:#fff;border:1px solid #d8dce3;border-radius:6px;margin:16px 0;padding:12px 16px}
.timeline{display:grid;gap:6px;align-items:start;overflow-x:auto}
.screens{display:grid;grid-template-columns:1fr 1fr;gap:8px}.screens pre{background:#111;color:#eee;padding:6px;max-height:24em;overflow:auto;white-space:pre-wrap}
.lane-label{font-weight:600;color:#5a6272;font-size:12px;padding-top:6px}
.box{border:1px solid #b9c0cc;border-radius:5px;padding:6px 8px;background:#fbfcfd;font-size:12px}
.box.faulted{border-color:#d97706;background:#fff8eb}.box.violated{box-shadow:0 0 0 2px #c0262d}
.tool{background:#eef6ff;border-color:#7aa7d9}.retry{background:#f3efff;border-color:#9a86d6}
.events{display:flex;gap:2px;margin:4px 0;flex-wrap:wrap}.ev{width:10px;height:10px;background:#8fb996;border-radius:2px}
.ev.lost{background:#e2e5ea}.fault-mark{color:#d97706;font-weight:700;line-height:10px}
.pin{color:#c0262d;font-weight:600;margin-top:4px}.pin abbr{text-decoration:underline dotted}
.viol{margin:4px 0}.viol .meaning{color:#5a6272}
.replay{display:flex;gap:8px;align-items:center;margin:8px 0}
.replay code{background:#eef0f3;padding:4px 6px;border-radius:4px;word-break:break-all}
pre{white-space:pre-wrap;background:#f6f7f9;padding:6px}
)";

constexpr const char* kScript = R"(
function applyFilters(){
  var v=document.getElementById('f-verdict').value,c=document.getElementById('f-class').value,i=document.getElementById('f-invariant').value;
  var f=document.getElementById('f-folder').value,t=document.getElementById('f-tag').value;
  document.querySelectorAll('[data-verdict]').forEach(function(el){
    var inv=JSON.parse(el.getAttribute('data-invariants')||'[]'),tags=JSON.parse(el.getAttribute('data-tags')||'[]');
    var show=(v===''||el.getAttribute('data-verdict')===v)&&(c===''||el.getAttribute('data-class')===c)&&(i===''||inv.indexOf(i)>=0)
      &&(f===''||el.getAttribute('data-folder')===f)&&(t===''||tags.indexOf(t)>=0);
    el.style.display=show?'':'none';
  });
}
function copyReplay(btn){
  var text=btn.parentNode.querySelector('code').textContent;
  function done(){btn.textContent='copied';setTimeout(function(){btn.textContent='copy';},1500);}
  function fallback(){var t=document.createElement('textarea');t.value=text;document.body.appendChild(t);t.select();
    try{document.execCommand('copy');}catch(e){}document.body.removeChild(t);done();}
  if(navigator.clipboard&&navigator.clipboard.writeText){navigator.clipboard.writeText(text).then(done,fallback);}else{fallback();}
}
document.addEventListener('DOMContentLoaded',function(){
  ['f-verdict','f-class','f-invariant','f-folder','f-tag'].forEach(function(id){document.getElementById(id).addEventListener('change',applyFilters);});
  document.querySelectorAll('button.copy').forEach(function(b){b.addEventListener('click',function(){copyReplay(b);});});
  document.body.setAttribute('data-ready','yes');
});
)";

std::vector<std::string> case_invariants(const json& c) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const json& v : c.value("violations", json::array())) {
    const std::string name = str(v, "invariant");
    if (seen.insert(name).second) out.push_back(name);
  }
  return out;
}

/// The folder of a run case's scenario file ("" for explore properties and black boxes without one).
std::string case_folder(const json& c) {
  const std::string file = str(c, "file");
  const auto slash = file.rfind('/');
  return slash == std::string::npos ? std::string() : file.substr(0, slash);
}

/// A run case's scenario tags.
std::vector<std::string> case_tags(const json& c) {
  std::vector<std::string> out;
  for (const json& t : c.value("tags", json::array())) {
    if (t.is_string()) out.push_back(t.get<std::string>());
  }
  return out;
}

/// The invariants that caught a kill-matrix row's defect, first occurrence order, no repeats.
std::vector<std::string> caught_by(const json& c) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const json& v : c.value("caught_by", json::array())) {
    if (v.is_string() && seen.insert(v.get<std::string>()).second) out.push_back(v.get<std::string>());
  }
  return out;
}

/// Whether a case gets a section of its own: every failing case, and a passing one whose
/// transcript was kept (`--transcripts`, black-box runs).
bool has_section(const json& c) {
  return !c.value("passed", false) || (c.contains("transcript") && c["transcript"].is_object());
}

/// The request box: what it carried, the answer's events with the fault drawn where it fell, how it
/// ended, and the violations pinned to it.
void render_request(std::ostream& o, const json& r, const json& violations) {
  const json answer = r.value("answer", json::object());
  const json fault = answer.value("fault", json());
  const json pinned = r.value("violations", json::array());
  o << "<div class=\"box request" << (fault.is_object() ? " faulted" : "") << (pinned.empty() ? "" : " violated")
    << "\" data-request=\"" << esc(r, "index") << "\">";
  o << "<b>request " << esc(r, "index") << "</b> · ";
  // A request no scripted turn matched (turn -1: past the script's turns, or a history the script
  // does not know) has no turn or attempt to name.
  if (const int turn = int_or(r, "turn", -1); turn >= 0) {
    o << "turn " << turn;
    // attempt -1: the server answered the request itself (a 400 for a broken history, say).
    if (const int attempt = int_or(r, "attempt", -1); attempt >= 0) o << ", attempt " << attempt;
    else o << ", no scripted attempt";
  } else {
    o << "no scripted turn";
  }
  o << "<br>model " << esc(r, "model");
  // The reference runtime's requests carry virtual time; a black box's, the real time they reached
  // the server (its clock starts with the case's server).
  if (r.contains("virtual_s") && r["virtual_s"].is_number()) {
    o << " · sent at " << esc(r, "virtual_s") << " s (virtual)";
  } else if (r.contains("arrived_ms") && r["arrived_ms"].is_number()) {
    o << " · arrived " << seconds3(r["arrived_ms"].get<double>() / 1000) << " s after the server started (real time)";
  }
  o << "<br>";
  const json sent = r.value("sent", json::object());
  const json answered = sent.value("calls_answered", json::array());
  if (!answered.empty()) {
    std::vector<std::string> calls;
    for (const json& c : answered) calls.push_back(html_escape(call_text(c)));
    o << "carried results of: " << join(calls, "; ") << "<br>";
  }
  o << "server answered HTTP " << esc(answer, "status", "?");
  // A count that is not a whole number >= 0 (a hand-edited or foreign summary) is shown as none.
  const int delivered = std::max(0, int_or(answer, "events_delivered", 0));
  const int scripted = std::max(0, int_or(answer, "events_scripted", 0));
  // Events are counted for a scripted stream; a status, a rejection or the server's own answer
  // has none scripted (older summaries do not say what played: counted as before).
  const std::string played = str(answer, "played", "stream");
  if (scripted == 0 && delivered > 0) {
    o << ", " << delivered << " event(s) delivered (none scripted: hiccup's own answer)";
  } else if (played == "stream" || scripted > 0 || delivered != 0) {
    o << ", " << delivered << " of " << scripted << " event(s) delivered";
  }
  o << "<div class=\"events\" title=\"scripted events: green delivered, grey not delivered\">";
  const int fell = fault.is_object() ? fault.value("fell_after_event", -1) : -1;
  const int shown = std::min(std::max(scripted, delivered), 60);
  for (int e = 0; e <= shown; ++e) {
    if (e == fell) o << "<span class=\"fault-mark\" title=\"the fault fell here\">⚡</span>";
    if (e < shown) o << "<span class=\"ev" << (e < delivered ? "" : " lost") << "\"></span>";
  }
  o << "</div>";
  if (fault.is_object()) {
    o << "<div>fault: <b>" << html_escape(words(str(fault, "kind"))) << "</b> after event " << fell << "</div>";
  }
  const json calls = answer.value("delivered_calls", json::array());
  if (!calls.empty()) {
    std::vector<std::string> names;
    for (const json& c : calls) names.push_back(html_escape(call_text(c)));
    o << "<div>delivered call(s): " << join(names, "; ") << "</div>";
  }
  if (!str(answer, "delivered_text").empty()) o << "<div>text: " << esc(answer, "delivered_text") << "</div>";
  if (!str(answer, "rejection").empty()) o << "<div>rejection: " << esc(answer, "rejection") << "</div>";
  const std::string ended = str(answer, "ended");
  // Past the script's last turn a black box gets a final text (ScriptEngine::answer_past_script),
  // the reference runtime a 500.
  const bool past_script_answer = ended == "unscripted" && int_or(answer, "status", 0) == 200;
  o << "<div>ended: <b>"
    << html_escape(past_script_answer ? "answered by hiccup with a final text: the scenario scripts no more turns"
                                      : ended_words(ended))
    << "</b></div>";
  for (const json& idx : pinned) {
    if (!idx.is_number_integer() || idx.get<int>() < 0 || idx.get<std::size_t>() >= violations.size()) continue;
    const json& v = violations[idx.get<std::size_t>()];
    const std::string inv = str(v, "invariant");
    o << "<div class=\"pin\">violation " << idx.get<std::size_t>() + 1 << ": <abbr title=\""
      << html_escape(invariant_meaning(inv)) << "\">" << html_escape(inv) << "</abbr></div>";
  }
  o << "</div>";
}

void render_timeline(std::ostream& o, const json& t, const json& violations) {
  const json requests = t.value("requests", json::array());
  const std::size_t n = std::max<std::size_t>(requests.size(), 1);
  o << "<h3>Timeline</h3>";
  o << "<div class=\"timeline\" style=\"grid-template-columns:120px repeat(" << n << ",minmax(220px,1fr))\">";
  // Lane 1: requests and attempts.
  o << "<div class=\"lane-label\">requests &amp; attempts</div>";
  for (std::size_t i = 0; i < n; ++i) {
    o << "<div class=\"lane lane-requests\">";
    if (i < requests.size()) render_request(o, requests[i], violations);
    o << "</div>";
  }
  // Lane 2: tool executions under the request that delivered the call.
  const json executions = t.value("executions", json::array());
  o << "<div class=\"lane-label\">tool executions</div>";
  for (std::size_t i = 0; i < n; ++i) {
    o << "<div class=\"lane lane-tools\">";
    for (const json& e : executions) {
      if (e.value("request", -1) != static_cast<int>(i)) continue;
      o << "<div class=\"box tool\">ran <b>" << esc(e, "name") << "</b> " << html_escape(args_text(e.value("args", json())))
        << "<br>call " << esc(e, "call_index") << " of request " << esc(e, "request") << "</div>";
    }
    o << "</div>";
  }
  // Lane 3: the runtime's retries and waits, under the request that failed.
  const json runtime = t.value("runtime", json::object());
  o << "<div class=\"lane-label\">runtime retries &amp; waits</div>";
  for (std::size_t i = 0; i < n; ++i) {
    o << "<div class=\"lane lane-runtime\">";
    for (const json& r : runtime.value("retries", json::array())) {
      if (r.value("request", -1) != static_cast<int>(i)) continue;
      o << "<div class=\"box retry\">retried: " << html_escape(words(str(r, "reason"))) << "<br>"
        << esc(r, "message") << "<br>waited " << esc(r, "wait_s") << " s, next model " << esc(r, "model") << "</div>";
    }
    for (const json& c : runtime.value("commits", json::array())) {
      if (c.value("request", -1) != static_cast<int>(i)) continue;
      o << "<div class=\"box\">committed turn " << esc(c, "turn") << "</div>";
    }
    o << "</div>";
  }
  o << "</div>";
  const json outcome = runtime.value("outcome", json::object());
  if (outcome.is_object() && !outcome.empty()) {
    o << "<p>outcome: " << (outcome.value("completed", false) ? "completed" : "did not complete");
    if (!str(outcome, "error_message").empty()) o << " · error: " << esc(outcome, "error_message");
    if (!str(outcome, "final_text").empty()) o << " · final text: " << esc(outcome, "final_text");
    if (outcome.value("truncated", false) == true) o << " · truncated (the answer ended at the token limit)";
    o << "</p>";
  }
}

/// A kill-matrix row in words: which defect, and how it was caught (or that it survived).
std::string kill_matrix_how(const json& c) {
  const std::string defect = str(c, "defect");
  if (defect.empty() && !c.contains("caught_by")) return "";
  const std::string name = defect.empty() ? std::string("the defect") : "defect " + defect;
  const std::vector<std::string> by = caught_by(c);
  if (!c.value("passed", false) || by.empty()) {
    return name + " survived: with it switched on, every invariant and expectation of this scenario still held";
  }
  return "catches " + name + ": with it switched on, this scenario breaks " + join(by, ", ");
}

/// The invariants the index's invariant filter matches a case by: those it broke, and for a
/// kill-matrix row those that caught its defect.
std::vector<std::string> filter_invariants(const json& c) {
  std::vector<std::string> out = case_invariants(c);
  for (const std::string& i : caught_by(c)) {
    if (std::find(out.begin(), out.end(), i) == out.end()) out.push_back(i);
  }
  return out;
}

/// The attributes the index filters read: verdict, group, invariants and tags (JSON arrays, so any
/// character may appear in a name), folder.
std::string filter_attributes(const json& c) {
  return "data-verdict=\"" + std::string(c.value("passed", false) ? "pass" : "fail") + "\" data-class=\"" +
         html_escape(str(c, "classname")) + "\" data-invariants=\"" + html_escape(json(filter_invariants(c)).dump()) +
         "\" data-folder=\"" + html_escape(case_folder(c)) + "\" data-tags=\"" + html_escape(json(case_tags(c)).dump()) + "\"";
}

void render_case(std::ostream& o, const json& c, std::size_t index) {
  const bool passed = c.value("passed", false);
  o << "<section class=\"case\" id=\"case-" << index << "\" " << filter_attributes(c) << ">";
  o << "<h2>" << (passed ? "<span class=\"pass\">PASS</span> " : "<span class=\"fail\">FAIL</span> ") << esc(c, "name")
    << " <small>(" << esc(c, "classname") << ")</small></h2>";
  if (c.contains("file")) o << "<div>scenario file: <code>" << esc(c, "file") << "</code></div>";
  if (c.contains("property")) o << "<div>property: " << esc(c, "property") << "</div>";
  if (c.contains("counterexample")) o << "<div>counterexample: <code>" << esc(c, "counterexample") << "</code></div>";
  const std::string how = kill_matrix_how(c);
  if (!how.empty()) {
    o << "<div class=\"how\">" << html_escape(how) << "</div>";
    for (const std::string& inv : caught_by(c)) {
      const std::string meaning = invariant_meaning(inv);
      if (!meaning.empty()) o << "<div class=\"meaning\">" << html_escape(inv) << ": " << html_escape(meaning) << "</div>";
    }
  }
  if (!case_tags(c).empty()) o << "<div>tags: " << html_escape(join(case_tags(c), ", ")) << "</div>";
  if (!str(c, "design").empty()) {  // a black box's recovery design (docs/POLICY.md, "Judging harms, not designs")
    o << "<div class=\"design\">recovery design: <b>" << esc(c, "design") << "</b>";
    if (!str(c, "design_evidence").empty()) o << " — " << esc(c, "design_evidence");
    o << "</div>";
  }
  std::string replay = str(c, "replay");
  if (!replay.empty()) {
    o << "<div class=\"replay\">replay: <code>" << html_escape(replay) << "</code><button class=\"copy\" type=\"button\">copy</button></div>";
  }
  const json violations = c.value("violations", json::array());
  if (passed && violations.empty()) o << "<h3>Violations</h3><p>None: every invariant held.</p><ol>";
  else o << "<h3>Violations</h3><ol>";
  for (const json& v : violations) {
    const std::string inv = str(v, "invariant");
    o << "<li class=\"viol\"><b>" << html_escape(inv) << "</b>";
    if (v.contains("request")) o << " at request " << esc(v, "request");
    o << ": <span class=\"message\">" << esc(v, "message") << "</span>";
    const std::string meaning = invariant_meaning(inv);
    if (!meaning.empty()) o << "<br><span class=\"meaning\">what it means: " << html_escape(meaning) << "</span>";
    o << "</li>";
  }
  o << "</ol>";
  if (violations.empty() && !str(c, "detail").empty()) o << "<pre>" << esc(c, "detail") << "</pre>";
  if (c.contains("transcript") && c["transcript"].is_object()) render_timeline(o, c["transcript"], violations);
  else o << "<p>No transcript recorded for this case.</p>";
  if (c.contains("screens") && c["screens"].is_object()) {
    // A black box's screens around the user's cancel: what the person saw as they pressed Ctrl-C,
    // and at the end of the session.
    const json& sc = c["screens"];
    // An empty screen says so (an empty box reads as a rendering fault).
    auto screen = [&](const char* key) {
      return str(sc, key).empty() ? std::string("<p class=\"meaning\">(nothing shown)</p>") : "<pre>" + esc(sc, key) + "</pre>";
    };
    o << "<h3>Screens</h3><div class=\"screens\"><figure><figcaption>at the cancel (SIGINT)</figcaption>"
      << screen("at_cancel") << "</figure><figure><figcaption>at the end</figcaption>" << screen("at_end")
      << "</figure></div>";
  }
  if (!str(c, "scenario_text").empty()) {
    o << "<details class=\"scenario\"><summary>" << (c.contains("counterexample") ? "the counterexample file" : "the scenario as played")
      << "</summary><pre>" << esc(c, "scenario_text") << "</pre></details>";
  }
  o << "</section>";
}

}  // namespace

namespace {

/// The checks of summary_type_problem: each names the pointer of the first value whose type the
/// renderer cannot read, and what it expected there.
class SummaryShape {
 public:
  std::optional<std::string> problem;

  void document(const json& s) {
    if (!object(s, "", "the summary")) return;
    number_at(s, "", "passed");
    number_at(s, "", "failed");
    // A black box's run or matrix has no seed: its summary writes null (newcomer, stop 53).
    if (s.contains("seed") && !s["seed"].is_number() && !s["seed"].is_string() && !s["seed"].is_null()) {
      fail("/seed", "a number or null", s["seed"]);
    }
    if (s.contains("defects") && (!s["defects"].is_array() ||
                                  !std::all_of(s["defects"].begin(), s["defects"].end(), [](const json& d) { return d.is_string(); }))) {
      fail("/defects", "an array of defect names", s["defects"]);
    }
    const std::string cases = at("", "cases");
    if (!s.contains("cases")) return;
    if (!array(s["cases"], cases)) return;
    for (std::size_t i = 0; i < s["cases"].size() && !problem; ++i) one_case(s["cases"][i], at(cases, i));
  }

 private:
  static std::string at(const std::string& base, std::string_view key) { return base + "/" + pointer_escape(key); }
  static std::string at(const std::string& base, std::size_t i) { return base + "/" + std::to_string(i); }
  static std::string found(const json& v) {
    switch (v.type()) {
      case json::value_t::null: return "null";
      case json::value_t::boolean: return v.get<bool>() ? "true" : "false";
      case json::value_t::string: return "a string";
      case json::value_t::array: return "an array";
      case json::value_t::object: return "an object";
      default: return "number " + v.dump();
    }
  }
  bool fail(const std::string& pointer, const std::string& expected, const json& v) {
    if (!problem) problem = (pointer.empty() ? std::string("/") : pointer) + ": expected " + expected + ", found " + found(v);
    return false;
  }
  bool object(const json& v, const std::string& pointer, const char* what) {
    return v.is_object() || fail(pointer, std::string("an object (") + what + ")", v);
  }
  bool array(const json& v, const std::string& pointer) { return v.is_array() || fail(pointer, "an array", v); }
  // A field the renderer reads as a number (with a numeric default): absent is fine.
  void number_at(const json& parent, const std::string& pointer, const char* key) {
    if (parent.contains(key) && !parent[key].is_number()) fail(at(pointer, key), "a number", parent[key]);
  }
  void boolean_at(const json& parent, const std::string& pointer, const char* key) {
    if (parent.contains(key) && !parent[key].is_boolean()) fail(at(pointer, key), "true or false", parent[key]);
  }
  // An optional field that must be an object when present; returns it, or nullptr.
  const json* object_at(const json& parent, const std::string& pointer, const char* key, const char* what) {
    if (!parent.contains(key)) return nullptr;
    return object(parent[key], at(pointer, key), what) ? &parent[key] : nullptr;
  }
  // An optional list whose elements are objects; `each` checks one (its pointer given).
  template <class Each>
  void objects_at(const json& parent, const std::string& pointer, const char* key, const char* what, Each each) {
    if (!parent.contains(key)) return;
    const std::string p = at(pointer, key);
    if (!array(parent[key], p)) return;
    for (std::size_t i = 0; i < parent[key].size() && !problem; ++i) {
      if (object(parent[key][i], at(p, i), what)) each(parent[key][i], at(p, i));
    }
  }

  // A field the renderer reads as text: absent is fine.
  void string_at(const json& parent, const std::string& pointer, const char* key) {
    if (parent.contains(key) && !parent[key].is_string()) fail(at(pointer, key), "a string", parent[key]);
  }
  void one_case(const json& c, const std::string& p) {
    if (!object(c, p, "a case")) return;
    boolean_at(c, p, "passed");
    string_at(c, p, "name");
    string_at(c, p, "classname");
    number_at(c, p, "wall_ms");
    objects_at(c, p, "violations", "a violation", [&](const json& v, const std::string& vp) {
      string_at(v, vp, "invariant");
      string_at(v, vp, "message");
      number_at(v, vp, "request");
    });
    if (c.contains("transcript") && c["transcript"].is_object()) transcript(c["transcript"], at(p, "transcript"));
  }
  void transcript(const json& t, const std::string& p) {
    auto no_check = [](const json&, const std::string&) {};
    objects_at(t, p, "requests", "a request", [&](const json& r, const std::string& rp) {
      if (const json* answer = object_at(r, rp, "answer", "the answer")) {
        const std::string ap = at(rp, "answer");
        number_at(*answer, ap, "events_delivered");
        number_at(*answer, ap, "events_scripted");
        if (answer->contains("fault") && (*answer)["fault"].is_object()) number_at((*answer)["fault"], at(ap, "fault"), "fell_after_event");
        objects_at(*answer, ap, "delivered_calls", "a call", no_check);
      }
      if (const json* sent = object_at(r, rp, "sent", "what was sent")) {
        objects_at(*sent, at(rp, "sent"), "calls_answered", "a call", no_check);
      }
    });
    auto request_number = [&](const json& e, const std::string& ep) { number_at(e, ep, "request"); };
    objects_at(t, p, "executions", "a tool execution", request_number);
    if (const json* runtime = object_at(t, p, "runtime", "the runtime's events")) {
      const std::string rp = at(p, "runtime");
      objects_at(*runtime, rp, "retries", "a retry", request_number);
      objects_at(*runtime, rp, "commits", "a commit", request_number);
      if (runtime->contains("outcome") && (*runtime)["outcome"].is_object()) boolean_at((*runtime)["outcome"], at(rp, "outcome"), "completed");
    }
  }
};

}  // namespace

std::optional<std::string> summary_type_problem(const json& summary) {
  SummaryShape shape;
  shape.document(summary);
  return shape.problem;
}

std::string render_html(const json& summary) {
  std::ostringstream o;
  const json cases = summary.value("cases", json::array());
  std::set<std::string> classes, invariants, folders, tags;
  for (const json& c : cases) {
    classes.insert(str(c, "classname"));
    if (!case_folder(c).empty()) folders.insert(case_folder(c));
    for (const std::string& t : case_tags(c)) tags.insert(t);
    for (const std::string& i : filter_invariants(c)) invariants.insert(i);
  }
  const std::string command = str(summary, "command", "run");
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
    << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">"
    << "<title>hiccup " << html_escape(command) << " report</title><style>" << kStyle << "</style></head><body>";
  o << "<header><h1>hiccup " << html_escape(command) << ": <span id=\"count-passed\">" << summary.value("passed", 0)
    << "</span> passed, <span id=\"count-failed\">" << summary.value("failed", 0) << "</span> failed</h1><div class=\"meta\">";
  if (summary.contains("agent")) o << "<span>agent " << esc(summary, "agent") << "</span>";
  if (!summary.contains("agent") || (command == "explore" && summary.contains("seed") && summary["seed"].is_number())) {
    o << "<span>seed " << esc(summary, "seed") << "</span>";
  }
  if (!str(summary, "command_line").empty()) o << "<span>command line <code>" << esc(summary, "command_line") << "</code></span>";
  o << "<span>transport " << esc(summary, "transport") << "</span>";
  const std::string provider = str(summary, "provider");
  o << "<span>provider " << html_escape(!provider.empty() ? provider : command == "explore" ? "drawn per case" : "each scenario's own") << "</span>";
  std::vector<std::string> defects;
  for (const json& d : summary.value("defects", json::array())) defects.push_back(d.is_string() ? d.get<std::string>() : d.dump());
  o << "<span>defects " << html_escape(defects.empty() ? "none" : join(defects, ", ")) << "</span>";
  o << "<span>duration " << ms_text(summary.value("wall_ms", json(0.0))) << " ms</span>";
  if (summary.contains("differences")) o << "<span>" << esc(summary, "differences") << " policy difference(s), not bugs</span>";
  if (summary.contains("digest")) o << "<span>run digest " << esc(summary, "digest") << "</span>";
  if (summary.contains("case_digests") && summary["case_digests"].is_array() && summary.contains("cases_requested")) {
    o << "<span>cases run " << summary["case_digests"].size() << " of " << esc(summary, "cases_requested") << "</span>";
  }
  if (summary.contains("shards") && summary["shards"].is_array()) {
    o << "<span>merged from " << summary["shards"].size() << " shard(s): ";
    std::vector<std::string> dirs;
    for (const json& sh : summary["shards"]) {
      if (sh.is_object()) dirs.push_back(str(sh, "dir") + " (" + (sh.contains("index") ? sh["index"].dump() : "?") + ")");
    }
    o << html_escape(join(dirs, ", ")) << "</span>";
    if (!summary["shards"].empty() && summary["shards"][0].is_object() && !str(summary["shards"][0], "command_line").empty()) {
      o << "<span>shard command line <code>" << esc(summary["shards"][0], "command_line") << "</code></span>";
    }
  }
  o << "</div></header><main>";
  // A black-box exploration: its distinct failures are the cases below; the flaky ones and the
  // note that a black box's verdicts may vary are here.
  if (summary.contains("black_box") && summary["black_box"].is_object()) {
    const json& b = summary["black_box"];
    const auto count = [&](const char* key) { return b.contains(key) && b[key].is_array() ? b[key].size() : std::size_t{0}; };
    o << "<p id=\"black-box\">" << count("distinct_failures") << " distinct failure(s), confirmed and shrunk; "
      << count("flaky") << " flaky (not confirmed, not shrunk)";
    if (b.contains("note") && b["note"].is_string()) o << ". <i>" << html_escape(b["note"].get<std::string>()) << "</i>";
    o << "</p>";
    if (count("flaky") > 0) {
      o << "<ul id=\"flaky\">";
      for (const json& f : b["flaky"]) {
        if (!f.is_object()) continue;
        o << "<li>flaky: " << esc(f, "signature");
        if (f.contains("rate") && f["rate"].is_object()) {
          o << " (failed " << html_escape(f["rate"].value("failed", json(0)).dump()) << " of "
            << html_escape(f["rate"].value("runs", json(0)).dump()) << " runs)";
        }
        o << "</li>";
      }
      o << "</ul>";
    }
  }

  o << "<div class=\"filters\"><label>verdict <select id=\"f-verdict\"><option value=\"\">all</option>"
    << "<option value=\"fail\">failed</option><option value=\"pass\">passed</option></select></label>";
  o << "<label>group <select id=\"f-class\"><option value=\"\">all</option>";
  for (const std::string& c : classes) o << "<option value=\"" << html_escape(c) << "\">" << html_escape(c) << "</option>";
  o << "</select></label><label>invariant <select id=\"f-invariant\"><option value=\"\">all</option>";
  for (const std::string& i : invariants) {
    o << "<option value=\"" << html_escape(i) << "\" title=\"" << html_escape(invariant_meaning(i)) << "\">" << html_escape(i) << "</option>";
  }
  o << "</select></label><label>folder <select id=\"f-folder\"><option value=\"\">all</option>";
  for (const std::string& f : folders) o << "<option value=\"" << html_escape(f) << "\">" << html_escape(f) << "</option>";
  o << "</select></label><label>tag <select id=\"f-tag\"><option value=\"\">all</option>";
  for (const std::string& t : tags) o << "<option value=\"" << html_escape(t) << "\">" << html_escape(t) << "</option>";
  o << "</select></label></div>";

  if (cases.empty()) {
    o << "<p id=\"no-cases\">No cases in this report.</p>";
  } else {
    o << "<table id=\"index\"><thead><tr><th>verdict</th><th>case</th><th>group</th><th>broken invariants, or how a defect was caught</th><th>ms</th></tr></thead><tbody>";
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const json& c = cases[i];
      const bool passed = c.value("passed", false);
      const std::vector<std::string> invs = case_invariants(c);
      o << "<tr " << filter_attributes(c) << "><td class=\"" << (passed ? "pass\">passed" : "fail\">failed") << "</td><td>";
      if (has_section(c)) o << "<a href=\"#case-" << i << "\">" << esc(c, "name") << "</a>";
      else o << esc(c, "name");
      const std::string how = kill_matrix_how(c);
      o << "</td><td>" << esc(c, "classname") << "</td><td>" << html_escape(!how.empty() ? how : join(invs, ", ")) << "</td><td>"
        << ms_text(c.value("wall_ms", json())) << "</td></tr>";
    }
    o << "</tbody></table>";
  }
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (has_section(cases[i])) render_case(o, cases[i], i);
  }
  o << "</main><script>" << kScript << "</script></body></html>\n";
  return o.str();
}

std::unique_ptr<ReportListener> make_html_listener(std::string path) {
  return make_summary_json_listener([path = std::move(path)](const json& summary) { write_report_file(path, render_html(summary)); });
}

}  // namespace harness
