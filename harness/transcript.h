// The transcript: the deterministic record of one run (runtime events, ledger, shown output,
// outcome, virtual time, and the journal's transport-independent fields), and its digest. Same
// scenario and seed ⇒ same transcript on either transport; the digest makes that checkable.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "harness/scenario.h"
#include "mock_server/journal.h"
#include "runtime_under_test/runtime.h"

namespace harness {

/// The transcript as JSON: {scenario, outcome{completed,error,final_text}, shown_output, requests,
/// waited_s, ledger[], events[], journal[{turn,attempt,script_attempt,played,fault,status,
/// validated,completed}], final_history}.
nlohmann::json make_transcript(const Scenario& scenario, const rut::RunResult& run,
                               const mock::Journal& journal);

/// FNV-1a 64 of `transcript.dump()`, as 16 lower-case hex digits.
std::string transcript_digest(const nlohmann::json& transcript);

}  // namespace harness
