// Agent recipes: how to run one external agent CLI headless against the mock server. A recipe is
// data (harness/agents/recipes/NAME.json, loaded when asked for), so new agents need no code:
// command line, environment, settings files written into the scratch HOME, the shell tool's name
// and argument shape, and what its exit codes mean.
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace harness::agents {

/// Recipe field "cancel": `{"method": "sigint", "argv"?: [...], "resume_argv": [...],
/// "exit_wait_s"?: N, "why": "..."}`. The user's cancel is SIGINT to the agent's process group (what
/// Ctrl-C in a terminal sends); a later prompt of the session runs `resume_argv` with {prompt} that
/// prompt, in the same scratch HOME and working directory, once the previous process has exited.
struct RecipeCancel {
  std::string method = "sigint";          ///< the only method so far
  /// The first prompt's command line when the run has a cancel or later prompts (a CLI must
  /// persist its session to resume it: codex without --ephemeral); empty: the recipe's argv.
  std::vector<std::string> argv;
  std::vector<std::string> resume_argv;   ///< a later prompt's command line (non-empty)
  double exit_wait_s = 10;                ///< seconds the agent may take to exit after SIGINT
  std::string why;                        ///< why this method and this resume form (shown in reports)
};

/// Recipe field "mcp": how the agent is pointed at hiccup's MCP server (docs/AGENTS.md "MCP tools").
/// Applied only to a run whose scenario offers MCP tools (a `tools` entry not named like the
/// recipe's shell tool): `home_files` are merged into the recipe's (an object into an object as a
/// JSON merge patch, RFC 7386; a string appended to a string; else added), `argv` is appended to
/// each command line of the run (argv, cancel.argv, cancel.resume_argv), `env` added. Strings may
/// hold the recipe variables and {mcp_url} (the run's MCP endpoint, BASE_URL/mcp) and {mcp_server}.
struct RecipeMcp {
  std::string server = "hiccup";  ///< the server's name in the CLI's settings ({mcp_server})
  /// How the CLI names an MCP tool to the model, with {server} and {tool}, e.g. claude-code's
  /// "mcp__{server}__{tool}": a scenario's call of that name reaches MCP tool {tool}.
  std::string tool_name = "{tool}";
  /// The per-call tool timeout the settings below give the CLI, in seconds (what `liveness`
  /// judges a hung or slow tool call against); 0: the CLI lets none be set.
  double tool_timeout_s = 0;
  std::map<std::string, nlohmann::json> home_files;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string why;                ///< where the settings and the naming come from (docs, source)
};

/// One agent recipe. Strings in `argv` and `env` values may hold the variables {binary},
/// {prompt}, {model}, {base_url}, {home}, {tmpdir}, {workdir}, {ledger}, {mcp_url}, {mcp_server};
/// they are substituted as whole argv entries' parts (never through a shell).
struct Recipe {
  std::string name;                      ///< e.g. "gemini-cli"
  std::string version;                   ///< the pinned version, e.g. "0.61.0" ("" for --agent-cmd)
  std::string description;
  std::string provider = "gemini";       ///< wire format it speaks (scenarios must match)
  std::string install_hint;              ///< how to install the binary, for error messages
  std::string binary;                    ///< path; relative paths resolve against the repo root
  std::vector<std::string> argv;         ///< the command line; {binary} is usually argv[0]
  std::string model;                     ///< model name the agent is told to use
  std::map<std::string, std::string> env;  ///< extra environment (on top of PATH/HOME/TMPDIR/HICCUP_*)
  /// Files written before each run, path relative to the scratch HOME → content (a JSON value is
  /// written as JSON, a string as is; the variables above are expanded in every string). A path
  /// ending in "/" makes an empty folder (its content must be null).
  std::map<std::string, nlohmann::json> home_files;
  std::string tool_name;                 ///< the agent's shell tool, e.g. "run_shell_command"
  std::string tool_command_arg;          ///< its argument holding the command line, e.g. "command"
  int max_attempts = 10;                 ///< the agent's own per-turn attempt budget (bounded-retries)
  /// Recipe field "resumes_truncated_answer": the agent asks for more of an answer that a
  /// max_tokens finish cut with no call in it (claude-code 2.1.332 sends "Output token limit hit.
  /// Resume directly"). Such a request takes the script's next turn as its answer, so `explore`
  /// draws that finish only on a scenario's last turn for it (GenerateLimits::
  /// truncated_answer_last_only), where the request is answered past the script.
  bool resumes_truncated_answer = false;
  std::vector<int> success_exit_codes = {0};  ///< exit codes meaning "completed"; others "failed"
  std::map<int, std::string> exit_code_meanings;  ///< notes for reports, e.g. 1 → "stream error"
  double timeout_s = 120;                ///< default wall-clock limit per run
  /// How the agent shows its outcome (recipe field "output"): which stream holds what it shows
  /// ("stdout" or "stderr"), and substrings of that stream meaning it reported a failure even
  /// when its exit code says success (e.g. "\"is_error\":true" in a stream-json result line).
  std::string output_stream = "stdout";
  std::vector<std::string> failure_markers;
  /// JSON lines meaning a failure ("output"/"failure_lines"): each entry maps JSON pointers to the
  /// values a line must hold there, e.g. {"/type": "result", "/is_error": true}.
  std::vector<std::map<std::string, nlohmann::json>> failure_lines;
  /// Where a JSON-lines output shows the model's text ("output"/"shown_text"): the lines whose
  /// values at the JSON pointers of `shown_text_where` equal the given strings, and the pointer of
  /// the text in such a line. The texts of all such lines, concatenated, are what the agent
  /// showed; clean-output is judged on it. Empty pointer: not judged (n/a). A `where` value
  /// "{model}" stands for the recipe's model (claude-code marks its own error lines "<synthetic>").
  std::map<std::string, std::string> shown_text_where;
  std::string shown_text_pointer;
  /// A notice the agent appends to a shown text ("output"/"shown_text"/"notices"): from the last
  /// `starts` in a line's text to its end, when the text ends with `ends`; removed (repeatedly,
  /// for several) before the text counts as shown. qwen-code appends its error notice to the
  /// message it was showing ("Done.[API Error: 404 …]"): the user reads an error, not the model's
  /// text. Plain markers, not regular expressions: libstdc++'s std::regex recurses per character
  /// and overflowed the stack on a 100,000-character text.
  struct Notice {
    std::string starts;
    std::string ends;
    bool operator==(const Notice&) const = default;
  };
  std::vector<Notice> shown_text_notices;
  /// A line that takes back the text the agent showed of an attempt it gave up on and retried
  /// ("output"/"shown_text"/"retract"/"where"; empty: none): the text of the latest run of
  /// shown-text lines is no longer shown, when only lines matching `shown_text_attempt_lines`
  /// ("retract"/"attempt_lines": lines the abandoned attempt itself ends with) came after that run;
  /// otherwise the attempt showed nothing and nothing is taken back. qwen-code 0.24.4's
  /// stream-json: `{"type":"system","subtype":"retry","data":{"preserveText":false}}` after the
  /// attempt's assistant messages and a "Skipped because the provider attempt was retried before
  /// execution." tool_result per call it dropped (its JSON output adapter's restartAttempt removes
  /// those messages the same way). The lines alone cannot tell an attempt that showed nothing
  /// after a kept text-only turn from one that showed that text: a retract line there takes the
  /// kept turn's text back too (qwen-code retries a continuation with preserveText true, which no
  /// rule matches). Values are compared as written ("{model}" is not substituted here).
  std::map<std::string, nlohmann::json> shown_text_retract;
  std::vector<std::map<std::string, nlohmann::json>> shown_text_attempt_lines;
  /// How the user's cancel and a session's later prompts reach the agent headless (recipe field
  /// "cancel"; docs/AGENTS.md "Cancel and sessions"); unset: a scenario with `interrupt` or
  /// `session` is not playable for it.
  std::optional<RecipeCancel> cancel;
  /// How the agent reaches hiccup's MCP server (recipe field "mcp"); unset: a scenario offering
  /// MCP tools is not playable for it.
  std::optional<RecipeMcp> mcp;
};

/// The model-facing name of MCP tool `tool` under `mcp` (its tool_name with {server} and {tool}
/// replaced), e.g. "mcp__hiccup__write_file".
std::string mcp_model_name(const RecipeMcp& mcp, const std::string& tool);

/// `recipe` with its `mcp` settings applied (home_files merged, argv appended to every command
/// line, env added), as a run whose scenario offers MCP tools uses it; `recipe` itself when it
/// has no `mcp`.
Recipe with_mcp(const Recipe& recipe);

/// `--agent-cmd COMMAND`: a recipe that runs COMMAND through /bin/sh -c (by design: the user
/// writes the command line, so it is a shell command; hiccup never splices scenario text into it
/// — the prompt and URLs reach it as environment variables HICCUP_PROMPT, HICCUP_BASE_URL, …).
Recipe command_recipe(const std::string& command, const std::string& provider = "gemini");

/// One problem of a recipe: the JSON pointer of the value (RFC 6901, "" for the whole document,
/// e.g. "/cancel/argv/1") and a lower-case message saying what was expected and what was found,
/// e.g. "expected a string, found integer 3".
struct RecipeProblem {
  std::string pointer;
  std::string message;
};

/// Every problem of one recipe, in document order. what() is one line per problem:
/// "FILE: POINTER: MESSAGE" (no "FILE: " when `file` is empty, no "POINTER: " for the document).
class RecipeError : public std::runtime_error {
 public:
  RecipeError(std::string file, std::vector<RecipeProblem> problems);
  const std::string& file() const { return file_; }
  const std::vector<RecipeProblem>& problems() const { return problems_; }

 private:
  std::string file_;
  std::vector<RecipeProblem> problems_;
};

/// The lines of RecipeError::what() for `problems` of `file` (`file` made fit for a terminal).
std::string format_recipe_problems(const std::string& file, const std::vector<RecipeProblem>& problems);

/// `e.what()` with `prefix` before each of its lines: how the CLI prints a RecipeError, e.g.
/// error_lines(e, "error: --agent: ").
std::string error_lines(const std::exception& e, const std::string& prefix);

/// Decodes a recipe from JSON. Reads the whole document and throws RecipeError with all its
/// problems (not only the first), each naming its JSON pointer, the value found and what was
/// expected: an unknown field, a missing or mistyped field, an element of an array (argv,
/// cancel.argv, success_exit_codes, …) by its index.
Recipe recipe_from_json(const nlohmann::json& j);

/// Finds a recipe by NAME (harness/agents/recipes/NAME.json under `recipes_dir`) or by a path to a
/// .json file. Throws std::runtime_error with a lower-case message (known names listed) when absent;
/// RecipeError naming the file when it is not JSON (one problem) or not a valid recipe (all its
/// problems). A UTF-8 byte order mark before the JSON is ignored, as in scenario files.
Recipe load_recipe(const std::string& name_or_path, const std::string& recipes_dir);

/// The bundled recipes: REPO_ROOT/recipes in an install (repo_root() is then PREFIX/share/hiccup),
/// else REPO_ROOT/harness/agents/recipes of the source tree.
std::string default_recipes_dir();

/// The pinned known failures `hiccup matrix` reads by default: REPO_ROOT/known-failures.json in an
/// install, else REPO_ROOT/harness/agents/known-failures.json.
std::string default_known_failures_path();

/// PREFIX/share/hiccup when this executable is PREFIX/bin/hiccup of an install (`cmake --install`,
/// the Debian package of scripts/package.sh) whose recipes are in PREFIX/share/hiccup/recipes;
/// "" otherwise (a build tree).
std::string installed_data_dir();

/// The folder hiccup reads its run-time data from, which recipes' relative paths resolve against:
/// $HICCUP_ROOT when set and not empty, else installed_data_dir() when not empty, else the source
/// tree this binary was built from (HICCUP_SOURCE_DIR). `hiccup --version` prints it.
std::string repo_root();

/// The relative `binary` prefix of the pinned agents scripts/install_agents.sh installs.
inline constexpr const char* kAgentCachePrefix = ".cache/npm/";

/// The folder the pinned agents are installed in: $HICCUP_AGENT_CACHE when set and not empty (the
/// variable scripts/install_agents.sh installs into; a relative path is relative to the current
/// folder, as it is for the script), else REPO_ROOT/.cache/npm (repo_root()).
std::string agent_cache_dir();

/// The executable a recipe runs: an absolute `binary` as written; one under ".cache/npm/"
/// (kAgentCachePrefix) in agent_cache_dir(); any other relative path under repo_root(). "" when
/// the recipe has no binary (--agent-cmd).
std::string agent_binary(const Recipe& recipe);

/// Names of the recipes in `recipes_dir`, sorted.
std::vector<std::string> recipe_names(const std::string& recipes_dir);

}  // namespace harness::agents
