// Characterization test of every format's encoders: the exact bytes of a fixed corpus of streamed
// responses (every event kind, every finish reason, escapes and non-ASCII text, fragments, in-stream
// errors after a withheld call, malformed frames), non-streaming answers and error answers, against
// mock_server/testdata/encoder_bytes.txt. The encoders write their JSON text directly (json_text.h)
// for speed; this pins them to the bytes their earlier nlohmann-tree implementation wrote.
// HICCUP_UPDATE_GOLDEN=1 rewrites the file (review the diff: every changed byte is a wire change).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "mock_server/wire_format.h"

#ifndef HICCUP_SOURCE_DIR
#error "HICCUP_SOURCE_DIR must name the source tree"
#endif

namespace encoder_bytes_test {

using nlohmann::json;

namespace {

mock::CallEvent call(std::string name, json args, std::string id, int fragments) {
  mock::CallEvent c;
  c.name = std::move(name);
  c.args = std::move(args);
  c.id = std::move(id);
  c.fragments = fragments;
  return c;
}

mock::FinishEvent finish(mock::FinishReason r) { return mock::FinishEvent{r}; }

/// One streamed response of the corpus: its events, then optionally a withheld call and an error.
struct Stream {
  std::string label;
  mock::ResponseContext ctx;
  std::vector<mock::Event> events;
  /// After the events: encode this call, send only `withhold_after` of its units, then end with
  /// error_event(`error_status`). 0 = no trailing call / no error.
  std::optional<mock::CallEvent> withheld_call;
  std::size_t withhold_after = 0;
  int error_status = 0;
  bool malformed = false;  ///< end with malformed_frame()
};

std::vector<Stream> corpus() {
  using mock::FinishReason;
  const json nested = {{"cmd", "ls -la \"/tmp\""}, {"n", 3}, {"neg", -7}, {"f", 2.5},
                       {"nested", {{"a", json::array({1, true, nullptr, "x\ty"})}, {"e", json::object()}}}};
  const std::string escapes = std::string("q\"b\\s/ n\n t\t r\r b\b f\f ") + '\x01' + '\x1f' + " end";
  const std::string unicode = "h\xc3\xa9llo \xe2\x80\x93 \xe2\x9c\x93 \xf0\x9f\x98\x80";
  std::vector<Stream> s;
  s.push_back({"text, stop", {"model-a", 0, false}, {mock::TextEvent{"Hello"}, finish(FinishReason::kStop)}});
  s.push_back({"escapes, empty text, unicode, max_tokens", {"model-b", 7, true, true},
               {mock::TextEvent{escapes}, mock::TextEvent{""}, mock::TextEvent{unicode},
                finish(FinishReason::kMaxTokens)}});
  s.push_back({"two calls in fragments, stop", {"model-c", 12, true, true, R"({"ticket":"T-1"})"},
               {call("run_shell", nested, "", 3), call("read \"file\"", json::object(), "call_custom", 1),
                finish(FinishReason::kStop)}});
  s.push_back({"text and call, content_filter", {"model-d", 3, false},
               {mock::TextEvent{"before"}, call("deploy", {{"env", unicode}}, "", 2),
                finish(FinishReason::kContentFilter)}});
  s.push_back({"null args, malformed_call", {"model-e", 99, false},
               {call("noop", nullptr, "", 0), finish(FinishReason::kMalformedCall)}});
  s.push_back({"text, error 503", {"model-f", 5, false}, {mock::TextEvent{"part"}}, std::nullopt, 0, 503});
  s.push_back({"text, error 429", {"model-f", 6, true, true}, {mock::TextEvent{"part"}}, std::nullopt, 0, 429});
  s.push_back({"error 529 first", {"model-f", 8, false}, {}, std::nullopt, 0, 529});
  s.push_back({"call withheld after its start, error 500", {"model-g", 4, false},
               {mock::TextEvent{"t"}, call("first", {{"k", 1}}, "", 1)},
               call("second", {{"k", "two"}}, "", 3), 1, 500});
  s.push_back({"call withheld after two fragments, error 503", {"model-g", 4, false}, {},
               call("only", {{"k", "v"}}, "", 3), 3, 503});
  s.push_back({"non-ASCII model, text, malformed frame", {"mod\xc3\xa8le", 2, true},
               {mock::TextEvent{"x"}}, std::nullopt, 0, 0, true});
  s.push_back({"empty stream, stop", {"model-h", 1, true}, {finish(FinishReason::kStop)}});
  // Reasoning (WIRE-FORMATS.md "Reasoning"): a default signature and a scripted one, before a call
  // and before text; then a fault right after reasoning (inside the thinking block).
  s.push_back({"reasoning, call, reasoning, text, stop", {"model-r", 21, true},
               {mock::ReasoningEvent{"think \"first\" \xe2\x9c\x93", ""}, call("look", {{"path", "/"}}, "", 2),
                mock::ReasoningEvent{"then answer", "c2lnbmVkLTI="}, mock::TextEvent{"done"},
                finish(FinishReason::kStop)}});
  s.push_back({"reasoning with empty text, call, max_tokens", {"model-r", 22, false},
               {mock::ReasoningEvent{"", "RXFRQkNrWUlBUmdD"}, call("go", json::object(), "", 1),
                finish(FinishReason::kMaxTokens)}});
  s.push_back({"reasoning, error 529 inside it", {"model-r", 23, true},
               {mock::TextEvent{"a"}, mock::ReasoningEvent{"plan", "c2ln"}}, std::nullopt, 0, 529});
  return s;
}

/// The engine resolves a call's empty id to the format's default before encoding, and a reasoning
/// event's empty signature to mock::default_signature (`reasoning_index`: its position).
mock::Event resolved(const mock::WireFormat& fmt, mock::Event e, const mock::ResponseContext& ctx, int call_index,
                     int reasoning_index = 0) {
  if (auto* c = std::get_if<mock::CallEvent>(&e); c && c->id.empty()) c->id = fmt.call_id(ctx.journal_index, call_index);
  if (auto* r = std::get_if<mock::ReasoningEvent>(&e); r && r->signature.empty()) {
    r->signature = mock::default_signature(ctx.journal_index, reasoning_index);
  }
  return e;
}

void unit_lines(std::ostringstream& out, const std::vector<std::string>& units) {
  for (std::size_t u = 0; u < units.size(); ++u) out << "-- unit " << u << "\n" << units[u];
  out << "-- end units\n";
}

/// Every corpus stream, non-streaming answer and error answer of `fmt`, as text.
std::string encode_all(const mock::WireFormat& fmt) {
  std::ostringstream out;
  for (const Stream& st : corpus()) {
    out << "=== " << fmt.name() << " stream: " << st.label << "\n";
    auto enc = fmt.stream_encoder(st.ctx);
    out << "-- open\n" << enc->open();
    int calls = 0;
    int reasoning = 0;
    std::vector<mock::Event> all;
    for (const mock::Event& e : st.events) {
      const bool is_call = std::holds_alternative<mock::CallEvent>(e);
      const mock::Event r = resolved(fmt, e, st.ctx, calls, reasoning);
      if (std::holds_alternative<mock::ReasoningEvent>(e)) ++reasoning;
      all.push_back(r);
      unit_lines(out, enc->event_units(r, is_call ? calls++ : calls));
    }
    if (st.withheld_call) {
      const mock::Event r = resolved(fmt, *st.withheld_call, st.ctx, calls);
      unit_lines(out, enc->event_units(r, calls++));
      enc->withhold_last_units(st.withhold_after);
      out << "-- withheld after " << st.withhold_after << "\n";
    }
    if (st.error_status != 0) out << "-- error_event " << st.error_status << "\n" << enc->error_event(st.error_status);
    if (st.malformed) out << "-- malformed\n" << enc->malformed_frame();
    out << "-- unary\n" << fmt.unary_body(all, st.ctx) << "\n";
  }
  for (std::string target : fmt.paths()) {  // e.g. "POST /v1/messages[?beta=true]"
    target = target.substr(target.find(' ') + 1);
    if (const auto at = target.find("{model}"); at != std::string::npos) target.replace(at, 7, "m");
    if (const auto at = target.find('['); at != std::string::npos) target.erase(at);
    out << "=== " << fmt.name() << " error_content_type " << target << "\n" << fmt.error_content_type(target) << "\n";
  }
  for (int status : {400, 429, 500, 503, 529}) {
    for (std::optional<double> retry : {std::optional<double>(), std::optional<double>(2.5)}) {
      const mock::ErrorAnswer a = fmt.error_answer(status, fmt.default_message(status), retry);
      out << "=== " << fmt.name() << " error_answer " << status << (retry ? " retry 2.5" : "") << "\n"
          << a.body << "\n";
      for (const auto& [k, v] : a.headers) out << k << ": " << v << "\n";
    }
  }
  return out.str();
}

std::string golden_path() { return std::string(HICCUP_SOURCE_DIR) + "/mock_server/testdata/encoder_bytes.txt"; }

}  // namespace

TEST_CASE("every format's encoders write the corpus's bytes exactly as pinned") {
  std::string actual;
  for (const mock::WireFormat* fmt : mock::wire_formats()) actual += encode_all(*fmt);
  const char* update = std::getenv("HICCUP_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(golden_path(), std::ios::binary) << actual;
    WARN("rewrote " << golden_path());
  }
  std::ifstream in(golden_path(), std::ios::binary);
  REQUIRE(in.good());
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string expected = buf.str();
  // Name the first differing line, not two 100 KB strings.
  std::istringstream a(actual), e(expected);
  std::string la, le;
  int line = 0;
  while (true) {
    ++line;
    const bool more_a = static_cast<bool>(std::getline(a, la));
    const bool more_e = static_cast<bool>(std::getline(e, le));
    if (!more_a && !more_e) break;
    INFO("line " << line << " of " << golden_path());
    REQUIRE(more_a == more_e);
    REQUIRE(la == le);
  }
  CHECK(actual.size() == expected.size());
  CHECK(actual.size() > 20000);  // the corpus really encoded something in every format
}

}  // namespace encoder_bytes_test
