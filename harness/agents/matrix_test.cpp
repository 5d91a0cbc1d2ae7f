// The matrix's pure parts: known-failure pins decode with pointer-naming errors, a cell is judged
// against its pin (known, changed, fixed, new), scenarios are assigned to rows per agent, and the
// table renders as Markdown and JSON.
#include <catch2/catch.hpp>

#include "harness/agents/matrix.h"
#include "harness/scenario_io.h"

namespace harness::agents {
namespace {

using nlohmann::json;

Recipe recipe(const std::string& name, const std::string& provider, const std::string& tool);  // below

std::string error_of(const json& j) {
  try {
    known_failures_from_json(j);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("known failures decode, sorted, and name what is wrong by JSON pointer") {
  const json ok = {{"schema", 1},
                   {"agents", {{"codex", {{"version", "0.171.0"},
                                          {"known_failures", {{"codex-reset-after-call",
                                                               {{"violates", {"pairing", "at-most-once"}},
                                                                {"why", "runs the tool twice"},
                                                                {"harm", "the deploy runs twice"}}}}}}}}}};
  const KnownFailures k = known_failures_from_json(ok);
  REQUIRE(k.at("codex").known_failures.size() == 1);
  CHECK(k.at("codex").version == "0.171.0");
  CHECK(k.at("codex").known_failures.at("codex-reset-after-call").violates ==
        std::vector<std::string>{"at-most-once", "pairing"});

  json typo = ok;
  typo["agents"]["codex"]["known_failures"]["codex-reset-after-call"]["violates"][0] = "pairng";
  CHECK(error_of(typo) ==
        "/agents/codex/known_failures/codex-reset-after-call/violates/0: expected an invariant name (see `hiccup "
        "invariants`), found \"pairng\"");
  json no_why = ok;
  no_why["agents"]["codex"]["known_failures"]["codex-reset-after-call"].erase("why");
  CHECK(error_of(no_why) == "/agents/codex/known_failures/codex-reset-after-call/why: expected a non-empty string saying "
                            "what the agent does wrong");
  CHECK(k.at("codex").known_failures.at("codex-reset-after-call").harm == "the deploy runs twice");
  json no_harm = ok;
  no_harm["agents"]["codex"]["known_failures"]["codex-reset-after-call"].erase("harm");
  CHECK(error_of(no_harm) == "/agents/codex/known_failures/codex-reset-after-call/harm: missing: a pin that violates "
                             "at-most-once says the harm a user suffers, in one plain sentence");
  json difference = no_harm;  // a policy difference names no invariant: no harm needed
  difference["agents"]["codex"]["known_failures"]["codex-reset-after-call"]["violates"] = {"outcome-agreement"};
  CHECK(error_of(difference).empty());
  CHECK(error_of(json{{"schema", 2}, {"agents", json::object()}}) == "/schema: expected 1");
  CHECK(error_of(json{{"schema", 1}, {"agents", json::object()}, {"extra", 1}}) ==
        "/extra: unknown field (known: schema, description, agents)");
}

AgentCaseResult result_with(std::vector<std::string> invariants) {
  AgentCaseResult r;
  r.agent = "codex";
  r.scenario.name = "codex-reset-after-call";
  for (auto& n : invariants) r.violations.push_back({n, "m"});
  return r;
}

TEST_CASE("a cell is judged against its pin: pass, known, new, changed, fixed, error") {
  const KnownFailure pin{{"at-most-once", "pairing"}, "runs the tool twice"};
  CHECK(judge_cell(result_with({}), std::nullopt).status == CellStatus::kPass);
  CHECK(judge_cell(result_with({"pairing", "at-most-once", "pairing"}), pin).status == CellStatus::kKnown);
  CHECK(judge_cell(result_with({"pairing"}), std::nullopt).status == CellStatus::kFail);
  const MatrixCell changed = judge_cell(result_with({"pairing"}), pin);
  CHECK(changed.status == CellStatus::kChanged);
  CHECK(changed.detail == "pinned as failing at-most-once, pairing, found pairing");
  const MatrixCell fixed = judge_cell(result_with({}), pin);
  CHECK(fixed.status == CellStatus::kFixed);
  CHECK_FALSE(cell_ok(fixed.status));
  AgentCaseResult missing = result_with({});
  missing.harness_error = "agent codex is not installed";
  CHECK(judge_cell(missing, std::nullopt).status == CellStatus::kError);
  CHECK(cell_ok(CellStatus::kKnown));
  AgentCaseResult honest = result_with({});
  honest.differences = {{"outcome-agreement", "m"}, {"scenario-coverage", "m"}};
  const MatrixCell diff = judge_cell(honest, std::nullopt);
  CHECK(diff.status == CellStatus::kDifference);
  CHECK(diff.difference);
  CHECK(cell_ok(diff.status));
  CHECK(judge_cell(honest, KnownFailure{{"outcome-agreement", "scenario-coverage"}, "gives up"}).status == CellStatus::kKnown);
  KnownFailure race = pin;
  race.flaky = true;
  CHECK(judge_cell(result_with({}), race).status == CellStatus::kPass);
  CHECK(judge_cell(result_with({"at-most-once", "pairing"}), race).status == CellStatus::kKnown);
  CHECK(judge_cell(result_with({"pairing"}), race).status == CellStatus::kChanged);
  CHECK_FALSE(cell_ok(CellStatus::kChanged));
  // Another exact set seen in other runs is known too; any other set is still a change.
  KnownFailure variants = pin;
  variants.also_violates = {{"history-integrity", "pairing"}};
  const MatrixCell other_run = judge_cell(result_with({"pairing", "history-integrity"}), variants);
  CHECK(other_run.status == CellStatus::kKnown);
  CHECK(matrix_markdown({"reset-after-call"}, {recipe("codex", "openai-responses", "shell")}, {other_run}) ==
        "| scenario | codex 1.0 (openai-responses) |\n|---|---|\n"
        "| reset-after-call | history-integrity, pairing (known, in some runs; pinned at-most-once, pairing) |\n");
  CHECK(judge_cell(result_with({"at-most-once", "pairing"}), variants).status == CellStatus::kKnown);
  CHECK(judge_cell(result_with({"history-integrity"}), variants).status == CellStatus::kChanged);
  CHECK(judge_cell(result_with({}), variants).status == CellStatus::kFixed);
}

TEST_CASE("also_violates is read as sorted sets of invariant names and checked") {
  const json doc = json::parse(R"({"schema": 1, "agents": {"opencode": {"version": "1", "known_failures": {
      "opencode-reset-after-call": {"violates": ["pairing"], "why": "w", "harm": "h",
                                    "also_violates": [["pairing", "history-integrity"]]}}}}})");
  const KnownFailures k = known_failures_from_json(doc);
  CHECK(k.at("opencode").known_failures.at("opencode-reset-after-call").also_violates ==
        std::vector<std::vector<std::string>>{{"history-integrity", "pairing"}});
  json not_sets = doc;
  not_sets["agents"]["opencode"]["known_failures"]["opencode-reset-after-call"]["also_violates"] = json::array({"pairing"});
  CHECK(error_of(not_sets) ==
        "/agents/opencode/known_failures/opencode-reset-after-call/also_violates/0: expected a non-empty array of "
        "invariant names");
  json unknown = doc;
  unknown["agents"]["opencode"]["known_failures"]["opencode-reset-after-call"]["also_violates"][0][1] = "pairng";
  CHECK(error_of(unknown) ==
        "/agents/opencode/known_failures/opencode-reset-after-call/also_violates/0/1: expected an invariant name (see "
        "`hiccup invariants`), found \"pairng\"");
}

Scenario scenario(const std::string& name, const std::string& provider, const std::string& tool) {
  const std::string text = R"({"schema": 1, "name": ")" + name + R"(", "provider": ")" + provider +
                           R"(", "prompt": "p", "turns": [{"attempts": [{"events": [{"call": {"name": ")" + tool +
                           R"(", "args": {"command": "{{ledger}}"}}}, {"finish": "stop"}]}]},
                           {"attempts": [{"events": [{"text": "ok"}, {"finish": "stop"}]}]}]})";
  LoadResult r = parse_scenario(text, name + ".json");
  for (const auto& p : r.problems) INFO(format_problem(p));
  REQUIRE(r.scenario);
  return *r.scenario;
}

Recipe recipe(const std::string& name, const std::string& provider, const std::string& tool) {
  Recipe r;
  r.name = name;
  r.version = "1.0";
  r.provider = provider;
  r.tool_name = tool;
  r.tool_command_arg = "command";
  return r;
}

TEST_CASE("scenarios are assigned to rows per agent by name prefix, format and shell tool") {
  const std::vector<Scenario> s = {scenario("qwen-code-tool-round-trip", "openai-chat", "run_shell_command"),
                                   scenario("opencode-tool-round-trip", "openai-chat", "bash"),
                                   scenario("codex-tool-round-trip", "openai-responses", "exec_command")};
  const std::vector<Recipe> r = {recipe("qwen-code", "openai-chat", "run_shell_command"),
                                 recipe("opencode", "openai-chat", "bash"),
                                 recipe("codex", "openai-responses", "exec_command")};
  const auto [rows, chosen] = assign_scenarios(s, r);
  CHECK(rows == std::vector<std::string>{"tool-round-trip"});
  // A scenario with no shell call is playable by both Chat CLIs, but named for one of them.
  std::vector<Scenario> with_plain = s;
  with_plain.push_back(scenario("opencode-tool-round-trip", "openai-chat", "bash"));
  with_plain.back().name = "opencode-503-then-answer";
  with_plain.back().script.turns.erase(with_plain.back().script.turns.begin());
  const auto plain = assign_scenarios(with_plain, r);
  CHECK(plain.second.at("opencode").contains("503-then-answer"));
  CHECK_FALSE(plain.second.at("qwen-code").contains("opencode-503-then-answer"));
  CHECK(chosen.at("qwen-code").at("tool-round-trip") == 0);
  CHECK(chosen.at("opencode").at("tool-round-trip") == 1);
  CHECK(chosen.at("codex").at("tool-round-trip") == 2);

  std::vector<MatrixCell> cells(2);
  cells[0].agent = "qwen-code";
  cells[0].scenario = "qwen-code-tool-round-trip";
  cells[0].status = CellStatus::kPass;
  cells[1].agent = "opencode";
  cells[1].scenario = "opencode-tool-round-trip";
  cells[1].status = CellStatus::kKnown;
  cells[1].violated = {"at-most-once", "pairing"};
  const std::string md = matrix_markdown(rows, r, cells);
  CHECK(md == "| scenario | qwen-code 1.0 (openai-chat) | opencode 1.0 (openai-chat) | codex 1.0 (openai-responses) |\n"
              "|---|---|---|---|\n"
              "| tool-round-trip | PASS | at-most-once, pairing (known) | — |\n");
  const json j = matrix_json(rows, r, cells);
  CHECK(j["cells"][1]["status"] == "known");
  CHECK(j["cells"][1]["row"] == "tool-round-trip");
}

TEST_CASE("a scenario named or tagged for some agents is theirs alone: matrix and run --agent share the rule") {
  const std::set<std::string> names = known_agent_names({"my-agent"});
  CHECK(names.contains("gemini-cli"));
  CHECK(names.contains("my-agent"));
  Scenario s = scenario("qwen-code-tool-round-trip", "openai-chat", "bash");
  CHECK(scenario_owners(s, names) == std::set<std::string>{"qwen-code"});
  CHECK_FALSE(written_for_others(s, "qwen-code", names));
  CHECK(written_for_others(s, "opencode", names) == "written for agent qwen-code (named qwen-code-…), not for opencode");
  {
    // A recipe variant (claude-code-bedrock, claude-code-vertex: issue 37) plays its agent's scenarios,
    // not a sibling variant's.
    const std::set<std::string> cc = {"claude-code", "claude-code-bedrock", "claude-code-vertex"};
    const Scenario base = scenario("claude-code-tool-round-trip", "anthropic", "Bash");
    CHECK_FALSE(written_for_others(base, "claude-code-bedrock", cc));
    CHECK_FALSE(written_for_others(base, "claude-code", cc));
    const Scenario vertex = scenario("claude-code-vertex-tool-round-trip", "anthropic", "Bash");
    CHECK_FALSE(written_for_others(vertex, "claude-code-vertex", cc));
    CHECK(written_for_others(vertex, "claude-code-bedrock", cc).has_value());
    CHECK(written_for_others(base, "gemini-cli", cc).has_value());
    // The agent a variant comes from does not play the variant's own scenarios: the most specific
    // owner claims them (codex-websocket-… over WebSocket only).
    CHECK(written_for_others(vertex, "claude-code", cc).has_value());
    const std::set<std::string> cx = {"codex", "codex-websocket", "gemini-cli"};
    const Scenario ws = scenario("codex-websocket-close-1011", "openai-responses", "exec_command");
    CHECK(written_for_others(ws, "codex", cx) ==
          "written for agents codex (named codex-…), codex-websocket (named codex-websocket-…), not for codex");
    CHECK_FALSE(written_for_others(ws, "codex-websocket", cx));
    Scenario both = scenario("tool-round-trip", "openai-responses", "exec_command");
    both.tags = {"codex", "gemini-cli"};
    CHECK_FALSE(written_for_others(both, "codex", cx));
    CHECK_FALSE(written_for_others(both, "gemini-cli", cx));
  }
  s.tags = {"opencode", "baseline"};
  CHECK_FALSE(written_for_others(s, "opencode", names));
  CHECK(written_for_others(s, "my-agent", names) ==
        "written for agents opencode (tagged opencode), qwen-code (named qwen-code-…), not for my-agent");
  s.name = "tool-round-trip";
  s.tags = {"baseline"};
  CHECK(scenario_owners(s, names).empty());
  CHECK_FALSE(written_for_others(s, "codex", names));
  // The matrix leaves the other agent's cell empty by the same rule.
  const auto [rows, chosen] = assign_scenarios({scenario("qwen-code-tool-round-trip", "openai-chat", "bash")},
                                               {recipe("opencode", "openai-chat", "bash")});
  CHECK(rows.empty());
}

TEST_CASE("a scenario an agent may play by name but cannot is noted, one of another format is not") {
  Scenario interrupted = scenario("a-round-trip", "openai-chat", "bash");
  interrupted.interrupt = Interrupt{0, 0, 0};
  std::vector<std::string> notes;
  const auto [rows, chosen] = assign_scenarios({interrupted, scenario("b-round-trip", "openai-responses", "exec_command")},
                                               {recipe("opencode", "openai-chat", "bash")}, &notes);
  CHECK(rows.empty());
  REQUIRE(notes.size() == 1u);
  CHECK(notes[0].rfind("a-round-trip.json: not played by agent opencode (cell —): ", 0) == 0);
  CHECK(notes[0].find("/interrupt: agent opencode's recipe declares no cancel method") != std::string::npos);
}

TEST_CASE("two scenarios of one row that an agent could both play, neither its own, are an error") {
  const std::vector<Scenario> s = {scenario("a-round-trip", "openai-chat", "bash"),
                                   scenario("b-round-trip", "openai-chat", "bash")};
  std::vector<Scenario> same = {s[0], s[0]};
  same[1].source_path = "other.json";
  CHECK_THROWS_WITH(assign_scenarios(same, {recipe("opencode", "openai-chat", "bash")}),
                    Catch::Contains("could play both") && Catch::Contains("name one \"opencode-a-round-trip\""));
}

}  // namespace
}  // namespace harness::agents
