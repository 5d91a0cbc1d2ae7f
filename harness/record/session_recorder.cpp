// SessionRecorder; see session_recorder.h.
#include "harness/record/session_recorder.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>

#include "mock_server/wire_format.h"
#include "runtime_under_test/codec.h"
#include "runtime_under_test/sse_decoder.h"

namespace harness::record {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

/// Bytes of a frame in progress kept to measure a cut (a cut frame is at most this long).
constexpr std::size_t kMaxTailBytes = 1u << 20;
/// Streamed bytes body() gathers before decoding them (the rest waits for end()).
constexpr std::size_t kMaxDeferredBytes = 1u << 20;
/// The largest non-streaming body decoded (larger: recorded as undecodable, `end`).
constexpr std::size_t kMaxUnaryBytes = 64u << 20;
/// The longest argument text of a cut call that is completed into an object (longer: its prefix).
constexpr std::size_t kMaxPartialArgs = 256u << 10;

std::string finish_spelling(rut::FinishClass c) {
  switch (c) {
    case rut::FinishClass::kStop: return "stop";
    case rut::FinishClass::kMaxTokens: return "max_tokens";
    case rut::FinishClass::kContentFilter: return "content_filter";
    case rut::FinishClass::kMalformedCall: return "malformed_call";
    case rut::FinishClass::kOther: return "";
  }
  return "";
}

/// The last text part of the first user content of a neutral history view ("" when none): the
/// user's prompt (clients put context parts before it).
std::string prompt_of(const json& contents) {
  if (!contents.is_array()) return "";
  for (const json& c : contents) {
    if (!c.is_object()) continue;
    const auto role = c.find("role");
    if (role != c.end() && role->is_string() && *role != "user") continue;
    const auto parts = c.find("parts");
    if (parts == c.end() || !parts->is_array()) continue;
    std::string last;
    for (const json& p : *parts) {
      if (p.is_object() && p.contains("text") && p["text"].is_string()) last = p["text"].get<std::string>();
    }
    if (!last.empty()) return last;
  }
  return "";
}

/// The HTTP-like status of an in-stream error frame `data` in `format`: the status whose default
/// message the frame carries (what `hiccup serve` sends), else an integer `code`/`status` of its
/// error object, else Anthropic's error type, else 503; always one the format sends.
int stream_error_status(const mock::WireFormat& format, std::string_view data) {
  // 529 before 503: Anthropic sends the same overloaded_error for both, and its overload is 529.
  static constexpr int kCandidates[] = {529, 503, 500, 502, 504, 429, 400, 408};
  int status = 0;
  const json j = rut::parse_json(data);
  const json* err = nullptr;
  if (j.is_object()) {
    const auto e = j.find("error");
    if (e != j.end() && e->is_object()) err = &*e;
    else if (j.contains("response") && j["response"].is_object() && j["response"].contains("error") &&
             j["response"]["error"].is_object()) err = &j["response"]["error"];
  }
  // What `hiccup serve` sends: the format's error envelope for a status, as the frame's JSON.
  if (!j.is_discarded()) {
    for (int c : kCandidates) {
      if (format.status_note(c)) continue;
      const json envelope = rut::parse_json(format.error_answer(c, format.default_message(c), std::nullopt).body);
      if (envelope == j) return c;
    }
  }
  if (err != nullptr) {
    const std::string type = rut::string_member(*err, "type");
    if (type == "overloaded_error") status = 529;
    else if (type == "api_error") status = 500;
    else if (type == "rate_limit_error") status = 429;
    for (const char* key : {"code", "status"}) {
      if (status != 0) break;
      const auto v = err->find(key);
      if (v != err->end() && v->is_number_integer()) {
        const auto n = v->get<long long>();
        if (n >= 400 && n <= 599) status = static_cast<int>(n);
      }
    }
  }
  for (int c : kCandidates) {
    if (status != 0) break;
    const std::string m = format.default_message(c);
    const std::string quoted = json(m).dump(-1, ' ', false, json::error_handler_t::replace);
    if (!m.empty() && data.find(quoted.substr(1, quoted.size() - 2)) != std::string_view::npos) status = c;
  }
  if (status == 0) status = 503;
  if (format.status_note(status)) status = format.status_note(503) ? 500 : 503;
  return status;
}

/// Whether `needle` occurs in `hay` (memmem: string_view::find compares at every occurrence of the
/// needle's first character, and these needles start with a '"', which JSON is full of).
bool contains(std::string_view hay, std::string_view needle) {
  return ::memmem(hay.data(), hay.size(), needle.data(), needle.size()) != nullptr;
}

/// The closing brackets of the open ones in `stack` ('{' and '['), innermost first.
std::string closers(const std::string& stack) {
  std::string out;
  for (auto it = stack.rbegin(); it != stack.rend(); ++it) out += *it == '{' ? '}' : ']';
  return out;
}

/// `text` as a JSON object when it is one; else nullopt.
std::optional<ordered_json> as_object(const std::string& text) {
  ordered_json j = ordered_json::parse(text, nullptr, false);
  if (j.is_object()) return j;
  return std::nullopt;
}

}  // namespace

ordered_json object_from_partial_json(std::string_view text) {
  try {
    if (text.size() > kMaxPartialArgs) text = text.substr(0, kMaxPartialArgs);
    // Prefixes that end right after an opening bracket or right before a comma, with the
    // brackets that close them: each is a complete object once closed.
    struct Point {
      std::size_t end;
      std::string close;
    };
    std::vector<Point> points;
    std::string stack;
    bool in_string = false, escape = false;
    std::size_t string_start = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
      const char c = text[i];
      if (in_string) {
        if (escape) escape = false;
        else if (c == '\\') escape = true;
        else if (c == '"') in_string = false;
        continue;
      }
      if (c == '"') {
        in_string = true;
        string_start = i;
      } else if (c == '{' || c == '[') {
        if (stack.size() >= 512) break;  // as deep as the scenario loader reads
        stack += c;
        points.push_back({i + 1, closers(stack)});
      } else if (c == '}' || c == ']') {
        if (!stack.empty()) stack.pop_back();
      } else if (c == ',') {
        points.push_back({i, closers(stack)});
      }
    }
    // The whole prefix: an open string closed (an incomplete escape dropped), a dangling comma
    // dropped, a key without its value given null.
    std::string whole(text);
    if (in_string) {
      if (escape) {
        whole.pop_back();
      } else {
        const std::size_t bs = whole.rfind('\\');
        if (bs != std::string::npos && bs > string_start && bs + 1 < whole.size() && whole[bs + 1] == 'u' &&
            whole.size() - bs < 6) {
          whole.erase(bs);
        }
      }
      whole += '"';
    }
    while (!whole.empty() && std::isspace(static_cast<unsigned char>(whole.back()))) whole.pop_back();
    if (!whole.empty() && whole.back() == ',') whole.pop_back();
    if (!whole.empty() && whole.back() == ':') whole += "null";
    if (auto j = as_object(whole + closers(stack))) return *j;
    int tries = 0;
    for (auto it = points.rbegin(); it != points.rend() && tries < 64; ++it, ++tries) {
      if (auto j = as_object(std::string(text.substr(0, it->end)) + it->close)) return *j;
    }
  } catch (const std::exception&) {
  }
  return ordered_json::object();
}

/// The recording of one exchange.
class RecordedExchange final : public Exchange {
 public:
  RecordedExchange(const mock::WireFormat& format, const rut::ICodec& codec, int turn, bool streaming,
                   SessionRecorder::Clock clock, std::size_t number)
      : format_(format), codec_(codec), turn_(turn), streaming_(streaming), clock_(std::move(clock)), number_(number) {
    if (clock_) last_s_ = clock_();
  }

  void head(int status, const std::vector<std::pair<std::string, std::string>>& headers) override {
    status_ = status;
    headers_ = headers;
    const auto type = rut::header_value(headers_, "content-type");
    event_stream_ = type && type->find("event-stream") != std::string::npos;
    if (status_ == 200 && event_stream_) decoder_ = codec_.stream_decoder();
  }

  void body(std::string_view bytes) override {
    try {
      if (status_ != 200 || !decoder_) {
        if (unary_.size() + bytes.size() <= kMaxUnaryBytes) unary_.append(bytes);
        else unary_overflow_ = true;
        return;
      }
      if (clock_) {
        decode(bytes);  // timing reads the clock when a read completes events: decoded as it comes
        return;
      }
      // Decoded at end() (or once kMaxDeferredBytes have gathered), read by read as they came:
      // the proxy reads upstream again only when this returns, so decoding here would hold back
      // the answer's next frames (5-7 µs of CPU per frame).
      deferred_.append(bytes);
      deferred_ends_.push_back(deferred_.size());
      if (deferred_.size() >= kMaxDeferredBytes) decode_deferred();
    } catch (const std::exception&) {
      broken_ = true;  // a decoder bug must not end the proxy; the attempt is recorded as far as it got
    }
  }

  void end(AnswerEnd how) override {
    decode_deferred();
    try {
      how_ = how;
      if (how == AnswerEnd::kNoAnswer || status_ == 0) {
        how_ = AnswerEnd::kNoAnswer;
        return;
      }
      if (status_ != 200) return;
      if (decoder_) {
        std::vector<rut::SseFrame> frames;
        if (how == AnswerEnd::kComplete) {
          sse_.finish(frames);
          for (const rut::SseFrame& f : frames) on_frame(f);
        }
        if (fault_.is_null() && !finished_) {
          if (how == AnswerEnd::kComplete) {
            fault_ = ordered_json{{"kind", "end"}, {"after_event", events_.size()}};
          } else {
            // Calls the stream had started and the codec not completed: those whose arguments
            // arrived whole as they are, the one cut inside its arguments with the fragments
            // delivered (the fault's after_fragment).
            const std::optional<int> after_fragment = close_open_calls();
            const std::size_t after = after_fragment ? events_.size() - 1 : events_.size();
            if (!tail_.empty()) {
              fault_ = ordered_json{{"kind", "cut"}, {"after_event", after}};
              if (after_fragment) fault_["after_fragment"] = *after_fragment;
              fault_["bytes"] = std::max<std::size_t>(1, tail_.size());
            } else {
              fault_ = ordered_json{{"kind", "disconnect"}, {"after_event", after}};
              if (after_fragment) fault_["after_fragment"] = *after_fragment;
            }
          }
        }
        return;
      }
      // A non-streaming 200 answer.
      if (how == AnswerEnd::kConnectionLost || how == AnswerEnd::kClientGone || how == AnswerEnd::kProxyStopped) {
        fault_ = ordered_json{{"kind", "disconnect"}, {"after_event", 0}};
        return;
      }
      const rut::DecodedChunk d = unary_overflow_ ? rut::DecodedChunk{{}, std::nullopt, "", std::nullopt, true}
                                                  : codec_.decode_body(unary_);
      add_parts(d.parts);
      if (d.finish && !finish_spelling(*d.finish).empty()) {
        events_.push_back(ordered_json{{"finish", finish_spelling(*d.finish)}});
        finished_ = true;
      } else {
        fault_ = ordered_json{{"kind", "end"}, {"after_event", events_.size()}};
      }
      if (clock_ && !events_.empty()) stamp(0, clock_());
    } catch (const std::exception&) {
      broken_ = true;
    }
  }

  bool recorded() const { return how_ && *how_ != AnswerEnd::kNoAnswer; }
  /// With AnswerEnd::kClientGone or kProxyStopped: what the recording says of it ("" otherwise).
  std::string client_gone_note() const {
    if (!how_ || (*how_ != AnswerEnd::kClientGone && *how_ != AnswerEnd::kProxyStopped)) return "";
    std::string where = fault_.is_null() ? std::string("after its finish")
                                         : "after " + std::to_string(fault_.value("after_event", 0)) + " event(s)";
    if (fault_.contains("after_fragment")) where += " and " + std::to_string(fault_.at("after_fragment").get<int>()) + " argument fragment(s) of the next";
    const std::string who = *how_ == AnswerEnd::kProxyStopped ? "the recording proxy was stopped (SIGINT or SIGTERM) "
                                                               : "the client closed its connection ";
    return who + where + "; the proxy stopped reading upstream there, and the attempt is recorded as " +
           (fault_.is_null() ? std::string("delivered") : "a " + fault_.value("kind", std::string()) + " at that point") +
           ", what the client got (the provider did not end it)";
  }
  int turn() const { return turn_; }
  /// The request's number in arrival order among every request begin() saw, from 0, as a
  /// journal's index counts.
  std::size_t number() const { return number_; }
  bool streaming() const { return streaming_; }
  bool faulted() const { return status_ != 200 || !fault_.is_null(); }

  /// The attempt's scenario form.
  ordered_json attempt() const {
    ordered_json a = ordered_json::object();
    if (status_ != 200) {
      a["status"] = status_;
      const rut::ProviderError e = codec_.parse_error(unary_, headers_);
      if (e.retry_after_s > 0) a["retry_after_s"] = e.retry_after_s;
      if (status_ == 429 && e.daily_quota) a["quota"] = "per_day";
      return a;
    }
    a["events"] = events_;
    if (!fault_.is_null()) a["fault"] = fault_;
    return a;
  }

  std::string prompt;  // set by the recorder from the request

 private:
  /// One read's bytes of a streamed answer: SSE frames decoded, the frame in progress followed.
  void decode(std::string_view bytes) {
    frames_.clear();
    sse_.feed(bytes, frames_);
    track_tail(bytes);
    const std::size_t before = events_.size();
    for (const rut::SseFrame& f : frames_) on_frame(f);
    if (clock_ && events_.size() > before) stamp(before, clock_());
  }

  /// Decodes the reads body() deferred, one by one as they arrived (each as body() would have).
  void decode_deferred() {
    std::size_t from = 0;
    for (const std::size_t end : deferred_ends_) {
      try {
        decode(std::string_view(deferred_).substr(from, end - from));
      } catch (const std::exception&) {
        broken_ = true;
      }
      from = end;
    }
    // Released, not cleared: the exchange lives as long as the recording.
    std::string().swap(deferred_);
    std::vector<std::size_t>().swap(deferred_ends_);
    std::vector<rut::SseFrame>().swap(frames_);
  }

  /// The bytes of a frame in progress (tail_): what follows the last frame end ("\n\n" or
  /// "\r\n\r\n") of the stream so far. tail_ holds no frame end, so a new one ends inside
  /// `bytes`: found scanning back from the end of `bytes` (its first 3 bytes may complete one
  /// begun in tail_), without copying the read first.
  void track_tail(std::string_view bytes) {
    bytes = bytes.substr(0, std::min(bytes.size(), kMaxTailBytes));
    const std::size_t old = tail_.size();
    const auto at = [&](std::size_t i) -> char { return i < old ? tail_[i] : bytes[i - old]; };
    std::size_t cut = std::string::npos;  // in tail_ + bytes
    for (std::size_t n = bytes.size(); n > 0;) {
      const void* lf = ::memrchr(bytes.data(), '\n', n);
      if (lf == nullptr) break;
      const std::size_t i = old + static_cast<std::size_t>(static_cast<const char*>(lf) - bytes.data());
      if ((i >= 1 && at(i - 1) == '\n') || (i >= 3 && at(i - 1) == '\r' && at(i - 2) == '\n' && at(i - 3) == '\r')) {
        cut = i + 1;
        break;
      }
      n = i - old;
    }
    if (cut != std::string::npos) {
      tail_.assign(bytes.substr(cut - old));
    } else {
      tail_.append(bytes);
    }
    // Gemini's bare error object line ends with one newline.
    if (!tail_.empty() && tail_.back() == '\n' && tail_.find("data:") == std::string::npos) tail_.clear();
    if (tail_.size() > kMaxTailBytes) tail_.erase(0, tail_.size() - kMaxTailBytes);
  }

  /// Event `first`'s timing: the seconds from the last stamp (the request's start) to `now_s`.
  void stamp(std::size_t first, double now_s) {
    const double delay = std::round((now_s - last_s_) * 1000) / 1000;
    last_s_ = now_s;
    if (delay > 0 && first < events_.size()) events_[first]["delay_s"] = delay;
  }

  void add_parts(const std::vector<rut::ModelPart>& parts) {
    bool last_text = false;  // text deltas of one frame merge into one event
    for (const rut::ModelPart& p : parts) {
      if (p.text) {
        if (last_text) {
          events_.back()["text"] = events_.back()["text"].get<std::string>() + *p.text;
        } else {
          events_.push_back(ordered_json{{"text", *p.text}});
        }
        last_text = true;
        continue;
      }
      last_text = false;
      if (p.call) {
        ordered_json call{{"name", p.call->name}, {"args", p.call->args.is_object() ? ordered_json(p.call->args) : ordered_json::object()}};
        int fragments = open_fragments_;
        const auto open = std::find_if(open_calls_.begin(), open_calls_.end(), [&](const OpenCall& c) { return c.name == p.call->name; });
        if (open != open_calls_.end()) {
          fragments = open->fragments;
          open_calls_.erase(open);
        }
        if (fragments > 1) call["fragments"] = fragments;
        events_.push_back(ordered_json{{"call", call}});
        open_fragments_ = 0;
      } else if (p.reasoning && p.reasoning->redacted) {
        // Anthropic redacted_thinking: its `data` only, replayed as that block (no text).
        ordered_json r{{"redacted", true}};
        if (!p.reasoning->signature.empty()) r["signature"] = p.reasoning->signature;
        events_.push_back(ordered_json{{"reasoning", r}});
      } else if (p.reasoning) {
        ordered_json r{{"text", p.reasoning->text}};
        if (!p.reasoning->signature.empty()) r["signature"] = p.reasoning->signature;
        events_.push_back(ordered_json{{"reasoning", r}});
      }
    }
  }

  /// Counts argument fragments of the call being streamed (the frames that carry an arguments
  /// delta: Chat `delta.tool_calls[].function.arguments`, Responses
  /// `response.function_call_arguments.delta`, Anthropic `input_json_delta`), so a replay streams
  /// the call in as many pieces. Gemini sends a call whole.
  void count_fragment(const rut::SseFrame& f) {
    if (f.kind != rut::SseFrame::Kind::kData) return;
    const std::string_view d = f.data;
    if (d.find('_') == std::string_view::npos) return;  // every pattern below has one
    const bool fragment = contains(d, "\"function_call_arguments.delta\"") ||
                          contains(d, "response.function_call_arguments.delta") || contains(d, "\"input_json_delta\"") ||
                          (contains(d, "\"tool_calls\"") && contains(d, "\"arguments\"") && !contains(d, "\"arguments\":\"\""));
    if (fragment) ++open_fragments_;
  }

  /// A call the stream has started and the codec not yet completed: its name and the argument
  /// text its fragments delivered so far.
  struct OpenCall {
    std::string key;   ///< the format's handle: Chat's tool_calls index, Responses' output_index, Anthropic's block index
    std::string name;
    std::string args;
    int fragments = 0;
  };

  OpenCall* open_call(const std::string& key) {
    for (OpenCall& c : open_calls_) {
      if (c.key == key) return &c;
    }
    return nullptr;
  }

  void add_fragment(const std::string& key, const json& delta) {
    OpenCall* c = open_call(key);
    if (c == nullptr || !delta.is_string() || delta.get_ref<const std::string&>().empty()) return;
    if (c->args.size() < kMaxPartialArgs) c->args += delta.get_ref<const std::string&>();
    ++c->fragments;
  }

  /// Follows the calls a frame starts and the argument fragments it carries, in the formats that
  /// stream arguments (docs/WIRE-FORMATS.md): Chat `choices[].delta.tool_calls[]` (`index`,
  /// `function.name`, `function.arguments`), Responses `response.output_item.added` with a
  /// `function_call` item and `response.function_call_arguments.delta` (`output_index`, `delta`),
  /// Anthropic `content_block_start` with a `tool_use` block and `content_block_delta` with an
  /// `input_json_delta` (`index`, `partial_json`). Gemini sends calls whole: nothing to follow.
  void track_open_calls(const rut::SseFrame& f) {
    if (f.kind != rut::SseFrame::Kind::kData) return;
    const std::string_view d = f.data;
    if (d.find('_') == std::string_view::npos ||  // every name below has one
        (!contains(d, "tool_calls") && !contains(d, "function_call") && !contains(d, "tool_use") && !contains(d, "input_json_delta"))) {
      return;
    }
    const json j = rut::parse_json(d);
    if (!j.is_object()) return;
    const auto index_of = [](const json& o, const char* key) -> std::string {
      const auto v = o.find(key);
      return v != o.end() && v->is_number_integer() ? std::to_string(v->get<long long>()) : std::string("0");
    };
    const auto text_of = [](const json& o, const char* key) -> std::string {
      const auto v = o.find(key);
      return v != o.end() && v->is_string() ? v->get<std::string>() : std::string();
    };
    const std::string_view format = format_.name();
    if (format == "openai-chat") {
      const auto choices = j.find("choices");
      if (choices == j.end() || !choices->is_array()) return;
      for (const json& choice : *choices) {
        if (!choice.is_object() || !choice.contains("delta") || !choice["delta"].is_object()) continue;
        const json& delta = choice["delta"];
        const auto calls = delta.find("tool_calls");
        if (calls == delta.end() || !calls->is_array()) continue;
        for (const json& tc : *calls) {
          if (!tc.is_object()) continue;
          const std::string key = "c" + index_of(tc, "index");
          const json fn = tc.contains("function") && tc["function"].is_object() ? tc["function"] : json::object();
          const std::string name = text_of(fn, "name");
          if (!name.empty() && open_call(key) == nullptr) open_calls_.push_back(OpenCall{key, name, "", 0});
          if (fn.contains("arguments")) add_fragment(key, fn["arguments"]);
        }
      }
    } else if (format == "openai-responses") {
      const std::string type = text_of(j, "type");
      const std::string key = "r" + index_of(j, "output_index");
      if (type == "response.output_item.added" && j.contains("item") && j["item"].is_object() &&
          text_of(j["item"], "type") == "function_call" && open_call(key) == nullptr) {
        open_calls_.push_back(OpenCall{key, text_of(j["item"], "name"), "", 0});
        if (j["item"].contains("arguments")) add_fragment(key, j["item"]["arguments"]);
      } else if (type == "response.function_call_arguments.delta" && j.contains("delta")) {
        add_fragment(key, j["delta"]);
      }
    } else if (format == "anthropic") {
      const std::string type = text_of(j, "type");
      const std::string key = "a" + index_of(j, "index");
      if (type == "content_block_start" && j.contains("content_block") && j["content_block"].is_object() &&
          text_of(j["content_block"], "type") == "tool_use" && open_call(key) == nullptr) {
        open_calls_.push_back(OpenCall{key, text_of(j["content_block"], "name"), "", 0});
      } else if (type == "content_block_delta" && j.contains("delta") && j["delta"].is_object() &&
                 text_of(j["delta"], "type") == "input_json_delta" && j["delta"].contains("partial_json")) {
        add_fragment(key, j["delta"]["partial_json"]);
      }
    }
  }

  /// At a cut: the open calls become call events, those whose arguments arrived whole as they are;
  /// the last, when its arguments are incomplete, with the arguments it had (completed into an
  /// object, object_from_partial_json) and one fragment more than it delivered. Returns the
  /// fragments it delivered (the fault's after_fragment), or nullopt when no call was cut.
  std::optional<int> close_open_calls() {
    std::optional<int> after_fragment;
    for (std::size_t i = 0; i < open_calls_.size(); ++i) {
      const OpenCall& c = open_calls_[i];
      if (c.name.empty()) continue;
      const std::optional<ordered_json> whole = as_object(c.args);
      ordered_json call{{"name", c.name}, {"args", whole ? *whole : object_from_partial_json(c.args)}};
      if (whole || i + 1 < open_calls_.size()) {
        if (c.fragments > 1) call["fragments"] = c.fragments;
        events_.push_back(ordered_json{{"call", call}});
        continue;
      }
      const int fragments = c.fragments + 1;
      const std::size_t sent = mock::split_fragments(call["args"].dump(-1, ' ', false, json::error_handler_t::replace), fragments).size();
      if (fragments > 1) call["fragments"] = fragments;
      events_.push_back(ordered_json{{"call", call}});
      after_fragment = std::min<int>(c.fragments, static_cast<int>(sent) - 1);
    }
    open_calls_.clear();
    return after_fragment;
  }

  void on_frame(const rut::SseFrame& f) {
    if (finished_ || (!fault_.is_null() && fault_.value("kind", "") != "malformed")) return;
    count_fragment(f);
    track_open_calls(f);
    const rut::DecodedChunk d = decoder_->on_frame(f);
    if (d.undecodable) {
      if (fault_.is_null()) fault_ = ordered_json{{"kind", "malformed"}, {"after_event", events_.size()}};
      return;
    }
    add_parts(d.parts);
    if (d.stream_error) {
      if (fault_.is_null()) {
        fault_ = ordered_json{{"kind", "error_event"}, {"after_event", events_.size()},
                              {"status", stream_error_status(format_, f.data)}};
      } else {
        finished_ = true;  // a second fault ends what one attempt can script
      }
      return;
    }
    if (d.finish) {
      const std::string name = finish_spelling(*d.finish);
      if (!name.empty()) events_.push_back(ordered_json{{"finish", name}});
      finished_ = !name.empty();
    }
  }

  const mock::WireFormat& format_;
  const rut::ICodec& codec_;
  int turn_;
  bool streaming_;
  int status_ = 0;
  std::vector<std::pair<std::string, std::string>> headers_;
  bool event_stream_ = false;
  std::unique_ptr<rut::IStreamDecoder> decoder_;
  rut::SseDecoder sse_;
  std::vector<rut::SseFrame> frames_;     // decode()'s, reused until end()
  std::string deferred_;                  // reads body() left to decode_deferred(), joined
  std::vector<std::size_t> deferred_ends_;  // where each of them ends in deferred_
  std::string tail_;
  std::string unary_;
  bool unary_overflow_ = false;
  ordered_json events_ = ordered_json::array();
  ordered_json fault_;
  bool finished_ = false;
  bool broken_ = false;
  int open_fragments_ = 0;
  std::vector<OpenCall> open_calls_;
  std::optional<AnswerEnd> how_;
  SessionRecorder::Clock clock_;  // null: no timing
  double last_s_ = 0;             // the request's start, then the last event's arrival
  std::size_t number_ = 0;        // see number()
};

struct SessionRecorder::State {
  Clock clock;
  const mock::WireFormat* format = nullptr;
  std::string model;
  std::deque<std::unique_ptr<RecordedExchange>> exchanges;
  std::vector<std::string> notes;
  std::size_t arrived = 0;  // requests begin() saw, recorded or not: the next one's number
};

SessionRecorder::SessionRecorder() : state_(std::make_unique<State>()) {}
SessionRecorder::SessionRecorder(Clock clock) : state_(std::make_unique<State>()) { state_->clock = std::move(clock); }
SessionRecorder::~SessionRecorder() = default;

Exchange* SessionRecorder::begin(std::string_view method, std::string_view target, std::string_view body) {
  std::size_t number = 0;  // this request's in arrival order, from 0 (a journal's index): what the notes call it
  {
    std::lock_guard<std::mutex> lock(mu_);
    number = state_->arrived++;
  }
  try {
    if (method != "POST") return nullptr;
    const std::string_view path = target.substr(0, target.find('?'));
    const mock::WireFormat* format = mock::format_for_path(path);
    if (format == nullptr) return nullptr;
    const rut::ICodec* codec = rut::codec_for(format->name());
    if (codec == nullptr) return nullptr;
    const mock::DecodedRequest d = format->decode_request(target, body);
    std::lock_guard<std::mutex> lock(mu_);
    if (d.contents.is_null()) {
      state_->notes.push_back("request " + std::to_string(number) + " (" + std::string(path) +
                              "): its body does not decode; relayed, not recorded");
      return nullptr;
    }
    if (state_->format == nullptr) {
      state_->format = format;
      state_->model = d.model;
    } else if (state_->format != format) {
      state_->notes.push_back("request " + std::to_string(number) + " in " + std::string(format->name()) + " (" + std::string(path) +
                              ") in a session recorded as " + std::string(state_->format->name()) +
                              ": relayed, not recorded");
      return nullptr;
    }
    auto ex = std::make_unique<RecordedExchange>(*format, *codec, mock::turn_index(d.contents), d.streaming, state_->clock, number);
    ex->prompt = prompt_of(d.contents);
    state_->exchanges.push_back(std::move(ex));
    return state_->exchanges.back().get();
  } catch (const std::exception&) {
    return nullptr;  // nothing from a client ends the proxy
  }
}

ordered_json SessionRecorder::scenario(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  const State& s = *state_;
  ordered_json out;
  out["schema"] = 1;
  out["name"] = scenario_name_from(name);
  std::size_t recorded = 0;
  std::string prompt;
  bool streaming = true;
  std::map<int, std::vector<const RecordedExchange*>> by_turn;
  for (const auto& e : s.exchanges) {
    if (!e->recorded()) continue;
    if (recorded == 0) {
      prompt = e->prompt;
      streaming = e->streaming();
    }
    ++recorded;
    by_turn[e->turn()].push_back(e.get());
  }
  std::string description = "Recorded by `hiccup record`: " + std::to_string(recorded) + " model request(s) in " +
                            std::to_string(by_turn.empty() ? 0 : by_turn.rbegin()->first + 1) + " turn(s).";
  {
    // Answers the client left mid-stream: the file says so (their faults are the client's, not the provider's).
    std::map<int, int> attempts;
    for (const auto& e : s.exchanges) {
      if (!e->recorded()) continue;
      const int attempt = attempts[e->turn()]++;
      const std::string note = e->client_gone_note();
      if (!note.empty()) {
        description += " /turns/" + std::to_string(e->turn()) + "/attempts/" + std::to_string(attempt) + ": " + note + ".";
      }
    }
  }
  out["description"] = description;
  out["tags"] = ordered_json::array({"recorded"});
  out["provider"] = s.format ? std::string(s.format->name()) : std::string("gemini");
  out["prompt"] = prompt.empty() ? std::string("(no prompt was recorded)") : prompt;
  ordered_json runtime = ordered_json::object();
  if (!s.model.empty()) runtime["model"] = s.model;
  if (!streaming) runtime["stream"] = false;
  if (!runtime.empty()) out["runtime"] = runtime;
  ordered_json turns = ordered_json::array();
  const int last = by_turn.empty() ? -1 : by_turn.rbegin()->first;
  for (int t = 0; t <= last; ++t) {
    ordered_json attempts = ordered_json::array();
    auto it = by_turn.find(t);
    if (it == by_turn.end()) {
      // No request of this turn index was seen (the client skipped it): an HTTP 500 stands in,
      // so later turns keep their indexes (notes() says so).
      attempts.push_back(ordered_json{{"status", 500}});
    } else {
      for (const RecordedExchange* e : it->second) attempts.push_back(e->attempt());
    }
    turns.push_back(ordered_json{{"attempts", attempts}});
  }
  out["turns"] = turns;
  return out;
}

RecordingStats SessionRecorder::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  RecordingStats st;
  int last = -1;
  for (const auto& e : state_->exchanges) {
    if (!e->recorded()) continue;
    ++st.requests;
    last = std::max(last, e->turn());
    if (e->faulted()) ++st.faults;
  }
  st.turns = static_cast<std::size_t>(last + 1);
  return st;
}

std::vector<std::string> SessionRecorder::notes() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out = state_->notes;
  std::map<int, bool> seen;
  int last = -1;
  std::vector<std::size_t> unanswered;  // their numbers
  std::map<int, int> attempts;
  for (const auto& e : state_->exchanges) {
    if (!e->recorded()) {
      unanswered.push_back(e->number());
      continue;
    }
    const int attempt = attempts[e->turn()]++;
    const std::string gone = e->client_gone_note();
    if (!gone.empty()) {
      out.push_back("request " + std::to_string(e->number()) + " (/turns/" + std::to_string(e->turn()) + "/attempts/" +
                    std::to_string(attempt) + "): " + gone);
    }
    seen[e->turn()] = true;
    last = std::max(last, e->turn());
  }
  if (!unanswered.empty()) {
    std::string numbers;
    for (std::size_t n : unanswered) numbers += (numbers.empty() ? "" : ", ") + std::to_string(n);
    out.push_back(std::string(unanswered.size() == 1 ? "request " : "requests ") + numbers + " got no answer from upstream: not recorded");
  }
  for (int t = 0; t < last; ++t) {
    if (!seen.count(t)) out.push_back("turn " + std::to_string(t) + " was never requested: /turns/" + std::to_string(t) + " is a stand-in HTTP 500");
  }
  return out;
}

std::string scenario_name_from(std::string_view text) {
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) out += static_cast<char>(std::tolower(u));
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "recorded-session" : out;
}

}  // namespace harness::record
