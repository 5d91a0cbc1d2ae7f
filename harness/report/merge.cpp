// `hiccup report merge`: explore shards joined into the unsharded run's report (merge.h).
#include "harness/report/merge.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <sstream>

#include "harness/report/coverage_counts.h"
#include "harness/report/report.h"
#include "harness/transcript.h"

namespace harness {
namespace {

using nlohmann::json;

std::string string_of(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string shown(const json& v) {
  if (!v.is_string()) return v.dump();
  return v.get<std::string>().empty() ? std::string("\"\" (none)") : v.get<std::string>();
}

/// The defect set, sorted: shards list it in command-line order, which may differ.
json defect_set(const json& summary) {
  std::vector<std::string> d;
  for (const json& x : summary.value("defects", json::array())) d.push_back(shown(x));
  std::sort(d.begin(), d.end());
  return d;
}

/// "shard DIR" for messages.
std::string where(const ShardReport& s) { return s.dir.string(); }

/// What a JSON value is, for messages: "a string", "the number 5", "null", …
std::string found(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return v.get<bool>() ? "true" : "false";
    case json::value_t::string: return "the string " + v.dump();
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    default: return "the number " + v.dump();
  }
}

/// Checks summary.json's shape where merge reads it, so a hand-edited or truncated file is a
/// MergeError naming the file, the JSON pointer and what was expected, never a crash or a
/// library message.
class ShapeCheck {
 public:
  explicit ShapeCheck(const ShardReport& s) : file_(where(s) + "/summary.json") {}

  [[noreturn]] void fail(const std::string& pointer, const std::string& expected, const json& v) const {
    throw MergeError(file_ + ": " + (pointer.empty() ? std::string("/") : pointer) + ": expected " + expected + ", found " + found(v));
  }
  const json& object(const json& parent, const std::string& pointer, const char* key) const {
    if (!parent.contains(key) || !parent[key].is_object()) fail(pointer + "/" + key, "an object", parent.value(key, json()));
    return parent[key];
  }
  const json& array(const json& parent, const std::string& pointer, const char* key) const {
    if (!parent.contains(key) || !parent[key].is_array()) fail(pointer + "/" + key, "an array", parent.value(key, json()));
    return parent[key];
  }
  std::int64_t integer(const json& parent, const std::string& pointer, const char* key, std::int64_t lo, std::int64_t hi,
                       bool optional = false) const {
    if (optional && !parent.contains(key)) return lo;
    const json v = parent.value(key, json());
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)) ||
        v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi) {
      fail(pointer + "/" + key, "an integer from " + std::to_string(lo) + " to " + std::to_string(hi), v);
    }
    return v.get<std::int64_t>();
  }
  void number(const json& parent, const std::string& pointer, const char* key) const {
    const json v = parent.value(key, json());
    if (!v.is_number() || v.get<double>() < 0) fail(pointer + "/" + key, "a number >= 0", v);
  }
  void boolean(const json& parent, const std::string& pointer, const char* key) const {
    const json v = parent.value(key, json());
    if (!v.is_boolean()) fail(pointer + "/" + key, "true or false", v);
  }
  void string(const json& parent, const std::string& pointer, const char* key, bool optional = false) const {
    if (optional && !parent.contains(key)) return;
    const json v = parent.value(key, json());
    if (!v.is_string()) fail(pointer + "/" + key, "a string", v);
  }

 private:
  std::string file_;
};

constexpr std::int64_t kMaxIndex = 2'000'000'000;  // case indices and counts are ints

void check_one(const ShardReport& s) {
  const json& j = s.summary;
  if (!j.is_object() || !j.contains("cases") || !j["cases"].is_array()) {
    throw MergeError(where(s) + ": summary.json is not a hiccup summary (expected an object with \"cases\")");
  }
  if (string_of(j, "command") != "explore") {
    throw MergeError(where(s) + ": a `" + (string_of(j, "command").empty() ? std::string("?") : string_of(j, "command")) +
                     "` report; merge takes the report directories of `hiccup explore --shard K/N` runs");
  }
  if (j.contains("agent")) {
    throw MergeError(where(s) + ": a black-box exploration (explore --agent/--agent-cmd), which is not sharded; merge "
                     "takes the report directories of `hiccup explore --shard K/N` runs");
  }
  if (!j.contains("shard") || !j.contains("case_digests") || !j.contains("cases_requested")) {
    throw MergeError(where(s) + ": summary.json has no shard, cases_requested or case_digests (written by a hiccup "
                     "older than 0.10.0? re-run the shard with this version)");
  }
  const ShapeCheck c(s);
  const json& shard = c.object(j, "", "shard");
  const std::int64_t count = c.integer(shard, "/shard", "count", 1, kMaxIndex);
  const std::int64_t index = c.integer(shard, "/shard", "index", 1, count);
  const std::int64_t requested = c.integer(j, "", "cases_requested", 0, kMaxIndex);
  if (!j.value("seed", json()).is_number_unsigned()) c.fail("/seed", "an integer >= 0", j.value("seed", json()));
  c.number(j, "", "wall_ms");
  c.integer(j, "", "passed", 0, kMaxIndex);
  c.integer(j, "", "failed", 0, kMaxIndex);
  for (const char* key : {"transport", "provider", "hiccup_version"}) c.string(j, "", key);
  c.string(j, "", "command_line", /*optional=*/true);
  const json& defects = c.array(j, "", "defects");
  for (std::size_t i = 0; i < defects.size(); ++i) {
    if (!defects[i].is_string()) c.fail("/defects/" + std::to_string(i), "a defect name", defects[i]);
  }
  // Every case index once, in this shard's residue class, below the case count.
  const json& digests = c.array(j, "", "case_digests");
  std::set<std::int64_t> seen;
  for (std::size_t i = 0; i < digests.size(); ++i) {
    const std::string p = "/case_digests/" + std::to_string(i);
    const json& d = digests[i];
    if (!d.is_array() || d.size() != 2 || !d[1].is_string()) c.fail(p, "[index, digest]", d);
    const json pair = {{"index", d[0]}};
    const std::int64_t at = c.integer(pair, p, "index", 0, requested - 1);
    if (at % count != index - 1) {
      throw MergeError(where(s) + "/summary.json: " + p + ": case " + std::to_string(at) + " does not belong to shard " +
                       std::to_string(index) + "/" + std::to_string(count) + " (index % N must be K-1)");
    }
    if (!seen.insert(at).second) {
      throw MergeError(where(s) + "/summary.json: " + p + ": case " + std::to_string(at) + " is listed twice");
    }
  }
  c.boolean(j, "", "keep_going");
  const json& failing = c.array(j, "", "failing_cases");
  for (std::size_t i = 0; i < failing.size(); ++i) {
    const std::string p = "/failing_cases/" + std::to_string(i);
    const json& f = failing[i];
    if (!f.is_array() || f.size() != 2 || !f[1].is_array()) c.fail(p, "[index, [invariant, …]]", f);
    const json pair = {{"index", f[0]}};
    const std::int64_t at = c.integer(pair, p, "index", 0, requested - 1);
    if (!seen.count(at)) {
      throw MergeError(where(s) + "/summary.json: " + p + ": case " + std::to_string(at) + " failed but is not in case_digests");
    }
  }
  const json& cases = j["cases"];
  if (cases.empty()) c.fail("/cases", "one entry per property", cases);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string p = "/cases/" + std::to_string(i);
    if (!cases[i].is_object()) c.fail(p, "an object", cases[i]);
    const json& e = cases[i];
    c.string(e, p, "name");
    c.boolean(e, p, "passed");
    c.integer(e, p, "cases_run", 0, kMaxIndex);
    c.integer(e, p, "determinism_checked", 0, kMaxIndex, /*optional=*/true);
    c.integer(e, p, "failing_case", 0, kMaxIndex, /*optional=*/true);
    for (const char* key : {"classname", "digest", "detail", "replay", "counterexample"}) c.string(e, p, key, /*optional=*/true);
    c.number(e, p, "wall_ms");
    const json& violations = c.array(e, p, "violations");
    for (std::size_t v = 0; v < violations.size(); ++v) {
      const std::string vp = p + "/violations/" + std::to_string(v);
      if (!violations[v].is_object()) c.fail(vp, "an object", violations[v]);
      c.string(violations[v], vp, "invariant");
      c.string(violations[v], vp, "message");
      for (const char* key : {"request", "turn", "attempt"}) c.integer(violations[v], vp, key, 0, kMaxIndex, /*optional=*/true);
    }
    if (e.contains("transcript") && !e["transcript"].is_object() && !e["transcript"].is_null()) {
      c.fail(p + "/transcript", "an object", e["transcript"]);
    }
  }
  // Over HTTP: the cases judged on a slower re-run, and those that differ from memory at every
  // speed: each a case this shard ran, once.
  for (const char* key : {"http_rerun_cases", "http_differs_from_memory"}) {
    if (!j.contains(key)) continue;
    const json& list = c.array(j, "", key);
    std::set<std::int64_t> listed;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string p = std::string("/") + key + "/" + std::to_string(i);
      const json& v = list[i];
      if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() >= static_cast<std::uint64_t>(requested)) ||
          v.get<std::int64_t>() < 0 || v.get<std::int64_t>() >= requested) {
        c.fail(p, "a case index below " + std::to_string(requested), v);
      }
      const std::int64_t at = v.get<std::int64_t>();
      if (!seen.count(at)) {
        throw MergeError(where(s) + "/summary.json: " + p + ": case " + std::to_string(at) + " is not in this shard's case_digests");
      }
      if (!listed.insert(at).second) {
        throw MergeError(where(s) + "/summary.json: " + p + ": case " + std::to_string(at) + " is listed twice");
      }
    }
  }
  if (j.contains("explored")) {
    const json& explored = c.array(j, "", "explored");
    for (std::size_t i = 0; i < explored.size(); ++i) {
      const std::string p = "/explored/" + std::to_string(i);
      if (!explored[i].is_object()) c.fail(p, "an object", explored[i]);
      c.integer(explored[i], p, "index", 0, requested - 1);
    }
  }
}

/// The settings every shard of one exploration shares, with their names for messages.
std::vector<std::pair<std::string, json>> shared_settings(const json& j) {
  return {{"seed", j.value("seed", json())},
          {"cases", j.value("cases_requested", json())},
          {"defects", defect_set(j)},
          {"provider", j.value("provider", json(""))},
          {"transport", j.value("transport", json(""))},
          {"hiccup version", j.value("hiccup_version", json(""))},
          {"shard count", j["shard"]["count"]},
          {"--keep-going", j.value("keep_going", json(false))}};
}

void check_compatible(const std::vector<ShardReport>& shards) {
  for (const ShardReport& s : shards) check_one(s);
  const auto first = shared_settings(shards.front().summary);
  for (std::size_t i = 1; i < shards.size(); ++i) {
    const auto these = shared_settings(shards[i].summary);
    for (std::size_t k = 0; k < first.size(); ++k) {
      if (these[k].second != first[k].second) {
        throw MergeError(where(shards[i]) + " ran with " + first[k].first + " " + shown(these[k].second) + ", " +
                         where(shards.front()) + " with " + shown(first[k].second) +
                         ": shards of one exploration share seed, cases, defects, provider, transport, hiccup version, shard count and --keep-going");
      }
    }
  }
  auto properties = [](const json& j) {
    std::set<std::string> names;
    for (const json& c : j["cases"]) names.insert(c["name"].get<std::string>());
    return names;
  };
  const std::set<std::string> first_properties = properties(shards.front().summary);
  for (std::size_t i = 1; i < shards.size(); ++i) {
    if (properties(shards[i].summary) != first_properties) {
      throw MergeError(where(shards[i]) + " and " + where(shards.front()) +
                       " report different properties (explore's cases): were they run with other options?");
    }
  }
  const int n = shards.front().summary["shard"]["count"].get<int>();
  std::map<int, const ShardReport*> by_index;
  for (const ShardReport& s : shards) {
    const int k = s.summary["shard"]["index"].get<int>();
    if (k < 1 || k > n) throw MergeError(where(s) + ": shard " + std::to_string(k) + "/" + std::to_string(n) + " is out of range");
    auto [it, fresh] = by_index.emplace(k, &s);
    if (!fresh) {
      throw MergeError(where(*it->second) + " and " + where(s) + " are both shard " + std::to_string(k) + "/" +
                       std::to_string(n) + ": the shards overlap");
    }
  }
  std::vector<std::string> missing, got;
  for (int k = 1; k <= n; ++k) (by_index.count(k) ? got : missing).push_back(std::to_string(k));
  if (!missing.empty()) {
    std::string m, g;
    for (const auto& k : missing) m += (m.empty() ? "" : ", ") + k + "/" + std::to_string(n);
    for (const auto& k : got) g += (g.empty() ? "" : ", ") + k;
    throw MergeError("shard" + std::string(missing.size() > 1 ? "s " : " ") + m + " missing (got " + g +
                     "): every shard 1…" + std::to_string(n) + " must be given once");
  }
}

/// `text` with every occurrence of `from` replaced by `to`.
std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  if (from.empty()) return text;
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

}  // namespace

Violation violation_from_json(const json& v) {
  Violation out;
  out.invariant = string_of(v, "invariant");
  out.message = string_of(v, "message");
  out.request = v.value("request", -1);
  out.turn = v.value("turn", -1);
  out.attempt = v.value("attempt", -1);
  return out;
}

MergedReport merge_shard_reports(const std::vector<ShardReport>& input, const std::filesystem::path& out_dir) {
  if (input.empty()) throw MergeError("no shard report directories given");
  check_compatible(input);
  std::vector<const ShardReport*> shards;
  for (const ShardReport& s : input) shards.push_back(&s);
  std::sort(shards.begin(), shards.end(), [](const ShardReport* a, const ShardReport* b) {
    return a->summary["shard"]["index"].get<int>() < b->summary["shard"]["index"].get<int>();
  });
  const json& first = shards.front()->summary;

  // The run digest over every case in index order: the unsharded run's string.
  std::vector<std::pair<int, std::string>> digests;
  for (const ShardReport* s : shards) {
    for (const json& d : s->summary["case_digests"]) {
      if (!d.is_array() || d.size() != 2 || !d[0].is_number_integer() || !d[1].is_string()) {
        throw MergeError(where(*s) + ": case_digests holds " + d.dump() + ", expected [index, digest]");
      }
      digests.emplace_back(d[0].get<int>(), d[1].get<std::string>());
    }
  }
  std::sort(digests.begin(), digests.end());
  // Without --keep-going the unsharded run stops at the first failing case F (after shrinking it),
  // while each shard ran on to its own first failure: keep cases up to F and F's verdicts only.
  const bool keep_going = first.value("keep_going", false);
  int first_failure = -1;
  const ShardReport* failure_shard = nullptr;
  for (const ShardReport* s : shards) {
    for (const json& f : s->summary["failing_cases"]) {
      const int at = f[0].get<int>();
      if (first_failure < 0 || at < first_failure) {
        first_failure = at;
        failure_shard = s;
      }
    }
  }
  const bool truncate = !keep_going && first_failure >= 0;
  if (truncate) {
    digests.erase(std::remove_if(digests.begin(), digests.end(), [&](const auto& d) { return d.first > first_failure; }),
                  digests.end());
  }
  std::string lines;
  json case_digests = json::array();
  for (const auto& [index, digest] : digests) {
    lines += std::to_string(index) + " " + digest + "\n";
    case_digests.push_back(json::array({index, digest}));
  }
  const std::string run_digest = fnv1a_hex(lines);

  // Per property (explore's report cases), in the order the first shard lists them.
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::pair<const ShardReport*, json>>> entries;
  for (const ShardReport* s : shards) {
    for (const json& c : s->summary["cases"]) {
      const std::string name = string_of(c, "name");
      if (!entries.count(name)) order.push_back(name);
      entries[name].emplace_back(s, c);
    }
  }
  // A shard shrinks its own first failing case; when that is not the run's first failure, the
  // unsharded run never shrinks it, so a property only its shrunk counterexample broke is judged,
  // as the unsharded run judges it, by the unshrunk cases (failing_cases) of that shard.
  auto breaks = [](const std::string& property, const std::string& invariant) {
    const std::string p = property.rfind("explore/", 0) == 0 ? property.substr(8) : property;
    return p == "expect" ? invariant.rfind("expect.", 0) == 0 : invariant == p;
  };
  auto shard_first_failure = [](const ShardReport* s) {
    int first = -1;
    for (const json& f : s->summary["failing_cases"]) {
      const int at = f[0].get<int>();
      if (first < 0 || at < first) first = at;
    }
    return first;
  };
  std::deque<std::pair<const ShardReport*, json>> unshrunk;  // stable addresses for `chosen`
  MergedReport out;
  json cases = json::array();
  double wall_ms = 0;
  int passed = 0, failed = 0;
  for (const ShardReport* s : shards) wall_ms = std::max(wall_ms, s->summary.value("wall_ms", 0.0));
  for (const std::string& name : order) {
    const auto& list = entries[name];
    int cases_run = 0, determinism_checked = 0, exercised = 0;
    bool has_checked = false, has_exercised = false;
    const std::pair<const ShardReport*, json>* chosen = nullptr;
    json all_violations = json::array();
    for (const auto& e : list) {
      cases_run += e.second.value("cases_run", 0);
      if (e.second.contains("exercised")) {
        has_exercised = true;
        exercised += e.second.value("exercised", 0);
      }
      if (e.second.contains("determinism_checked")) {
        has_checked = true;
        determinism_checked += e.second.value("determinism_checked", 0);
      }
      if (e.second.value("passed", true)) continue;
      if (truncate && name != "explore/determinism" && (e.first != failure_shard || e.second.value("failing_case", -1) != first_failure)) {
        continue;  // only the first failing case's verdicts: the unsharded run stops there
      }
      const std::pair<const ShardReport*, json>* candidate = &e;
      const int shard_first = shard_first_failure(e.first);
      if (!truncate && name != "explore/determinism" && e.second.value("failing_case", -1) == shard_first &&
          shard_first != first_failure) {
        bool unshrunk_breaks = false;
        int next = -1;
        json names = json::array();
        for (const json& f : e.first->summary["failing_cases"]) {
          const int at = f[0].get<int>();
          bool hit = false;
          for (const json& n : f[1]) hit = hit || breaks(name, n.get<std::string>());
          if (!hit) continue;
          if (at == shard_first) unshrunk_breaks = true;
          else if (next < 0 || at < next) next = at;
        }
        if (!unshrunk_breaks) {
          if (next < 0) continue;  // only the shard's shrunk counterexample broke it
          json r = e.second;
          for (const char* key : {"counterexample", "replay", "original_size", "shrunk_size", "shrink_steps",
                                  "shrink_tries", "minimize_steps", "minimize_tries", "one_minimal", "shrink_ms",
                                  "transcript", "scenario_text"}) {
            r.erase(key);
          }
          r["failing_case"] = next;
          json violations = json::array();
          for (const json& f : e.first->summary["failing_cases"]) {
            if (f[0].get<int>() != next) continue;
            for (const json& n : f[1]) {
              if (breaks(name, n.get<std::string>())) {
                violations.push_back({{"invariant", n}, {"message", "case " + std::to_string(next) + " (not shrunk)"}});
              }
            }
          }
          r["violations"] = violations;
          r["detail"] = "case " + std::to_string(next) + ": not shrunk (only the first failing case, " +
                        std::to_string(first_failure) + ", is)";
          unshrunk.emplace_back(e.first, std::move(r));
          candidate = &unshrunk.back();
        }
      }
      for (const json& v : candidate->second.value("violations", json::array())) all_violations.push_back(v);
      const int at = candidate->second.value("failing_case", -1);
      const int best = chosen ? chosen->second.value("failing_case", -1) : -1;
      if (!chosen || (at >= 0 && (best < 0 || at < best))) chosen = candidate;
    }
    json merged = chosen ? chosen->second : list.front().second;
    if (!chosen) {  // a property some shard failed only past the first failure passes here
      for (const char* key : {"failing_case", "counterexample", "replay", "original_size", "shrunk_size", "shrink_steps",
                              "shrink_tries", "minimize_steps", "minimize_tries", "one_minimal", "shrink_ms",
                              "transcript", "scenario_text", "detail"}) {
        merged.erase(key);
      }
      merged["violations"] = json::array();
    }
    merged["passed"] = chosen == nullptr;
    // Cases run: every shard's, or up to the first failure when the unsharded run would stop there.
    merged["cases_run"] = truncate ? static_cast<int>(digests.size()) : cases_run;
    if (has_checked) merged["determinism_checked"] = determinism_checked;
    if (has_exercised) merged["exercised"] = exercised;
    merged["digest"] = run_digest;
    merged["wall_ms"] = wall_ms;
    if (chosen && !merged.contains("failing_case")) merged["violations"] = all_violations;  // determinism: all
    if (chosen && merged.contains("counterexample") && merged["counterexample"].is_string() &&
        !merged["counterexample"].get<std::string>().empty()) {
      const std::string old_path = merged["counterexample"].get<std::string>();
      const std::filesystem::path file = std::filesystem::path(old_path).filename();
      // The path as the shard wrote it is relative to where that shard ran; the file itself sits in
      // the shard's directory, which is what we were given.
      const std::filesystem::path from = chosen->first->dir / "counterexamples" / file;
      const std::string to = (out_dir / "counterexamples" / file).string();
      out.copies.push_back({from, to});
      merged["counterexample"] = to;
      if (merged.contains("replay")) merged["replay"] = replace_all(string_of(merged, "replay"), old_path, to);
      if (merged.contains("detail")) merged["detail"] = replace_all(string_of(merged, "detail"), old_path, to);
    }
    (merged["passed"].get<bool>() ? passed : failed) += 1;
    cases.push_back(std::move(merged));
  }

  json summary = first;
  summary.erase("explored");
  summary["cases"] = std::move(cases);
  summary["passed"] = passed;
  summary["failed"] = failed;
  summary["wall_ms"] = wall_ms;
  summary["digest"] = run_digest;
  summary["case_digests"] = std::move(case_digests);
  json failing_cases = json::array();
  for (const ShardReport* s : shards) {
    for (const json& f : s->summary["failing_cases"]) {
      if (!truncate || f[0].get<int>() <= first_failure) failing_cases.push_back(f);
    }
  }
  std::sort(failing_cases.begin(), failing_cases.end(),
            [](const json& a, const json& b) { return a[0].get<int>() < b[0].get<int>(); });
  summary["failing_cases"] = std::move(failing_cases);
  summary["shard"] = {{"index", 1}, {"count", 1}};
  json shard_list = json::array();
  json explored = json::array();
  bool any_explored = false;
  for (const ShardReport* s : shards) {
    const json& j = s->summary;
    shard_list.push_back({{"dir", s->dir.string()}, {"index", j["shard"]["index"]}, {"passed", j.value("passed", 0)},
                          {"failed", j.value("failed", 0)}, {"wall_ms", j.value("wall_ms", 0.0)},
                          {"cases_run", static_cast<int>(j["case_digests"].size())},
                          {"command_line", j.value("command_line", json(""))}});
    if (j.contains("explored") && j["explored"].is_array()) {
      any_explored = true;
      for (const json& e : j["explored"]) explored.push_back(e);
    }
  }
  summary["shards"] = std::move(shard_list);
  // Over HTTP: the cases judged on a slower re-run and those that differ from memory, of every
  // shard that lists them, kept when the merged run holds the case (a truncated merge drops the
  // cases past the first failure, as the unsharded run never ran them).
  std::set<int> kept;
  for (const auto& d : digests) kept.insert(d.first);
  for (const char* key : {"http_rerun_cases", "http_differs_from_memory"}) {
    bool any = false;
    std::vector<int> cases_listed;
    for (const ShardReport* s : shards) {
      if (!s->summary.contains(key)) continue;
      any = true;
      for (const json& i : s->summary[key]) {
        if (kept.count(i.get<int>())) cases_listed.push_back(i.get<int>());
      }
    }
    std::sort(cases_listed.begin(), cases_listed.end());
    if (any) summary[key] = cases_listed;
    else summary.erase(key);
  }
  // Coverage counts cases: the whole run's are the shards' sums, and so are its warnings.
  std::vector<json> coverages;
  for (const ShardReport* s : shards) coverages.push_back(s->summary.value("coverage", json()));
  const json coverage = merge_coverage_json(coverages);
  if (!coverage.is_null()) {
    summary["coverage"] = coverage;
    summary["warnings"] = coverage_warnings(coverage);
  }
  if (any_explored) {
    std::stable_sort(explored.begin(), explored.end(),
                     [](const json& a, const json& b) { return a.value("index", 0) < b.value("index", 0); });
    summary["explored"] = std::move(explored);
  }
  out.summary = std::move(summary);
  return out;
}

void replay_summary(const json& summary, ReportListener& listener) {
  RunInfo info;
  info.command = string_of(summary, "command");
  info.seed = summary.value("seed", json()).is_number_unsigned() ? summary["seed"].get<std::uint64_t>() : 0;
  info.transport = string_of(summary, "transport");
  for (const json& d : summary.value("defects", json::array())) info.defects.push_back(shown(d));
  info.provider = string_of(summary, "provider");
  info.agent = string_of(summary, "agent");
  listener.run_starting(info);
  static const std::set<std::string> kCaseSlots = {"name", "classname", "passed", "violations", "digest",
                                                   "wall_ms", "detail", "transcript"};
  for (const json& c : summary.value("cases", json::array())) {
    ReportCase rc;
    rc.name = string_of(c, "name");
    rc.classname = string_of(c, "classname");
    rc.passed = c.value("passed", false);
    for (const json& v : c.value("violations", json::array())) rc.violations.push_back(violation_from_json(v));
    rc.digest = string_of(c, "digest");
    rc.wall_ms = c.value("wall_ms", 0.0);
    rc.detail = string_of(c, "detail");
    if (c.contains("transcript")) rc.transcript = c["transcript"];
    for (const auto& [k, v] : c.items()) {
      if (!kCaseSlots.count(k)) rc.extra[k] = v;
    }
    listener.case_ended(rc);
  }
  static const std::set<std::string> kRunSlots = {"schema", "command", "seed", "transport", "defects", "provider",
                                                  "agent", "passed", "failed", "differences", "wall_ms",
                                                  "cases", "hiccup_version"};
  RunTotals totals;
  totals.passed = summary.value("passed", 0);
  totals.failed = summary.value("failed", 0);
  totals.differences = summary.value("differences", 0);
  totals.wall_ms = summary.value("wall_ms", 0.0);
  for (const auto& [k, v] : summary.items()) {
    if (!kRunSlots.count(k)) totals.extra[k] = v;
  }
  listener.run_ended(totals);
}

}  // namespace harness
