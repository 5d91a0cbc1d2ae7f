// The agent loop: drives turns until one has no calls or a turn fails, executing committed calls
// and sending their function responses. run_agent (runtime.h) wraps it and fills RunResult.
#pragma once

#include <string>

#include "runtime_under_test/history.h"
#include "runtime_under_test/run_log.h"
#include "runtime_under_test/runtime.h"

namespace rut {

/// How one pass of the loop ended.
struct LoopOutcome {
  bool completed = false;
  std::string error;    ///< run error when !completed ("max_turns" when the turn cap was hit)
  std::string message;
};

/// One pass from the prompt: fresh history in `history` (or, `fresh` false, the prompt appended to
/// it as the next user turn of a session), events and ledger appended to `log`. `tools`: the tool
/// port (runtime.h run_agent), or null.
[[nodiscard]] LoopOutcome run_agent_loop(const Config& config, const std::string& prompt,
                                         IClock& clock, ITransport& transport, History& history,
                                         RunLog& log, bool fresh = true, IToolPort* tools = nullptr);

}  // namespace rut
