// libFuzzer target: upstream answer bytes through `hiccup record`'s session recorder (streamed,
// non-streaming and as an error answer, in the wire format the first byte picks, the stream cut or
// complete) and through `hiccup proxy`'s live fault gate, then the scenario written as JSON; and the
// raw bytes through the proxy's own upstream answer parser (upstream_connection.h), whole and in
// pieces of a size the first byte picks.
// Upstream bytes are foreign input: nothing in them may crash hiccup (docs/ROBUSTNESS.md).
#include <string>
#include <vector>

#include "fuzz/fuzz_common.h"
#include "harness/record/live_faults.h"
#include "harness/record/session_recorder.h"
#include "harness/record/upstream_connection.h"
#include "mock_server/wire_format.h"
#include "runtime_under_test/codec.h"

namespace {

struct Provider {
  const char* name;
  const char* body;  // a request that decodes (one user message, streaming)
};
const Provider kProviders[] = {
    {"gemini", R"({"contents":[{"role":"user","parts":[{"text":"x"}]}]})"},
    {"openai-chat", R"({"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]})"},
    {"openai-responses", R"({"model":"m","stream":true,"input":"x"})"},
    {"anthropic", R"({"model":"m","max_tokens":1,"stream":true,"messages":[{"role":"user","content":"x"}]})"},
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Provider& p = kProviders[data[0] % 4];
  const bool cut = (data[0] & 4) != 0;
  const std::string_view text = hiccup_fuzz::as_text(data + 1, size - 1);
  const std::string target(hiccup_fuzz::stream_target(p.name));
  harness::record::SessionRecorder rec;
  const std::vector<std::pair<std::string, std::string>> sse = {{"content-type", "text/event-stream"}};
  const std::vector<std::pair<std::string, std::string>> plain = {{"content-type", "application/json"},
                                                                  {"retry-after", std::string(text.substr(0, 8))}};
  for (int status : {200, 200, 503}) {
    harness::record::Exchange* ex = rec.begin("POST", target, p.body);
    if (ex == nullptr) return 0;
    ex->head(status, status == 200 && (data[0] & 8) == 0 ? sse : plain);
    const std::size_t half = text.size() / 2;
    ex->body(text.substr(0, half));
    ex->body(text.substr(half));
    ex->end(cut ? ((data[0] & 16) != 0 ? harness::record::AnswerEnd::kClientGone : harness::record::AnswerEnd::kConnectionLost)
                : harness::record::AnswerEnd::kComplete);
  }
  (void)rec.scenario("fuzz").dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  (void)rec.notes();

  const mock::WireFormat* format = mock::wire_format(p.name);
  const rut::ICodec* codec = rut::codec_for(p.name);
  mock::Attempt attempt;
  attempt.fault = mock::CutFault{static_cast<int>(data[0] >> 4), 5};
  attempt.events = {mock::FinishEvent{mock::FinishReason::kContentFilter}};
  harness::record::LiveFaultGate gate(*format, *codec, attempt, mock::ResponseContext{"m", 0, false}, 0, 0);
  (void)gate.feed(text);
  (void)gate.finish();

  for (const std::size_t step : {text.size(), static_cast<std::size_t>(1 + (data[0] & 15))}) {
    harness::record::AnswerParser answer((data[0] & 16) != 0);
    std::size_t body_bytes = 0;
    answer.on_head = [](const harness::record::AnswerHead& h) { return h.status > 0; };
    answer.on_body = [&](std::string_view b) {
      body_bytes += b.size();
      return true;
    };
    harness::record::AnswerParser::Status st = harness::record::AnswerParser::Status::kNeedMore;
    for (std::size_t i = 0; i < text.size() && st == harness::record::AnswerParser::Status::kNeedMore; i += step) {
      st = answer.feed(text.substr(i, step == 0 ? text.size() : step));
    }
    if (st == harness::record::AnswerParser::Status::kNeedMore) (void)answer.eof();
    (void)answer.reusable();
  }
  return 0;
}
