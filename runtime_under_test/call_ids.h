// Call ids as the conversation keeps them (docs/POLICY.md "Call ids"). Providers and gateways
// misbehave with ids: two calls of one answer share one, a later turn reuses an earlier turn's (a
// gateway that numbers ids per answer), a call comes with an empty one. The runtime keeps calls
// apart by their position, never by their id; gives every call of its history an id no other call
// of the conversation has, because a provider rejects a history that repeats one (Anthropic:
// `tool_use` ids must be unique); and takes a call whose id, name and arguments all repeat an
// earlier call's for a replay of it (qwen-code PR #9436), answered with that call's result and
// never run again. History owns one CallIds; the streaming turn admits each call as it arrives.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime_under_test/codec.h"
#include "runtime_under_test/defects.h"

namespace rut {

/// One call the conversation knows: as the provider delivered it, and as history keeps it.
struct AdmittedCall {
  FunctionCall delivered;                  ///< name, args and the provider's id as sent
  /// The id history gives the call: the provider's when no other call of the conversation has it
  /// yet, else the provider's with "_dupN" appended (the first N from 1 that is free); nullopt when
  /// none (or an empty one) was sent, as Gemini does: each codec then gives one per position.
  std::optional<std::string> history_id;
  /// Set when the call replays an earlier one (the same non-empty id, name and arguments): that
  /// call's history id. A replay is answered with that call's result and never run.
  std::optional<std::string> replay_of;
};

class CallIds {
 public:
  /// The next call of the attempt being read, as delivered: its history id, and whether it replays
  /// an earlier call of this attempt or of a committed turn. Under the collapse-calls-by-id defect
  /// an id alone makes a replay.
  const AdmittedCall& admit(const FunctionCall& delivered, const DefectSet& defects);
  /// A new attempt starts: the calls admitted since the last commit are forgotten.
  void begin_attempt() { attempt_.clear(); }
  /// The current attempt's calls entered history (its model turn was committed).
  void commit_attempt();
  /// The calls admitted in the current attempt, in delivered order.
  [[nodiscard]] const std::vector<AdmittedCall>& attempt() const { return attempt_; }
  void clear() {
    committed_.clear();
    attempt_.clear();
  }

 private:
  /// Whether a call of the conversation (committed or of this attempt) has `id` in history.
  [[nodiscard]] bool used(const std::string& id) const;
  std::vector<AdmittedCall> committed_;
  std::vector<AdmittedCall> attempt_;
};

}  // namespace rut
