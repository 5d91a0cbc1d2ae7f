// libFuzzer target, one binary per provider: the mock server's request decoding and validation
// as the HTTP adapter runs it (ScriptEngine::respond: depth limit, WireFormat::decode_request,
// pairing checks, planning) on an arbitrary body POSTed to the provider's streaming path.
#include "fuzz/fuzz_common.h"
#include "mock_server/script_engine.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const mock::Script script = [] {
    mock::Script s;
    s.provider = std::string(hiccup_fuzz::kProvider);
    mock::Attempt a;
    a.events = {mock::TextEvent{"Deploying."}, mock::CallEvent{"shell", {{"command", "./deploy.sh"}}, ""},
                mock::FinishEvent{mock::FinishReason::kStop}};
    mock::Attempt b;
    b.events = {mock::TextEvent{"Done."}, mock::FinishEvent{mock::FinishReason::kStop}};
    s.turns = {mock::Turn{{a}}, mock::Turn{{b}}};
    return s;
  }();
  mock::ScriptEngine engine(script);  // fresh per input: the journal must not grow across inputs
  const std::string body(hiccup_fuzz::as_text(data, size));
  (void)engine.respond(mock::Request{"POST", std::string(hiccup_fuzz::stream_target(hiccup_fuzz::kProvider)), body});
  return 0;
}
