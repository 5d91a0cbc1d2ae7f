// The matrix's pure parts: known-failure pins, cell verdicts, scenario assignment, rendering.
#include "harness/agents/matrix.h"
#include "harness/strings.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "harness/invariants.h"
#include "harness/scenario_io.h"

namespace harness::agents {
using nlohmann::json;

namespace {

[[noreturn]] void invalid(const std::string& pointer, const std::string& what) {
  throw std::runtime_error(pointer + ": " + what);
}

/// Every name a black-box verdict can carry: the invariant catalogue, the black-box verdicts and
/// the expect fields.
const std::set<std::string>& known_names() {
  static const std::set<std::string> names = [] {
    std::set<std::string> n;
    for (const InvariantInfo& i : invariant_catalogue()) n.emplace(i.name);
    for (const BlackBoxCheck& c : black_box_verdicts()) n.insert(c.name);
    for (const char* f : {"expect.executions", "expect.outcome", "expect.final_text"}) n.insert(f);
    return n;
  }();
  return names;
}

}  // namespace

namespace {

/// The sorted, de-duplicated invariant names of `names` (an array); throws "AT/i: ..." for an entry
/// that is not one `hiccup invariants` lists.
std::vector<std::string> invariant_set(const json& names, const std::string& at) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const json& n = names[i];
    if (!n.is_string() || !known_names().contains(n.get<std::string>())) {
      invalid(at + "/" + std::to_string(i), "expected an invariant name (see `hiccup invariants`), found " + n.dump());
    }
    out.push_back(n.get<std::string>());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

KnownFailures known_failures_from_json(const json& j) {
  if (!j.is_object()) invalid("", "expected an object {\"schema\": 1, \"agents\": {...}}");
  for (const auto& [k, v] : j.items()) {
    if (k != "schema" && k != "agents" && k != "description") invalid("/" + pointer_escape(k), "unknown field (known: schema, description, agents)");
  }
  if (!j.contains("schema") || j["schema"] != 1) invalid("/schema", "expected 1");
  if (!j.contains("agents") || !j["agents"].is_object()) invalid("/agents", "expected an object: agent name → pins");
  KnownFailures out;
  for (const auto& [agent, pins] : j["agents"].items()) {
    const std::string at = "/agents/" + pointer_escape(agent);
    if (!pins.is_object()) invalid(at, "expected {\"version\": ..., \"known_failures\": {...}}");
    for (const auto& [k, v] : pins.items()) {
      if (k != "version" && k != "known_failures") invalid(at + "/" + pointer_escape(k), "unknown field (known: version, known_failures)");
    }
    AgentPins p;
    if (!pins.contains("version") || !pins["version"].is_string()) invalid(at + "/version", "expected the pinned version as a string");
    p.version = pins["version"].get<std::string>();
    if (pins.contains("known_failures")) {
      if (!pins["known_failures"].is_object()) invalid(at + "/known_failures", "expected an object: scenario name → pin");
      for (const auto& [scenario, pin] : pins["known_failures"].items()) {
        const std::string pat = at + "/known_failures/" + pointer_escape(scenario);
        if (!pin.is_object()) invalid(pat, "expected {\"violates\": [names], \"why\": \"...\"}");
        for (const auto& [k, v] : pin.items()) {
          if (k != "violates" && k != "why" && k != "harm" && k != "flaky" && k != "also_violates") {
            invalid(pat + "/" + pointer_escape(k), "unknown field (known: violates, why, harm, flaky, also_violates)");
          }
        }
        KnownFailure kf;
        if (!pin.contains("violates") || !pin["violates"].is_array() || pin["violates"].empty()) {
          invalid(pat + "/violates", "expected a non-empty array of invariant names");
        }
        kf.violates = invariant_set(pin["violates"], pat + "/violates");
        if (pin.contains("also_violates")) {
          const json& also = pin["also_violates"];
          if (!also.is_array()) invalid(pat + "/also_violates", "expected an array of arrays of invariant names");
          for (std::size_t i = 0; i < also.size(); ++i) {
            const std::string at_i = pat + "/also_violates/" + std::to_string(i);
            if (!also[i].is_array() || also[i].empty()) invalid(at_i, "expected a non-empty array of invariant names");
            kf.also_violates.push_back(invariant_set(also[i], at_i));
          }
        }
        if (!pin.contains("why") || !pin["why"].is_string() || pin["why"].get<std::string>().empty()) {
          invalid(pat + "/why", "expected a non-empty string saying what the agent does wrong");
        }
        kf.why = pin["why"].get<std::string>();
        if (pin.contains("harm")) {
          if (!pin["harm"].is_string() || pin["harm"].get<std::string>().empty()) {
            invalid(pat + "/harm", "expected a non-empty string: the harm a user suffers, in plain words");
          }
          kf.harm = pin["harm"].get<std::string>();
        } else {
          // A pin that accuses an invariant says what the user suffers; a policy difference
          // (coverage, outcome, expect fields only) need not.
          for (const InvariantInfo& i : invariant_catalogue()) {
            if (std::find(kf.violates.begin(), kf.violates.end(), i.name) != kf.violates.end()) {
              invalid(pat + "/harm", "missing: a pin that violates " + std::string(i.name) +
                                         " says the harm a user suffers, in one plain sentence");
            }
          }
        }
        if (pin.contains("flaky")) {
          if (!pin["flaky"].is_boolean()) invalid(pat + "/flaky", "expected true or false");
          kf.flaky = pin["flaky"].get<bool>();
        }
        p.known_failures[scenario] = std::move(kf);
      }
    }
    out[agent] = std::move(p);
  }
  return out;
}

KnownFailures load_known_failures(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read the known-failures file");
  std::stringstream text;
  text << in.rdbuf();
  std::string error;
  const std::optional<json> parsed = parse_json_text(text.str(), {}, error);
  if (!parsed) throw std::runtime_error(path + ": " + error);
  const json& j = *parsed;
  try {
    return known_failures_from_json(j);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

std::string cell_status_name(CellStatus s) {
  switch (s) {
    case CellStatus::kPass: return "PASS";
    case CellStatus::kDifference: return "DIFF";
    case CellStatus::kKnown: return "known";
    case CellStatus::kFail: return "FAIL";
    case CellStatus::kChanged: return "CHANGED";
    case CellStatus::kFixed: return "FIXED";
    case CellStatus::kError: return "ERROR";
    case CellStatus::kNotPlayed: return "—";
  }
  return "?";
}

bool cell_ok(CellStatus s) {
  return s == CellStatus::kPass || s == CellStatus::kDifference || s == CellStatus::kKnown ||
         s == CellStatus::kNotPlayed;
}

MatrixCell judge_cell(const AgentCaseResult& r, const std::optional<KnownFailure>& pin) {
  MatrixCell c;
  c.agent = r.agent;
  c.scenario = r.scenario.name;
  c.pin = pin;
  c.exit_code = r.process.exit_code;
  c.wall_ms = r.wall_ms;
  if (!r.harness_error.empty()) {
    c.status = CellStatus::kError;
    c.detail = r.harness_error;
    return c;
  }
  c.violated = r.violated();
  c.design = r.design;
  c.difference = r.violations.empty() && !r.differences.empty();
  if (c.violated.empty()) {
    c.status = pin && !pin->flaky ? CellStatus::kFixed : CellStatus::kPass;
    if (pin && !pin->flaky) c.detail = "pinned as failing " + join(pin->violates, ", ") + ", but it passed: remove the pin";
  } else if (!pin) {
    c.status = c.difference ? CellStatus::kDifference : CellStatus::kFail;
  } else if (c.violated == pin->violates ||
             std::find(pin->also_violates.begin(), pin->also_violates.end(), c.violated) != pin->also_violates.end()) {
    c.status = CellStatus::kKnown;
  } else {
    c.status = CellStatus::kChanged;
    c.detail = "pinned as failing " + join(pin->violates, ", ") + ", found " + join(c.violated, ", ");
  }
  return c;
}

std::string row_name(const std::string& scenario_name, const std::string& agent) {
  const std::string prefix = agent + "-";
  if (scenario_name.size() > prefix.size() && scenario_name.rfind(prefix, 0) == 0) {
    return scenario_name.substr(prefix.size());
  }
  return scenario_name;
}

std::pair<std::vector<std::string>, std::map<std::string, std::map<std::string, std::size_t>>>
assign_scenarios(const std::vector<Scenario>& scenarios, const std::vector<Recipe>& recipes,
                 std::vector<std::string>* notes) {
  std::vector<std::string> rows;
  std::map<std::string, std::map<std::string, std::size_t>> chosen;
  // Agent names: the bundled recipes and the ones given. A scenario named or tagged for agents is
  // theirs alone (another CLI of the same format could play it, but it was written for them).
  std::vector<std::string> given;
  for (const Recipe& r : recipes) given.push_back(r.name);
  const std::set<std::string> agent_names = known_agent_names(given);
  for (const Recipe& recipe : recipes) {
    auto& mine = chosen[recipe.name];
    std::map<std::string, bool> own;  // row → the chosen scenario is the agent's own
    for (std::size_t i = 0; i < scenarios.size(); ++i) {
      const Scenario& s = scenarios[i];
      if (written_for_others(s, recipe.name, agent_names)) continue;
      const std::vector<std::string> problems = check_agent_scenario(s, recipe);
      if (!problems.empty()) {
        // A scenario of another format is not the agent's (the format column says so, a cell
        // "—"); one of its own format that it still cannot play (an interrupt or session without a
        // recipe cancel, a misplaced ledger placeholder) is said.
        const bool other_format = std::any_of(problems.begin(), problems.end(), [](const std::string& p) {
          return p.rfind("/provider:", 0) == 0;
        });
        std::string why;
        for (const std::string& p : problems) why += (why.empty() ? "" : "; ") + p;
        if (notes != nullptr && !other_format) {
          notes->push_back(s.source_path + ": not played by agent " + recipe.name + " (cell —): " + why);
        }
        continue;
      }
      const std::string row = row_name(s.name, recipe.name);
      const bool is_own = row != s.name || std::find(s.tags.begin(), s.tags.end(), recipe.name) != s.tags.end();
      auto it = mine.find(row);
      if (it == mine.end()) {
        mine[row] = i;
        own[row] = is_own;
      } else if (is_own && !own[row]) {
        it->second = i;
        own[row] = true;
      } else if (is_own == own[row]) {
        throw std::runtime_error("agent " + recipe.name + " could play both " + scenarios[it->second].source_path +
                                 " and " + s.source_path + " as row \"" + row +
                                 "\": name one \"" + recipe.name + "-" + row + "\" or tag it " + recipe.name);
      }
    }
  }
  // Rows in the order their scenarios were given.
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    for (const Recipe& recipe : recipes) {
      for (const auto& [row, index] : chosen[recipe.name]) {
        if (index == i && std::find(rows.begin(), rows.end(), row) == rows.end()) rows.push_back(row);
      }
    }
  }
  // The rows every agent folder has first (scenarios/README.md), in the order of the failure
  // chain; then the rest by name.
  static const std::vector<std::string> kStandard = {
      "tool-round-trip", "503-then-429-retry-after", "reset-after-call", "fin-after-call", "end-after-call",
      "error-event-after-text", "content-filter", "args-cut-after-first-fragment", "two-parallel-calls"};
  auto rank = [](const std::string& row) {
    const auto it = std::find(kStandard.begin(), kStandard.end(), row);
    return static_cast<std::size_t>(it - kStandard.begin());
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const std::string& a, const std::string& b) {
    return std::make_pair(rank(a), a) < std::make_pair(rank(b), b);
  });
  return {rows, chosen};
}

namespace {

const MatrixCell* find_cell(const std::vector<MatrixCell>& cells, const std::string& agent, const std::string& row) {
  for (const MatrixCell& c : cells) {
    if (c.agent == agent && row_name(c.scenario, agent) == row) return &c;
  }
  return nullptr;
}

std::string cell_text(const MatrixCell* c) {
  if (c == nullptr || c->status == CellStatus::kNotPlayed) return "—";
  const std::string design = c->design.empty() ? "" : " (" + c->design + ")";
  switch (c->status) {
    case CellStatus::kPass:
      return c->pin ? "PASS" + design + " (flaky: fails in other runs with " + join(c->pin->violates, ", ") + ")"
                    : "PASS" + design;
    case CellStatus::kDifference: return join(c->violated, ", ") + " (policy difference)";
    case CellStatus::kKnown: {
      const std::string violated = join(c->violated, ", ");
      if (c->pin && c->pin->flaky) return violated + design + " (known, flaky: passes in other runs)";
      if (c->difference) return violated + design + " (known policy difference)";
      if (c->pin && c->violated != c->pin->violates) {
        return violated + " (known, in some runs; pinned " + join(c->pin->violates, ", ") + ")";
      }
      return violated + design + " (known)";
    }
    case CellStatus::kFail: return "**" + join(c->violated, ", ") + "**" + design + " (new)";
    case CellStatus::kChanged:
      return "**" + join(c->violated, ", ") + "**" + design + " (changed; pinned " + join(c->pin->violates, ", ") + ")";
    case CellStatus::kFixed: return "**PASS**" + design + " (pinned as failing " + join(c->pin->violates, ", ") + ")";
    case CellStatus::kError: return "ERROR: " + c->detail;
    case CellStatus::kNotPlayed: break;
  }
  return "—";
}

std::string column_title(const Recipe& r) { return r.version.empty() ? r.name : r.name + " " + r.version; }

}  // namespace

std::string matrix_markdown(const std::vector<std::string>& rows, const std::vector<Recipe>& recipes,
                            const std::vector<MatrixCell>& cells) {
  std::ostringstream md;
  md << "| scenario |";
  for (const Recipe& r : recipes) md << ' ' << column_title(r) << " (" << r.provider << ") |";
  md << "\n|---|";
  for (std::size_t i = 0; i < recipes.size(); ++i) md << "---|";
  md << '\n';
  for (const std::string& row : rows) {
    md << "| " << row << " |";
    for (const Recipe& r : recipes) md << ' ' << cell_text(find_cell(cells, r.name, row)) << " |";
    md << '\n';
  }
  return md.str();
}

json matrix_json(const std::vector<std::string>& rows, const std::vector<Recipe>& recipes,
                 const std::vector<MatrixCell>& cells) {
  json j = {{"schema", 1}, {"agents", json::array()}, {"rows", rows}, {"cells", json::array()}};
  for (const Recipe& r : recipes) j["agents"].push_back({{"name", r.name}, {"version", r.version}, {"provider", r.provider}});
  for (const MatrixCell& c : cells) {
    json cell = {{"agent", c.agent},       {"scenario", c.scenario}, {"row", row_name(c.scenario, c.agent)},
                 {"status", cell_status_name(c.status)}, {"violated", c.violated}, {"difference", c.difference},
                 {"exit_code", c.exit_code}, {"wall_ms", c.wall_ms}};
    if (!c.design.empty()) cell["design"] = c.design;
    if (c.pin) {
      cell["pinned"] = {{"violates", c.pin->violates}, {"why", c.pin->why}, {"flaky", c.pin->flaky}, {"also_violates", c.pin->also_violates}};
      if (!c.pin->harm.empty()) cell["pinned"]["harm"] = c.pin->harm;
    }
    if (!c.detail.empty()) cell["detail"] = c.detail;
    j["cells"].push_back(std::move(cell));
  }
  return j;
}

}  // namespace harness::agents
