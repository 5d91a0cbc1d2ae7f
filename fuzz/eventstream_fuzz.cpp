// libFuzzer target: the AWS event stream on both sides. The runtime's decoder
// (runtime_under_test/eventstream_decoder) on arbitrary bytes, fed whole and split at a point the
// first byte picks (both feeds must give the same messages and the same verdict); the runtime's
// CloudTransport reading them as a Bedrock answer (chunks, exceptions, an error body); and the
// mock's cloud paths (mock_server/eventstream/cloud_paths) taking the bytes as a request's target
// and body. Nothing may throw or crash; every SSE byte the runtime's codec is handed is valid UTF-8
// whenever the chunk bytes were.
#include <cstdlib>
#include <memory>
#include <vector>

#include "fuzz/fuzz_common.h"
#include "mock_server/eventstream/cloud_paths.h"
#include "mock_server/script_engine.h"
#include "runtime_under_test/cloud_transport.h"
#include "runtime_under_test/eventstream_decoder.h"

namespace {

class Canned final : public rut::ITransport {
 public:
  std::string_view body;
  int status = 200;
  rut::TransportResult post(const rut::HttpRequest&, const std::function<bool(std::string_view)>& on_body) override {
    const std::size_t half = body.size() / 2;
    if (on_body(body.substr(0, half))) on_body(body.substr(half));
    return {status, rut::TransportEnd::kComplete, {{"x-amzn-errortype", "ThrottlingException:x"}}};
  }
};

bool same(const std::vector<rut::EventStreamMessage>& a, const std::vector<rut::EventStreamMessage>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].headers != b[i].headers || a[i].payload != b[i].payload) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = hiccup_fuzz::as_text(data, size);
  std::vector<rut::EventStreamMessage> whole, split;
  rut::EventStreamDecoder a, b;
  const bool ok_a = a.feed(text, whole);
  const std::size_t at = size == 0 ? 0 : data[0] % (size + 1);
  bool ok_b = b.feed(text.substr(0, at), split);
  ok_b = b.feed(text.substr(at), split) && ok_b;
  if (ok_a != ok_b || !same(whole, split) || a.error() != b.error()) std::abort();  // chunking mattered
  if (a.pending_bytes() > size) std::abort();

  Canned inner;
  inner.body = text;
  for (int status : {200, 429}) {
    inner.status = status;
    rut::CloudTransport t(inner, rut::CloudPath::kBedrock);
    (void)t.post(rut::HttpRequest{"/v1/messages", R"({"model":"m","stream":true})", {}, 60},
                 [](std::string_view) { return true; });
  }

  // The mock side: the bytes as a request target and as a cloud request's body.
  (void)mock::cloud::cloud_target(text);
  mock::Script script;
  script.provider = "anthropic";
  mock::Attempt attempt;
  attempt.events = {mock::TextEvent{"hi"}, mock::FinishEvent{}};
  script.turns.push_back({{attempt}});
  auto engine = std::make_shared<mock::ScriptEngine>(script);
  for (const char* target : {"/model/m/invoke-with-response-stream", "/v1/projects/p/locations/l/publishers/anthropic/models/m:streamRawPredict"}) {
    auto responder = mock::cloud::make_cloud_responder(engine, target);
    const mock::Plan plan = responder->respond(mock::Request{"POST", target, std::string(text)});
    responder->settle(plan.journal_index, mock::Delivery{static_cast<int>(plan.actions.size()), false});
  }
  return 0;
}
