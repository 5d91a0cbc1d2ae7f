// The committed conversation: a Gemini `contents` array (docs/POLICY.md "Turns and history").
// Model turns enter only when their attempt completes; function responses follow in one user
// content; a user content the server rejected with 400 can be taken back.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "runtime_under_test/gemini_codec.h"

namespace rut {

class History {
 public:
  /// Appends `{role:"user", parts:[{text}]}`.
  void add_user_text(const std::string& text);
  /// Appends the completed attempt's model content, parts in delivered order.
  void commit_model_turn(const std::vector<ModelPart>& parts);
  /// Appends one user content holding `responses` (functionResponse parts); none when empty.
  void add_function_responses(const std::vector<nlohmann::json>& responses);
  /// Removes the last content when it is a user content (the request the server rejected).
  /// Returns whether one was removed.
  bool remove_last_user_content();
  /// Number of model contents = the turn index of the next request.
  [[nodiscard]] int model_turns() const;
  [[nodiscard]] const nlohmann::json& contents() const { return contents_; }
  [[nodiscard]] nlohmann::json& mutable_contents() { return contents_; }
  void clear() { contents_ = nlohmann::json::array(); }

 private:
  nlohmann::json contents_ = nlohmann::json::array();
};

}  // namespace rut
