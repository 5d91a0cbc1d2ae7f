// The pre-send pairing guard (see pairing_guard.h).
#include "runtime_under_test/pairing_guard.h"

#include <vector>

namespace rut {

using nlohmann::json;

namespace {

bool is_response(const json& part) {
  return part.is_object() && part.contains("functionResponse");
}

}  // namespace

int apply_pairing_guard(json& contents) {
  int dropped = 0;
  for (std::size_t i = 0; i < contents.size(); ++i) {
    json& content = contents[i];
    if (content.value("role", "") != "user" || !content.contains("parts")) continue;
    json& parts = content["parts"];
    bool any = false;
    for (const json& p : parts) any = any || is_response(p);
    if (!any) continue;

    // The calls of the preceding model turn (none when it is not a model content); contents[i - 1]
    // is not changed while they are read.
    std::vector<const json*> calls;
    if (i > 0 && contents[i - 1].value("role", "") == "model") {
      for (const json& p : contents[i - 1]["parts"]) {
        if (p.is_object() && p.contains("functionCall")) calls.push_back(&p["functionCall"]);
      }
    }
    std::vector<bool> answered(calls.size(), false);
    json kept = json::array();
    for (json& p : parts) {
      if (!is_response(p)) {
        kept.push_back(std::move(p));
        continue;
      }
      const json& fr = p["functionResponse"];
      const bool by_id = fr.contains("id") && fr["id"].is_string();
      bool matched = false;
      for (std::size_t c = 0; c < calls.size() && !matched; ++c) {
        if (answered[c]) continue;
        const json& call = *calls[c];
        const bool ok = by_id ? (call.contains("id") && call["id"] == fr["id"])
                              : call.value("name", "") == fr.value("name", "");
        if (ok) answered[c] = matched = true;
      }
      if (matched) {
        kept.push_back(std::move(p));
      } else {
        ++dropped;
      }
    }
    parts = std::move(kept);
    if (parts.empty()) {
      contents.erase(contents.begin() + static_cast<std::ptrdiff_t>(i));
      --i;
    }
  }
  return dropped;
}

}  // namespace rut
