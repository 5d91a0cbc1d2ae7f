// The coverage counts' shape and its sums; see coverage_counts.h.
#include "harness/report/coverage_counts.h"

#include <algorithm>

#include "harness/invariants.h"

namespace harness {

const std::vector<std::pair<std::string_view, std::string_view>>& coverage_count_groups() {
  static const std::vector<std::pair<std::string_view, std::string_view>> groups = {
      {"fault", "faults"},       {"finish", "finishes"},   {"status", "statuses"},
      {"provider", "providers"}, {"position", "positions"}, {"session", "sessions"},
      {"id", "ids"},             {"reasoning", "reasoning"}};
  return groups;
}

std::string coverage_warning_line(std::string_view invariant, std::string_view precondition) {
  return "invariant " + std::string(invariant) + " was never exercised: in no case " + std::string(precondition);
}

nlohmann::json merge_coverage_json(const std::vector<nlohmann::json>& parts) {
  nlohmann::json out;
  for (const auto& part : parts) {
    if (!part.is_object()) continue;
    if (out.is_null()) {
      out = part;
      continue;
    }
    out["cases"] = out.value("cases", 0) + part.value("cases", 0);
    for (const auto& [group, key] : coverage_count_groups()) {
      const std::string k(key);
      if (!part.contains(k) || !part[k].is_object()) continue;
      for (const auto& [name, n] : part[k].items()) {
        out[k][name] = out[k].value(name, 0) + (n.is_number_integer() ? n.get<int>() : 0);
      }
    }
    if (part.contains("invariants") && part["invariants"].is_object()) {
      for (const auto& [name, entry] : part["invariants"].items()) {
        auto& mine = out["invariants"][name];
        if (!mine.is_object()) mine = entry;
        else mine["cases"] = mine.value("cases", 0) + entry.value("cases", 0);
      }
    }
  }
  if (out.is_null()) return out;
  nlohmann::json unexercised = nlohmann::json::array();
  if (out.contains("invariants") && out["invariants"].is_object()) {
    // Catalogue order first, then any name this build does not know (a newer shard's).
    std::vector<std::string> names;
    for (const auto& info : invariant_catalogue()) names.emplace_back(info.name);
    for (const auto& [name, entry] : out["invariants"].items()) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
    for (const auto& name : names) {
      if (out["invariants"].contains(name) && out["invariants"][name].value("cases", 0) == 0) unexercised.push_back(name);
    }
  }
  out["unexercised"] = unexercised;
  return out;
}

std::vector<std::string> coverage_warnings(const nlohmann::json& coverage) {
  std::vector<std::string> out;
  if (!coverage.is_object() || !coverage.contains("unexercised")) return out;
  for (const auto& name : coverage["unexercised"]) {
    const auto& entry = coverage["invariants"][name.get<std::string>()];
    out.push_back(coverage_warning_line(name.get<std::string>(), entry.value("precondition", "")));
  }
  return out;
}

}  // namespace harness
