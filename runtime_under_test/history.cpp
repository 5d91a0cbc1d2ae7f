// The committed conversation (see history.h).
#include "runtime_under_test/history.h"

namespace rut {

using nlohmann::json;

void History::add_user_text(const std::string& text) {
  contents_.push_back({{"role", "user"}, {"parts", json::array({{{"text", text}}})}});
}

void History::commit_model_turn(const std::vector<ModelPart>& parts) {
  json out = json::array();
  for (const ModelPart& p : parts) out.push_back(part_to_json(p));
  contents_.push_back({{"role", "model"}, {"parts", out}});
}

void History::add_function_responses(const std::vector<json>& responses) {
  if (responses.empty()) return;
  contents_.push_back({{"role", "user"}, {"parts", responses}});
}

bool History::remove_last_user_content() {
  if (contents_.empty() || contents_.back().value("role", "") != "user") return false;
  contents_.erase(contents_.end() - 1);
  return true;
}

int History::model_turns() const {
  int n = 0;
  for (const json& c : contents_) n += c.value("role", "") == "model" ? 1 : 0;
  return n;
}

}  // namespace rut
