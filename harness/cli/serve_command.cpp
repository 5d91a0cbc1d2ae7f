// `hiccup serve [SCENARIO]`: the mock model server standalone, for any client and any test suite.
// Prints the base URL, serves sessions (the default one from SCENARIO, more over the control API,
// harness/serve/control_api.h) until SIGINT/SIGTERM, then prints the default session's journal
// summary (and writes it with --journal). Memory stays bounded however long it serves: a window of
// the default session's journal is kept, the rest is summarised and streamed to the --journal file
// as it leaves the window.
#include <algorithm>
#include <condition_variable>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <mutex>
#include <sstream>
#include <thread>

#include "harness/cli/args.h"
#include "harness/cli/commands.h"
#include "harness/scenario_io.h"
#include "harness/serve/control_api.h"
#include "harness/serve/session_registry.h"
#include "mock_server/eventstream/cloud_paths.h"
#include "mock_server/http_server.h"
#include "mock_server/json_text.h"
#include "mock_server/script_engine.h"
#include "mock_server/wire_format.h"

namespace harness::cli {
namespace {

constexpr const char* kServeUsage = R"(usage: hiccup serve [SCENARIO] [OPTIONS]

Runs the mock model server on 127.0.0.1 (unless --host says otherwise) and prints its base URL.
With SCENARIO, that scenario is the default session, played at the server's root paths (and at
/s/default). Without one the server starts empty: a test suite creates one session per test over
the control API and points its SDK at the session's base URL.

Every wire format is served on the one port, under the root (default session) and under each
session's base path /s/{id}; the request's path says which format (the scenario's `provider` only
picks the error envelope of unknown paths):
@PATHS@
Point a client at it, e.g.
  GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT gemini -p "..."
  OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 (openai SDKs, codex)   ANTHROPIC_BASE_URL=http://127.0.0.1:PORT
  a session: OPENAI_BASE_URL=http://127.0.0.1:PORT/s/ID/v1, ANTHROPIC_BASE_URL=http://127.0.0.1:PORT/s/ID
A `HEAD /` or `GET /` preflight is answered 200 and journaled as such.

The scenario's `tools` are served over MCP (Streamable HTTP, revision 2025-11-25; 2025-06-18,
2025-03-26 and 2024-11-05 negotiated too) at /mcp (default session) and /s/{id}/mcp: initialize,
ping, tools/list, tools/call playing each call's scripted behaviour (duration_s scaled as stalls,
result, is_error, jsonrpc_error, hang, reply_lost, session_expired, progress),
notifications/cancelled; GET 405, DELETE ends the MCP session (docs/CONTROL-API.md "MCP").

Requests are matched to the script by turn index and attempt index, whatever the format
(docs/SCENARIO-FORMAT.md "Matching requests to the script"; each format's bytes, errors and ids:
docs/WIRE-FORMATS.md).

Control API (JSON in and out, version 1; docs/CONTROL-API.md has every shape and error):
  POST   /_hiccup/sessions                  {"scenario": {...}, "id"?, "max_attempts"?, "strict"?,
                                             "journal_window"?, "journal_file"?, "recovery"?
                                             ("hold" | "continue": the design the client declares),
                                             "timing_scale"? (0..1000000: event timing played at
                                             that many times; default --timing-scale, else the
                                             scenario's own)}
                                            → 201 {"session": {"id", "path", "base_url", ...}};
                                            a scenario lint rejects → 400 with one problem per pointer
  GET    /_hiccup/sessions                  all sessions
  GET    /_hiccup/sessions/ID               one session      DELETE: remove it
  POST   /_hiccup/sessions/ID/reset         fresh script state, empty journal, ledger and outcome
  GET    /_hiccup/sessions/ID/journal       the session's journal
  POST   /_hiccup/sessions/ID/executions    record a tool execution {"name", "args"?, "call_id"?}
  POST   /_hiccup/sessions/ID/outcome       {"outcome": "completed"|"failed", "final_text"?, "shown_text"?}
  GET    /_hiccup/sessions/ID/tool_calls    the MCP tool-call journal and executions per tool
  GET    /_hiccup/sessions/ID/verdict       the invariants (names and messages as hiccup run
                                            --agent-cmd), what stays n/a and why
  GET    /_hiccup/health                    {"ok", "sessions", "internal_errors"}
Errors come in hiccup's envelope {"version":1,"error":{"status","code","message","problems"?}}:
unknown session 404, bad body or scenario 400, wrong method 405, unknown control path 404, an
exception inside hiccup 500 (counted; the server goes on). Journals keep credentials in a query
redacted (?key=REDACTED).
Neither /_hiccup/ nor /s/ is a prefix of any provider path. Sessions live until deleted or the
server stops; they are isolated (own script state, journal, ledger, locks).

Stops on SIGINT or SIGTERM and prints one line per request of the default session still in its
journal window (with a summary of the earlier ones), then one per MCP tool call and the executions
per tool, when there were any.

options (each at most once):
  --host ADDR           address to bind (default 127.0.0.1; 0.0.0.0 exposes it to the network)
  --port N              port to bind (default 0: an ephemeral port)
  --stall-ms-per-s X    real milliseconds per virtual second of a stall (default 1000)
  --timing-scale X      play every session's event timing (`delay_s`) at X times, in place of its
                        scenario's `timing.scale` (its `max_delay_s` still caps): SCENARIO's and
                        those created with POST /_hiccup/sessions (unless their body gives its own
                        "timing_scale"); 0 plays none, 0.1 ten times faster
                        (docs/SCENARIO-FORMAT.md "Event timing"); X in 0..1000000
  --journal FILE        write the default session's journal to FILE (needs SCENARIO): one JSON
                        array, one entry per line, written as entries leave the in-memory window
                        and completed on exit
  --max-connections N   connections open at once (default 4096; more wait in the listen backlog)
  --max-workers N       worker threads at once (default 512): each serves a connection whose answer
                        pauses (stall, delay, drain) or makes a verdict or journal answer; a request
                        that needs one when all are busy gets 503 with Retry-After: 1 (journaled as
                        played "overloaded"), never a silent drop
  --head-timeout-ms MS  a request's line and headers must arrive within MS of their first byte
                        (default 10000), however steadily they trickle; else 408 and the connection
                        closes (slowloris)
  --session-journals DIR
                        sessions created with "journal_file": true stream their journals to
                        DIR/ID.jsonl (one entry per line: entries as they leave the window, the
                        rest on reset, delete or exit); DIR is created if missing
  --journal-window N    journal entries (and recorded executions) every session keeps in memory
                        (default 1000, and entries of at most about 64 MiB; a session's create
                        body may set its own "journal_window");
                        older ones are counted in a summary (printed on exit for the default
                        session, written to --journal FILE) and a verdict that needed them says
                        "unknown" with a "window" member instead of passing
  -h, --help            this text

exit codes: 0 stopped by a signal, 2 usage error, 3 invalid SCENARIO or the address cannot be bound,
5 stopped by a signal after some request met an internal error (a bug in hiccup; answered 500)
)";

/// The usage text with every format's request targets.
std::string serve_usage() {
  std::string paths;
  for (const mock::WireFormat* f : mock::wire_formats()) {
    for (const std::string& p : f->paths()) {
      std::string name(f->name());
      name.resize(std::max<std::size_t>(name.size(), 18), ' ');
      paths += "  " + name + p + "\n";
    }
  }
  // The anthropic format's cloud paths (docs/WIRE-FORMATS.md "Cloud paths"), the same scenarios.
  for (const std::string& p : mock::cloud::cloud_paths()) paths += "  anthropic         " + p + "\n";
  // Responses over WebSocket (docs/WIRE-FORMATS.md "Responses over WebSocket").
  paths += "  openai-responses  GET /v1/responses with Upgrade: websocket (response.create frames, RFC 6455)\n";
  std::string usage = kServeUsage;
  const std::string marker = "@PATHS@\n";
  usage.replace(usage.find(marker), marker.size(), paths);
  return usage;
}

/// Streams journal entries to a file as one JSON array, one entry per line: a background thread
/// writes the entries that leave the engine's window every 100 ms; finish() writes the rest and
/// closes the array.
class JournalFileWriter {
 public:
  JournalFileWriter(std::shared_ptr<mock::ScriptEngine> engine, std::ofstream out)
      : engine_(std::move(engine)), out_(std::move(out)) {
    out_ << "[";
    thread_ = std::thread([this] {
      std::unique_lock lock(mu_);
      while (!done_) {
        cv_.wait_for(lock, std::chrono::milliseconds(100));
        write(engine_->take_evicted());
      }
    });
  }

  /// Closes the array when finish() was not called (serve returned early: the port was taken).
  ~JournalFileWriter() {
    if (thread_.joinable()) finish({});
  }
  JournalFileWriter(const JournalFileWriter&) = delete;
  JournalFileWriter& operator=(const JournalFileWriter&) = delete;

  /// Writes what is left (evicted entries, then `window`) and closes the array.
  void finish(const mock::Journal& window) {
    {
      std::lock_guard lock(mu_);
      done_ = true;
      cv_.notify_all();
    }
    thread_.join();
    write(engine_->take_evicted());
    write(window);
    out_ << (first_ ? "]\n" : "\n]\n");
    out_.flush();
  }

 private:
  void write(const std::vector<mock::JournalEntry>& entries) {
    for (const auto& e : entries) {
      out_ << (first_ ? "\n" : ",\n") << mock::journal_entry_to_json(e).dump();
      first_ = false;
    }
    out_.flush();
  }

  std::shared_ptr<mock::ScriptEngine> engine_;
  std::ofstream out_;
  bool first_ = true;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

int serve_command(const Args& args) {
  ArgReader in(args);
  std::string port_text = "0", scale_text = "1000", window_text = "1000", journal_path, host = "127.0.0.1", v;
  std::string connections_text = "4096", workers_text = "512", head_timeout_text = "10000", session_journals;
  std::string timing_scale_text;
  std::vector<std::string> positional;
  while (!in.done()) {
    if (in.flag("--help") || in.flag("-h")) {
      std::cout << serve_usage();
      return kExitPassed;
    }
    if (in.value("--port", port_text) || in.value("--host", host) || in.value("--stall-ms-per-s", scale_text) ||
        in.value("--journal", journal_path) || in.value("--journal-window", window_text) ||
        in.value("--max-connections", connections_text) || in.value("--max-workers", workers_text) ||
        in.value("--head-timeout-ms", head_timeout_text) || in.value("--session-journals", session_journals) ||
        in.value("--timing-scale", timing_scale_text)) {
    } else if (in.peek().rfind("-", 0) == 0) in.set_error("unknown option \"" + in.take() + "\"");
    else positional.push_back(in.take());
  }
  constexpr int kIntMax = std::numeric_limits<int>::max();
  const auto port = in.number("--port", port_text, 0, 65535, "0..65535");
  const auto scale = in.number("--stall-ms-per-s", scale_text, 1, kIntMax, "a whole number >= 1");
  const auto window = in.number("--journal-window", window_text, 1, kIntMax, "a whole number >= 1");
  const auto max_connections = in.number("--max-connections", connections_text, 1, kIntMax, "a whole number >= 1");
  const auto max_workers = in.number("--max-workers", workers_text, 1, kIntMax, "a whole number >= 1");
  const auto head_timeout_ms = in.number("--head-timeout-ms", head_timeout_text, 1, kIntMax, "a whole number >= 1");
  std::optional<double> timing_scale;  // --timing-scale, when given
  if (!timing_scale_text.empty()) timing_scale = in.decimal("--timing-scale", timing_scale_text, 0, 1e6, "a number in 0..1000000");
  if (positional.size() > 1) in.set_error("expected at most one SCENARIO file");
  if (positional.empty() && !journal_path.empty()) in.set_error("--journal writes the default session's journal: give a SCENARIO");
  if (!in.error().empty()) {
    return usage_error("serve", in.error());
  }
  if (!session_journals.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(session_journals, ec);
    if (ec || !std::filesystem::is_directory(session_journals)) {
      std::cerr << "error: " << session_journals << ": cannot create the session journal directory"
                << (ec ? ": " + ec.message() : "") << '\n';
      return kExitInvalidInput;
    }
  }
  serve::SessionRegistry registry(static_cast<std::size_t>(*window), session_journals);
  registry.set_timing_scale(timing_scale);  // the default session's and every control-API session's
  std::string scenario_name;
  std::shared_ptr<mock::ScriptEngine> default_engine;  // its journal is windowed
  if (!positional.empty()) {
    LoadResult loaded = load_scenario_file(positional.front());
    for (const LoadProblem& p : loaded.problems) std::cerr << format_problem(p) << '\n';
    if (!loaded.scenario) return kExitInvalidInput;
    scenario_name = loaded.scenario->name;
    const auto session = registry.create(std::string(serve::SessionRegistry::kDefaultId), std::move(*loaded.scenario));
    default_engine = session->engine();
    default_engine->set_journal_window(static_cast<std::size_t>(*window), !journal_path.empty());
  }
  // Block the stop signals before any thread starts (the journal writer, the server), so only
  // sigwait sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::unique_ptr<JournalFileWriter> journal_file;
  if (!journal_path.empty()) {
    std::ofstream out(journal_path);
    if (!out) {
      std::cerr << "error: " << journal_path << ": cannot open the journal file for writing\n";
      return kExitInvalidInput;
    }
    journal_file = std::make_unique<JournalFileWriter>(default_engine, std::move(out));
  }
  serve::ControlApi router(registry);

  mock::ServerOptions options;
  options.host = host;
  options.port = *port;
  options.stall_ms_per_s = *scale;
  options.max_delay_ms = -1;
  options.max_connections = *max_connections;
  options.max_workers = *max_workers;
  options.head_timeout_ms = *head_timeout_ms;
  mock::MockHttpServer server(router, options);
  try {
    server.start();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';  // names the reason ("Address already in use", …)
    return kExitInvalidInput;
  }
  router.set_server_url(server.base_url());
  router.set_internal_errors([&server] { return server.internal_errors(); });
  std::cout << server.base_url() << std::endl;
  if (scenario_name.empty()) {
    std::cerr << "serving no default session; create sessions with POST " << server.base_url()
              << "/_hiccup/sessions; Ctrl-C to stop" << std::endl;
  } else {
    std::cerr << "serving scenario \"" << scenario_name << "\"; Ctrl-C to stop" << std::endl;
  }
  // Session journal files get the entries that left their windows every 100 ms.
  std::mutex flush_mu;
  std::condition_variable flush_cv;
  bool flush_done = false;
  std::thread flusher;
  if (!session_journals.empty()) {
    flusher = std::thread([&] {
      std::unique_lock lock(flush_mu);
      while (!flush_cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return flush_done; })) {
        for (const auto& s : registry.list()) s->flush_journal(false);
      }
    });
  }
  int sig = 0;
  sigwait(&stop_signals, &sig);
  server.stop();
  if (flusher.joinable()) {
    {
      std::lock_guard lock(flush_mu);
      flush_done = true;
    }
    flush_cv.notify_all();
    flusher.join();
    for (const auto& s : registry.list()) s->flush_journal(true);
  }
  router.set_internal_errors(nullptr);
  // A request whose handling threw was answered 500 and the server went on; the run still ends
  // as a harness error (exit 5), so a CI job does not pass over a bug in hiccup.
  const std::uint64_t internal_errors = server.internal_errors();
  const int exit_code = internal_errors > 0 ? kExitInternal : kExitPassed;
  if (internal_errors > 0) {
    std::cerr << "hiccup serve: " << internal_errors
              << " request(s) met an internal error (each answered 500 where it could be; a bug in hiccup, "
                 "please report it)\n";
  }

  const std::shared_ptr<serve::Session> default_session = registry.find(serve::SessionRegistry::kDefaultId);
  // The engine the session plays now (a reset over the control API replaces it with a fresh one,
  // whose journal is whole); the windowed one when it still plays, or when the session was
  // deleted over the control API (its journal file is still completed).
  const std::shared_ptr<mock::ScriptEngine> engine = default_session ? default_session->engine() : default_engine;
  if (!engine) return exit_code;
  const mock::Journal kept = engine->journal();
  if (journal_file) journal_file->finish(engine == default_engine ? kept : default_engine->journal());
  // No windowed engine when the default session was created over the control API.
  const mock::JournalSummary earlier = default_engine ? default_engine->evicted_summary() : mock::JournalSummary{};
  if (earlier.requests > 0) {
    std::cerr << earlier.requests << " earlier requests left the journal window of " << *window << ": "
              << mock::journal_summary_to_json(earlier).dump() << '\n';
  }
  std::string lines;
  for (const mock::JournalEntry& e : kept) {
    std::ostringstream line;
    line << "request " << e.index << ": " << e.method << ' ' << mock::json_text::escape_input(e.target, 400)
              << (e.provider.empty() ? "" : " (" + e.provider + ")") << " turn " << e.turn
              << " attempt " << e.attempt << " → " << e.response_status << ' ' << e.played
              << (e.fault.empty() ? "" : " fault " + e.fault) << (e.completed ? " completed" : "")
              << (e.validated ? "" : " REJECTED: " + mock::json_text::escape_input(e.rejection, 400)) << '\n';
    lines += line.str();
  }
  // The MCP tool calls of the default session, when there were any.
  if (default_session) {
    const std::shared_ptr<mock::mcp::McpServer> mcp = default_session->mcp();
    for (const mock::mcp::ToolCallEntry& c : mcp->tool_calls()) {
      std::ostringstream line;
      line << "tool call " << c.index << ": " << mock::json_text::escape_input(c.tool, 200);
      if (c.call_index >= 0) line << " (call " << c.call_index << ")";
      line << " → " << c.behaviour << (c.reply_sent ? ", reply sent" : ", no reply") << (c.cancelled ? ", cancelled" : "")
           << '\n';
      lines += line.str();
    }
    if (mcp->tool_calls_received() > 0) {
      std::string counts;
      for (const auto& [tool, n] : mcp->executions()) {
        counts += (counts.empty() ? "" : ", ") + mock::json_text::escape_input(tool, 200) + " " + std::to_string(n);
      }
      lines += "tool executions: " + (counts.empty() ? std::string("none") : counts) + " (of " +
               std::to_string(mcp->tool_calls_received()) + " tools/call)\n";
    }
  }
  std::cerr << lines;
  return exit_code;
}

}  // namespace harness::cli
