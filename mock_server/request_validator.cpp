// Request validation as the real Gemini API judges it (see request_validator.h).
#include "mock_server/request_validator.h"

#include "mock_server/gemini_format.h"

namespace mock::gemini {
namespace {

Rejection reject(std::string message, bool pairing = false) {
  return Rejection{400, std::move(message), pairing};
}

}  // namespace

std::optional<Rejection> check_pairing(const nlohmann::json& contents) {
  const auto summary = summarize_contents(contents);
  for (std::size_t i = 0; i < summary.size(); ++i) {
    const auto& c = summary[i];
    if (c.role == "model" && !c.calls.empty()) {
      if (i == 0 || summary[i - 1].role != "user") {
        return reject(std::string(kCallTurnOrderMessage), true);
      }
      if (i + 1 >= summary.size() || summary[i + 1].role != "user" ||
          summary[i + 1].responses.size() != c.calls.size()) {
        return reject(std::string(kResponseCountMessage), true);
      }
    }
    if (c.role != "model" && !c.responses.empty()) {
      if (i == 0 || summary[i - 1].role != "model" || summary[i - 1].calls.empty()) {
        return reject(std::string(kResponseCountMessage), true);
      }
    }
  }
  return std::nullopt;
}

std::optional<Rejection> validate_request(std::string_view body, nlohmann::json* parsed) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return reject("Invalid JSON payload received. Unexpected token.");
  }
  if (!j.is_object()) {
    return reject("Invalid JSON payload received. Expected an object at the top level.");
  }
  auto contents = j.find("contents");
  if (contents == j.end() || contents->is_null() ||
      (contents->is_array() && contents->empty())) {
    return reject("* GenerateContentRequest.contents: contents is not specified");
  }
  if (!contents->is_array()) {
    return reject("Invalid JSON payload received. Invalid value at 'contents', expected an array");
  }
  for (std::size_t i = 0; i < contents->size(); ++i) {
    const auto& c = (*contents)[i];
    const std::string at = "contents[" + std::to_string(i) + "]";
    if (!c.is_object()) {
      return reject("Invalid JSON payload received. Invalid value at '" + at +
                    "', expected an object");
    }
    if (auto role = c.find("role"); role != c.end()) {
      if (!role->is_string() || (*role != "user" && *role != "model")) {
        return reject("Please use a valid role: user, model.");
      }
    }
    auto parts = c.find("parts");
    if (parts == c.end() || !parts->is_array() || parts->empty()) {
      return reject("* GenerateContentRequest." + at + ".parts: contents.parts must not be empty.");
    }
  }
  if (auto r = check_pairing(*contents)) return r;
  if (parsed) *parsed = std::move(j);
  return std::nullopt;
}

}  // namespace mock::gemini
