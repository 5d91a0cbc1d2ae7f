// The committed conversation: a Gemini `contents` array (docs/POLICY.md "Turns and history").
// Model turns enter only when their attempt completes; function responses follow in one user
// content; a user content the server rejected with 400 can be taken back. The ids its calls carry
// are the conversation's own (call_ids.h, docs/POLICY.md "Call ids").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime_under_test/call_ids.h"
#include "runtime_under_test/gemini_codec.h"

namespace rut {

class History {
 public:
  /// Appends `{role:"user", parts:[{text}]}`.
  void add_user_text(const std::string& text);
  /// Appends the completed attempt's model content, parts in delivered order; the calls admitted
  /// since the attempt began are now the conversation's (call_ids()).
  void commit_model_turn(const std::vector<ModelPart>& parts);
  /// The conversation's call ids: admit each call of the attempt being read as it arrives.
  [[nodiscard]] CallIds& call_ids() { return call_ids_; }
  /// Gives the call parts of `parts` (the attempt's, in delivered order) the history ids their
  /// calls were admitted with: the k-th call part takes the k-th admitted call's id.
  void give_history_ids(std::vector<ModelPart>& parts) const;
  /// The `response` of the function response whose id is `history_id`, if history holds one: what
  /// a replay of that call is answered with.
  [[nodiscard]] std::optional<nlohmann::json> response_to(const std::string& history_id) const;
  /// Appends one user content holding `responses` (functionResponse parts); none when empty.
  void add_function_responses(const std::vector<nlohmann::json>& responses);
  /// Removes the last content when it is a user content (the request the server rejected).
  /// Returns whether one was removed.
  bool remove_last_user_content();
  /// Number of model contents = the turn index of the next request.
  [[nodiscard]] int model_turns() const;
  [[nodiscard]] const nlohmann::json& contents() const { return contents_; }
  [[nodiscard]] nlohmann::json& mutable_contents() { return contents_; }
  void clear() {
    contents_ = nlohmann::json::array();
    call_ids_.clear();
  }

 private:
  nlohmann::json contents_ = nlohmann::json::array();
  CallIds call_ids_;
};

}  // namespace rut
