// The transcript: the deterministic record of one run (runtime events, ledger, shown output,
// outcome, virtual time, and the journal's transport-independent fields), and its digest. Same
// scenario and seed ⇒ same transcript on either transport; the digest makes that checkable.
// The review transcript is the reader's version of the same run for summary.json (request by
// request, with real times over HTTP, violations linked to requests); it is not digested.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/invariants.h"
#include "harness/scenario.h"
#include "harness/scripted_tools.h"
#include "mock_server/journal.h"
#include "runtime_under_test/runtime.h"

namespace harness {

/// The transcript as JSON: {scenario, outcome{completed,error,final_text,truncated}, shown_output, requests,
/// waited_s, ledger[], events[], journal[{turn,attempt,script_attempt,played,fault,status,
/// validated,completed}], final_history}, plus tool_calls[] (tool_call_record_to_json) when
/// `tool_calls` is not empty (a transcript of a scenario without tools is unchanged).
nlohmann::json make_transcript(const Scenario& scenario, const rut::RunResult& run,
                               const mock::Journal& journal, const std::vector<ToolCallRecord>& tool_calls = {});

/// A 64-bit hash of the JSON value `transcript` (not of its text: the value walked in json's order,
/// strings by their bytes, numbers by their bits; harness/transcript.cpp's TranscriptHash), as 16
/// lower-case hex digits. Same value, same digest; a JSON text read back holds the same value only
/// when its numbers keep their types (an integral double stays a double).
std::string transcript_digest(const nlohmann::json& transcript);

/// transcript_digest(make_transcript(scenario, run, journal)), computed without building the
/// transcript: the same value walked piece by piece (the explorer digests every case and reads no
/// transcript of a passing one).
std::string transcript_digest(const Scenario& scenario, const rut::RunResult& run, const mock::Journal& journal,
                              const std::vector<ToolCallRecord>& tool_calls = {});

/// FNV-1a 64 of `text`, as 16 lower-case hex digits.
std::string fnv1a_hex(std::string_view text);

/// The version of the review transcript's shape (docs/summary.schema.json `transcript`).
inline constexpr int kReviewTranscriptVersion = 1;

/// The review transcript of one run, summary.json's `transcript` (docs/REPORTS.md):
/// {version, requests[{index, turn, attempt, script_attempt, model, provider, streaming,
/// virtual_s, arrived_ms?, answered_ms?, sent{history_digest, contents, calls_answered[],
/// function_responses[]}, answer{status, played, events_delivered, events_scripted, fault,
/// ended, delivered_calls[], delivered_text, rejection?}, executed[], violations[]}],
/// runtime{retries[], commits[], errors[], outcome{completed, error, error_message, final_text, truncated},
/// requests, waited_s}, executions[{name, args, call_id, call_index, request}],
/// violations[{index, invariant, requests[]}]}. `sent_at_s` holds the virtual second each
/// request was sent (send order = journal order for the reference runtime); empty for a black box,
/// whose requests then carry `virtual_s: null`. Violations are linked to their `request` and to
/// every "request N" / "requests N, M" their message names.
nlohmann::json make_review_transcript(const Scenario& scenario, const rut::RunResult& run,
                                      const mock::Journal& journal, const std::vector<Violation>& violations,
                                      const std::vector<double>& sent_at_s);

/// The requests a violation names: its `request` and each index in "request N" / "requests N, M
/// and K" in its message, ascending, without repeats.
std::vector<int> requests_named(const Violation& violation);

}  // namespace harness
