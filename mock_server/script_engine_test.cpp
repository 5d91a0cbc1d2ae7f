// Tests of the script engine: matching, each fault's exact plan, slicing and coalescing,
// settling, journal issues and validation.
#include <catch2/catch.hpp>

#include "mock_server/gemini_format.h"
#include "mock_server/request_validator.h"
#include "mock_server/script_engine.h"

namespace script_engine_test {

namespace g = mock::gemini;
using mock::Attempt;
using mock::Ending;
using mock::Plan;
using mock::StallAction;
using mock::WriteAction;
using nlohmann::json;

namespace {

const std::string kStream = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
const std::string kUnary = "/v1beta/models/gemini-2.5-flash:generateContent";
const json kUser = {{"role", "user"}, {"parts", json::array({{{"text", "Deploy."}}})}};

const mock::Event kText = mock::TextEvent{"Deploying."};
const mock::Event kCall = mock::CallEvent{"shell", json{{"command", "./deploy.sh"}}, ""};
const mock::Event kStop = mock::FinishEvent{mock::FinishReason::kStop};

std::string body_of(const json& contents) { return json{{"contents", contents}}.dump(); }

mock::Request post(const json& contents, const std::string& target = kStream) {
  return {"POST", target, body_of(contents)};
}

/// History after turn 0 delivered one shell call (no id) and its response.
json after_call_turn() {
  json h = json::array({kUser});
  h.push_back(json::parse(
      R"({"role":"model","parts":[{"functionCall":{"name":"shell","args":{"command":"./deploy.sh"}}}]})"));
  h.push_back(json::parse(
      R"({"role":"user","parts":[{"functionResponse":{"name":"shell","response":{"output":"shell: ok"}}}]})"));
  return h;
}

Attempt stream(std::vector<mock::Event> events, std::optional<mock::Fault> fault = std::nullopt) {
  Attempt a;
  a.events = std::move(events);
  a.fault = std::move(fault);
  return a;
}

Attempt status(int code, std::optional<double> retry_after_s = std::nullopt) {
  Attempt a;
  a.status = code;
  a.retry_after_s = retry_after_s;
  return a;
}

mock::Script script_of(std::vector<std::vector<Attempt>> turns) {
  mock::Script s;
  for (auto& t : turns) s.turns.push_back(mock::Turn{std::move(t)});
  return s;
}

std::string frame(const mock::Event& e, std::size_t journal_index = 0) {
  return g::event_frame(e, {"gemini-2.5-flash", g::response_id(journal_index)});
}

struct W {
  std::string bytes;
  int events_done;
  bool terminal;
};

/// The plan's actions as comparable rows; a stall is {"<stall S>", -1, false}.
std::vector<std::tuple<std::string, int, bool>> rows(const Plan& p) {
  std::vector<std::tuple<std::string, int, bool>> out;
  for (const auto& a : p.actions) {
    if (auto* w = std::get_if<WriteAction>(&a)) {
      out.emplace_back(w->bytes, w->events_done, w->terminal);
    } else if (auto* d = std::get_if<mock::DrainAction>(&a)) {
      out.emplace_back("<drain " + std::to_string(d->pause_ms) + " ms>", -1, false);
    } else {
      out.emplace_back("<stall " + std::to_string(std::get<StallAction>(a).seconds) + ">", -1, false);
    }
  }
  return out;
}

using Rows = std::vector<std::tuple<std::string, int, bool>>;

/// Plays one stream attempt with `fault` over text, call, stop and returns its plan.
Plan play(std::optional<mock::Fault> fault, std::optional<int> slice = std::nullopt) {
  auto a = stream({kText, kCall, kStop}, fault);
  a.slice_bytes = slice;
  mock::ScriptEngine engine(script_of({{a}}));
  return engine.respond(post(json::array({kUser})));
}

}  // namespace

TEST_CASE("attempts are played in order and the last one repeats") {
  mock::ScriptEngine engine(script_of({{status(503, 30), stream({kText, kStop})}}));
  const Plan first = engine.respond(post(json::array({kUser})));
  CHECK(first.status == 503);
  CHECK_FALSE(first.streaming);
  CHECK(first.body == g::error_body(503, g::default_message(503), 30.0));
  const Plan second = engine.respond(post(json::array({kUser})));
  CHECK(second.status == 200);
  CHECK(second.streaming);
  CHECK(second.content_type == "text/event-stream");
  const Plan third = engine.respond(post(json::array({kUser})));
  CHECK(third.streaming);
  const auto j = engine.journal();
  REQUIRE(j.size() == 3);
  CHECK(j[0].played == "status");
  CHECK(j[0].response_status == 503);
  CHECK(j[2].attempt == 2);
  CHECK(j[2].script_attempt == 1);
  CHECK(j[2].played == "stream");
  CHECK(third.journal_index == 2);
}

TEST_CASE("the turn index comes from the history, so each turn has its own attempt counter") {
  mock::ScriptEngine engine(script_of({{stream({kCall, kStop})}, {status(500), stream({kText, kStop})}}));
  engine.respond(post(json::array({kUser})));
  CHECK(engine.respond(post(after_call_turn())).status == 500);
  CHECK(engine.respond(post(after_call_turn())).status == 200);
  CHECK(engine.respond(post(json::array({kUser}))).status == 200);
  const auto j = engine.journal();
  CHECK(j[1].turn == 1);
  CHECK(j[1].attempt == 0);
  CHECK(j[2].attempt == 1);
  CHECK(j[3].turn == 0);
  CHECK(j[3].attempt == 1);
}

TEST_CASE("a cut turn a client kept and asked more of stays a turn of its own when the next answer joins it in history") {
  // codex keeps a cut text-only attempt as an assistant message and asks for more; that request is
  // the next turn. Its next history carries the kept message and the next answer's call as
  // adjacent items, one model content in the neutral view: still turns 0 and 1, so the request
  // with the call's output is turn 2, not a retry of turn 1 that resends the call.
  mock::Script s;
  s.provider = "openai-responses";
  s.turns.push_back(mock::Turn{{stream({mock::TextEvent{"Let me look."}, kStop}, mock::ResetFault{1, 0}),
                                stream({mock::TextEvent{"Done."}, kStop})}});
  s.turns.push_back(mock::Turn{{stream({mock::CallEvent{"shell", json{{"command", "ls"}}, ""}, kStop}),
                                stream({mock::CallEvent{"shell", json{{"command", "ls"}}, ""}, kStop})}});
  s.turns.push_back(mock::Turn{{stream({mock::TextEvent{"Listed."}, kStop})}});
  mock::ScriptEngine engine(s);
  const json user = {{"role", "user"}, {"content", "List the files."}};
  const json kept = {{"type", "message"}, {"role", "assistant"},
                     {"content", json::array({{{"type", "output_text"}, {"text", "Let me look."}}})}};
  const json call = {{"type", "function_call"}, {"call_id", "call_1"}, {"name", "shell"}, {"arguments", R"({"command":"ls"})"}};
  const json output = {{"type", "function_call_output"}, {"call_id", "call_1"}, {"output", "a.txt"}};
  auto post_items = [&](json items) {
    const Plan p = engine.respond({"POST", "/v1/responses", json{{"model", "gpt-5"}, {"stream", true}, {"input", items}}.dump()});
    engine.settle(p.journal_index, {static_cast<int>(p.actions.size()), false});  // delivered in full
    return p;
  };
  post_items(json::array({user}));
  post_items(json::array({user, kept}));
  post_items(json::array({user, kept, call, output}));
  // A later history that holds the same kept message and more keeps splitting it.
  const json answer = {{"type", "message"}, {"role", "assistant"},
                       {"content", json::array({{{"type", "output_text"}, {"text", "Listed."}}})}};
  post_items(json::array({user, kept, call, output, answer, {{"role", "user"}, {"content", "Thanks."}}}));
  const auto j = engine.journal();
  REQUIRE(j.size() == 4);
  CHECK(j[1].turn == 1);
  CHECK(j[2].turn == 2);
  CHECK(j[2].issues.empty());  // the output answers the call turn 1 delivered
  REQUIRE(j[2].contents.size() == 4);
  CHECK(j[2].contents[1]["parts"].size() == 1);
  CHECK(j[2].contents[2]["parts"][0].contains("functionCall"));
  CHECK(j[3].turn == 3);
  // A content that only starts like the kept one is not split: other text, then a call.
  mock::ScriptEngine other(s);
  const json different = {{"type", "message"}, {"role", "assistant"},
                          {"content", json::array({{{"type", "output_text"}, {"text", "Let me see."}}})}};
  other.respond({"POST", "/v1/responses", json{{"model", "gpt-5"}, {"stream", true}, {"input", json::array({user})}}.dump()});
  other.respond({"POST", "/v1/responses",
                 json{{"model", "gpt-5"}, {"stream", true}, {"input", json::array({user, kept})}}.dump()});
  other.respond({"POST", "/v1/responses",
                 json{{"model", "gpt-5"}, {"stream", true}, {"input", json::array({user, different, call, output})}}.dump()});
  CHECK(other.journal()[2].turn == 1);
  // A history whose text is not UTF-8 never reaches the kept-end hash: the body is not valid JSON
  // text, so it is the provider's 400, and nothing throws.
  mock::ScriptEngine bytes(s);
  const std::string bad_kept =
      std::string(R"({"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me )") + "\xFF" +
      R"( look."}]})";
  for (const std::string& input : {std::string(R"([{"role":"user","content":"List."}])"),
                                   R"([{"role":"user","content":"List."},)" + bad_kept + "]",
                                   R"([{"role":"user","content":"List."},)" + bad_kept + R"(,)" + call.dump() + "," +
                                       output.dump() + "]"}) {
    CHECK_NOTHROW(bytes.respond({"POST", "/v1/responses", R"({"model":"gpt-5","stream":true,"input":)" + input + "}"}));
  }
  REQUIRE(bytes.journal().size() == 3);
  CHECK(bytes.journal()[1].played == "bad-request");
  CHECK(bytes.journal()[2].played == "bad-request");
}

TEST_CASE("a request past the last turn gets a 500 envelope and an unscripted-request issue") {
  mock::ScriptEngine engine(script_of({{stream({kText, kStop})}}));
  json history = json::array({kUser});
  history.push_back(json::parse(R"({"role":"model","parts":[{"text":"Done."}]})"));
  history.push_back(kUser);
  const Plan p = engine.respond(post(history));
  CHECK(p.status == 500);
  CHECK(json::parse(p.body)["error"]["status"] == "INTERNAL");
  const auto e = engine.journal().at(0);
  CHECK(e.played == "unscripted");
  REQUIRE(e.issues.size() == 1);
  CHECK(e.issues[0].rfind("unscripted-request: ", 0) == 0);
  CHECK(e.attempt == -1);
}

TEST_CASE("with answer_past_script, a request past the last turn gets a completed answer of that text, still journaled unscripted") {
  // The external-agent runner's setting: an agent asking for more after the script's last answer
  // (claude-code after a max_tokens finish) is answered, not sent a 500 it retries for minutes.
  mock::ScriptEngine engine(script_of({{stream({kText, kStop})}}));
  engine.answer_past_script("No more turns.");
  json history = json::array({kUser});
  history.push_back(json::parse(R"({"role":"model","parts":[{"text":"Done."}]})"));
  history.push_back(kUser);
  const Plan p = engine.respond(post(history));
  CHECK(p.status == 200);
  CHECK(p.streaming);
  engine.settle(p.journal_index, {static_cast<int>(p.actions.size()), false});
  const auto e = engine.journal().at(0);
  CHECK(e.played == "unscripted");
  CHECK(e.turn == 1);
  CHECK(e.attempt == -1);
  CHECK(e.script_attempt == -1);
  CHECK(e.completed);
  CHECK(e.delivered_text == "No more turns.");
  CHECK(e.delivered_calls.empty());
  REQUIRE(e.issues.size() == 1);
  CHECK(e.issues[0].rfind("unscripted-request: ", 0) == 0);
  // Unary too; and the scripted turn is still played as scripted.
  const Plan unary = engine.respond(post(history, kUnary));
  CHECK(unary.status == 200);
  CHECK(json::parse(unary.body)["candidates"][0]["content"]["parts"][0]["text"] == "No more turns.");
  const Plan first = engine.respond(post(json::array({kUser})));
  CHECK(first.status == 200);
  CHECK(engine.journal().at(2).played == "stream");
  CHECK(engine.journal().at(2).turn == 0);
}

TEST_CASE("a Gemini error answer is pretty-printed JSON, under text/event-stream for a stream and JSON with charset otherwise") {
  // Google's front end pretty-prints the envelope (two-space indent, a final newline) and answers
  // streamGenerateContent?alt=sse with `Content-Type: text/event-stream`, generateContent with
  // `application/json; charset=UTF-8` (gemini_format.h, error_body). @google/genai reads the
  // first as text, so its ApiError message wraps the pretty text (gemini-cli #2020, #15745).
  const std::string pretty =
      "{\n  \"error\": {\n    \"code\": 503,\n    \"message\": \"The model is overloaded. Please try again later.\",\n"
      "    \"status\": \"UNAVAILABLE\"\n  }\n}\n";
  for (const bool streaming : {true, false}) {
    INFO((streaming ? "streamGenerateContent" : "generateContent"));
    mock::ScriptEngine engine(script_of({{status(503)}}));
    const Plan p = engine.respond(post(json::array({kUser}), streaming ? kStream : kUnary));
    CHECK(p.status == 503);
    CHECK(p.body == pretty);
    CHECK(p.content_type == (streaming ? "text/event-stream" : "application/json; charset=UTF-8"));
  }
  // A rejected request and an unscripted turn are answered the same way.
  mock::ScriptEngine engine(script_of({{stream({kStop})}}));
  const Plan bad = engine.respond({"POST", kStream, "{not json"});
  CHECK(bad.status == 400);
  CHECK(bad.content_type == "text/event-stream");
  CHECK(bad.body.rfind("{\n  \"error\": {\n    \"code\": 400,\n", 0) == 0);
  // The other formats keep their compact envelope under application/json.
  mock::ScriptEngine anthropic(script_of({{status(529)}}));
  const Plan a = anthropic.respond({"POST", "/v1/messages",
                                    R"({"model":"claude-x","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]})"});
  CHECK(a.content_type == "application/json");
  CHECK(a.body == R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})");
}

TEST_CASE("a fault-free stream is one write holding every frame") {
  const Plan p = play(std::nullopt);
  CHECK(p.status == 200);
  CHECK(rows(p) == Rows{{frame(kText) + frame(kCall) + frame(kStop), 3, true}});
  CHECK(p.ending == Ending::kTerminator);
}

TEST_CASE("disconnect writes the frames before it, then FIN after delay_ms") {
  const Plan p = play(mock::DisconnectFault{1, 25});
  CHECK(rows(p) == Rows{{frame(kText), 1, false}});
  CHECK(p.ending == Ending::kFin);
  CHECK(p.ending_delay_ms == 25);
}

TEST_CASE("reset writes the frames before it, then RST after idle_ms") {
  const Plan p = play(mock::ResetFault{2, 150});
  CHECK(rows(p) == Rows{{frame(kText) + frame(kCall), 2, false}});
  CHECK(p.ending == Ending::kReset);
  CHECK(p.ending_delay_ms == 150);
}

TEST_CASE("end stops the events and ends the response cleanly") {
  const Plan p = play(mock::EndFault{1});
  CHECK(rows(p) == Rows{{frame(kText), 1, false}});
  CHECK(p.ending == Ending::kTerminator);
}

TEST_CASE("cut sends the first bytes of the next frame as their own write, then FIN") {
  Plan p = play(mock::CutFault{1, 10});
  CHECK(rows(p) == Rows{{frame(kText), 1, false}, {frame(kCall).substr(0, 10), 1, false}});
  CHECK(p.ending == Ending::kFin);
  p = play(mock::CutFault{1, 100000});
  const std::string f = frame(kCall);
  CHECK(std::get<1>(rows(p).at(1)) == 1);
  CHECK(std::get<0>(rows(p).at(1)) == f.substr(0, f.size() - 1));
  p = play(mock::CutFault{std::nullopt, 5});  // no next frame: just close
  CHECK(rows(p) == Rows{{frame(kText) + frame(kCall) + frame(kStop), 3, true}});
  CHECK(p.ending == Ending::kFin);
}

TEST_CASE("error_event sends the bare in-stream error object as its own chunk, in a read of its own, then ends") {
  const Plan p = play(mock::ErrorEventFault{2, 529});
  CHECK(rows(p) == Rows{{frame(kText) + frame(kCall), 2, false},
                        {"<drain 50 ms>", -1, false},
                        {g::stream_error_chunk(529), 2, false}});
  CHECK(p.ending == Ending::kTerminator);
  // First in the stream there is nothing to wait for.
  const Plan first = play(mock::ErrorEventFault{0, 503});
  CHECK(rows(first) == Rows{{g::stream_error_chunk(503), 0, false}});
}

TEST_CASE("malformed sends one undecodable frame between writes and goes on") {
  const Plan p = play(mock::MalformedFault{1});
  CHECK(rows(p) == Rows{{frame(kText), 1, false},
                        {g::malformed_frame(), 1, false},
                        {frame(kCall) + frame(kStop), 3, true}});
  CHECK(p.ending == Ending::kTerminator);
}

TEST_CASE("stall pauses between writes and goes on") {
  const Plan p = play(mock::StallFault{1, 30});
  CHECK(rows(p) == Rows{{frame(kText), 1, false},
                        {"<stall " + std::to_string(30.0) + ">", -1, false},
                        {frame(kCall) + frame(kStop), 3, true}});
}

TEST_CASE("a fault after the terminal event still happens on the wire") {
  const Plan p = play(mock::ResetFault{std::nullopt, 200});
  CHECK(rows(p) == Rows{{frame(kText) + frame(kCall) + frame(kStop), 3, true}});
  CHECK(p.ending == Ending::kReset);
  CHECK(play(mock::ResetFault{}).ending_delay_ms == 200);
}

TEST_CASE("slice_bytes splits the byte stream anywhere, counting events by their last byte") {
  const Plan p = play(std::nullopt, 7);
  const std::string all = frame(kText) + frame(kCall) + frame(kStop);
  std::string joined;
  int last_events = 0;
  int terminals = 0;
  const auto r = rows(p);
  for (std::size_t i = 0; i < r.size(); ++i) {
    const auto& [bytes, events, terminal] = r[i];
    CHECK(bytes.size() <= 7);
    joined += bytes;
    // events_done = frames whose last byte is within what has been written so far
    int expect = 0;
    std::size_t end = 0;
    for (const auto& f : {frame(kText), frame(kCall), frame(kStop)}) {
      end += f.size();
      if (end <= joined.size()) ++expect;
    }
    CHECK(events == expect);
    CHECK(events >= last_events);
    last_events = events;
    terminals += terminal ? 1 : 0;
    if (terminal) CHECK(i == r.size() - 1);
  }
  CHECK(joined == all);
  CHECK(terminals == 1);
  CHECK(r.size() == (all.size() + 6) / 7);
}

TEST_CASE("slicing never merges bytes across a fault") {
  const Plan p = play(mock::CutFault{1, 10}, 1000);
  CHECK(rows(p) == Rows{{frame(kText), 1, false}, {frame(kCall).substr(0, 10), 1, false}});
}

TEST_CASE("settle derives delivered events, calls, text and completion from the writes done") {
  mock::ScriptEngine engine(script_of({{stream({kText, kCall, kStop}, mock::MalformedFault{2})}}));
  const Plan p = engine.respond(post(json::array({kUser})));
  REQUIRE(p.actions.size() == 3);
  engine.settle(p.journal_index, {1, true});
  auto e = engine.journal().at(0);
  CHECK(e.settled);
  CHECK(e.events_delivered == 2);
  CHECK_FALSE(e.completed);
  CHECK(e.delivered_text == "Deploying.");
  REQUIRE(e.delivered_calls.size() == 1);
  CHECK(e.delivered_calls[0] == mock::DeliveredCall{"shell", json{{"command", "./deploy.sh"}}, "", 0});
  CHECK(e.fault == "malformed");
  engine.settle(p.journal_index, {3, false});
  e = engine.journal().at(0);
  CHECK(e.events_delivered == 2);  // a correct client stops at the undecodable frame
  CHECK_FALSE(e.completed);        // so the finish written after it is never read
  engine.settle(p.journal_index, {0, true});
  e = engine.journal().at(0);
  CHECK(e.events_delivered == 0);
  CHECK(e.delivered_calls.empty());
  CHECK_FALSE(e.completed);
}

TEST_CASE("text inside one open text block or item counts as delivered per text event, as its bytes arrive") {
  // Anthropic and Responses keep one text block / message item open across a run of text events
  // (issue 41); the journal still counts each text event delivered once its delta frame is
  // written, whether the block is later closed or a fault leaves it open.
  struct Provider {
    std::string name, target, body, delta_type, delta_key;
  };
  const std::vector<Provider> providers = {
      {"anthropic", "/v1/messages",
       R"({"model":"claude-x","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]})",
       "content_block_delta", "text"},
      {"openai-responses", "/v1/responses", R"({"model":"gpt-x","input":"hi","stream":true})",
       "response.output_text.delta", "delta"}};
  const std::vector<mock::Event> events = {mock::TextEvent{"Dep"}, mock::TextEvent{"loy"}, mock::TextEvent{"ing."},
                                           kStop};
  for (const Provider& pr : providers) {
    const std::vector<std::pair<std::optional<mock::Fault>, std::string>> cases = {
        {std::nullopt, "Deploying."}, {mock::DisconnectFault{2}, "Deploy"}, {mock::ErrorEventFault{1, 503}, "Dep"}};
    for (const auto& [fault, delivered] : cases) {
      INFO(pr.name << (fault ? std::string(" fault ") + std::string(mock::fault_name(*fault)) : std::string()));
      Attempt a = stream(events, fault);
      a.slice_bytes = 23;
      mock::Script script = script_of({{a}});
      script.provider = pr.name;
      mock::ScriptEngine engine(script);
      const Plan p = engine.respond({"POST", pr.target, pr.body});
      std::string written;
      for (std::size_t done = 0; done <= p.actions.size(); ++done) {
        if (done > 0) {
          if (auto* w = std::get_if<WriteAction>(&p.actions[done - 1])) written += w->bytes;
        }
        engine.settle(p.journal_index, {static_cast<int>(done), false});
        // The text of every delta frame received whole.
        std::string text;
        std::size_t at = 0;
        for (std::size_t end; (end = written.find("\n\n", at)) != std::string::npos; at = end + 2) {
          const std::string frame = written.substr(at, end - at);
          const std::size_t d = frame.find("data: ");
          if (d == std::string::npos) continue;
          const json j = json::parse(frame.substr(d + 6), nullptr, false);
          if (j.is_object() && j.value("type", "") == pr.delta_type) {
            const json& src = pr.name == "anthropic" ? j["delta"] : j;
            text += src[pr.delta_key].get<std::string>();
          }
        }
        INFO("after " << done << " of " << p.actions.size() << " actions");
        CHECK(engine.journal()[0].delivered_text == text);
      }
      CHECK(engine.journal()[0].delivered_text == delivered);
    }
  }
}

TEST_CASE("events after the first finish and faults after it change nothing") {
  mock::ScriptEngine engine(
      script_of({{stream({kText, kStop, mock::TextEvent{"Extra."}}, mock::MalformedFault{3})}}));
  const Plan p = engine.respond(post(json::array({kUser})));
  engine.settle(p.journal_index, {static_cast<int>(p.actions.size()), false});
  const auto e = engine.journal().at(0);
  CHECK(e.completed);
  CHECK(e.events_delivered == 2);
  CHECK(e.delivered_text == "Deploying.");
}

TEST_CASE("a stall counts as done only when it ran to its end") {
  mock::ScriptEngine engine(script_of({{stream({kCall, kStop}, mock::StallFault{1, 90})}}));
  const Plan p = engine.respond(post(json::array({kUser})));
  REQUIRE(p.actions.size() == 3);
  engine.settle(0, {1, true});  // the client gave up during the stall
  CHECK_FALSE(engine.journal()[0].completed);
  CHECK(engine.journal()[0].events_delivered == 1);
  engine.settle(0, {3, false});
  CHECK(engine.journal()[0].completed);
}

TEST_CASE("a content-filter finish delivered in full does not complete the turn") {
  mock::ScriptEngine engine(script_of({{stream({kText, mock::FinishEvent{mock::FinishReason::kContentFilter}})}}));
  const Plan p = engine.respond(post(json::array({kUser})));
  CHECK_FALSE(std::get<WriteAction>(p.actions.at(0)).terminal);
  engine.settle(0, {1, false});
  CHECK(engine.journal()[0].events_delivered == 2);
  CHECK_FALSE(engine.journal()[0].completed);
}

TEST_CASE("call indexes count every call of the attempt, delivered or not") {
  const mock::Event second = mock::CallEvent{"notify", json::object(), "n1"};
  mock::ScriptEngine engine(script_of({{stream({kCall, second, kStop}, mock::StallFault{1, 1})}}));
  engine.respond(post(json::array({kUser})));
  engine.settle(0, {3, false});
  const auto calls = engine.journal()[0].delivered_calls;
  REQUIRE(calls.size() == 2);
  CHECK(calls[1] == mock::DeliveredCall{"notify", json::object(), "n1", 1});
}

TEST_CASE("a function response for a call no attempt of its turn delivered whole is a journal issue") {
  mock::ScriptEngine engine(
      script_of({{stream({kCall, kStop}, mock::ResetFault{1, 200}), stream({kCall, kStop})},
                 {stream({kText, kStop})}}));
  engine.respond(post(json::array({kUser})));
  engine.settle(0, {0, true});  // cut before the call arrived
  engine.respond(post(after_call_turn()));
  const auto j = engine.journal();
  REQUIRE(j[1].issues.size() == 1);
  CHECK(j[1].issues[0].rfind("response-for-undelivered-call: ", 0) == 0);
  CHECK(j[1].issues[0].find("answers no call any attempt of turn 0 (or of the turn after it) delivered") != std::string::npos);
  CHECK(j[1].validated);  // the real API would not know
}

TEST_CASE("a function response may answer a call a cut attempt delivered whole (the continue design)") {
  mock::ScriptEngine engine(
      script_of({{stream({kCall, kStop}, mock::ResetFault{1, 200}), stream({kCall, kStop})},
                 {stream({kText, kStop})}}));
  engine.respond(post(json::array({kUser})));
  engine.settle(0, {1, true});  // the call's frame was written, then the connection was reset
  auto j = engine.journal();
  REQUIRE(j[0].delivered_calls.size() == 1);
  CHECK_FALSE(j[0].completed);
  engine.respond(post(after_call_turn()));  // the cut turn kept, its call answered
  j = engine.journal();
  CHECK(j[1].turn == 1);
  CHECK(j[1].issues.empty());
}

TEST_CASE("a function response may answer a call of a continuation the client merged into the cut turn it kept") {
  // qwen-code: turn 0 is cut after its text and kept; the answer to its "Resume directly" (asked
  // for as turn 1) delivers a call, which the client appends to the kept turn and answers there.
  const json resume = {{"role", "user"}, {"parts", json::array({{{"text", "Resume directly."}}})}};
  mock::ScriptEngine engine(script_of({{stream({kText, kCall, kStop}, mock::ResetFault{1, 200})},
                                       {stream({kCall, kStop})},
                                       {stream({kText, kStop})}}));
  engine.respond(post(json::array({kUser})));
  engine.settle(0, {1, true});  // "Deploying." written, then the reset
  engine.respond(post(json::array({kUser, {{"role", "model"}, {"parts", json::array({{{"text", "Deploying."}}})}}, resume})));
  engine.settle(1, {2, false});
  json merged = after_call_turn();
  merged[1]["parts"].insert(merged[1]["parts"].begin(), json{{"text", "Deploying."}});
  engine.respond(post(merged));
  auto j = engine.journal();
  REQUIRE(j.size() == 3);
  CHECK(j[1].turn == 1);
  CHECK(j[2].turn == 1);  // one model turn in its history: the engine asks turn 1 again
  CHECK(j[2].issues.empty());
}

TEST_CASE("function responses with ids must match delivered call ids") {
  mock::ScriptEngine engine(script_of({{stream({mock::CallEvent{"shell", json::object(), "c1"}, kStop})},
                                       {stream({kText, kStop})}}));
  engine.respond(post(json::array({kUser})));
  engine.settle(0, {1, false});
  auto history = [](const std::string& id) {
    json h = json::array({kUser});
    h.push_back(json::parse(
        R"({"role":"model","parts":[{"functionCall":{"name":"shell","args":{},"id":"c1"}}]})"));
    h.push_back(json::parse(R"({"role":"user","parts":[{"functionResponse":{"name":"shell","id":")" +
                            id + R"(","response":{}}}]})"));
    return h;
  };
  engine.respond(post(history("c1")));
  engine.respond(post(history("c2")));
  const auto j = engine.journal();
  CHECK(j[1].issues.empty());
  REQUIRE(j[2].issues.size() == 1);
  CHECK(j[2].issues[0].find("\"c2\"") != std::string::npos);
}

TEST_CASE("a response may answer a delivered call under the id the client gave it in history, and the journal marks a reused id") {
  // The provider sends two calls with one id (reuse_id); the client keeps both, the second under
  // an id of its own (POLICY.md "Call ids").
  mock::CallEvent first{"shell", json{{"command", "make"}}, "c1"};
  mock::CallEvent second{"shell", json{{"command", "make test"}}, "c1", 0, true};
  mock::ScriptEngine engine(script_of({{stream({first, second, kStop})}, {stream({kText, kStop})}}));
  engine.respond(post(json::array({kUser})));
  engine.settle(0, {3, false});
  auto j = engine.journal();
  REQUIRE(j[0].delivered_calls.size() == 2);
  CHECK_FALSE(j[0].delivered_calls[0].reuse_id);
  CHECK(j[0].delivered_calls[1].reuse_id);
  CHECK(mock::journal_entry_to_json(j[0])["delivered_calls"][1]["reuse_id"] == true);
  auto history = [](const std::string& second_id, const std::string& second_command) {
    json h = json::array({kUser});
    json model = json::parse(R"({"role":"model","parts":[{"functionCall":{"name":"shell","args":{"command":"make"},"id":"c1"}}]})");
    model["parts"].push_back({{"functionCall", {{"name", "shell"}, {"args", {{"command", second_command}}}, {"id", second_id}}}});
    json user = json::parse(R"({"role":"user","parts":[{"functionResponse":{"name":"shell","id":"c1","response":{}}}]})");
    user["parts"].push_back({{"functionResponse", {{"name", "shell"}, {"id", second_id}, {"response", json::object()}}}});
    h.push_back(model);
    h.push_back(user);
    return h;
  };
  engine.respond(post(history("c1_dup1", "make test")));
  engine.respond(post(history("c1_dup1", "rm -rf /")));  // a call of its own under that id: never delivered
  j = engine.journal();
  CHECK(j[1].issues.empty());
  REQUIRE(j[2].issues.size() == 1);
  CHECK(j[2].issues[0].find("(id \"c1_dup1\") answers no call") != std::string::npos);
}

TEST_CASE("a malformed body gets a 400 envelope and the engine keeps serving the script") {
  mock::ScriptEngine engine(script_of({{stream({kText, kStop})}}));
  const Plan bad = engine.respond({"POST", kStream, "{oops"});
  CHECK(bad.status == 400);
  CHECK(json::parse(bad.body)["error"]["status"] == "INVALID_ARGUMENT");
  const Plan good = engine.respond(post(json::array({kUser})));
  CHECK(good.status == 200);
  const auto j = engine.journal();
  CHECK(j[0].played == "bad-request");
  CHECK_FALSE(j[0].validated);
  CHECK(j[0].rejection == "Invalid JSON payload received. Unexpected token.");
  CHECK(j[1].attempt == 0);  // the bad request consumed no attempt
}

TEST_CASE("a pairing violation is rejected with the exact message and consumes no attempt") {
  mock::ScriptEngine engine(script_of({{stream({kCall, kStop})}, {status(503), stream({kText, kStop})}}));
  json doubled = after_call_turn();
  doubled[2]["parts"].push_back(doubled[2]["parts"][0]);
  const Plan p = engine.respond(post(doubled));
  CHECK(p.status == 400);
  CHECK(json::parse(p.body)["error"]["message"] == g::kResponseCountMessage);
  CHECK(engine.respond(post(after_call_turn())).status == 503);
  const auto j = engine.journal();
  CHECK(j[0].played == "rejected");
  CHECK_FALSE(j[0].validated);
  CHECK(j[0].rejection == g::kResponseCountMessage);
  CHECK(j[0].turn == 1);
  CHECK(j[1].attempt == 0);
}

TEST_CASE("unknown routes get a 404 envelope and a HEAD preflight gets an empty 200") {
  mock::ScriptEngine engine(script_of({{stream({kText, kStop})}}));
  const Plan nf = engine.respond({"POST", "/v1/unknown/endpoint", "{}"});
  CHECK(nf.status == 404);
  CHECK(json::parse(nf.body)["error"]["status"] == "NOT_FOUND");
  CHECK(engine.respond({"GET", kStream, ""}).status == 404);
  const Plan head = engine.respond({"HEAD", "/", ""});
  CHECK(head.status == 200);
  CHECK(head.body.empty());
  const auto j = engine.journal();
  CHECK(j[0].played == "not-found");
  CHECK(j[2].played == "preflight");
  CHECK(engine.respond(post(json::array({kUser}))).status == 200);
  CHECK(engine.journal()[3].attempt == 0);
}

TEST_CASE("generateContent answers a stream attempt with one merged JSON body") {
  mock::ScriptEngine engine(script_of({{stream({kText, kCall, kStop})}}));
  const Plan p = engine.respond(post(json::array({kUser}), kUnary));
  CHECK(p.status == 200);
  CHECK_FALSE(p.streaming);
  CHECK(p.ending == Ending::kTerminator);
  CHECK(p.actions.empty());
  const auto body = json::parse(p.body);
  CHECK(body["candidates"][0]["content"]["parts"].size() == 2);
  CHECK(body["candidates"][0]["finishReason"] == "STOP");
  engine.settle(0, {0, false});
  const auto e = engine.journal()[0];
  CHECK_FALSE(e.streaming);
  CHECK(e.completed);
  CHECK(e.fault.empty());
  CHECK(e.delivered_calls.size() == 1);
}

TEST_CASE("non-streaming malformed: a 200 whose JSON does not parse, journaled, nothing delivered") {
  mock::ScriptEngine engine(script_of({{stream({kText, kCall, kStop}, mock::MalformedFault{1})}}));
  const Plan p = engine.respond(post(json::array({kUser}), kUnary));
  CHECK(p.status == 200);
  CHECK(p.ending == Ending::kTerminator);
  CHECK_FALSE(p.body.empty());
  CHECK(json::parse(p.body, nullptr, false).is_discarded());
  engine.settle(0, {0, false});
  const auto e = engine.journal()[0];
  CHECK(e.fault == "malformed");
  CHECK_FALSE(e.completed);
  CHECK(e.events_delivered == 0);
  CHECK(e.delivered_calls.empty());
}

TEST_CASE("non-streaming stall: the whole answer waits behind a StallAction, journaled") {
  mock::ScriptEngine engine(script_of({{stream({kText, kStop}, mock::StallFault{1, 90})}}));
  const Plan p = engine.respond(post(json::array({kUser}), kUnary));
  REQUIRE(p.actions.size() == 1);
  CHECK(std::get<mock::StallAction>(p.actions[0]).seconds == 90);
  CHECK(json::parse(p.body)["candidates"][0]["finishReason"] == "STOP");
  engine.settle(0, {0, false});
  CHECK(engine.journal()[0].fault == "stall");
  CHECK(engine.journal()[0].completed);
  // The client timed out during the stall: nothing arrived.
  engine.settle(0, {0, true});
  CHECK_FALSE(engine.journal()[0].completed);
  CHECK(engine.journal()[0].delivered_text.empty());
}

TEST_CASE("non-streaming error_event: the provider's HTTP error with that status, journaled as error_event") {
  mock::ScriptEngine engine(script_of({{stream({kText, kStop}, mock::ErrorEventFault{1, 503})}}));
  const Plan p = engine.respond(post(json::array({kUser}), kUnary));
  CHECK(p.status == 503);
  CHECK(p.ending == Ending::kTerminator);
  CHECK(json::parse(p.body)["error"]["status"] == "UNAVAILABLE");
  engine.settle(0, {0, false});
  const auto e = engine.journal()[0];
  CHECK(e.fault == "error_event");
  CHECK(e.played == "status");
  CHECK(e.response_status == 503);
  CHECK(e.events_delivered == 0);
  CHECK(e.delivered_text.empty());
}

TEST_CASE("non-streaming disconnect, reset and cut: part of the body, then FIN or RST mid-body") {
  mock::ScriptEngine engine(script_of({{stream({kText, kCall, kStop}, mock::ResetFault{2, 150})}}));
  const Plan p = engine.respond(post(json::array({kUser}), kUnary));
  CHECK_FALSE(p.streaming);
  CHECK(p.ending == Ending::kReset);
  CHECK(p.ending_delay_ms == 150);
  CHECK(p.body_bytes == p.body.size() / 2);
  CHECK(json::parse(p.body)["candidates"][0]["finishReason"] == "STOP");  // the announced body
  engine.settle(0, {0, true});
  CHECK_FALSE(engine.journal()[0].completed);
  CHECK(engine.journal()[0].delivered_calls.empty());
  CHECK(engine.journal()[0].fault == "reset");

  mock::ScriptEngine e2(script_of({{stream({kText, kStop}, mock::DisconnectFault{0, 5})}}));
  const Plan q = e2.respond(post(json::array({kUser}), kUnary));
  CHECK(q.ending == Ending::kFin);
  CHECK(q.ending_delay_ms == 5);
  CHECK(q.body_bytes > 0);
  CHECK(q.body_bytes < q.body.size());

  mock::ScriptEngine e3(script_of({{stream({kText, kStop}, mock::CutFault{1, 9})}}));
  const Plan c = e3.respond(post(json::array({kUser}), kUnary));
  CHECK(c.ending == Ending::kFin);
  CHECK(c.body_bytes == 9);
  CHECK(e3.journal()[0].fault == "cut");
  mock::ScriptEngine e4(script_of({{stream({kText, kStop}, mock::CutFault{1, 100000})}}));
  const Plan c4 = e4.respond(post(json::array({kUser}), kUnary));
  CHECK(c4.body_bytes == c4.body.size() - 1);  // never the whole body
}

TEST_CASE("non-streaming end: a well-formed answer with the events before the fault and no finish") {
  mock::ScriptEngine engine(script_of({{stream({kText, kCall, kStop}, mock::EndFault{2})}}));
  const Plan p = engine.respond(post(json::array({kUser}), kUnary));
  CHECK(p.status == 200);
  CHECK(p.ending == Ending::kTerminator);
  const auto cand = json::parse(p.body)["candidates"][0];
  CHECK_FALSE(cand.contains("finishReason"));
  CHECK(cand["content"]["parts"].size() == 2);
  engine.settle(0, {0, false});
  const auto e = engine.journal()[0];
  CHECK(e.fault == "end");
  CHECK_FALSE(e.completed);
  CHECK(e.events_delivered == 2);
  CHECK(e.delivered_calls.size() == 1);
}

TEST_CASE("non-streaming: a fault after the finish does not play and is not journaled") {
  mock::ScriptEngine engine(script_of({{stream({kText, kStop}, mock::ErrorEventFault{2, 503})}}));
  const Plan p = engine.respond(post(json::array({kUser}), kUnary));
  CHECK(p.status == 200);
  engine.settle(0, {0, false});
  CHECK(engine.journal()[0].completed);
  CHECK(engine.journal()[0].fault.empty());
}

TEST_CASE("non-streaming content filter: a blocked answer without the text before it, in every format") {
  const mock::Event filter = mock::FinishEvent{mock::FinishReason::kContentFilter};
  mock::ScriptEngine engine(script_of({{stream({kText, filter})}}));
  const Plan p = engine.respond(post(json::array({kUser}), kUnary));
  const auto cand = json::parse(p.body)["candidates"][0];
  CHECK(cand["finishReason"] == "SAFETY");
  CHECK_FALSE(cand.contains("content"));
  engine.settle(0, {0, false});
  const auto e = engine.journal()[0];
  CHECK_FALSE(e.completed);
  CHECK(e.events_delivered == 2);  // the finish arrived
  CHECK(e.delivered_text.empty());  // the text did not
  // Anthropic's refusal keeps what came before it (docs.claude.com "Streaming refusals").
  mock::Script script = script_of({{stream({kText, filter})}});
  mock::ScriptEngine anthropic(script);
  const Plan a = anthropic.respond({"POST", "/v1/messages",
                                    R"({"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":"hi"}]})"});
  CHECK(json::parse(a.body)["stop_reason"] == "refusal");
  CHECK(json::parse(a.body)["content"].size() == 1);
  anthropic.settle(0, {0, false});
  CHECK(anthropic.journal()[0].delivered_text == "Deploying.");
}

TEST_CASE("non-streaming malformed-call finish: HTTP 500 error envelope for Chat and Anthropic, a 200 finish elsewhere") {
  const mock::Event bad = mock::FinishEvent{mock::FinishReason::kMalformedCall};
  // The journal counts as delivered only what the body holds: nothing for an error answer or
  // Gemini's contentless candidate; Responses' failed answer keeps its output items.
  auto play = [&](const mock::Request& r, bool keeps_parts = false) {
    mock::ScriptEngine engine(script_of({{stream({kText, bad})}}));
    const Plan p = engine.respond(r);
    engine.settle(0, {0, false});
    const auto e = engine.journal()[0];
    CHECK(e.delivered_text.empty() == !keeps_parts);
    CHECK_FALSE(e.completed);
    return p;
  };
  const Plan gemini = play(post(json::array({kUser}), kUnary));
  CHECK(gemini.status == 200);
  const auto cand = json::parse(gemini.body)["candidates"][0];
  CHECK(cand["finishReason"] == "MALFORMED_FUNCTION_CALL");
  CHECK_FALSE(cand.contains("content"));
  CHECK(cand["finishMessage"] == "Malformed function call.");
  const Plan chat = play({"POST", "/v1/chat/completions",
                          R"({"model":"gpt-x","messages":[{"role":"user","content":"hi"}]})"});
  CHECK(chat.status == 500);
  CHECK(json::parse(chat.body)["error"]["type"] == "model_error");
  const Plan anthropic = play({"POST", "/v1/messages",
                               R"({"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":"hi"}]})"});
  CHECK(anthropic.status == 500);
  CHECK(json::parse(anthropic.body)["type"] == "error");
  CHECK(std::find(anthropic.headers.begin(), anthropic.headers.end(),
                  std::pair<std::string, std::string>{"x-should-retry", "true"}) != anthropic.headers.end());
  const Plan responses = play({"POST", "/v1/responses", R"({"model":"gpt-x","input":"hi"})"}, true);
  CHECK(responses.status == 200);
  CHECK(json::parse(responses.body)["status"] == "failed");
}

TEST_CASE("the engine is deterministic: the same requests give the same plans and journal") {
  auto run = [] {
    mock::ScriptEngine engine(script_of({{stream({kText, kCall, kStop}, mock::CutFault{1, 9}),
                                          stream({kCall, kStop})},
                                         {stream({kText, kStop})}}));
    std::vector<std::string> out;
    for (const auto& c : {json::array({kUser}), json::array({kUser}), after_call_turn()}) {
      const Plan p = engine.respond(post(c));
      engine.settle(p.journal_index, {static_cast<int>(p.actions.size()), false});
      for (const auto& [b, e, t] : rows(p)) out.push_back(b + std::to_string(e) + (t ? "T" : "F"));
    }
    for (const auto& e : engine.journal()) out.push_back(mock::journal_entry_to_json(e).dump());
    return out;
  };
  CHECK(run() == run());
}

TEST_CASE("the attempt rewriter edits a copy of each played attempt, and the journal follows it") {
  std::vector<std::pair<int, int>> seen;
  mock::ScriptEngine engine(script_of({{stream({kCall, kStop})}}),
                            [&seen](int turn, int attempt, Attempt& a) {
                              seen.emplace_back(turn, attempt);
                              for (auto& e : a.events) {
                                if (auto* c = std::get_if<mock::CallEvent>(&e)) c->args["ledger"] = "/tmp/l";
                              }
                            });
  const Plan p = engine.respond(post(json::array({kUser})));
  engine.respond(post(json::array({kUser})));
  CHECK(seen == std::vector<std::pair<int, int>>{{0, 0}, {0, 1}});
  CHECK(std::get<WriteAction>(p.actions.at(0)).bytes.find(R"("ledger":"/tmp/l")") != std::string::npos);
  engine.settle(0, {1, false});
  CHECK(engine.journal()[0].delivered_calls.at(0).args["ledger"] == "/tmp/l");
  CHECK_FALSE(std::get<mock::CallEvent>(engine.script().turns[0].attempts[0].events[0]).args.contains("ledger"));
}

TEST_CASE("a body nested deeper than kMaxJsonDepth is a 400 in the path's envelope, decoded by no parser") {
  mock::ScriptEngine engine(script_of({{stream({kText, kStop})}}));
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const Plan gemini = engine.respond({"POST", kStream, R"({"contents":)" + deep + "}"});
  CHECK(gemini.status == 400);
  CHECK(json::parse(gemini.body)["error"]["status"] == "INVALID_ARGUMENT");
  const Plan anthropic = engine.respond({"POST", "/v1/messages", R"({"messages":[{"role":"user","content":)" + deep + "}]}"});
  CHECK(anthropic.status == 400);
  CHECK(json::parse(anthropic.body)["type"] == "error");
  const auto j = engine.journal();
  CHECK(j[0].played == "bad-request");
  CHECK(j[1].provider == "anthropic");
  CHECK(j[1].rejection.find("deeper than 512") != std::string::npos);
  // Brackets inside strings do not count; 512 levels are still decoded.
  CHECK(mock::json_nesting_depth(R"({"a":"[[[[{{{{"})", 100) == 1u);
  CHECK(mock::json_nesting_depth(R"({"a":"\"[[","b":[1]})", 100) == 2u);     // an escaped quote stays inside
  CHECK(mock::json_nesting_depth(R"({"a":"x\\","b":[[1]]})", 100) == 3u);  // an escaped backslash ends
  CHECK(mock::json_nesting_depth("[\"\\", 100) == 1u);                      // cut after a backslash
  const std::string ok = std::string(511, '[') + R"({"contents":1})" + std::string(511, ']');
  CHECK(mock::json_nesting_depth(ok, mock::kMaxJsonDepth) == 512u);
}

TEST_CASE("a known path with the wrong method gets a 404 in that path's envelope") {
  mock::ScriptEngine engine(script_of({{stream({kText, kStop})}}));
  const Plan p = engine.respond({"GET", "/v1/messages", ""});
  CHECK(p.status == 404);
  CHECK(json::parse(p.body)["type"] == "error");
  const Plan q = engine.respond({"DELETE", "/v1/chat/completions", ""});
  CHECK(q.status == 404);
  CHECK(json::parse(q.body)["error"].contains("type"));
}

TEST_CASE("a journal window keeps the latest entries and summarises the ones that left it") {
  mock::ScriptEngine engine(script_of({{status(429), stream({kText, kStop}, mock::ResetFault{1, 0}),
                                        stream({kText, kStop})}}));
  engine.set_journal_window(3, /*keep_evicted=*/true);
  for (std::size_t i = 0; i < 10; ++i) {
    const Plan plan = engine.respond(post(json::array({kUser})));
    REQUIRE(plan.journal_index == i);
    // Attempt 0 is a status, 1 a reset after one event, 2.. the clean stream (the last repeats).
    engine.settle(i, {static_cast<int>(std::min<std::size_t>(i, 2)) == 1 ? 1 : 99, i == 1});
  }
  CHECK(engine.journal_size() == 10);
  const auto window = engine.journal();
  REQUIRE(window.size() == 3);
  CHECK(window.front().index == 7);
  CHECK(window.back().index == 9);
  CHECK(window.back().attempt == 9);  // attempts keep counting past the window

  const auto evicted = engine.take_evicted();
  REQUIRE(evicted.size() == 7);
  for (std::size_t i = 0; i < evicted.size(); ++i) CHECK(evicted[i].index == i);
  CHECK(engine.take_evicted().empty());  // taken once

  const mock::JournalSummary s = engine.evicted_summary();
  CHECK(s.requests == 7);
  CHECK(s.completed == 5);  // entries 2..6
  CHECK(s.played == std::map<std::string, std::size_t>{{"status", 1}, {"stream", 6}});
  CHECK(s.faults == std::map<std::string, std::size_t>{{"reset", 1}});
  CHECK(s.statuses == std::map<int, std::size_t>{{200, 6}, {429, 1}});
  CHECK(mock::journal_summary_to_json(s)["statuses"]["429"] == 1);

  engine.settle(0, {0, true});  // an entry that left the window is not settled again
  CHECK(engine.evicted_summary() == s);
}

TEST_CASE("an unsettled entry holds the window until it doubles, then leaves unsettled") {
  mock::ScriptEngine engine(script_of({{stream({kText, kStop})}}));
  engine.set_journal_window(2, /*keep_evicted=*/false);
  engine.respond(post(json::array({kUser})));  // entry 0 is never settled
  for (std::size_t i = 1; i < 3; ++i) {
    engine.respond(post(json::array({kUser})));
    engine.settle(i, {1, false});
  }
  CHECK(engine.journal().size() == 3);  // 0 waits for its settle
  CHECK(engine.journal().front().index == 0);
  engine.respond(post(json::array({kUser})));  // 2 × the window: 0 leaves anyway, then 1
  const auto window = engine.journal();
  REQUIRE(window.size() == 2);
  CHECK(window.front().index == 2);
  const auto summary = engine.evicted_summary();
  CHECK(summary.requests == 2);
  CHECK(summary.completed == 1);  // 0 left unsettled
  CHECK(engine.take_evicted().empty());  // not kept when not asked to
}

TEST_CASE("pairing checks still see a completed attempt that left the journal window") {
  mock::ScriptEngine engine(script_of({{stream({kCall, kStop})}, {stream({kText, kStop})}}));
  engine.set_journal_window(1, false);
  engine.respond(post(json::array({kUser})));
  engine.settle(0, {1, false});  // the call is delivered and the attempt completes
  engine.respond(post(json::array({kUser})));  // pushes entry 0 out of the window
  engine.settle(1, {0, true});
  engine.respond(post(after_call_turn()));
  const auto j = engine.journal();
  REQUIRE(j.back().index == 2);
  CHECK(j.back().issues.empty());
}


TEST_CASE("model answers carry the provider's request id and rate-limit headers, Gemini's none") {
  using H = std::vector<std::pair<std::string, std::string>>;
  auto header = [](const Plan& p, const std::string& name) -> std::optional<std::string> {
    for (const auto& [k, v] : p.headers) {
      if (k == name) return v;
    }
    return std::nullopt;
  };
  const std::string chat = R"({"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"Deploy."}]})";
  const std::string messages =
      R"({"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"Deploy."}]})";
  // Turn 0 answers 429 first, then a stream; the last attempt repeats.
  auto engine = [] { return mock::ScriptEngine(script_of({{status(429, 1.0), stream({kText, kStop})}})); };

  SECTION("OpenAI: x-request-id req_ + 32 hex digits, x-ratelimit-* with 0 remaining on the 429") {
    auto e = engine();
    const Plan limited = e.respond({"POST", "/v1/chat/completions", chat});
    const Plan ok = e.respond({"POST", "/v1/chat/completions", chat});
    const Plan next = e.respond({"POST", "/v1/chat/completions", chat});
    REQUIRE(limited.status == 429);
    REQUIRE(ok.status == 200);
    const auto id = header(ok, "x-request-id");
    REQUIRE(id);
    CHECK(id->size() == 36);
    CHECK(id->rfind("req_", 0) == 0);
    CHECK(id->find_first_not_of("0123456789abcdef", 4) == std::string::npos);
    CHECK(header(next, "x-request-id") != id);  // one per request
    CHECK(header(limited, "x-request-id"));  // errors carry one too
    // The Responses path sends the same family.
    const std::string responses = R"({"model":"gpt-5.5","stream":true,"input":"Deploy."})";
    CHECK(header(e.respond({"POST", "/v1/responses", responses}), "x-request-id")->size() == 36);
    CHECK(header(limited, "x-ratelimit-remaining-requests") == "0");
    CHECK(header(limited, "retry-after") == "1");  // the error answer's own headers are kept
    CHECK(header(ok, "x-ratelimit-limit-requests") == "10000");
    CHECK(header(ok, "x-ratelimit-remaining-requests") == "9998");  // the second request
    CHECK(header(next, "x-ratelimit-remaining-requests") == "9997");
    CHECK(header(ok, "x-ratelimit-reset-requests") == "6ms");
    // Same request, same journal index, same headers in another engine: deterministic.
    auto again = engine();
    again.respond({"POST", "/v1/chat/completions", chat});
    CHECK(again.respond({"POST", "/v1/chat/completions", chat}).headers == ok.headers);
  }
  SECTION("Anthropic: request-id req_011C + 20 base58, anthropic-ratelimit-* families") {
    auto e = engine();
    const Plan limited = e.respond({"POST", "/v1/messages", messages});
    const Plan ok = e.respond({"POST", "/v1/messages", messages});
    REQUIRE(ok.status == 200);
    const auto id = header(ok, "request-id");
    REQUIRE(id);
    CHECK(id->size() == 28);
    CHECK(id->rfind("req_011C", 0) == 0);
    CHECK(id->find_first_of("0OIl", 8) == std::string::npos);  // base58 has none of these
    CHECK(header(ok, "anthropic-organization-id")->size() == 36);
    for (const char* family : {"requests", "tokens", "input-tokens", "output-tokens"}) {
      const std::string prefix = std::string("anthropic-ratelimit-") + family;
      CHECK(header(ok, prefix + "-limit"));
      CHECK(header(ok, prefix + "-remaining") != "0");
      CHECK(header(limited, prefix + "-remaining") == "0");
      CHECK(header(ok, prefix + "-reset") == "2026-01-01T00:00:00Z");
    }
    CHECK(header(limited, "x-should-retry") == "true");
  }
  SECTION("Gemini sends none, and a path no format serves gets none") {
    auto e = engine();
    e.respond(post(json::array({kUser})));
    const Plan ok = e.respond(post(json::array({kUser})));
    REQUIRE(ok.status == 200);
    CHECK(ok.headers == H{});
    CHECK(e.respond({"POST", "/nowhere", "{}"}).headers == H{});
  }
}

}  // namespace script_engine_test

TEST_CASE("a journal window keeps its entries under its byte budget however few they are") {
  // 300 KB of text a request: a window of 1,000 such entries would hold 600 MB.
  mock::Attempt big;
  big.events = {mock::TextEvent{std::string(300u << 10, 'z')}, mock::FinishEvent{mock::FinishReason::kStop}};
  mock::Script script;
  script.provider = "openai-chat";
  script.turns.push_back(mock::Turn{{big}});
  mock::ScriptEngine engine(script);
  engine.set_journal_window(1000, /*keep_evicted=*/false, /*max_bytes=*/2u << 20);
  const std::string body = R"({"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]})";
  for (std::size_t i = 0; i < 20; ++i) {
    const mock::Plan plan = engine.respond({"POST", "/v1/chat/completions", body});
    engine.settle(plan.journal_index, {99, false});
  }
  CHECK(engine.journal_size() == 20);
  // Each entry counts about 600 KB (the attempt as played and the text delivered): 3 fit in 2 MiB.
  CHECK(engine.journal().size() <= 4);
  CHECK(engine.journal().back().index == 19);
  CHECK(engine.evicted_summary().requests + engine.journal().size() == 20);
}

// ---- Conversation state over HTTP: the Responses API's previous_response_id ----------------------

namespace script_engine_test {

namespace {

/// A Responses scenario: turn 0 calls `shell` and stops, turn 1 answers with text; `turn0` replaces
/// turn 0's attempts when given.
mock::Script responses_script(std::vector<Attempt> turn0 = {}) {
  if (turn0.empty()) turn0.push_back(stream({mock::CallEvent{"shell", json{{"command", "ls"}}, ""}, kStop}));
  mock::Script s;
  s.provider = "openai-responses";
  s.turns.push_back(mock::Turn{std::move(turn0)});
  s.turns.push_back(mock::Turn{{stream({mock::TextEvent{"Done."}, kStop})}});
  return s;
}

mock::Request responses_post(json body) { return {"POST", "/v1/responses", body.dump()}; }

/// The continuation of response `id` with the output of call `call_id`.
json continuation(const std::string& id, const std::string& call_id = "call_hiccup_0_0") {
  return {{"model", "gpt-5"}, {"stream", true}, {"previous_response_id", id},
          {"input", json::array({{{"type", "function_call_output"}, {"call_id", call_id}, {"output", "a.txt"}}})}};
}

const json kFirst = {{"model", "gpt-5"}, {"stream", true}, {"input", "List the files."}};

}  // namespace

TEST_CASE("responses over http: previous_response_id continues a stored response as the full conversation") {
  for (const bool streaming : {true, false}) {
    CAPTURE(streaming);
    mock::ScriptEngine engine(responses_script());
    json first = kFirst;
    first["stream"] = streaming;
    REQUIRE(engine.respond(responses_post(first)).status == 200);
    json next = continuation("resp_hiccup_0");
    next["stream"] = streaming;
    const Plan p = engine.respond(responses_post(next));
    CHECK(p.status == 200);
    const auto j = engine.journal();
    REQUIRE(j.size() == 2);
    // Played as turn 1: the stored input, the stored call, then its output.
    CHECK(j[1].turn == 1);
    CHECK(j[1].played == "stream");
    CHECK(j[1].validated);
    REQUIRE(j[1].contents.is_array());
    CHECK(j[1].contents.size() == 3);
    CHECK(j[1].contents[1]["parts"][0]["functionCall"]["name"] == "shell");
    // The continuation is itself stored: a third request chains from it.
    json third = {{"model", "gpt-5"}, {"stream", streaming}, {"previous_response_id", "resp_hiccup_1"},
                  {"input", "Thanks."}};
    engine.respond(responses_post(third));
    CHECK(engine.journal()[2].turn == 2);  // past the script: the history held both model turns
    CHECK(engine.journal()[2].contents.size() == 5);
  }
}

TEST_CASE("responses over http: a continuation of a response the server does not hold is its 400") {
  auto code_of = [](const Plan& p) { return json::parse(p.body)["error"]; };
  SECTION("an id never answered") {
    mock::ScriptEngine engine(responses_script());
    const Plan p = engine.respond(responses_post(continuation("resp_unknown")));
    CHECK(p.status == 400);
    const json e = code_of(p);
    CHECK(e["code"] == "previous_response_not_found");
    CHECK(e["param"] == "previous_response_id");
    CHECK(e["message"] == "Previous response with id 'resp_unknown' not found.");
    // The server's loss, not the client's invalid request: journaled apart and still valid, so
    // no invariant accuses a client that then sends the full input.
    CHECK(engine.journal()[0].played == "context-lost");
    CHECK(engine.journal()[0].validated);
  }
  SECTION("an id too long to echo is cut to 256 bytes") {
    mock::ScriptEngine engine(responses_script());
    const Plan p = engine.respond(responses_post(continuation(std::string(5000, 'x'))));
    CHECK(code_of(p)["message"] == "Previous response with id '" + std::string(256, 'x') + "…' not found.");
  }
  SECTION("store: false keeps nothing") {
    mock::ScriptEngine engine(responses_script());
    json first = kFirst;
    first["store"] = false;
    engine.respond(responses_post(first));
    CHECK(engine.respond(responses_post(continuation("resp_hiccup_0"))).status == 400);
  }
  SECTION("the scenario makes the server forget it (websocket.forget_response, also over HTTP)") {
    Attempt a = stream({mock::CallEvent{"shell", json{{"command", "ls"}}, ""}, kStop});
    a.websocket = mock::WebSocketChoices{};
    a.websocket->forget_response = true;
    mock::ScriptEngine engine(responses_script({a}));
    engine.respond(responses_post(kFirst));
    CHECK(engine.respond(responses_post(continuation("resp_hiccup_0"))).status == 400);
  }
  SECTION("an attempt cut before its terminal event completed no response") {
    mock::ScriptEngine engine(responses_script(
        {stream({mock::CallEvent{"shell", json{{"command", "ls"}}, ""}, kStop}, mock::DisconnectFault{1, 0})}));
    engine.respond(responses_post(kFirst));
    CHECK(engine.respond(responses_post(continuation("resp_hiccup_0"))).status == 400);
  }
  SECTION("a previous_response_id that is not a string") {
    mock::ScriptEngine engine(responses_script());
    json next = continuation("x");
    next["previous_response_id"] = 7;
    const Plan p = engine.respond(responses_post(next));
    CHECK(p.status == 400);
    CHECK(code_of(p)["message"] ==
          "Invalid type for 'previous_response_id': expected a string, but got an integer instead.");
  }
}

TEST_CASE("responses over http: a response whose frames slice_bytes splits is stored too") {
  Attempt a = stream({mock::CallEvent{"shell", json{{"command", "ls"}}, ""}, kStop});
  a.slice_bytes = 7;  // the terminal frame spans many writes
  mock::ScriptEngine engine(responses_script({a}));
  engine.respond(responses_post(kFirst));
  CHECK(engine.respond(responses_post(continuation("resp_hiccup_0"))).status == 200);
  CHECK(engine.journal()[1].turn == 1);
}

TEST_CASE("responses over http: a continuation's own input is checked as the client sent it") {
  mock::ScriptEngine engine(responses_script());
  engine.respond(responses_post(kFirst));
  auto message_of = [](const Plan& p) { return json::parse(p.body)["error"]["message"].get<std::string>(); };
  json next = continuation("resp_hiccup_0");
  next["input"] = {{"role", "user"}, {"content", "more"}};
  Plan p = engine.respond(responses_post(next));
  CHECK(p.status == 400);
  CHECK(message_of(p) ==
        "Invalid type for 'input': expected one of a string or an array of input items, but got an object instead.");
  // An item's own problem names the client's index, not the index after the stored items.
  next["input"] = json::array({{{"type", "message"}, {"role", "user"}}});
  p = engine.respond(responses_post(next));
  CHECK(p.status == 400);
  CHECK(message_of(p) == "Missing required parameter: 'input[0].content'.");
  // `store` must be a boolean.
  json stored = kFirst;
  stored["store"] = "false";
  CHECK(message_of(engine.respond(responses_post(stored))) ==
        "Invalid type for 'store': expected a boolean, but got a string instead.");
}

TEST_CASE("responses over http: keys written with escapes are read as the keys they are") {
  mock::ScriptEngine engine(responses_script());
  // store: false with an escaped key keeps nothing.
  engine.respond({"POST", "/v1/responses", R"({"model":"gpt-5","stream":true,"store":false,"input":"List the files."})"});
  CHECK(engine.respond(responses_post(continuation("resp_hiccup_0"))).status == 400);
  // previous_response_id with an escaped key continues.
  mock::ScriptEngine second(responses_script());
  second.respond(responses_post(kFirst));
  const Plan p = second.respond({"POST", "/v1/responses",
      R"({"model":"gpt-5","stream":true,"previous_response_id":"resp_hiccup_0","input":[{"type":"function_call_output","call_id":"call_hiccup_0_0","output":"a.txt"}]})"});
  CHECK(p.status == 200);
  CHECK(second.journal()[1].turn == 1);
}

TEST_CASE("session memory: a byte bound keeps a chain of whole conversations from growing without end") {
  mock::SessionMemory memory(256, 1000);
  for (int i = 0; i < 10; ++i) memory.put("k" + std::to_string(i), std::string(300, 'v'));
  CHECK_FALSE(memory.get("k0"));
  CHECK(memory.get("k9"));
  CHECK(memory.get("k8"));  // 3 values of 302 bytes fit in 1,000
  CHECK_FALSE(memory.get("k6"));
  memory.put("big", std::string(5000, 'v'));  // the newest is kept whatever its size
  CHECK(memory.get("big"));
  CHECK_FALSE(memory.get("k9"));
}

TEST_CASE("responses over http: a request without previous_response_id is decoded as sent") {
  // A null previous_response_id continues nothing (as the SDKs send it when unset).
  mock::ScriptEngine engine(responses_script());
  json first = kFirst;
  first["previous_response_id"] = nullptr;
  CHECK(engine.respond(responses_post(first)).status == 200);
  CHECK(engine.journal()[0].turn == 0);
}

}  // namespace script_engine_test
