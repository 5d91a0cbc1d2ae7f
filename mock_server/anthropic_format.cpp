// The Anthropic Messages wire format: request decoding and validation, SSE events, envelopes and
// the non-streaming Message body (see anthropic_format.h).
#include "mock_server/anthropic_format.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "mock_server/json_text.h"

namespace mock::anthropic {
namespace {

using ojson = nlohmann::ordered_json;
using nlohmann::json;

constexpr std::string_view kPath = "/v1/messages";

std::string join_ids(const std::vector<std::string>& ids) {
  std::string out;
  for (const auto& id : ids) out += (out.empty() ? "" : ", ") + id;
  return out;
}

/// A call's arguments as the compact JSON text the API streams in `partial_json`.
std::string args_text(const CallEvent& c) {
  return c.args.is_null() ? std::string("{}") : c.args.dump();
}

ojson args_object(const CallEvent& c) {
  return c.args.is_null() ? ojson::object() : ojson(c.args);
}

/// The usage object of a message as live: {input_tokens, cache_creation_input_tokens 0,
/// cache_read_input_tokens 0, cache_creation {ephemeral_5m_input_tokens 0,
/// ephemeral_1h_input_tokens 0}, output_tokens, service_tier "standard"} (anthropic-sdk-python
/// src/anthropic/types/usage.py; a live message_start of 2026-05 for claude-haiku-4-5 carries these
/// members in this order). `message_start` and a unary message carry it; `message_delta` carries
/// the cumulative counts without the tier (usage_delta).
ojson usage(int output_tokens) {
  ojson u = ojson::object();
  u["input_tokens"] = kInputTokens;
  u["cache_creation_input_tokens"] = 0;
  u["cache_read_input_tokens"] = 0;
  u["cache_creation"] = ojson{{"ephemeral_5m_input_tokens", 0}, {"ephemeral_1h_input_tokens", 0}};
  u["output_tokens"] = output_tokens;
  u["service_tier"] = "standard";
  return u;
}

ojson text_block(const std::string& text) {
  ojson b = ojson::object();
  b["type"] = "text";
  b["text"] = text;
  return b;
}

ojson tool_use_block(const CallEvent& c, ojson input) {
  ojson b = ojson::object();
  b["type"] = "tool_use";
  b["id"] = c.id;
  b["name"] = c.name;
  b["input"] = std::move(input);
  return b;
}

std::string retry_after_value(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) seconds = 0;
  if (seconds == std::floor(seconds) && seconds < 1e15) {
    return std::to_string(static_cast<long long>(seconds));
  }
  return json(seconds).dump();
}

bool retryable_status(int status) {
  return status == 408 || status == 409 || status == 429 || status == 500 || status == 502 ||
         status == 503 || status == 504 || status == 529;
}

Rejection shape_error(std::string message) { return Rejection{400, std::move(message), false}; }

Rejection pairing_error(std::string message) { return Rejection{400, std::move(message), true}; }

std::string str_field(const json& o, std::string_view key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// The content blocks of a message: an array content itself (not copied: every request's history
/// is read this way several times), a string content as one text block made in `holder`, anything
/// else (absent included) no block. Valid while `content` and `holder` are.
const json& blocks_of(const json& content, json& holder) {
  if (content.is_array()) return content;
  holder = content.is_string() ? json::array({json{{"type", "text"}, {"text", content}}}) : json::array();
  return holder;
}

/// A message's `content` member, or null when it has none.
const json& content_of(const json& message) {
  static const json kNone;
  if (!message.is_object()) return kNone;
  auto it = message.find("content");
  return it != message.end() ? *it : kNone;
}

bool is_block(const json& b, std::string_view type) {
  if (!b.is_object()) return false;
  const auto it = b.find(std::string_view("type"));
  return it != b.end() && it->is_string() && it->get_ref<const std::string&>() == type;
}

/// A tool_result's `content` as a functionResponse `response`: a string holding a JSON object is
/// that object (the reference runtime sends `response.dump()`), anything else `{"content": …}`.
/// A tool_result with `"is_error": true` (the Messages API's flag for a failed tool) adds
/// `"isError": true`, MCP's name for it, so the view says the client reported a failure.
json response_of(const json& block) {
  json out = json::object();
  auto it = block.find("content");
  if (it != block.end()) {
    json parsed = it->is_string() ? parse_json(it->get<std::string>()) : json();
    out = parsed.is_object() ? std::move(parsed) : json{{"content", *it}};
  }
  const auto flag = block.find("is_error");
  if (flag != block.end() && flag->is_boolean() && flag->get<bool>()) out["isError"] = true;
  return out;
}

/// The neutral view of validated `messages` (see wire_format.h): user text and tool_result blocks
/// become text and functionResponse parts, assistant text and tool_use blocks text and
/// functionCall parts, in block order; other blocks (thinking, image, …) are left out. Text and
/// tool_use inputs are moved out of `messages`, which is left valid but without them (read after
/// check_pairing, which reads neither).
json neutral_contents(json& messages) {
  json contents = json::array();
  json previous_calls = json::object();  // tool_use id → name, of the previous assistant message
  for (json& m : messages) {
    if (!m.is_object()) continue;
    // A mid-conversation system message is an instruction, not a turn: left out of the view.
    if (str_field(m, "role") == "system") continue;
    const bool model = str_field(m, "role") == "assistant";
    json parts = json::array();
    json calls = json::object();
    // The blocks as blocks_of gives them, but writable: an array content itself, else holder.
    json holder;
    json* blocks = &holder;
    if (const auto content = m.find(std::string_view("content")); content != m.end() && content->is_array()) {
      blocks = &*content;
    } else {
      blocks_of(content_of(m), holder);
    }
    for (json& b : *blocks) {
      if (is_block(b, "text")) {
        const auto text = b.find(std::string_view("text"));
        json part = json::object();
        part["text"] = text != b.end() && text->is_string() ? std::move(text->get_ref<std::string&>()) : std::string();
        parts.push_back(std::move(part));
      } else if (model && is_block(b, "tool_use")) {
        const auto input = b.find(std::string_view("input"));
        json call = json::object();
        call["name"] = str_field(b, "name");
        call["args"] = input != b.end() ? std::move(*input) : json::object();
        if (const auto id = b.find(std::string_view("id")); id != b.end() && id->is_string()) call["id"] = *id;
        calls[str_field(b, "id")] = str_field(b, "name");
        parts.push_back({{"functionCall", std::move(call)}});
      } else if (!model && is_block(b, "tool_result")) {
        const std::string id = str_field(b, "tool_use_id");
        auto name = previous_calls.find(id);
        json fr = {{"name", name != previous_calls.end() ? name->get<std::string>() : std::string()},
                   {"id", id},
                   {"response", response_of(b)}};
        parts.push_back({{"functionResponse", std::move(fr)}});
      }
    }
    contents.push_back({{"role", model ? "model" : "user"}, {"parts", std::move(parts)}});
    previous_calls = std::move(calls);
  }
  return contents;
}

bool is_integer(const json& j) {
  return j.is_number_integer() || (j.is_number_float() && std::isfinite(j.get<double>()) &&
                                   j.get<double>() == std::floor(j.get<double>()));
}

/// Checks one content block (at `at`, e.g. "messages.1.content.0"). The API validates blocks as a
/// union tagged by `type` and names a field inside one by the tag: its real answer to a tool_use
/// input that is not an object is "messages.61.content.0.tool_use.input: Input should be a valid
/// dictionary" (anthropics/claude-code#6696, anthropic-sdk-typescript#648). The other messages
/// follow the same (pydantic) wording and are not verified.
std::optional<Rejection> check_block(const json& block, const std::string& at) {
  if (!block.is_object()) {
    return shape_error(at + ": Input should be a valid dictionary or object to extract fields from");
  }
  auto type = block.find("type");
  if (type == block.end() || !type->is_string()) {
    return shape_error(at + ": Unable to extract tag using discriminator 'type'");
  }
  const std::string& tag = type->get_ref<const std::string&>();
  auto field = [&](const char* key) { return at + "." + tag + "." + key; };
  if (tag == "text") {
    if (!block.contains("text")) return shape_error(field("text") + ": Field required");
    if (!block["text"].is_string()) return shape_error(field("text") + ": Input should be a valid string");
  } else if (tag == "tool_use") {
    for (const char* key : {"id", "name"}) {
      if (!block.contains(key)) return shape_error(field(key) + ": Field required");
      if (!block[key].is_string()) return shape_error(field(key) + ": Input should be a valid string");
    }
    if (!block.contains("input")) return shape_error(field("input") + ": Field required");
    if (!block["input"].is_object()) return shape_error(field("input") + ": Input should be a valid dictionary");
  } else if (tag == "tool_result") {
    if (!block.contains("tool_use_id")) return shape_error(field("tool_use_id") + ": Field required");
    if (!block["tool_use_id"].is_string()) {
      return shape_error(field("tool_use_id") + ": Input should be a valid string");
    }
  }
  return std::nullopt;
}

/// Placement of mid-conversation `role: "system"` messages (platform.claude.com, "Mid-conversation
/// system messages"): never messages[0] (rejected as a role error in check_shape), right after a
/// user message (or an assistant message ending in a server_tool_use block), and either the last
/// message or followed by an assistant message. claude-code 2.1.332 sends one as messages[1]. The
/// rules are the documented ones; the wording of these two 400 messages is not verified.
std::optional<Rejection> check_system_placement(const json& messages) {
  for (std::size_t i = 1; i < messages.size(); ++i) {
    if (str_field(messages[i], "role") != "system") continue;
    const std::string at = "messages." + std::to_string(i);
    const json& prev = messages[i - 1];
    const std::string prev_role = str_field(prev, "role");
    json holder;
    const json& prev_blocks = blocks_of(prev["content"], holder);
    const bool after_server_tool = prev_role == "assistant" && !prev_blocks.empty() &&
                                   is_block(prev_blocks.back(), "server_tool_use");
    if (prev_role != "user" && !after_server_tool) {
      return shape_error(at + ": a system message must immediately follow a user message");
    }
    if (i + 1 < messages.size() && str_field(messages[i + 1], "role") != "assistant") {
      return shape_error(at + ": a system message must be the last message or be followed by an "
                              "assistant message");
    }
  }
  return std::nullopt;
}

/// Checks the request's shape; nullopt when `messages` can be decoded.
std::optional<Rejection> check_shape(const json& body) {
  if (!body.is_object()) return shape_error("invalid request: the body is not a JSON object");
  if (!body.contains("model")) return shape_error("model: Field required");
  if (!body.contains("max_tokens")) return shape_error("max_tokens: Field required");
  if (!body.contains("messages")) return shape_error("messages: Field required");
  if (!is_integer(body["max_tokens"])) return shape_error("max_tokens: Input should be a valid integer");
  const json& messages = body["messages"];
  if (!messages.is_array()) return shape_error("messages: Input should be a valid list");
  if (messages.empty()) return shape_error("messages: at least one message is required");
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    const std::string at = "messages." + std::to_string(i);
    if (!m.is_object()) return shape_error(at + ": Input should be a valid dictionary");
    const std::string role = str_field(m, "role");
    // `system` is valid past messages[0] (mid-conversation system messages; its placement is
    // checked in check_system_placement once every message has a valid shape).
    if (role != "user" && role != "assistant" && (role != "system" || i == 0)) {
      return shape_error(at + ".role: Input should be 'user' or 'assistant'");
    }
    if (!m.contains("content")) return shape_error(at + ".content: Field required");
    const json& content = m["content"];
    if (!content.is_string() && !content.is_array()) {
      return shape_error(at + ".content: Input should be a valid list");
    }
    if (content.is_array()) {
      for (std::size_t k = 0; k < content.size(); ++k) {
        if (auto r = check_block(content[k], at + ".content." + std::to_string(k))) return r;
        if (role == "system" && !is_block(content[k], "text")) {
          return shape_error(at + ".content." + std::to_string(k) +
                             ": a system message may only contain text blocks");
        }
      }
    }
    // Empty content: real answers "messages.0: all messages must have non-empty content except for
    // the optional final assistant message" (anthropics/claude-code#6774, #4416).
    const bool final_assistant = i + 1 == messages.size() && role == "assistant";
    const bool empty = content.is_string() ? content.get_ref<const std::string&>().empty() : content.empty();
    if (empty && !final_assistant) {
      return shape_error(at + ": all messages must have non-empty content except for the optional "
                              "final assistant message");
    }
  }
  if (str_field(messages[0], "role") != "user") {
    return shape_error("messages: first message must use the \"user\" role");
  }
  return check_system_placement(messages);
}

/// Two tool_result blocks for one tool_use id in a user message; `m` is the second. The real answer
/// (quoted in many clients' handling of it, e.g. "messages.148.content.1: each tool_use must have a
/// single result. Found multiple `tool_result` blocks with id: toolu_01TPs…").
std::string duplicate_tool_result_message(std::size_t n, std::size_t m, const std::string& id) {
  return "messages." + std::to_string(n) + ".content." + std::to_string(m) +
         ": each tool_use must have a single result. Found multiple `tool_result` blocks with id: " + id;
}

/// Checks tool_use / tool_result pairing, message by message in order: duplicate tool_use ids,
/// then tool_use ids of an assistant message without a tool_result in the next message, and
/// tool_result ids of a user message no tool_use of the previous message has.
std::optional<Rejection> check_pairing(const json& messages) {
  std::set<std::string> seen;  // tool_use ids of earlier blocks
  std::vector<std::string> previous_uses;  // of the previous message when it is the assistant's
  for (std::size_t n = 0; n < messages.size(); ++n) {
    const json& m = messages[n];
    if (str_field(m, "role") == "system") continue;  // placed after a user message: no pairing role
    json holder;
    const json& blocks = blocks_of(m["content"], holder);
    if (str_field(m, "role") == "assistant") {
      std::vector<std::string> uses;
      for (std::size_t k = 0; k < blocks.size(); ++k) {
        if (!is_block(blocks[k], "tool_use")) continue;
        const std::string id = str_field(blocks[k], "id");
        if (!seen.insert(id).second) return pairing_error(duplicate_tool_use_id_message(n, k));
        uses.push_back(id);
      }
      if (!uses.empty()) {
        std::set<std::string> answered;
        if (n + 1 < messages.size() && str_field(messages[n + 1], "role") == "user") {
          json next_holder;
          for (const json& b : blocks_of(messages[n + 1]["content"], next_holder)) {
            if (is_block(b, "tool_result")) answered.insert(str_field(b, "tool_use_id"));
          }
        }
        std::vector<std::string> missing;
        for (const auto& id : uses) {
          if (!answered.count(id)) missing.push_back(id);
        }
        if (!missing.empty()) return pairing_error(missing_tool_result_message(n, missing));
      }
      previous_uses = std::move(uses);
      continue;
    }
    std::set<std::string> results;  // tool_use_ids answered so far in this message
    for (std::size_t k = 0; k < blocks.size(); ++k) {
      if (!is_block(blocks[k], "tool_result")) continue;
      const std::string id = str_field(blocks[k], "tool_use_id");
      if (!results.insert(id).second) return pairing_error(duplicate_tool_result_message(n, k, id));
    }
    std::vector<std::string> unexpected;
    std::size_t first = 0;
    for (std::size_t k = 0; k < blocks.size(); ++k) {
      if (!is_block(blocks[k], "tool_result")) continue;
      const std::string id = str_field(blocks[k], "tool_use_id");
      if (std::find(previous_uses.begin(), previous_uses.end(), id) != previous_uses.end()) continue;
      if (unexpected.empty()) first = k;
      unexpected.push_back(id);
    }
    if (!unexpected.empty()) {
      return pairing_error(unexpected_tool_use_id_message(n, first, unexpected));
    }
    previous_uses.clear();
  }
  return std::nullopt;
}

}  // namespace

std::string_view error_type(int status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 402: return "billing_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 409: return "conflict_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503:
    case 529: return "overloaded_error";
    case 504: return "timeout_error";
    default: return status >= 400 && status < 500 ? "invalid_request_error" : "api_error";
  }
}

std::string_view default_message(int status) {
  const std::string_view type = error_type(status);
  if (status == 401) return "invalid x-api-key";
  if (type == "invalid_request_error") return "Invalid request";
  if (type == "billing_error") return "Billing error";
  if (type == "permission_error") return "Permission denied";
  if (type == "not_found_error") return "Not found";
  if (type == "conflict_error") return "Conflict";
  if (type == "request_too_large") return "Request exceeds the maximum allowed number of bytes.";
  if (type == "rate_limit_error") return "Rate limited";
  if (type == "overloaded_error") return "Overloaded";
  if (type == "timeout_error") return "Request timeout";
  return "Internal server error";
}

std::string error_body(int status, std::string_view message) {
  ojson e = ojson::object();
  e["type"] = std::string(error_type(status));
  e["message"] = std::string(message);
  ojson body = ojson::object();
  body["type"] = "error";
  body["error"] = std::move(e);
  return body.dump();
}

std::vector<std::pair<std::string, std::string>> error_headers(int status,
                                                               std::optional<double> retry_after_s) {
  std::vector<std::pair<std::string, std::string>> headers;
  if (retry_after_s) headers.emplace_back("retry-after", retry_after_value(*retry_after_s));
  headers.emplace_back("x-should-retry", retryable_status(status) ? "true" : "false");
  return headers;
}

void add_answer_headers(std::size_t journal_index, int status, std::vector<std::pair<std::string, std::string>>& headers) {
  static constexpr char kBase58[] = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
  std::uint64_t z = journal_index + 0x9e3779b97f4a7c15ULL;  // splitmix64: differs per request
  auto next = [&z] {
    z += 0x9e3779b97f4a7c15ULL;
    std::uint64_t r = z;
    r = (r ^ (r >> 30)) * 0xbf58476d1ce4e5b9ULL;
    r = (r ^ (r >> 27)) * 0x94d049bb133111ebULL;
    return r ^ (r >> 31);
  };
  std::string id = "req_011C";
  for (int i = 0; i < 20; ++i) id += kBase58[next() % 58];
  headers.emplace_back("request-id", std::move(id));
  headers.emplace_back("anthropic-organization-id", "5c0ffee0-4d1c-4c0b-9a5e-686963637570");
  const bool limited = status == 429;
  struct Family {
    const char* name;
    std::uint64_t limit;
    std::uint64_t per_request;
  };
  for (const Family& f : {Family{"requests", 4000, 1}, Family{"tokens", 480000, 1000},
                          Family{"input-tokens", 400000, 900}, Family{"output-tokens", 80000, 100}}) {
    const std::string prefix = std::string("anthropic-ratelimit-") + f.name;
    const std::uint64_t used = f.per_request * (1 + journal_index % (f.limit / f.per_request));
    headers.emplace_back(prefix + "-limit", std::to_string(f.limit));
    headers.emplace_back(prefix + "-remaining", limited ? "0" : std::to_string(f.limit - used));
    headers.emplace_back(prefix + "-reset", "2026-01-01T00:00:00Z");
  }
}

std::string message_id(std::size_t journal_index) {
  return "msg_hiccup_" + std::to_string(journal_index);
}

std::string tool_use_id(std::size_t journal_index, int call_index) {
  return "toolu_hiccup_" + std::to_string(journal_index) + "_" + std::to_string(call_index);
}

std::string_view stop_reason(FinishReason reason, bool delivered_calls) {
  switch (reason) {
    case FinishReason::kStop: return delivered_calls ? "tool_use" : "end_turn";
    case FinishReason::kMaxTokens: return "max_tokens";
    case FinishReason::kContentFilter: return "refusal";
    case FinishReason::kMalformedCall: return "";
  }
  return "end_turn";
}

std::string stream_error_event(int status) {
  return "event: error\ndata: " + error_body(status, default_message(status)) + "\n\n";
}

std::string malformed_event() {
  return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":\n\n";
}

std::string missing_tool_result_message(std::size_t n, const std::vector<std::string>& ids) {
  return "messages." + std::to_string(n) +
         ": `tool_use` ids were found without `tool_result` blocks immediately after: " +
         join_ids(ids) +
         ". Each `tool_use` block must have a corresponding `tool_result` block in the next message.";
}

std::string unexpected_tool_use_id_message(std::size_t n, std::size_t m,
                                           const std::vector<std::string>& ids) {
  return "messages." + std::to_string(n) + ".content." + std::to_string(m) +
         ": unexpected `tool_use_id` found in `tool_result` blocks: " + join_ids(ids) +
         ". Each `tool_result` block must have a corresponding `tool_use` block in the previous "
         "message.";
}

std::string duplicate_tool_use_id_message(std::size_t n, std::size_t m) {
  return "messages." + std::to_string(n) + ".content." + std::to_string(m) +
         ": `tool_use` ids must be unique";
}

std::string thinking_first_message(std::size_t n, std::string_view found) {
  return "messages." + std::to_string(n) + ".content.0.type: Expected `thinking` or `redacted_thinking`, but found `" +
         std::string(found) +
         "`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the "
         "lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous "
         "turns. To avoid this requirement, disable `thinking`. Please consult our documentation at "
         "https://docs.claude.com/en/docs/build-with-claude/extended-thinking";
}

/// The API's 400 for a `redacted_thinking` block sent back changed (a `data` no answer carried).
/// Source: the message users quote (maximhq/bifrost#5093; docs.claude.com "Extended thinking",
/// "Preserving thinking blocks").
std::string modified_thinking_message(std::size_t n, std::size_t m) {
  return "messages." + std::to_string(n) + ".content." + std::to_string(m) +
         ": `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified. These blocks "
         "must remain as they were in the original response.";
}

std::string invalid_signature_message(std::size_t n, std::size_t m) {
  return "messages." + std::to_string(n) + ".content." + std::to_string(m) + ": Invalid `signature` in `thinking` block";
}

std::optional<Rejection> check_thinking(std::string_view body, const std::vector<ReasoningCheck>& checks) {
  const json parsed = parse_json(body);
  if (!parsed.is_object() || !parsed.contains("messages") || !parsed["messages"].is_array()) return std::nullopt;
  const json& messages = parsed["messages"];
  // The neutral view's contents are the messages but mid-conversation system messages
  // (neutral_contents): content k is message at[k].
  std::vector<std::size_t> at;
  std::size_t final_assistant = messages.size();
  for (std::size_t n = 0; n < messages.size(); ++n) {
    if (!messages[n].is_object()) continue;
    const std::string role = str_field(messages[n], "role");
    if (role == "system") continue;
    at.push_back(n);
    if (role == "assistant") final_assistant = n;
  }
  for (const ReasoningCheck& check : checks) {
    if (check.content < 0 || static_cast<std::size_t>(check.content) >= at.size()) continue;
    const std::size_t n = at[static_cast<std::size_t>(check.content)];
    json holder;
    const json& blocks = blocks_of(content_of(messages[n]), holder);
    // The thinking blocks sent back must be the ones delivered, unchanged: the signature covers
    // the thinking text (docs.claude.com "Extended thinking": blocks must be passed back complete
    // and unmodified).
    for (std::size_t m = 0; m < blocks.size(); ++m) {
      if (is_block(blocks[m], "redacted_thinking")) {
        // Redacted thinking goes back as it came: its `data`, unchanged.
        const std::string data = str_field(blocks[m], "data");
        const bool known = std::any_of(check.delivered.begin(), check.delivered.end(), [&](const auto& d) {
          return d.second.redacted && d.second.signature == data;
        });
        if (!known) return pairing_error(modified_thinking_message(n, m));
        continue;
      }
      if (!is_block(blocks[m], "thinking")) continue;
      const std::string signature = str_field(blocks[m], "signature");
      const std::string thinking = str_field(blocks[m], "thinking");
      const bool known = std::any_of(check.delivered.begin(), check.delivered.end(), [&](const auto& d) {
        return !d.second.redacted && d.second.signature == signature && d.second.text == thinking;
      });
      if (!known) return pairing_error(invalid_signature_message(n, m));
    }
    // The final assistant message must start with a thinking block when one of its calls was
    // delivered after thinking (earlier turns' thinking may be left out: the API strips it).
    if (n == final_assistant && !check.calls.empty()) {
      const bool starts_with_thinking =
          !blocks.empty() && (is_block(blocks[0], "thinking") || is_block(blocks[0], "redacted_thinking"));
      if (!starts_with_thinking) {
        const std::string found = blocks.empty() ? std::string("nothing")
                                  : blocks[0].is_object() ? str_field(blocks[0], "type") : std::string("?");
        return pairing_error(thinking_first_message(n, found));
      }
    }
  }
  return std::nullopt;
}

DecodedRequest decode_messages(std::string_view body) {
  DecodedRequest out;
  json parsed = parse_json(body);
  if (parsed.is_object()) {
    out.model = str_field(parsed, "model");
    out.streaming = parsed.contains("stream") && parsed["stream"].is_boolean() &&
                    parsed["stream"].get<bool>();
  }
  if (auto rejection = check_shape(parsed)) {
    out.rejection = std::move(*rejection);
    // Keep what can be decoded, for the journal.
    if (parsed.is_object() && parsed.contains("messages") && parsed["messages"].is_array()) {
      out.contents = neutral_contents(parsed["messages"]);
    }
    return out;
  }
  json& messages = parsed["messages"];
  out.rejection = check_pairing(messages);
  out.contents = neutral_contents(messages);
  return out;
}

}  // namespace mock::anthropic

// ---- The WireFormat ---------------------------------------------------------------------------

namespace mock::anthropic {
namespace {

/// Writes each event's JSON text directly (json_text.h), member for member as the API orders
/// them; mock_server/testdata/encoder_bytes.txt pins the bytes.
class AnthropicEncoder final : public StreamEncoder {
 public:
  explicit AnthropicEncoder(ResponseContext ctx) : ctx_(std::move(ctx)) {}

  std::string open() override {
    std::string s = sse("message_start", [&](json_text::Writer& w) {
      w.key("message").begin_object()
          .member("id", message_id(ctx_.journal_index))
          .member("type", "message")
          .member("role", "assistant")
          .key("content").begin_array().end_array()
          .member("model", ctx_.model)
          .member_null("stop_reason")
          .member_null("stop_sequence")
          .key("usage").begin_object()
          .member("input_tokens", kInputTokens)
          .member("cache_creation_input_tokens", 0)
          .member("cache_read_input_tokens", 0)
          .key("cache_creation").begin_object()
          .member("ephemeral_5m_input_tokens", 0).member("ephemeral_1h_input_tokens", 0)
          .end_object()
          .member("output_tokens", 1)
          .member("service_tier", "standard")
          .end_object()
          .end_object();
    });
    return s;
  }

  std::vector<std::string> event_units(const Event& event, int /*call_index*/) override {
    if (auto* r = std::get_if<ReasoningEvent>(&event)) {
      // A thinking block, as extended thinking streams one: content_block_start with empty
      // `thinking` and `signature`, the text as a thinking_delta, then one signature_delta. The
      // block stays open until the next event (content_block_stop), so a fault right after it ends
      // the stream inside the block, as a live overload does.
      std::string s = close_text() + close_thinking();
      open_thinking_ = next_index_++;
      if (r->redacted) {
        // Redacted thinking arrives whole in its content_block_start, `data` and no deltas
        // (anthropic-sdk-typescript RedactedThinkingBlock; maximhq/bifrost#5093); it stays open
        // until the next event as a thinking block does.
        s += block_start(open_thinking_, [r](json_text::Writer& w) {
          w.key("content_block").begin_object().member("type", "redacted_thinking").member("data", r->signature).end_object();
        });
        return {s};
      }
      s += block_start(open_thinking_, [](json_text::Writer& w) {
        w.key("content_block").begin_object().member("type", "thinking").member("thinking", "").member("signature", "").end_object();
      });
      s += block_event("content_block_delta", open_thinking_, [r](json_text::Writer& w) {
        w.key("delta").begin_object().member("type", "thinking_delta").member("thinking", r->text).end_object();
      });
      s += block_event("content_block_delta", open_thinking_, [r](json_text::Writer& w) {
        w.key("delta").begin_object().member("type", "signature_delta").member("signature", r->signature).end_object();
      });
      return {s};
    }
    if (auto* t = std::get_if<TextEvent>(&event)) {
      // A run of text events is one text block, as the API streams a run of text: the first
      // opens it, each is one text_delta. A call or a finish closes it (close_text); a fault, or
      // the in-stream error of a malformed-call finish, ends the stream inside it, with no
      // content_block_stop, as a live overload does.
      std::string s = close_thinking();
      if (open_text_ < 0) {
        open_text_ = next_index_++;
        s += block_start(open_text_, [](json_text::Writer& w) {
          w.key("content_block").begin_object().member("type", "text").member("text", "").end_object();
        });
      }
      s += block_event("content_block_delta", open_text_, [t](json_text::Writer& w) {
        w.key("delta").begin_object().member("type", "text_delta").member("text", t->text).end_object();
      });
      return {s};
    }
    if (auto* c = std::get_if<CallEvent>(&event)) {
      std::string start = close_text() + close_thinking();
      const int index = next_index_++;
      delivered_calls_ = true;
      std::vector<std::string> units;
      units.push_back(start + block_start(index, [c](json_text::Writer& w) {
        w.key("content_block").begin_object()
            .member("type", "tool_use")
            .member("id", c->id)
            .member("name", c->name)
            .key("input").begin_object().end_object()
            .end_object();
      }));
      for (const std::string& piece : split_fragments(args_text(*c), std::max(c->fragments, 1))) {
        units.push_back(block_event("content_block_delta", index, [&piece](json_text::Writer& w) {
          w.key("delta").begin_object().member("type", "input_json_delta").member("partial_json", piece).end_object();
        }));
      }
      units.push_back(block_event("content_block_stop", index, [](json_text::Writer&) {}));
      return units;
    }
    const auto reason = std::get<FinishEvent>(event).reason;
    if (reason == FinishReason::kMalformedCall) return {stream_error_event(kMalformedCallStatus)};
    std::string s = close_text() + close_thinking();
    if (open_block_) {
      // The token limit cut the tool_use block mid-input: the API still closes every block it
      // started before message_delta (stop_reason max_tokens). With fine-grained tool streaming the
      // partial input reaches the client (anthropic-sdk-python #794).
      s += block_event("content_block_stop", *open_block_, [](json_text::Writer&) {});
      open_block_.reset();
    }
    s += sse("message_delta", [&](json_text::Writer& w) {
      w.key("delta").begin_object()
          .member("stop_reason", stop_reason(reason, delivered_calls_))
          .member_null("stop_sequence")
          .end_object()
          // Cumulative, without the tier (the live message_delta of 2026-05: input_tokens,
          // cache_creation_input_tokens, cache_read_input_tokens, output_tokens).
          .key("usage").begin_object()
          .member("input_tokens", kInputTokens)
          .member("cache_creation_input_tokens", 0)
          .member("cache_read_input_tokens", 0)
          .member("output_tokens", std::max(next_index_, 1))
          .end_object();
    });
    s += sse("message_stop", [](json_text::Writer&) {});
    return {s};
  }

  void withhold_last_units(std::size_t units_sent) override {
    // The tool_use block last encoded stays open: only a finish closes it (a stream-ending fault
    // sends no more of it).
    if (units_sent > 0) open_block_ = next_index_ - 1;
  }

  std::string error_event(int status) override { return stream_error_event(status); }
  std::string malformed_frame() override { return malformed_event(); }

 private:
  /// `event: NAME` and `data: {"type":NAME,…}`, the members after `type` written by `write_fields`.
  template <typename WriteFields>
  static std::string sse(std::string_view name, const WriteFields& write_fields) {
    std::string out;
    out.reserve(name.size() * 2 + 160);
    out.append("event: ").append(name).append("\ndata: ");
    json_text::Writer w(out);
    w.begin_object().member("type", name);
    write_fields(w);
    w.end_object();
    out.append("\n\n");
    return out;
  }
  /// A content block event: `type`, `index`, then what `write_fields` writes.
  template <typename WriteFields>
  static std::string block_event(std::string_view name, int index, const WriteFields& write_fields) {
    return sse(name, [&](json_text::Writer& w) {
      w.member("index", index);
      write_fields(w);
    });
  }

  /// A content_block_start at `index`, followed by the stream's one `ping` when it is the first
  /// block: live streams ping right after the first content_block_start (recorded 2026-03 and
  /// 2026-05, claude-sonnet-4-5/4-6: pydantic/pydantic-ai test_anthropic cassettes; docs/WIRE-FORMATS.md
  /// "Checked against recordings"), never before the first block; an answer without blocks has none.
  template <typename WriteFields>
  std::string block_start(int index, const WriteFields& write_fields) {
    std::string s = block_event("content_block_start", index, write_fields);
    if (!pinged_) {
      pinged_ = true;
      s += sse("ping", [](json_text::Writer&) {});
    }
    return s;
  }

  /// The content_block_stop of the open text block ("" when none is open); the block is closed.
  std::string close_text() {
    if (open_text_ < 0) return "";
    std::string s = block_event("content_block_stop", open_text_, [](json_text::Writer&) {});
    open_text_ = -1;
    return s;
  }

  /// The content_block_stop of the open thinking block ("" when none is open); the block is closed.
  std::string close_thinking() {
    if (open_thinking_ < 0) return "";
    std::string s = block_event("content_block_stop", open_thinking_, [](json_text::Writer&) {});
    open_thinking_ = -1;
    return s;
  }

  ResponseContext ctx_;
  int next_index_ = 0;           // content block index of the next block
  int open_thinking_ = -1;       // index of the thinking block the last reasoning event left open
  int open_text_ = -1;           // index of the text block a run of text keeps open, -1 for none
  bool delivered_calls_ = false; // a tool_use block was sent: stop → "tool_use"
  bool pinged_ = false;          // the ping after the first content_block_start went out
  std::optional<int> open_block_;  // a tool_use block whose end was withheld (withhold_last_units)
};

class AnthropicFormat final : public WireFormat {
 public:
  std::string_view name() const override { return "anthropic"; }
  std::vector<std::string> paths() const override {
    return {"POST /v1/messages[?beta=true]"};
  }
  bool matches(std::string_view path) const override { return path == kPath; }

  DecodedRequest decode_request(std::string_view /*target*/, std::string_view body) const override {
    // The query (`?beta=true` from claude-code and the SDK's beta namespace) changes nothing here.
    return decode_messages(body);
  }

  void add_answer_headers(std::size_t journal_index, int status,
                          std::vector<std::pair<std::string, std::string>>& headers) const override {
    anthropic::add_answer_headers(journal_index, status, headers);
  }

  std::string default_message(int status) const override {
    return std::string(anthropic::default_message(status));
  }

  ErrorAnswer error_answer(int status, std::string_view message,
                           std::optional<double> retry_after_s) const override {
    return {error_body(status, message), error_headers(status, retry_after_s)};
  }

  std::string call_id(std::size_t journal_index, int call_index) const override {
    return tool_use_id(journal_index, call_index);
  }

  std::optional<Rejection> check_reasoning(std::string_view body,
                                           const std::vector<ReasoningCheck>& checks) const override {
    return check_thinking(body, checks);
  }

  std::unique_ptr<StreamEncoder> stream_encoder(const ResponseContext& ctx) const override {
    return std::make_unique<AnthropicEncoder>(ctx);
  }

  std::string unary_body(const std::vector<Event>& events, const ResponseContext& ctx) const override {
    ojson content = ojson::array();
    bool calls = false;
    std::optional<FinishReason> finish;
    bool text_run = false;  // the last block is the text block of the current run of text
    for (const Event& e : events) {
      if (auto* t = std::get_if<TextEvent>(&e)) {
        // One text block per run of text, as the streamed answer has.
        if (text_run) content.back()["text"].get_ref<std::string&>() += t->text;
        else content.push_back(text_block(t->text));
        text_run = true;
      } else if (auto* r = std::get_if<ReasoningEvent>(&e)) {
        ojson b = ojson::object();
        if (r->redacted) {
          b["type"] = "redacted_thinking";
          b["data"] = r->signature;
        } else {
          b["type"] = "thinking";
          b["thinking"] = r->text;
          b["signature"] = r->signature;
        }
        content.push_back(std::move(b));
        text_run = false;
      } else if (auto* c = std::get_if<CallEvent>(&e)) {
        content.push_back(tool_use_block(*c, args_object(*c)));
        calls = true;
        text_run = false;
      } else {
        finish = std::get<FinishEvent>(e).reason;
        break;
      }
    }
    if (finish == FinishReason::kMalformedCall) {
      return error_body(kMalformedCallStatus, anthropic::default_message(kMalformedCallStatus));
    }
    ojson m = ojson::object();
    m["id"] = message_id(ctx.journal_index);
    m["type"] = "message";
    m["role"] = "assistant";
    m["model"] = ctx.model;
    const int blocks = static_cast<int>(content.size());
    m["content"] = std::move(content);
    m["stop_reason"] = finish ? ojson(std::string(stop_reason(*finish, calls))) : ojson(nullptr);
    m["stop_sequence"] = nullptr;
    m["usage"] = usage(std::max(blocks, 1));
    return m.dump();
  }

  /// A refusal keeps what was generated before it: docs.claude.com "Streaming refusals" shows the
  /// answer `{"content":[{"type":"text","text":"Hello.."}],"stop_reason":"refusal"}`.
  bool filtered_answer_keeps_parts() const override { return true; }
  int malformed_call_unary_status() const override { return kMalformedCallStatus; }

  std::optional<std::string> status_note(int status) const override {
    // docs.claude.com/en/api/errors: 400 invalid_request_error, 401 authentication_error, 402
    // billing_error, 403 permission_error, 404 not_found_error, 409 conflict, 413
    // request_too_large, 429 rate_limit_error, 500 api_error, 504 timeout_error, 529
    // overloaded_error; 502/503 come from its edge (Cloudflare, Envoy's "upstream connect error").
    static const StatusTable table{"anthropic", {400, 401, 402, 403, 404, 409, 413, 429, 500, 502, 503, 504, 529},
                                   "529 overloaded_error"};
    return table.note(status);
  }
};

}  // namespace

const WireFormat& format() {
  static const AnthropicFormat instance;
  return instance;
}

}  // namespace mock::anthropic
