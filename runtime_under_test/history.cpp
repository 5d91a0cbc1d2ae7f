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
  call_ids_.commit_attempt();
}

void History::give_history_ids(std::vector<ModelPart>& parts) const {
  const std::vector<AdmittedCall>& admitted = call_ids_.attempt();
  std::size_t k = 0;
  for (ModelPart& p : parts) {
    if (!p.call) continue;
    if (k < admitted.size()) p.call->id = admitted[k].history_id;
    ++k;
  }
}

std::optional<json> History::response_to(const std::string& history_id) const {
  for (const json& c : contents_) {
    if (c.value("role", "") != "user" || !c.contains("parts")) continue;
    for (const json& p : c["parts"]) {
      if (!p.is_object() || !p.contains("functionResponse")) continue;
      const json& fr = p["functionResponse"];
      if (fr.contains("id") && fr["id"] == history_id && fr.contains("response")) return fr["response"];
    }
  }
  return std::nullopt;
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
