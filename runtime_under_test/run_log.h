// What one run accumulates while it goes: the event list, the tool ledger, the request counter
// and backoff time. Shared by the streaming turn, the scheduler and the consumers; copied into
// RunResult at the end.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime_under_test/runtime.h"

namespace rut {

struct RunLog {
  std::vector<nlohmann::json> events;  ///< RunResult::events, in order
  std::vector<LedgerEntry> ledger;     ///< RunResult::ledger
  int requests = 0;                    ///< requests sent so far = the next request_seq
  double waited_s = 0;                 ///< backoff seconds so far
  std::string shown_output;            ///< text shown so far
  std::string final_text;              ///< text of the last committed turn
  bool interrupted = false;            ///< the user's interrupt has fired (once per run)
  bool truncated = false;              ///< the last committed turn ended with a max-tokens finish
  void add(nlohmann::json event) { events.push_back(std::move(event)); }
};

}  // namespace rut
