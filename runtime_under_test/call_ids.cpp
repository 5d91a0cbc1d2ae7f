// Call ids as the conversation keeps them (see call_ids.h).
#include "runtime_under_test/call_ids.h"

namespace rut {

bool CallIds::used(const std::string& id) const {
  for (const auto* calls : {&committed_, &attempt_}) {
    for (const AdmittedCall& c : *calls) {
      if (c.history_id == id) return true;
    }
  }
  return false;
}

const AdmittedCall& CallIds::admit(const FunctionCall& delivered, const DefectSet& defects) {
  AdmittedCall admitted{delivered, std::nullopt, std::nullopt};
  const bool has_id = delivered.id && !delivered.id->empty();
  if (has_id) {
    const std::string& id = *delivered.id;
    // Keyed by position, a call is a replay only when it repeats an earlier call whole: its id,
    // its name and its arguments. The earliest such call is the one it replays.
    for (const auto* calls : {&committed_, &attempt_}) {
      for (const AdmittedCall& earlier : *calls) {
        if (admitted.replay_of || earlier.delivered.id != delivered.id) continue;
        const bool same_call = earlier.delivered.name == delivered.name && earlier.delivered.args == delivered.args;
        // defect: calls keyed by their id: the same id is the same call, whatever it asks for
        if (same_call || defects.contains(Defect::kCollapseCallsById)) admitted.replay_of = earlier.history_id;
      }
    }
    std::string history_id = id;
    for (int n = 1; used(history_id); ++n) history_id = id + "_dup" + std::to_string(n);
    admitted.history_id = std::move(history_id);
  }
  attempt_.push_back(std::move(admitted));
  return attempt_.back();
}

void CallIds::commit_attempt() {
  for (AdmittedCall& c : attempt_) committed_.push_back(std::move(c));
  attempt_.clear();
}

}  // namespace rut
