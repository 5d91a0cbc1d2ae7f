// Request validation as the real Gemini API judges it (see request_validator.h).
#include "mock_server/request_validator.h"

#include "mock_server/gemini_format.h"

namespace mock::gemini {
namespace {

Rejection reject(std::string message, bool pairing = false) {
  return Rejection{400, std::move(message), pairing};
}

/// The API's protobuf JSON front end names a value of the wrong type with the field's path, its
/// proto type and the value as sent, without the "Invalid JSON payload received." prefix of its
/// other parse errors: `Invalid value at 'message.android.data[2].value' (TYPE_STRING), 1` is a
/// real answer of the same front end (esl/MongoosePush#123), and Gemini answers
/// `Invalid value at '…any_of[1].type' (type.googleapis.com/google.ai.generativelanguage.v1beta.Type), "null"`
/// (simonw/llm-gemini#49). A list where a single value belongs is `Proto field is not repeating,
/// cannot start list.` (Mirrowel/LLM-API-Key-Proxy#149, prism-php/prism#274).
std::string invalid_value(const std::string& path, std::string_view proto_type,
                          const nlohmann::json& value) {
  return "Invalid value at '" + path + "' (" + std::string(proto_type) + "), " + value.dump();
}

constexpr std::string_view kPartType = "type.googleapis.com/google.ai.generativelanguage.v1beta.Part";

/// Checks one entry of a content's `parts` (at `path`): an object whose `text`, when present, is a
/// string.
std::optional<Rejection> check_part(const nlohmann::json& part, const std::string& path) {
  if (!part.is_object()) return reject(invalid_value(path, kPartType, part));
  if (auto text = part.find("text"); text != part.end() && !text->is_null() && !text->is_string()) {
    if (text->is_array()) {
      return reject("Invalid JSON payload received. Unknown name \"text\" at '" + path +
                    "': Proto field is not repeating, cannot start list.");
    }
    return reject(invalid_value(path + ".text", "TYPE_STRING", *text));
  }
  return std::nullopt;
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
  nlohmann::json j = parse_json(body);
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
    if (parts != c.end() && !parts->is_null() && !parts->is_array()) {
      return reject("Invalid JSON payload received. Invalid value at '" + at +
                    ".parts', expected an array");
    }
    if (parts == c.end() || parts->is_null() || parts->empty()) {
      return reject("* GenerateContentRequest." + at + ".parts: contents.parts must not be empty.");
    }
    for (std::size_t k = 0; k < parts->size(); ++k) {
      if (auto r = check_part((*parts)[k], at + ".parts[" + std::to_string(k) + "]")) return r;
    }
  }
  if (auto r = check_pairing(*contents)) return r;
  if (parsed) *parsed = std::move(j);
  return std::nullopt;
}

}  // namespace mock::gemini
