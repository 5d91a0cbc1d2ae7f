// The journal: one entry per request the mock server answered, in arrival order. It is the
// server's testimony for the invariant checkers: what was asked, what was played, which fault
// fired, what reached the client, and whether the request was valid as the real API would judge.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mock {

/// A function call the client received in full during one attempt.
struct DeliveredCall {
  std::string name;
  nlohmann::json args = nlohmann::json::object();
  std::string id;      ///< as sent; empty when none was sent
  int call_index = 0;  ///< position among the attempt's calls, from 0
  /// The provider's misbehaviour the script asked for (`reuse_id`): `id` repeats the id of an
  /// earlier call of this attempt or of an earlier turn (SCENARIO-FORMAT.md "Call ids").
  bool reuse_id = false;
  bool operator==(const DeliveredCall&) const = default;
};

/// A reasoning event the client received during one attempt (provider-neutral: what the format
/// sent as an Anthropic thinking block, a Responses reasoning item, a Gemini thought part and
/// signature; nothing in Chat Completions, which journals none). The client must send it back with
/// the call it precedes (the server's request validation checks that: WIRE-FORMATS.md "Reasoning").
struct DeliveredReasoning {
  std::string text;
  std::string signature;     ///< as sent (scripted, or mock::default_signature)
  int reasoning_index = 0;   ///< position among the attempt's reasoning events, from 0
  /// call_index of the call right after it in the attempt (the call whose place it holds in
  /// history), -1 when no call follows before the next reasoning event or the finish.
  int before_call = -1;
  bool redacted = false;     ///< ReasoningEvent::redacted: only the signature was sent
  bool operator==(const DeliveredReasoning&) const = default;
};

struct JournalEntry {
  std::size_t index = 0;       ///< arrival order, from 0
  std::string method;
  /// Path and query as sent, but valid UTF-8 (raw controls and ill-formed bytes percent-encoded)
  /// and with credential parameters redacted (`?key=REDACTED`; mock/credentials.h).
  std::string target;
  /// The transport that carried a request that is not plain HTTP ("websocket"); "" for HTTP.
  std::string transport;
  std::string provider;        ///< the wire format the path named ("" for preflight, 404)
  std::string model;           ///< model from the path ("" when none)
  bool streaming = false;      ///< a streamed request (streamGenerateContent, `"stream": true`)
  int turn = -1;               ///< turn index (model turns in the request's history); -1 if not parsed
  int attempt = -1;            ///< attempt index within the turn; -1 when not matched to the script
  int script_attempt = -1;     ///< which scripted attempt was played (the last repeats); -1 if none
  /// The request's history in the neutral view (wire_format.h DecodedRequest; Gemini's own
  /// `contents` as received); null if unparsable.
  nlohmann::json contents;
  /// FNV-1a 64 of the whole request body, 16 hex digits: tells a changed request (other
  /// parameters, beta features) from a repeat when the history is the same.
  std::string body_digest;
  int response_status = 0;     ///< HTTP status answered
  /// "stream", "status", "unscripted", "rejected" (pairing 400), "bad-request" (unparsable or
  /// malformed body, 400), "context-lost" (a continuation of a response the server no longer
  /// holds, Responses `previous_response_not_found`, 400: the server's loss, `validated` stays
  /// true), "not-found" (404), "preflight" (HEAD/GET of "/", 200), "overloaded"
  /// (the plan was not played: no worker thread was left for it, 503 with Retry-After instead)
  std::string played;
  std::string fault;           ///< fault kind name that fired, "" for none
  bool validated = true;       ///< false when the request was rejected as invalid (HTTP 400)
  std::string rejection;       ///< the exact 400 message when rejected
  /// Calls in the request's history that the server delivered right after reasoning, so the
  /// request had to send that reasoning back (WireFormat::check_reasoning checked it); 0 when none.
  int reasoning_due = 0;
  /// Issues found against the journal itself, each "code: detail": `unscripted-request`,
  /// `response-for-undelivered-call` (a function response for a call no attempt of its turn delivered whole).
  std::vector<std::string> issues;
  // Filled by ScriptEngine::settle:
  bool settled = false;
  int events_delivered = 0;            ///< script events fully delivered
  bool completed = false;              ///< terminal stop/max_tokens frame delivered: the turn is done
  /// What a client that skips an undecodable frame read: a `malformed` fault sends one frame
  /// whose JSON does not parse and then goes on (docs/SCENARIO-FORMAT.md), so a client that reads
  /// past it (an external agent may; a correct client fails the attempt there, which is what
  /// events_delivered, completed and the delivered fields say) has what was written after it
  /// too: the script events fully written up to the first finish, whether that finish was a
  /// terminal stop/max_tokens frame, and the calls and text among those events. Set only when the
  /// fault's frame came before the finish and some of those were written after it; not in the
  /// journal's JSON.
  struct PastUndecodable {
    int events_delivered = 0;
    bool completed = false;
    std::vector<DeliveredCall> delivered_calls;
    std::string delivered_text;
    bool operator==(const PastUndecodable&) const = default;
  };
  std::optional<PastUndecodable> past_undecodable;
  std::vector<DeliveredCall> delivered_calls;
  std::string delivered_text;          ///< text parts delivered, concatenated
  /// Reasoning events delivered, in order (none in Chat Completions, which sends no reasoning).
  std::vector<DeliveredReasoning> delivered_reasoning;
  /// Real monotonic times over HTTP, in ms since the server started (steady clock): when the
  /// request arrived and when its answer ended (last byte written or connection dropped); -1 in
  /// memory, where time is virtual. Black-box verdicts judge Retry-After and backoff with them.
  double arrived_ms = -1;
  double answered_ms = -1;
};

using Journal = std::vector<JournalEntry>;

/// Counts over journal entries that are no longer kept one by one (they left the bounded window
/// of a long-running `hiccup serve`): how many, how they were answered and what reached clients.
struct JournalSummary {
  std::size_t requests = 0;                  ///< entries counted
  std::size_t completed = 0;                 ///< entries with `completed`
  std::size_t rejected = 0;                  ///< entries with `validated == false`
  std::size_t with_issues = 0;               ///< entries with at least one issue
  std::map<std::string, std::size_t> played;  ///< by `played` ("stream", "status", …)
  std::map<std::string, std::size_t> faults;  ///< by `fault` name, for entries where one fired
  std::map<int, std::size_t> statuses;        ///< by `response_status`

  /// Counts `entry`.
  void add(const JournalEntry& entry);
  bool operator==(const JournalSummary&) const = default;
};

/// JSON form of a summary: {"requests", "completed", "rejected", "with_issues", "played": {name: n},
/// "faults": {name: n}, "statuses": {"200": n}}.
nlohmann::json journal_summary_to_json(const JournalSummary& summary);

/// JSON form of one entry (for reports and `hiccup serve --journal`).
nlohmann::json journal_entry_to_json(const JournalEntry& entry);

}  // namespace mock
