// The pure core of the mock server: (script, request) → a plan of actions, plus the journal.
// No sockets, no clocks: the HTTP adapter (http_server) and the in-process transport
// (harness/memory_transport) both execute plans and report back how far delivery got, so both
// paths share every decision. Matching follows SCENARIO-FORMAT.md "Matching requests to the script".
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "mock_server/journal.h"
#include "mock_server/script.h"
#include "mock_server/wire_format.h"

namespace mock {

/// An incoming HTTP request as the engine sees it. `target` is path plus query
/// (e.g. "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse").
struct Request {
  std::string method;  ///< "POST", "GET", "HEAD"
  std::string target;
  std::string body;
  /// Real monotonic time the request arrived, in ms since the server started; -1 when the
  /// transport has no real time (the in-memory transport). Recorded in the journal as is.
  double arrived_ms = -1;
  /// The request's headers, names as sent (the HTTP server fills them; the model formats read
  /// none, the MCP server reads Accept, Mcp-Session-Id and MCP-Protocol-Version).
  std::vector<std::pair<std::string, std::string>> headers;
  /// HttpRequest::transport: "" for HTTP, "websocket" for a `response.create` message.
  std::string transport;

  /// The first header named `name` (case-insensitive); "" when absent.
  std::string_view header(std::string_view name) const;
};

/// Write `bytes` as one send on the wire (one HTTP chunk when streaming).
/// `events_done` = how many script events are fully delivered once this write is delivered;
/// `terminal` = this write completes the attempt's terminal (stop/max_tokens) frame.
struct WriteAction {
  std::string bytes;
  int events_done = 0;
  bool terminal = false;
};
/// Send nothing for `seconds` virtual seconds (a `stall` fault). Over HTTP the adapter sleeps
/// seconds × its scale and ends the pause early when the client hangs up.
struct StallAction {
  double seconds = 0;
};
/// Wait until the client has acknowledged every byte written so far, then `pause_ms` more, so the
/// next write reaches the client in a read of its own. Written before an in-stream error: a real
/// backend sends it tens of milliseconds after the last frame, and SDKs parse per read
/// (@google/genai recognises the bare `{"error"}` object only alone in a read; issue 12). In
/// process it costs nothing.
struct DrainAction {
  int pause_ms = 0;
};
using Action = std::variant<WriteAction, StallAction, DrainAction>;

/// The pause before an in-stream error, in real milliseconds (the reference runtime's runner caps
/// it with ServerOptions::max_delay_ms).
inline constexpr int kErrorEventPauseMs = 50;

/// How a streamed response ends after its actions.
enum class Ending {
  kTerminator,  ///< chunked terminator: a clean HTTP end
  kFin,         ///< close (TCP FIN) without the chunked terminator, after `ending_delay_ms`
  kReset,       ///< abort with TCP RST after `ending_delay_ms` (the client idles on read)
};

/// What to answer one request with. For `streaming` plans the status is 200 and the body is
/// `actions` in order, then `ending`. Otherwise (error envelopes, non-streaming answers) the
/// StallActions in `actions` (a `stall` fault) run before the status line, so the whole answer is
/// late and the client's idle timeout applies; then the status, the headers and `body` go out
/// with `Content-Length: body.size()`. When `ending` is not kTerminator only the first
/// `body_bytes` bytes of `body` are written before the connection ends that way (FIN or RST
/// mid-body: `disconnect`, `reset`, `cut` on a non-streaming request).
struct Plan {
  std::size_t journal_index = 0;  ///< the journal entry to settle with ScriptEngine::settle
  int status = 200;
  std::string content_type = "application/json";
  bool streaming = false;
  std::string body;
  /// Extra response headers (e.g. `retry-after` on a status error, WireFormat::error_answer).
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<Action> actions;
  Ending ending = Ending::kTerminator;
  int ending_delay_ms = 0;
  /// Non-streaming plans ending in kFin/kReset: body bytes written before the end (< body.size()).
  std::size_t body_bytes = 0;
  /// The attempt's WebSocket choices (Attempt::websocket), for the WebSocket transport only.
  std::optional<WebSocketChoices> websocket;
};

/// How far a plan got on the wire, reported by whoever executed it. For a streaming plan only
/// `actions_done` counts (a StallAction or DrainAction counts once its pause ran to the end); a
/// non-streaming body counts as delivered unless `client_gone` (a client that timed out during a
/// stall before the answer is gone; a body cut by FIN/RST delivers nothing decodable).
struct Delivery {
  int actions_done = 0;        ///< actions fully executed (a write counts when sent in full)
  bool client_gone = false;    ///< the client hung up or stopped reading before the end
  /// Real monotonic time the answer ended (last byte written, or the connection dropped), in ms
  /// since the server started; -1 when unknown. Recorded in the journal as is.
  double ended_ms = -1;
};

/// What a transport keeps beside the script for one run (one session of `hiccup serve`): values
/// by key, at most `capacity` (the oldest dropped), shared by every connection to the same
/// Responder. The Responses API's WebSocket mode keeps its stored responses here, so a
/// `previous_response_id` from one connection is found on the next (mock_server/websocket/).
/// Thread-safe.
class SessionMemory {
 public:
  /// At most `capacity` values and `max_bytes` of them (keys and values; the newest is kept
  /// whatever its size): a stored Responses answer holds its whole conversation, so a chain of
  /// n continuations stores O(n^2) bytes without the byte bound.
  explicit SessionMemory(std::size_t capacity = 256, std::size_t max_bytes = std::size_t{64} << 20)
      : capacity_(capacity), max_bytes_(max_bytes) {}
  /// Keeps `value` under `key` (replacing an earlier one).
  void put(const std::string& key, std::string value);
  /// The value under `key`, nullopt when none was kept (or it was dropped).
  std::optional<std::string> get(const std::string& key) const;

 private:
  mutable std::mutex mu_;
  std::size_t capacity_;
  std::size_t max_bytes_;
  std::size_t bytes_ = 0;  // keys and values held
  std::deque<std::pair<std::string, std::string>> entries_;  // oldest first
};

/// What the HTTP server plays plans from, one per protocol: ScriptEngine (the model wire formats)
/// and mcp::McpServer (MCP over Streamable HTTP). The server asks for a plan, executes it and
/// reports how far it got. Implementations are thread-safe: the server calls them from its event
/// loop and its worker threads.
class Responder {
 public:
  virtual ~Responder() = default;
  /// The plan answering `request`; never throws on bad input (a malformed request gets the
  /// protocol's own error answer).
  virtual Plan respond(const Request& request) = 0;
  /// How far the plan for `journal_index` (Plan::journal_index) got; the last report wins.
  virtual void settle(std::size_t journal_index, const Delivery& delivery) = 0;
  /// The plan for `journal_index` was not played: the server answered `status` instead.
  virtual void refuse(std::size_t journal_index, int status, const std::string& reason) = 0;
  /// The wire format ("gemini", …) whose error envelope answers a request routed here that the
  /// HTTP layer refused; "" for hiccup's own envelope.
  virtual std::string error_provider() const = 0;
  /// The memory transports keep for this run beside the script (see SessionMemory); nullptr
  /// when this responder keeps none (a connection then keeps its own).
  virtual SessionMemory* session_memory() { return nullptr; }
};

/// Plays one script for one run. Thread-safe: the HTTP adapter calls it from pool threads.
class ScriptEngine final : public Responder {
 public:
  /// Optional hook called with (turn index, attempt index, a copy of the scripted attempt) just
  /// before that attempt is played; it may edit the copy (the external-agent runner substitutes
  /// its ledger placeholder per served attempt). The journal's delivered calls/text come from the
  /// edited copy. Empty (default): the script is played as written.
  using AttemptRewriter = std::function<void(int turn, int attempt, Attempt& played)>;

  explicit ScriptEngine(Script script, AttemptRewriter rewriter = {});

  /// Validates `request`, matches it to the script, journals it and returns the plan. The format
  /// is the one whose endpoint the path names (every format on one server); the script's
  /// `provider` only picks the envelope of a 404 for a path no format serves.
  /// Never throws on bad input: malformed bodies get a 400 in the provider's envelope, unknown
  /// paths a 404, unscripted turns a 500 or answer_past_script's answer (journaled as
  /// `unscripted-request`). The journal keeps
  /// the target with raw octets a URI may not hold percent-encoded (json_text::percent_encode_unsafe)
  /// and credentials in its query redacted (`?key=REDACTED`, mock::redact_target).
  Plan respond(const Request& request) override;

  /// Records how far the plan for `journal_index` was delivered; fills the entry's delivered
  /// calls/text and `completed`. Calling it again overwrites (the last report wins).
  void settle(std::size_t journal_index, const Delivery& delivery) override;

  /// Records that the plan for `journal_index` was not played: the server answered `status`
  /// instead (503 when no worker thread was left for a plan that pauses). The entry is settled
  /// with nothing delivered, `played` "overloaded", and the issue "server-overloaded: REASON".
  void refuse(std::size_t journal_index, int status, const std::string& reason) override;

  /// The script's provider.
  std::string error_provider() const override { return script_.provider; }

  /// This run's SessionMemory (the WebSocket mode's stored responses).
  SessionMemory* session_memory() override { return &memory_; }

  /// A copy of the journal so far: every entry, or with a window (set_journal_window) the
  /// entries still in it, oldest first (their `index` fields say where they stand).
  Journal journal() const;

  /// Number of requests journaled so far, in the window or not.
  std::size_t journal_size() const;

  /// The journal so far, moved out (the engine's is left empty): for a caller done with the run,
  /// which saves copying every entry's decoded history.
  Journal take_journal();

  /// Keeps at most about `max_entries` (>= 1) journal entries in memory, and entries of at most
  /// about `max_bytes` (the request body, and twice the answer's bytes: the attempt as played and
  /// the text delivered; at least the newest entry stays), for a long-running server: older
  /// entries leave the window in arrival order once settled (an unsettled one leaves anyway when
  /// the window holds twice `max_entries`), are counted in evicted_summary() and, when
  /// `keep_evicted`, wait in take_evicted() for the caller to write them out. Settling an entry
  /// that has left the window does nothing. Call before the first request; without a call the
  /// engine keeps every entry (harness runs are short and check the whole journal).
  void set_journal_window(std::size_t max_entries, bool keep_evicted, std::size_t max_bytes = kWindowBytes);

  /// What a request for a turn past the script's last gets. By default (nullopt) the provider's
  /// 500 ("unscripted request: ..."), which a client may retry. With `text`: a completed answer of
  /// that text alone (finish `stop`), streamed or unary as the request asks, as a provider answers
  /// whatever it is asked next. The external-agent runner sets it: an agent that asks for more
  /// after the script's last answer (claude-code's "Output token limit hit. Resume directly"
  /// after a max_tokens finish, its reminder after a refusal) otherwise retried 500s with real
  /// backoffs until its timeout (2 minutes a case when exploring). Either way the entry is
  /// journaled `played: "unscripted"` with its `unscripted-request` issue (script_attempt -1).
  /// Call before the first request.
  void answer_past_script(std::optional<std::string> text);

  /// The default byte budget of a journal window: 64 MiB (1,000 entries of 8 MB answers would
  /// otherwise hold 16 GB).
  static constexpr std::size_t kWindowBytes = std::size_t{64} << 20;

  /// Entries that left the window since the last call, oldest first (empty unless
  /// set_journal_window asked to keep them). The caller must call it regularly: they wait in memory.
  std::vector<JournalEntry> take_evicted();

  /// Counts over every entry that left the window.
  JournalSummary evicted_summary() const;

  const Script& script() const { return script_; }

 private:
  // What settle needs to know about one answered request, parallel to journal_.
  // Per action, over the plan's actions up to and including it: the most events a write had
  // delivered, and whether a write carried the terminal frame.
  struct ActionInfo {
    int events_done = 0;
    bool terminal = false;
  };
  struct PlanRecord {
    int turn = -1;                    // script turn played, -1 for none
    int script_attempt = -1;          // script attempt played, -1 for none
    std::vector<ActionInfo> actions;  // streaming plans
    bool has_body_events = false;     // non-streaming 200 body carrying events
    int body_events = 0;              // events in that body
    bool body_completed = false;      // the body carries a stop/max_tokens finish
    bool body_blocked = false;        // a filtered answer without the parts before its finish
    std::optional<Attempt> played;    // the attempt as played: rewritten, call ids resolved
    int read_limit = -1;              // events a correct client reads at most; -1 until settled
    bool malformed_limit = false;     // read_limit is the malformed fault's frame
    int finish_limit = -1;            // events up to and with the first finish; -1 until settled
    bool reasoning = true;            // the format sends reasoning events (journaled when delivered)
    std::size_t bytes = 0;            // what the entry holds, about (set_journal_window)
  };

  Plan respond_locked(const Request& request, JournalEntry& entry, PlanRecord& record);
  Plan plan_attempt(const WireFormat& format, const Attempt& attempt, const DecodedRequest& request,
                    JournalEntry& entry, PlanRecord& record) const;
  Plan plan_unary(const WireFormat& format, const Attempt& attempt, const ResponseContext& ctx,
                  JournalEntry& entry, PlanRecord& record) const;
  void check_responses(const nlohmann::json& contents, JournalEntry& entry) const;
  // The provider's 400 when the history drops or changes reasoning the server delivered with a
  // call it holds (WireFormat::check_reasoning); nullopt otherwise, and for every request of a
  // run in which no reasoning was delivered. Adds to `due_calls` the calls whose reasoning was due.
  std::optional<Rejection> check_reasoning(const WireFormat& format, std::string_view body,
                                           const nlohmann::json& contents, int& due_calls) const;
  void evict_locked();
  // A request whose history ends in the model's own content (a client that kept a cut attempt and
  // asks for more of it) is played as the next turn (turn_index), so that content is a turn of its
  // own. A later history may carry it merged with the next answer into one model content (a
  // Responses assistant message item followed by the next answer's items; a client that writes
  // the kept text into the next assistant message): split_kept_ends() splits such a content back into the two turns
  // the engine played, so that the turn index, pairing and the journal agree with what was
  // played. note_kept_end() remembers a request's last model content (at most kMaxKeptEnds).
  void split_kept_ends(nlohmann::json& contents) const;
  void note_kept_end(const nlohmann::json& contents);

  Script script_;
  AttemptRewriter rewriter_;
  std::optional<std::string> past_script_text_;  // answer_past_script
  SessionMemory memory_;  // what transports keep beside the script (session_memory())
  mutable std::mutex mu_;
  // The window: journal_[i] is entry first_index_ + i. A deque grows without moving entries, so
  // no request waits for a large reallocation under mu_.
  std::deque<JournalEntry> journal_;
  std::deque<PlanRecord> records_;      // parallel to journal_
  std::size_t first_index_ = 0;         // index of journal_.front()
  // Some attempt of this engine has delivered reasoning (set by settle(), never cleared): until
  // then check_reasoning() returns at once instead of walking the journal window on every request
  // (that walk was a quarter of a served request's instructions, stop 47).
  bool reasoning_delivered_ = false;
  std::size_t window_ = 0;              // 0 = keep every entry
  std::size_t window_max_bytes_ = kWindowBytes;
  std::size_t window_bytes_ = 0;        // sum of records_[i].bytes
  bool keep_evicted_ = false;
  std::vector<JournalEntry> evicted_;   // left the window, not yet taken
  JournalSummary evicted_summary_;
  // Per turn, the distinct calls delivered whole by attempts that left the window (pairing checks).
  std::vector<std::vector<DeliveredCall>> evicted_delivered_;
  std::vector<int> answered_per_turn_;  // attempt counters, indexed by turn index
  // A model content some request ended with: its index in that request's (split) history, its
  // part count and a hash of those parts' JSON text. In the order they were noted; later splits
  // index histories that earlier ones have split already.
  struct KeptEnd {
    std::size_t index = 0;
    std::size_t parts = 0;
    std::size_t hash = 0;
  };
  static constexpr std::size_t kMaxKeptEnds = 64;
  std::vector<KeptEnd> kept_ends_;
};

}  // namespace mock
