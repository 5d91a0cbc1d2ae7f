// Transcript assembly and digest; see transcript.h.
#include "harness/transcript.h"

#include <cstdint>
#include <cstdio>

namespace harness {

using nlohmann::json;

json make_transcript(const Scenario& scenario, const rut::RunResult& run, const mock::Journal& journal) {
  json ledger = json::array();
  for (const rut::LedgerEntry& l : run.ledger) {
    ledger.push_back({{"name", l.name}, {"args", l.args}, {"request_seq", l.request_seq},
                      {"call_index", l.call_index}});
  }
  json requests = json::array();
  for (const mock::JournalEntry& e : journal) {
    requests.push_back({{"turn", e.turn}, {"attempt", e.attempt}, {"script_attempt", e.script_attempt},
                        {"model", e.model}, {"played", e.played}, {"fault", e.fault},
                        {"status", e.response_status}, {"validated", e.validated},
                        {"completed", e.completed}});
  }
  return {{"scenario", scenario.name},
          {"outcome", {{"completed", run.completed}, {"error", run.error}, {"final_text", run.final_text}}},
          {"shown_output", run.shown_output},
          {"requests", run.requests},
          {"waited_s", run.waited_s},
          {"ledger", ledger},
          {"events", run.events},
          {"journal", requests},
          {"final_history", run.final_history}};
}

std::string transcript_digest(const json& transcript) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : transcript.dump()) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace harness
