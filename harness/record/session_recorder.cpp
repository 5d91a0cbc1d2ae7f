// SessionRecorder; see session_recorder.h.
#include "harness/record/session_recorder.h"

#include <algorithm>
#include <cctype>
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
/// The largest non-streaming body decoded (larger: recorded as undecodable, `end`).
constexpr std::size_t kMaxUnaryBytes = 64u << 20;

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

}  // namespace

/// The recording of one exchange.
class RecordedExchange final : public Exchange {
 public:
  RecordedExchange(const mock::WireFormat& format, const rut::ICodec& codec, int turn, bool streaming)
      : format_(format), codec_(codec), turn_(turn), streaming_(streaming) {}

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
      std::vector<rut::SseFrame> frames;
      sse_.feed(bytes, frames);
      track_tail(bytes);
      for (const rut::SseFrame& f : frames) on_frame(f);
    } catch (const std::exception&) {
      broken_ = true;  // a decoder bug must not end the proxy; the attempt is recorded as far as it got
    }
  }

  void end(AnswerEnd how) override {
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
          } else if (!tail_.empty()) {
            fault_ = ordered_json{{"kind", "cut"}, {"after_event", events_.size()}, {"bytes", std::max<std::size_t>(1, tail_.size())}};
          } else {
            fault_ = ordered_json{{"kind", "disconnect"}, {"after_event", events_.size()}};
          }
        }
        return;
      }
      // A non-streaming 200 answer.
      if (how == AnswerEnd::kConnectionLost) {
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
    } catch (const std::exception&) {
      broken_ = true;
    }
  }

  bool recorded() const { return how_ && *how_ != AnswerEnd::kNoAnswer; }
  int turn() const { return turn_; }
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
  void track_tail(std::string_view bytes) {
    tail_.append(bytes.substr(0, std::min(bytes.size(), kMaxTailBytes)));
    std::size_t cut = std::string::npos;
    for (std::string_view sep : {std::string_view("\n\n"), std::string_view("\r\n\r\n")}) {
      const std::size_t p = tail_.rfind(sep);
      if (p != std::string::npos) {
        const std::size_t e = p + sep.size();
        cut = cut == std::string::npos ? e : std::max(cut, e);
      }
    }
    if (cut != std::string::npos) tail_.erase(0, cut);
    // Gemini's bare error object line ends with one newline.
    if (!tail_.empty() && tail_.back() == '\n' && tail_.find("data:") == std::string::npos) tail_.clear();
    if (tail_.size() > kMaxTailBytes) tail_.erase(0, tail_.size() - kMaxTailBytes);
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
        if (open_fragments_ > 1) call["fragments"] = open_fragments_;
        events_.push_back(ordered_json{{"call", call}});
        open_fragments_ = 0;
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
    const bool fragment = d.find("\"function_call_arguments.delta\"") != std::string_view::npos ||
                          d.find("response.function_call_arguments.delta") != std::string_view::npos ||
                          d.find("\"input_json_delta\"") != std::string_view::npos ||
                          (d.find("\"tool_calls\"") != std::string_view::npos && d.find("\"arguments\"") != std::string_view::npos &&
                           d.find("\"arguments\":\"\"") == std::string_view::npos);
    if (fragment) ++open_fragments_;
  }

  void on_frame(const rut::SseFrame& f) {
    if (finished_ || (!fault_.is_null() && fault_.value("kind", "") != "malformed")) return;
    count_fragment(f);
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
  std::string tail_;
  std::string unary_;
  bool unary_overflow_ = false;
  ordered_json events_ = ordered_json::array();
  ordered_json fault_;
  bool finished_ = false;
  bool broken_ = false;
  int open_fragments_ = 0;
  std::optional<AnswerEnd> how_;
};

struct SessionRecorder::State {
  const mock::WireFormat* format = nullptr;
  std::string model;
  std::deque<std::unique_ptr<RecordedExchange>> exchanges;
  std::vector<std::string> notes;
};

SessionRecorder::SessionRecorder() : state_(std::make_unique<State>()) {}
SessionRecorder::~SessionRecorder() = default;

Exchange* SessionRecorder::begin(std::string_view method, std::string_view target, std::string_view body) {
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
      state_->notes.push_back("request " + std::to_string(state_->exchanges.size() + 1) + " (" + std::string(path) +
                              "): its body does not decode; relayed, not recorded");
      return nullptr;
    }
    if (state_->format == nullptr) {
      state_->format = format;
      state_->model = d.model;
    } else if (state_->format != format) {
      state_->notes.push_back(std::string("a request in ") + std::string(format->name()) + " (" + std::string(path) +
                              ") in a session recorded as " + std::string(state_->format->name()) +
                              ": relayed, not recorded");
      return nullptr;
    }
    auto ex = std::make_unique<RecordedExchange>(*format, *codec, mock::turn_index(d.contents), d.streaming);
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
  out["description"] = "Recorded by `hiccup record`: " + std::to_string(recorded) + " model request(s) in " +
                       std::to_string(by_turn.empty() ? 0 : by_turn.rbegin()->first + 1) + " turn(s).";
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
  std::size_t unanswered = 0;
  for (const auto& e : state_->exchanges) {
    if (!e->recorded()) {
      ++unanswered;
      continue;
    }
    seen[e->turn()] = true;
    last = std::max(last, e->turn());
  }
  if (unanswered > 0) out.push_back(std::to_string(unanswered) + " request(s) got no answer from upstream: not recorded");
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
