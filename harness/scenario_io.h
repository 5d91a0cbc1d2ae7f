// Reading, validating and writing scenario files (SCENARIO-FORMAT.md, version 1). The loader never
// throws: it collects every problem of a file, each with the file, an RFC 6901 JSON pointer and a
// lower-case message, so a scenario author sees all mistakes at once. The writer emits the stable
// field order of SCENARIO-FORMAT.md's example, so parse(write(s)) == s.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/scenario.h"

namespace harness {

/// The largest event `delay_s` a scenario may give, in seconds (1e6, about 11.6 days): scaled by a
/// `timing.scale` of at most kMaxTimingScale and summed over a stream, a delay stays finite (a
/// larger one overflowed to infinity, journaled by the proxy as `"delay_s": null`). An endless
/// wait is a `stall` fault.
inline constexpr double kMaxEventDelayS = 1e6;
/// The largest `retry_after_s` a scenario may give, in seconds (about 11.6 days). Larger ones went
/// out as broken headers: OpenAI's `retry-after-ms` wrapped to a negative int64, Gemini's
/// `retryDelay` read "1e+300s", not a Duration.
inline constexpr double kMaxRetryAfterS = 1e6;
/// The largest `timing.scale` (as `--timing-scale` takes).
inline constexpr double kMaxTimingScale = 1e6;

/// One input error: `file` as given, `pointer` an RFC 6901 JSON pointer into the document ("" =
/// the whole file), `message` lower-case, saying what was expected and what was found, no trailing
/// period.
struct LoadProblem {
  std::string file;
  std::string pointer;
  std::string message;
  bool operator==(const LoadProblem&) const = default;
};

/// `error: FILE: POINTER: MESSAGE` (the pointer part is omitted when the pointer is ""), each part
/// through mock::json_text::escape_input (no control character or ill-formed byte reaches a terminal).
std::string format_problem(const LoadProblem& problem);

/// The result of loading one file: `scenario` is set iff `problems` is empty.
struct LoadResult {
  std::optional<Scenario> scenario;
  std::vector<LoadProblem> problems;
};

/// The largest scenario file the loader reads, in bytes (16 MiB; the bundled ones are under 10 KB):
/// a larger file is one problem, read no further, so a hostile file cannot exhaust memory.
inline constexpr std::size_t kMaxScenarioBytes = 16u << 20;

/// Parses and validates scenario JSON text (`//` comments allowed). `file` is only used to label
/// problems and is stored as the scenario's `source_path`. Never throws.
[[nodiscard]] LoadResult parse_scenario(std::string_view text, const std::string& file);

/// The HTTP statuses of `scenario` that `provider`'s API never sends (mock::WireFormat::status_note,
/// which names the provider's own alternative): one problem per `attempts[].status` and per
/// `fault.status` of an error_event, with its pointer (`/turns/T/attempts/A/status`,
/// `/turns/T/attempts/A/fault/status`). parse_scenario reports them as errors for the scenario's
/// own `provider`; `hiccup run --provider` prints them as warnings for the provider it plays
/// (the status is then sent as scripted, in that provider's envelope). Unknown provider: none.
[[nodiscard]] std::vector<LoadProblem> status_problems(const Scenario& scenario, std::string_view provider,
                                                       const std::string& file);

/// Why `scenario` cannot be played in `provider`'s wire format ("POINTER: reason"), or nullopt:
/// a `quota: "per_day"` in Anthropic, which has no per-day quota, so nothing it sends could say
/// one ran out and the scenario's expectations could not hold. parse_scenario reports it as an
/// error for the scenario's own provider; `hiccup run --provider` skips such a scenario with it.
/// Also an interrupt inside a call's arguments (`after_fragment`) in Gemini, which sends a call whole.
[[nodiscard]] std::optional<std::string> unplayable_in(const Scenario& scenario, std::string_view provider);

/// Why `scenario`'s mid-stream interrupt (`after_event`, with or without `after_fragment`) can
/// never fire: its attempt's own fault (not a stall shorter than the idle timeout) or max_tokens
/// finish ends the stream before the point. nullopt when it can, or for other shapes. Lint
/// reports it at `/interrupt`; the explorer drops such an interrupt.
[[nodiscard]] std::optional<std::string> unreachable_interrupt(const Scenario& scenario);

/// Why attempt `a` (as played) never reaches the mid-stream point of `in` (after event
/// `after_event`, or inside it after `after_fragment` fragments): "the max_tokens finish cuts …"
/// or "the fault (KIND) ends the stream …" or "event I's delay_s (S s) reaches the idle timeout …"
/// (an event up to the point delayed, under `timing`, to the idle timeout or past it) (`of`, e.g. " of /turns/0/attempts/1", after "finish" or
/// "fault"); nullopt when it does (a stall shorter than
/// `idle_timeout_s` only delays it) or when `in` has no `after_event`. Shared by lint
/// (unreachable_interrupt) and the invariants' interrupted_request.
[[nodiscard]] std::optional<std::string> interrupt_point_missed(const mock::Attempt& a, const Interrupt& in,
                                                                 double idle_timeout_s, const std::string& of = "",
                                                                 const mock::Script::Timing& timing = {});

/// Stalls that race the runtime's idle timeout over HTTP: a `stall` whose `seconds` lie between
/// half and twice the scenario's idle timeout (runtime.idle_timeout_s, default 60), where a real
/// scheduling delay decides whether the runtime times out (docs/POLICY.md "Time over HTTP"): in
/// memory the verdict is exact, over HTTP it can differ. One problem per such stall, with its
/// pointer (`/turns/T/attempts/A/fault/seconds`); `hiccup lint` and `hiccup run` print them as
/// warnings. The file stays valid. Likewise an event's `delay_s` as it plays (times `timing.scale`,
/// capped at `timing.max_delay_s`: mock::event_delay_s) in that band, pointer
/// `/turns/T/attempts/A/events/E/delay_s` (a recording's timing replayed at scale 1 often does).
/// With `runtime.stream: false` the answer is one body late by the sum of its events' delays (up
/// to the first finish), so that sum is checked instead of each delay, pointer the `delay_s` of the
/// last delayed event.
[[nodiscard]] std::vector<LoadProblem> timing_warnings(const Scenario& scenario);

/// Everything `hiccup lint` and `hiccup run` warn about in a valid file: timing_warnings, and a
/// `runtime.fallback_model` equal to the model the requests use (`runtime.model`, else the
/// provider's default model): the retry after a content-filter finish would then be the unchanged
/// request, which `no-unchanged-content-filter-retry` rightly fails. One problem per finding, with
/// its pointer; the file stays valid. Also a `runtime.continuation_prompt` under a pinned `hold`
/// design, which never sends it, and what unplayed_warnings finds.
[[nodiscard]] std::vector<LoadProblem> scenario_warnings(const Scenario& scenario);

/// Attempts of a valid script that no runtime asks for, one problem per turn with the pointer of
/// the first: those after an attempt that answers its turn whole (text or a call, then a `stop` or
/// `max_tokens` finish without `after_fragment`; no `status`, no `fault`). A turn the `interrupt`
/// names is left alone. (Events after a finish are sent, on purpose: a client must ignore them.)
/// Part of scenario_warnings.
[[nodiscard]] std::vector<LoadProblem> unplayed_warnings(const Scenario& scenario);

/// Waits that make the run always end at its virtual-time cap (`max_virtual_s`, default
/// kDefaultMaxVirtualS): a `retry_after_s` longer than the cap on an attempt the reference runtime
/// retries (a 429 that is not `per_day`, a 5xx), or, the first time it happens, the run's waits
/// before retries so far (each max(backoff step, Retry-After), as rut::RetryCoordinator waits,
/// within `runtime.max_attempts`) adding up past it. One problem each, with the attempt's pointer
/// (its `retry_after_s` when it has one); stalls and event delays are not counted, so it is a
/// lower bound. Part of fallback_warnings (memory runs are capped too).
[[nodiscard]] std::vector<LoadProblem> cap_warnings(const Scenario& scenario);

/// scenario_warnings without the timing ones: cap_warnings, the fallback model equal to the model in use, a
/// continuation prompt the pinned hold design never sends, and `websocket` fields in a scenario
/// whose provider is not openai-responses (they act over WebSocket only).
[[nodiscard]] std::vector<LoadProblem> fallback_warnings(const Scenario& scenario);

/// Reads `path` and parses it; an unreadable file, or one larger than kMaxScenarioBytes, gives one
/// problem with pointer "". Arrays and objects nested deeper than mock::kMaxJsonDepth (512) and
/// invalid UTF-8 are problems too. Never throws.
[[nodiscard]] LoadResult load_scenario_file(const std::string& path);

/// The scenario's JSON form, keys in SCENARIO-FORMAT.md order ($schema, schema, name, description,
/// tags, catches, provider, prompt, session, runtime, max_virtual_s, turns, tools, expect); empty or unset optional
/// fields are omitted.
/// Returned as an ordered_json so the key order survives dumping.
[[nodiscard]] nlohmann::ordered_json scenario_to_json(const Scenario& scenario);

/// scenario_to_json pretty-printed with a 2-space indent and a trailing newline.
[[nodiscard]] std::string write_scenario(const Scenario& scenario);

/// How a folder scan chooses scenario files.
struct ScanOptions {
  /// Folders not searched below a given folder (e.g. the run's own report directory, which may not
  /// exist yet); compared after canonicalisation.
  std::vector<std::string> skip_dirs;
};

/// Whether the folder `dir` is a hiccup report directory: it holds a `summary.json` that is a JSON
/// object with "command" and "cases".
[[nodiscard]] bool is_report_dir(const std::string& dir);

/// Whether the file at `path` is taken as a scenario by a folder scan: a JSON object with a
/// "turns" member, or text that is not JSON at all (so the loader reports its syntax error).
[[nodiscard]] bool looks_like_scenario_file(const std::string& path);

/// Expands `paths` into scenario files: a file is taken as given; a folder is searched recursively
/// for `*.json` files that looks_like_scenario_file, which are appended sorted by path. Below a given
/// folder, hidden folders (".git", ".cache"), `node_modules`, `scan.skip_dirs` and report
/// directories (is_report_dir: their summary.json and counterexamples) are not searched. Every skip
/// adds one line to `notes` when not null: a skipped folder by name; per given folder, the count of
/// JSON files that are not scenario files with the first three names. A missing path, or a folder
/// with no scenario file, appends a problem (pointer "") to `problems`.
[[nodiscard]] std::vector<std::string> collect_scenario_files(const std::vector<std::string>& paths,
                                                              std::vector<LoadProblem>& problems,
                                                              const ScanOptions& scan = {},
                                                              std::vector<std::string>* notes = nullptr);

/// How parse_json_text reads: `//` and `/* */` comments allowed or not; a key named twice in one
/// object refused or (as nlohmann does) the last kept.
struct JsonTextOptions {
  bool ignore_comments = true;
  bool refuse_duplicate_keys = true;
};

/// JSON `text` parsed as the scenario loader parses it, for the other files hiccup reads
/// (summary.json, known-failures files, agent recipes): at most mock::kMaxJsonDepth levels
/// counted as the parser descends (deeper text would overflow the stack of nlohmann's recursive
/// copy and destructor). nullopt with a one-line `error` when the text is not JSON ("invalid json
/// at byte N: ..."), nests too deep, names a key twice ("/POINTER: this key appears twice ...") or
/// holds a number beyond a double's range ("/POINTER: number 1e999 is beyond a double's range ...").
[[nodiscard]] std::optional<nlohmann::json> parse_json_text(std::string_view text, const JsonTextOptions& options,
                                                            std::string& error);

/// parse_json_text with its failure as a problem (file ""): `pointer` names the value at fault when
/// there is one (a key named twice, a number beyond a double's range such as 1e400: "number 1e400
/// at byte N is out of range ..."), else ""; `message` is valid UTF-8 with no control character
/// (nlohmann's own text quotes the last bytes read, which may end inside a UTF-8 character).
/// Never throws for any text.
[[nodiscard]] std::optional<nlohmann::json> parse_json_text(std::string_view text, const JsonTextOptions& options,
                                                            LoadProblem& problem);

/// The first key that an object of the JSON `text` names twice: a problem (file "") whose pointer
/// is the second occurrence's (RFC 6901) and whose message is the loader's. nullopt when every
/// object's keys are unique, and also when `text` is not JSON or nests deeper than
/// mock::kMaxJsonDepth (parsing it reports that). RFC 8259 section 4: an object's names SHOULD be
/// unique, and parsers differ on which of two they keep; nlohmann keeps the last.
[[nodiscard]] std::optional<LoadProblem> duplicate_key(std::string_view text);

/// RFC 6901 escaping of one reference token ("~" → "~0", "/" → "~1").
std::string pointer_escape(std::string_view token);

}  // namespace harness
