// The control API over real HTTP on 127.0.0.1 (ephemeral port): session round trips, errors in
// hiccup's envelope, isolation of many concurrent sessions, and verdicts (a duplicated execution
// fails, a clean run passes, a client that does nothing does not pass).
#include <catch2/catch.hpp>

#include <cmath>

#include <atomic>
#include <thread>

#include <httplib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness/scenario_io.h"
#include "harness/serve/control_api.h"
#include "mock_server/json_text.h"
#include "mock_server/wire_format.h"

namespace {

using nlohmann::json;
namespace serve = harness::serve;

const char* kChat = "/v1/chat/completions";

/// turn 0: a deploy call; turn 1: "Deployed." (OpenAI Chat Completions).
json deploy_scenario() {
  return json::parse(R"({
    "schema": 1, "name": "deploy", "provider": "openai-chat", "prompt": "Deploy.",
    "turns": [
      {"attempts": [{"events": [{"call": {"name": "deploy", "args": {"env": "staging"}}}, {"finish": "stop"}]}]},
      {"attempts": [{"events": [{"text": "Deployed."}, {"finish": "stop"}]}]}
    ]})");
}

/// One turn answering `text`.
json text_scenario(const std::string& name, const std::string& text) {
  return {{"schema", 1}, {"name", name}, {"provider", "openai-chat"}, {"prompt", "Say " + name},
          {"turns", json::array({{{"attempts", json::array({{{"events", json::array({{{"text", text}}, {{"finish", "stop"}}})}}})}}})}};
}

/// A server with a session registry, on an ephemeral port of 127.0.0.1.
struct Fixture {
  serve::SessionRegistry registry;
  serve::ControlApi api{registry};
  mock::MockHttpServer server{api, options()};
  int port = server.start();

  Fixture() { api.set_server_url(server.base_url()); }

  static mock::ServerOptions options() {
    mock::ServerOptions o;
    o.max_delay_ms = 10;
    o.stall_ms_per_s = 1;
    return o;
  }

  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(10, 0);
    return c;
  }

  /// Sends `method` `path` with a JSON body; returns (status, parsed body).
  std::pair<int, json> call(const std::string& method, const std::string& path, const json& body = nullptr) const {
    httplib::Client c = client();
    const std::string text = body.is_null() ? "" : body.dump();
    httplib::Result r = method == "GET"    ? c.Get(path.c_str())
                        : method == "POST" ? c.Post(path.c_str(), text, "application/json")
                        : method == "PUT"  ? c.Put(path.c_str(), text, "application/json")
                                           : c.Delete(path.c_str());
    REQUIRE(r);
    json j = json::parse(r->body, nullptr, false);
    return {r->status, j};
  }

  std::string create(const json& scenario, const std::string& id = "") const {
    json body = {{"scenario", scenario}};
    if (!id.empty()) body["id"] = id;
    auto [status, j] = call("POST", "/_hiccup/sessions", body);
    REQUIRE(status == 201);
    return j["session"]["id"].get<std::string>();
  }
};

json chat_request(const json& messages) { return {{"model", "gpt-4o"}, {"messages", messages}}; }

/// A request with these messages (a vector: a braced json list of one object would be the object).
json chat(std::vector<json> messages) { return chat_request(json(std::move(messages))); }

json user(const std::string& text) { return {{"role", "user"}, {"content", text}}; }

}  // namespace

TEST_CASE("a session is created and listed and fetched and reset and deleted over the control API") {
  Fixture f;
  auto [status, created] = f.call("POST", "/_hiccup/sessions", {{"scenario", deploy_scenario()}, {"id", "t1"}});
  REQUIRE(status == 201);
  CHECK(created["version"] == 1);
  CHECK(created["session"]["id"] == "t1");
  CHECK(created["session"]["path"] == "/s/t1");
  CHECK(created["session"]["base_url"] == f.server.base_url() + "/s/t1");
  CHECK(created["session"]["provider"] == "openai-chat");
  CHECK(created["session"]["max_attempts"] == 4);

  // A second session without an id gets a generated one; the list is in creation order.
  const std::string other = f.create(text_scenario("other", "hi"));
  CHECK(other == "s2");
  auto [ls, list] = f.call("GET", "/_hiccup/sessions");
  REQUIRE(ls == 200);
  REQUIRE(list["sessions"].size() == 2);
  CHECK(list["sessions"][0]["id"] == "t1");
  CHECK(list["sessions"][1]["id"] == "s2");

  // A request under the session's base path is played by its script and journaled there only.
  auto [rs, answer] = f.call("POST", "/s/t1/v1/chat/completions", chat({user("Deploy.")}));
  REQUIRE(rs == 200);
  CHECK(answer["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "deploy");
  auto [js, journal] = f.call("GET", "/_hiccup/sessions/t1/journal");
  REQUIRE(js == 200);
  REQUIRE(journal["journal"].size() == 1);
  CHECK(journal["journal"][0]["target"] == kChat);
  CHECK(journal["journal"][0]["provider"] == "openai-chat");
  CHECK(f.call("GET", "/_hiccup/sessions/s2/journal").second["journal"].empty());

  // Reset: the script starts over and the journal, ledger and outcome are empty.
  REQUIRE(f.call("POST", "/_hiccup/sessions/t1/executions", {{"name", "deploy"}}).first == 201);
  REQUIRE(f.call("POST", "/_hiccup/sessions/t1/outcome", {{"outcome", "failed"}}).first == 200);
  auto [rst, reset] = f.call("POST", "/_hiccup/sessions/t1/reset");
  REQUIRE(rst == 200);
  CHECK(reset["session"]["requests"] == 0);
  CHECK(reset["session"]["executions"] == 0);
  CHECK(reset["session"]["outcome"].is_null());
  CHECK(f.call("GET", "/_hiccup/sessions/t1/journal").second["journal"].empty());

  auto [ds, deleted] = f.call("DELETE", "/_hiccup/sessions/t1");
  CHECK(ds == 200);
  CHECK(deleted["deleted"] == "t1");
  CHECK(f.call("GET", "/_hiccup/sessions/t1").first == 404);
  CHECK(f.call("POST", "/s/t1/v1/chat/completions", chat({user("Deploy.")})).first == 404);
  CHECK(f.call("GET", "/_hiccup/health").second["sessions"] == 1);
}

TEST_CASE("control API errors come in hiccup's envelope with their status") {
  Fixture f;
  f.create(deploy_scenario(), "t1");

  auto [s404, unknown] = f.call("GET", "/_hiccup/sessions/nope/verdict");
  CHECK(s404 == 404);
  CHECK(unknown["error"]["code"] == "unknown_session");
  CHECK(unknown["error"]["status"] == 404);
  CHECK(f.call("POST", "/s/nope/v1/chat/completions", chat({user("x")})).second["error"]["code"] ==
        "unknown_session");

  auto [s405, wrong] = f.call("DELETE", "/_hiccup/sessions/t1/verdict");
  CHECK(s405 == 405);
  CHECK(wrong["error"]["code"] == "method_not_allowed");
  CHECK(f.call("PUT", "/_hiccup/sessions").first == 405);

  CHECK(f.call("GET", "/_hiccup/nothing").second["error"]["code"] == "unknown_path");
  CHECK(f.call("GET", "/_hiccup/sessions/t1/whatever").first == 404);
  CHECK(f.call("POST", "/_hiccup/sessions", deploy_scenario()).first == 400);  // the scenario unwrapped

  // Duplicate id: 409.
  CHECK(f.call("POST", "/_hiccup/sessions", {{"scenario", deploy_scenario()}, {"id", "t1"}}).first == 409);

  // A bad scenario: one problem per JSON pointer, exactly what lint says.
  json bad = deploy_scenario();
  bad["provider"] = "openai-chatt";
  bad["turns"][0]["attempts"][0]["events"][0]["call"].erase("name");
  auto [s400, problems] = f.call("POST", "/_hiccup/sessions", {{"scenario", bad}});
  CHECK(s400 == 400);
  CHECK(problems["error"]["code"] == "invalid_scenario");
  const harness::LoadResult lint = harness::parse_scenario(bad.dump(), "scenario");
  REQUIRE(lint.problems.size() >= 2);
  REQUIRE(problems["error"]["problems"].size() == lint.problems.size());
  for (std::size_t i = 0; i < lint.problems.size(); ++i) {
    CHECK(problems["error"]["problems"][i]["pointer"] == lint.problems[i].pointer);
    CHECK(problems["error"]["problems"][i]["message"] == lint.problems[i].message);
  }
  // A scenario given as file text is linted the same way (comments allowed).
  CHECK(f.call("POST", "/_hiccup/sessions", {{"scenario", "// a comment\n" + deploy_scenario().dump()}}).first == 201);

  // Bad request fields name their pointer.
  auto [sf, fields] = f.call("POST", "/_hiccup/sessions", {{"scenario", deploy_scenario()}, {"max_attempts", 0}, {"idd", "x"}});
  CHECK(sf == 400);
  REQUIRE(fields["error"]["problems"].size() == 2);
  CHECK(fields["error"]["problems"][0]["pointer"] == "/max_attempts");
  CHECK(fields["error"]["problems"][1]["pointer"] == "/idd");
  CHECK(f.call("POST", "/_hiccup/sessions/t1/executions", {{"args", {{"a", 1}}}}).second["error"]["problems"][0]["pointer"] == "/name");
  CHECK(f.call("POST", "/_hiccup/sessions/t1/outcome", {{"outcome", "done"}}).second["error"]["problems"][0]["pointer"] == "/outcome");
  httplib::Client c = f.client();
  auto r = c.Post("/_hiccup/sessions", "{not json", "application/json");
  REQUIRE(r);
  CHECK(r->status == 400);

  // A key named twice, which nlohmann's parser would settle by keeping the last: refused at the
  // second one's pointer, in the request body and in a scenario given as file text, as lint does.
  std::string text = deploy_scenario().dump();
  text.insert(text.size() - 1, R"(,"prompt":"Deploy again.")");
  auto twice = c.Post("/_hiccup/sessions", R"({"id":"twice","scenario":)" + text + "}", "application/json");
  REQUIRE(twice);
  CHECK(twice->status == 400);
  const json body_twice = json::parse(twice->body);
  CHECK(body_twice["error"]["code"] == "bad_request");
  REQUIRE(body_twice["error"]["problems"].size() == 1);
  CHECK(body_twice["error"]["problems"][0]["pointer"] == "/scenario/prompt");
  CHECK(body_twice["error"]["problems"][0]["message"].get<std::string>().find("appears twice") != std::string::npos);
  auto [st, as_text] = f.call("POST", "/_hiccup/sessions", {{"id", "twice"}, {"scenario", text}});
  CHECK(st == 400);
  CHECK(as_text["error"]["code"] == "invalid_scenario");
  REQUIRE(as_text["error"]["problems"].size() == 1);
  CHECK(as_text["error"]["problems"][0]["pointer"] == "/prompt");
  CHECK(f.call("GET", "/_hiccup/sessions/twice").first == 404);  // neither was created
}

TEST_CASE("without a default session the root paths answer 404 in hiccup's envelope") {
  Fixture f;
  auto [status, j] = f.call("POST", kChat, chat({user("x")}));
  CHECK(status == 404);
  CHECK(j["error"]["code"] == "no_default_session");
}

TEST_CASE("the default session plays the root paths and its own base path") {
  Fixture f;
  f.registry.create(std::string(serve::SessionRegistry::kDefaultId),
                    *harness::parse_scenario(text_scenario("d", "hello").dump(), "d").scenario);
  auto [s1, a1] = f.call("POST", kChat, chat({user("Say d")}));
  REQUIRE(s1 == 200);
  CHECK(a1["choices"][0]["message"]["content"] == "hello");
  auto [s2, a2] = f.call("POST", std::string("/s/default") + kChat, chat({user("Say d")}));
  REQUIRE(s2 == 200);
  CHECK(a2["choices"][0]["message"]["content"] == "hello");
  CHECK(f.call("GET", "/_hiccup/sessions/default/journal").second["journal"].size() == 2);
}

TEST_CASE("no provider path starts with the control or session prefix") {
  for (const mock::WireFormat* format : mock::wire_formats()) {
    for (const std::string& p : format->paths()) {
      const std::string path = p.substr(p.find(' ') + 1);
      CHECK(path.rfind(std::string(serve::kControlPrefix), 0) != 0);
      CHECK(path.rfind(std::string(serve::kSessionPrefix), 0) != 0);
    }
    CHECK_FALSE(format->matches("/_hiccup/sessions"));
    CHECK_FALSE(format->matches("/s/x/v1/chat/completions"));
  }
}

TEST_CASE("32 concurrent sessions each get their own script's answers and journal") {
  Fixture f;
  constexpr int kSessions = 32, kRequests = 6;
  std::vector<std::string> failures(kSessions);
  std::vector<std::thread> threads;
  std::atomic<int> ready{0};
  for (int i = 0; i < kSessions; ++i) {
    threads.emplace_back([&, i] {
      const std::string name = "n" + std::to_string(i);
      const std::string text = "answer of session " + std::to_string(i);
      httplib::Client c = f.client();
      auto created = c.Post("/_hiccup/sessions", json{{"scenario", text_scenario(name, text)}, {"id", name}}.dump(),
                            "application/json");
      if (!created || created->status != 201) {
        failures[i] = "create failed";
        return;
      }
      ++ready;
      while (ready.load() < kSessions) std::this_thread::yield();  // all sessions exist: now interleave
      const std::string body = chat({user("Say " + name)}).dump();
      for (int k = 0; k < kRequests; ++k) {
        auto r = c.Post(("/s/" + name + kChat).c_str(), body, "application/json");
        if (!r || r->status != 200) {
          failures[i] = "request " + std::to_string(k) + " failed";
          return;
        }
        const json a = json::parse(r->body);
        if (a["choices"][0]["message"]["content"] != text) {
          failures[i] = "request " + std::to_string(k) + " answered " + a["choices"][0]["message"]["content"].dump();
          return;
        }
      }
      auto j = c.Get(("/_hiccup/sessions/" + name + "/journal").c_str());
      const json journal = json::parse(j->body)["journal"];
      if (journal.size() != kRequests) {
        failures[i] = "journal holds " + std::to_string(journal.size()) + " entries";
        return;
      }
      for (std::size_t k = 0; k < journal.size(); ++k) {
        if (journal[k]["index"] != k || journal[k]["attempt"] != k ||
            journal[k]["contents"][0]["parts"][0]["text"] != "Say " + name || journal[k]["delivered_text"] != text) {
          failures[i] = "journal entry " + std::to_string(k) + " is " + journal[k].dump();
          return;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kSessions; ++i) {
    INFO("session " << i);
    CHECK(failures[i] == "");
  }
  CHECK(f.registry.size() == kSessions);
}

namespace {

/// Plays the deploy scenario like an agent over OpenAI Chat: the call, its result, the answer.
/// Returns the call id; `executions` tool runs are recorded (2 = a duplicated execution).
std::string play_deploy(const Fixture& f, const std::string& id, int executions) {
  const std::string path = "/s/" + id + kChat;
  json messages = json::array({user("Deploy.")});
  auto [s1, a1] = f.call("POST", path, chat_request(messages));
  REQUIRE(s1 == 200);
  const json call = a1["choices"][0]["message"]["tool_calls"][0];
  const std::string call_id = call["id"];
  for (int i = 0; i < executions; ++i) {
    REQUIRE(f.call("POST", "/_hiccup/sessions/" + id + "/executions",
                   {{"name", call["function"]["name"]}, {"args", json::parse(call["function"]["arguments"].get<std::string>())},
                    {"call_id", call_id}})
                .first == 201);
  }
  messages.push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array({call})}});
  messages.push_back({{"role", "tool"}, {"tool_call_id", call_id}, {"content", "ok"}});
  auto [s2, a2] = f.call("POST", path, chat_request(messages));
  REQUIRE(s2 == 200);
  const std::string text = a2["choices"][0]["message"]["content"];
  REQUIRE(f.call("POST", "/_hiccup/sessions/" + id + "/outcome", {{"outcome", "completed"}, {"final_text", text}}).first == 200);
  return call_id;
}

std::vector<std::string> invariants_of(const json& violations) {
  std::vector<std::string> out;
  for (const json& v : violations) out.push_back(v["invariant"]);
  return out;
}

}  // namespace

TEST_CASE("the verdict of a clean run passes and names what stays n/a") {
  Fixture f;
  f.create(deploy_scenario(), "clean");
  play_deploy(f, "clean", 1);
  auto [status, v] = f.call("GET", "/_hiccup/sessions/clean/verdict");
  REQUIRE(status == 200);
  INFO(v.dump(2));
  CHECK(v["verdict"] == "pass");
  CHECK(v["passed"] == true);
  CHECK(v["violations"].empty());
  CHECK(v["requests"] == 2);
  CHECK(v["executions"] == 1);
  CHECK(v["outcome"]["outcome"] == "completed");
  const auto checked = v["checked"].get<std::vector<std::string>>();
  for (const char* name : {"at-most-once", "pairing", "history-integrity", "no-rejected-request", "bounded-retries",
                           "honest-outcome", "scenario-coverage", "outcome-agreement"}) {
    CHECK(std::find(checked.begin(), checked.end(), name) != checked.end());
  }
  std::vector<std::string> na;
  for (const json& n : v["not_applicable"]) {
    na.push_back(n["name"]);
    CHECK_FALSE(n["reason"].get<std::string>().empty());
  }
  CHECK(std::find(na.begin(), na.end(), "clean-output") != na.end());
  CHECK(std::find(na.begin(), na.end(), "liveness") != na.end());
  CHECK(std::find(checked.begin(), checked.end(), "clean-output") == checked.end());
}

TEST_CASE("the verdict fails for a tool execution recorded twice") {
  Fixture f;
  f.create(deploy_scenario(), "dup");
  play_deploy(f, "dup", 2);
  auto [status, v] = f.call("GET", "/_hiccup/sessions/dup/verdict");
  REQUIRE(status == 200);
  INFO(v.dump(2));
  CHECK(v["verdict"] == "fail");
  REQUIRE(v["violations"].size() == 1);
  CHECK(v["violations"][0]["invariant"] == "at-most-once");
  CHECK(v["violations"][0]["message"] ==
        "tool \"deploy\" {\"env\":\"staging\"} ran 2 times for one intended call: call 0 of turn 0, delivered by "
        "request 0 (attempts of one turn are one reply asked for again, so their call 0 is one call)");
}

TEST_CASE("the verdict fails for a function response to a call never delivered") {
  Fixture f;
  f.create(deploy_scenario(), "pair");
  auto [s1, a1] = f.call("POST", std::string("/s/pair") + kChat, chat({user("Deploy.")}));
  REQUIRE(s1 == 200);
  json call = a1["choices"][0]["message"]["tool_calls"][0];
  json stale = call;
  stale["id"] = "call_stale";
  // The history answers the delivered call and one that no attempt delivered.
  json messages = {user("Deploy."), {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array({call})}},
                   {{"role", "tool"}, {"tool_call_id", "call_stale"}, {"content", "ok"}},
                   {{"role", "tool"}, {"tool_call_id", call["id"]}, {"content", "ok"}}};
  auto [s2, a2] = f.call("POST", std::string("/s/pair") + kChat, chat_request(messages));
  CHECK(s2 == 400);
  REQUIRE(f.call("POST", "/_hiccup/sessions/pair/outcome", {{"outcome", "failed"}}).first == 200);
  auto v = f.call("GET", "/_hiccup/sessions/pair/verdict").second;
  INFO(v.dump(2));
  CHECK(v["verdict"] == "fail");
  const auto names = invariants_of(v["violations"]);
  CHECK(std::find(names.begin(), names.end(), "pairing") != names.end());
  CHECK(std::find(names.begin(), names.end(), "no-rejected-request") != names.end());
}

TEST_CASE("a client that does nothing does not get a passing verdict") {
  Fixture f;
  f.create(deploy_scenario(), "idle");
  auto v = f.call("GET", "/_hiccup/sessions/idle/verdict").second;
  INFO(v.dump(2));
  CHECK(v["verdict"] == "fail");
  CHECK(v["passed"] == false);
  CHECK(v["outcome"].is_null());
  const auto names = invariants_of(v["violations"]);
  CHECK(std::find(names.begin(), names.end(), "scenario-coverage") != names.end());
  CHECK(std::find(names.begin(), names.end(), "outcome-agreement") != names.end());
  // Claiming success without a request fails too.
  REQUIRE(f.call("POST", "/_hiccup/sessions/idle/outcome", {{"outcome", "completed"}, {"final_text", "Deployed."}}).first == 200);
  CHECK(f.call("GET", "/_hiccup/sessions/idle/verdict").second["verdict"] == "fail");
}

TEST_CASE("shown text recorded with the outcome is judged by clean-output") {
  Fixture f;
  f.create(deploy_scenario(), "shown");
  play_deploy(f, "shown", 1);
  REQUIRE(f.call("POST", "/_hiccup/sessions/shown/outcome",
                 {{"outcome", "completed"}, {"final_text", "Deployed."}, {"shown_text", "Deploying... Deployed."}})
              .first == 200);
  auto v = f.call("GET", "/_hiccup/sessions/shown/verdict").second;
  INFO(v.dump(2));
  CHECK(invariants_of(v["violations"]) == std::vector<std::string>{"clean-output"});
  REQUIRE(f.call("POST", "/_hiccup/sessions/shown/outcome",
                 {{"outcome", "completed"}, {"final_text", "Deployed."}, {"shown_text", "Deployed."}})
              .first == 200);
  CHECK(f.call("GET", "/_hiccup/sessions/shown/verdict").second["verdict"] == "pass");
}

TEST_CASE("every wire format is served under a session's base path") {
  Fixture f;
  struct Case {
    std::string provider, path;
    json body;
  };
  const std::vector<Case> cases = {
      {"gemini", "/v1beta/models/gemini-2.5-flash:generateContent",
       {{"contents", json::array({{{"role", "user"}, {"parts", json::array({{{"text", "Say p"}}})}}})}}},
      {"openai-chat", "/v1/chat/completions", chat({user("Say p")})},
      {"openai-responses", "/v1/responses", {{"model", "gpt-4o"}, {"input", json::array({user("Say p")})}}},
      {"anthropic", "/v1/messages", {{"model", "claude-sonnet-4-5"}, {"max_tokens", 100}, {"messages", json::array({user("Say p")})}}},
  };
  for (const Case& c : cases) {
    INFO(c.provider);
    json scenario = text_scenario("p", "from " + c.provider);
    scenario["provider"] = c.provider;
    const std::string id = f.create(scenario);
    auto [status, answer] = f.call("POST", "/s/" + id + c.path, c.body);
    CHECK(status == 200);
    CHECK(answer.dump().find("from " + c.provider) != std::string::npos);
    const json journal = f.call("GET", "/_hiccup/sessions/" + id + "/journal").second["journal"];
    REQUIRE(journal.size() == 1);
    CHECK(journal[0]["provider"] == c.provider);
    CHECK(journal[0]["target"] == c.path);
    CHECK(journal[0]["delivered_text"] == "from " + c.provider);
    CHECK(journal[0]["validated"] == true);
  }
}

TEST_CASE("a session whose outcome was never recorded does not pass, even after a full run") {
  Fixture f;
  f.create(deploy_scenario(), "silent");
  play_deploy(f, "silent", 1);
  REQUIRE(f.call("POST", "/_hiccup/sessions/silent/reset").first == 200);
  // The same correct requests, but the test never says how its agent ended.
  const std::string path = "/s/silent" + std::string(kChat);
  json messages = json::array({user("Deploy.")});
  auto [s1, a1] = f.call("POST", path, chat_request(messages));
  REQUIRE(s1 == 200);
  auto [status, v] = f.call("GET", "/_hiccup/sessions/silent/verdict");
  REQUIRE(status == 200);
  INFO(v.dump(2));
  CHECK(v["passed"] == false);
  bool named = false;
  int agreement = 0;
  for (const json& x : v["violations"]) {
    agreement += x["invariant"] == "outcome-agreement";
    named = named || (x["invariant"] == "outcome-agreement" &&
                      x["message"].get<std::string>().find("no outcome was recorded") != std::string::npos);
  }
  CHECK(named);
  CHECK(agreement == 1);  // once, as what it is (not also as a failed exit)
}

TEST_CASE("the control API refuses deep JSON, dot ids and oversized bodies in its own envelope and keeps serving") {
  Fixture f;
  f.create(deploy_scenario(), "t");
  const int n = 100000;
  const std::string deep = "{\"name\":\"x\",\"args\":{\"x\":" + std::string(n, '[') + std::string(n, ']') + "}}";
  httplib::Client c = f.client();
  auto r = c.Post("/_hiccup/sessions/t/executions", deep, "application/json");
  REQUIRE(r);
  CHECK(r->status == 400);
  CHECK(json::parse(r->body)["error"]["problems"][0]["message"].get<std::string>().find("deeper than 512") !=
        std::string::npos);
  auto r2 = c.Post("/_hiccup/sessions", "{\"scenario\":{\"x\":" + std::string(n, '[') + std::string(n, ']') + "}}",
                   "application/json");
  REQUIRE(r2);
  CHECK(r2->status == 400);
  for (const char* id : {".", ".."}) {
    auto [status, j] = f.call("POST", "/_hiccup/sessions", {{"scenario", deploy_scenario()}, {"id", id}});
    CHECK(status == 400);
  }
  // A body announced over the limit is answered 413 before it is sent (the server reads none of it).
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(f.port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  const std::string head = "POST /_hiccup/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 40000000\r\n\r\n";
  REQUIRE(send(fd, head.data(), head.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(head.size()));
  std::string answer;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) answer.append(buf, static_cast<std::size_t>(n));
  close(fd);
  INFO(answer);
  CHECK(answer.rfind("HTTP/1.1 413 ", 0) == 0);
  const json e = json::parse(answer.substr(answer.find("\r\n\r\n") + 4), nullptr, false);
  CHECK(e["version"] == 1);
  CHECK(e["error"]["code"] == "payload_too_large");
  CHECK(f.call("GET", "/_hiccup/health").first == 200);  // still serving
}

TEST_CASE("a verdict over a session whose requests left its journal window is unknown, never pass") {
  Fixture f;
  // Window 1: the deploy run's first request leaves it when the second arrives.
  auto [status, created] = f.call("POST", "/_hiccup/sessions", {{"scenario", deploy_scenario()}, {"id", "w"}, {"journal_window", 1}});
  REQUIRE(status == 201);
  CHECK(created["session"]["journal_window"] == 1);
  play_deploy(f, "w", 1);
  auto [vs, v] = f.call("GET", "/_hiccup/sessions/w/verdict");
  REQUIRE(vs == 200);
  INFO(v.dump(2));
  CHECK(v["verdict"] == "unknown");
  CHECK(v["passed"] == false);
  CHECK(v["requests"] == 2);
  CHECK(v["window"]["requests_evicted"] == 1);
  CHECK(v["window"]["evicted_summary"]["requests"] == 1);
  CHECK(v["window"]["message"].get<std::string>().find("judged over a window") != std::string::npos);
  auto [js, j] = f.call("GET", "/_hiccup/sessions/w/journal");
  REQUIRE(js == 200);
  REQUIRE(j["journal"].size() == 1);
  CHECK(j["journal"][0]["index"] == 1);
  CHECK(j["evicted"]["summary"]["requests"] == 1);
  // The same run in a window that holds it passes; a bad window is a 400 with its pointer.
  f.create(deploy_scenario(), "whole");
  play_deploy(f, "whole", 1);
  CHECK(f.call("GET", "/_hiccup/sessions/whole/verdict").second["verdict"] == "pass");
  auto [es, e6] = f.call("POST", "/_hiccup/sessions", {{"scenario", deploy_scenario()}, {"journal_window", 1e6}});
  CHECK(es == 201);  // 1e6 is a whole number as JSON writes it
  CHECK(e6["session"]["journal_window"] == 1000000);
  CHECK(f.call("POST", "/_hiccup/sessions", {{"scenario", deploy_scenario()}, {"journal_window", 2.5}}).first == 400);
  auto [bs, bad] = f.call("POST", "/_hiccup/sessions", {{"scenario", deploy_scenario()}, {"journal_window", 0}});
  CHECK(bs == 400);
  CHECK(bad["error"]["problems"][0]["pointer"] == "/journal_window");
}

TEST_CASE("verdicts and journals are made on a worker thread, not on the event loop") {
  serve::SessionRegistry registry;
  serve::ControlApi api(registry);
  registry.create("a", harness::Scenario{});
  for (const char* path : {"/_hiccup/sessions/a/verdict", "/_hiccup/sessions/a/journal"}) {
    mock::Route r = api.route("GET", path, "");
    INFO(path);
    CHECK(r.engine == nullptr);
    REQUIRE(r.deferred);  // the server calls it on a worker thread
    const mock::DirectAnswer d = r.deferred();
    CHECK(d.status == 200);
  }
  // Quick answers stay on the event loop.
  CHECK_FALSE(api.route("GET", "/_hiccup/health", "").deferred);
  CHECK_FALSE(api.route("GET", "/_hiccup/sessions/a", "").deferred);
}

namespace control_api_test {

/// Sends `bytes` on a fresh connection to 127.0.0.1:`port`, half-closes, returns the whole answer.
std::string raw_exchange(int port, const std::string& bytes) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
  shutdown(fd, SHUT_WR);
  std::string answer;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) answer.append(buf, static_cast<std::size_t>(n));
  close(fd);
  return answer;
}

/// The body of a raw answer: valid UTF-8 (checked) parsed as JSON (discarded when it is not).
json utf8_body(const std::string& answer) {
  const std::size_t at = answer.find("\r\n\r\n");
  REQUIRE(at != std::string::npos);
  const std::string body = answer.substr(at + 4);
  CHECK(mock::json_text::is_utf8(body));
  return json::parse(body, nullptr, false);
}

/// The pointers of an error envelope's problems.
std::vector<std::string> pointers(const json& answer) {
  std::vector<std::string> out;
  for (const json& p : answer["error"].value("problems", json::array())) out.push_back(p.value("pointer", ""));
  return out;
}

}  // namespace control_api_test

TEST_CASE("a number beyond a double's range in any control body is a 400 naming its pointer, and the server goes on") {
  Fixture f;
  f.create(deploy_scenario(), "t");
  httplib::Client c = f.client();
  struct Case {
    std::string path, body, pointer;
  };
  std::string scenario = deploy_scenario().dump();
  scenario.pop_back();  // the scenario object, open for one more member
  const std::vector<Case> cases = {
      {"/_hiccup/sessions/t/executions", R"({"name":"deploy","args":{"a":1e400}})", "/args/a"},
      {"/_hiccup/sessions/t/executions", R"({"name":"deploy","args":{"a":[0,1,-1e999]}})", "/args/a/2"},
      {"/_hiccup/sessions/t/outcome", R"({"outcome":"completed","final_text":1E+999})", "/final_text"},
      {"/_hiccup/sessions", R"({"scenario":)" + scenario + R"(,"x":1e400}})", "/scenario/x"},
      {"/_hiccup/sessions", R"({"max_attempts":1e400})", "/max_attempts"},
      {"/_hiccup/sessions", R"([1e400])", "/0"},
  };
  for (const Case& k : cases) {
    INFO(k.path << " " << k.body);
    auto r = c.Post(k.path.c_str(), k.body, "application/json");
    REQUIRE(r);
    CHECK(r->status == 400);
    const json j = json::parse(r->body, nullptr, false);
    CHECK(j["error"]["code"] == "bad_request");
    CHECK(control_api_test::pointers(j) == std::vector<std::string>{k.pointer});
    CHECK(j["error"]["problems"][0]["message"].get<std::string>().find("out of range") != std::string::npos);
  }
  // A scenario file's text holding such a number is the scenario's problem, with its pointer.
  auto [status, j] = f.call("POST", "/_hiccup/sessions", {{"scenario", R"({"schema": 1, "turns": [1e400]})"}});
  CHECK(status == 400);
  CHECK(j["error"]["code"] == "invalid_scenario");
  CHECK(control_api_test::pointers(j) == std::vector<std::string>{"/turns/0"});
  CHECK(f.call("GET", "/_hiccup/health").first == 200);
}

TEST_CASE("a scenario text that fails to parse at a non-ASCII character is refused in valid UTF-8") {
  Fixture f;
  for (const std::string& text : {std::string("{\"name\": \xC3\xA9}"), std::string("{\xE2\x80\x9Cschema\xE2\x80\x9D: 1}"),
                                 std::string("{\"turns\": [\xC2\xA0]}"), std::string("{\"name\": \"x\"} \xF0\x9F\x98\x80")}) {
    INFO(text);
    auto [status, j] = f.call("POST", "/_hiccup/sessions", {{"scenario", text}});
    CHECK(status == 400);
    REQUIRE(j.is_object());
    CHECK(j["error"]["code"] == "invalid_scenario");
    CHECK(j["error"]["problems"][0]["message"].get<std::string>().rfind("invalid json at byte ", 0) == 0);
  }
  CHECK(f.call("GET", "/_hiccup/health").first == 200);
}

TEST_CASE("a non-UTF-8 byte in a control path, session path or request head is refused in valid UTF-8") {
  Fixture f;
  f.create(deploy_scenario(), "t");
  const std::vector<std::string> requests = {
      "GET /_hiccup/sessions/\xFF HTTP/1.1\r\nHost: x\r\n\r\n",
      "GET /_hiccup/\xFF\xFE HTTP/1.1\r\nHost: x\r\n\r\n",
      "GET /_hiccup/sessions/t/\xC3 HTTP/1.1\r\nHost: x\r\n\r\n",
      "POST /s/\xFF/v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
      "GET /_hiccup/health HTTP/1.\xFF\r\nHost: x\r\n\r\n",
      "POST /_hiccup/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 1\xFF\r\n\r\n{}",
      "POST /_hiccup/sessions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\xFF\r\n\r\n",
      "POST /_hiccup/sessions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\xFF\r\n{}\r\n0\r\n\r\n",
  };
  for (const std::string& raw : requests) {
    INFO(raw);
    const std::string answer = control_api_test::raw_exchange(f.port, raw);
    const json j = control_api_test::utf8_body(answer);
    REQUIRE(j.is_object());
    CHECK((answer.rfind("HTTP/1.1 4", 0) == 0 || answer.rfind("HTTP/1.1 501 ", 0) == 0));
  }
  CHECK(f.call("GET", "/_hiccup/health").first == 200);
}

TEST_CASE("a non-UTF-8 byte in a provider request's query is journaled percent-encoded and the journal stays JSON") {
  Fixture f;
  f.create(deploy_scenario(), "t");
  const std::string body = chat({user("Deploy.")}).dump();
  const std::string answer = control_api_test::raw_exchange(
      f.port, std::string("POST /s/t/v1/chat/completions?x=\xFF\xFE HTTP/1.1\r\nHost: x\r\nContent-Length: ") +
                  std::to_string(body.size()) + "\r\n\r\n" + body);
  CHECK(answer.rfind("HTTP/1.1 200 ", 0) == 0);
  auto [status, j] = f.call("GET", "/_hiccup/sessions/t/journal");
  REQUIRE(status == 200);
  CHECK(j["journal"][0]["target"] == "/v1/chat/completions?x=%FF%FE");
  CHECK(f.call("GET", "/_hiccup/sessions/t/verdict").first == 200);
}

TEST_CASE("a credential in a query string is journaled redacted") {
  Fixture f;
  f.create(deploy_scenario(), "t");
  httplib::Client c = f.client();
  auto r = c.Post("/s/t/v1/chat/completions?key=AIzaSECRET&api-version=1", chat({user("Deploy.")}).dump(), "application/json");
  REQUIRE(r);
  auto [status, j] = f.call("GET", "/_hiccup/sessions/t/journal");
  REQUIRE(status == 200);
  CHECK(j["journal"][0]["target"] == "/v1/chat/completions?key=REDACTED&api-version=1");
  CHECK(j.dump().find("AIzaSECRET") == std::string::npos);
}

TEST_CASE("control API messages quoting input escape terminal control characters") {
  Fixture f;
  auto [status, j] = f.call("POST", "/_hiccup/sessions", {{"scenario", deploy_scenario()}, {"id", "\x1B[31mred"}});
  CHECK(status == 400);
  const std::string message = j["error"]["problems"][0]["message"].get<std::string>();
  CHECK(message.find('\x1B') == std::string::npos);
  json scenario = deploy_scenario();
  scenario["turns"][0]["attempts"][0]["fault"] = {{"kind", "\x1B]0;pwned\x07"}};
  auto [status2, j2] = f.call("POST", "/_hiccup/sessions", {{"scenario", scenario}});
  CHECK(status2 == 400);
  const std::string fault_message = j2["error"]["problems"][0]["message"].get<std::string>();
  CHECK(fault_message.rfind("unknown fault \"\\x1B]0;pwned\\x07\"", 0) == 0);
  auto [status3, j3] = f.call("GET", "/_hiccup/sessions/\x1B[2J");
  CHECK(status3 == 404);
  CHECK(j3.dump().find("\\u001b") == std::string::npos);
}

TEST_CASE("health reports the server's internal errors") {
  Fixture f;
  std::uint64_t count = 3;
  f.api.set_internal_errors([&count] { return count; });
  auto [status, j] = f.call("GET", "/_hiccup/health");
  CHECK(status == 200);
  CHECK(j["internal_errors"] == 3);
  f.api.set_internal_errors(nullptr);
}

TEST_CASE("each session's MCP endpoint serves its tools and its tool_calls list them") {
  Fixture f;
  json scn = deploy_scenario();
  scn["tools"] = json::parse(R"([{"name": "deploy", "calls": [{"result": "deployed"}]}])");
  f.create(scn, "t");
  f.create(deploy_scenario(), "none");
  httplib::Client c = f.client();
  const httplib::Headers accept = {{"Accept", "application/json, text/event-stream"}};
  auto init = c.Post("/s/t/mcp", accept,
                     R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})",
                     "application/json");
  REQUIRE(init);
  CHECK(init->status == 200);
  const std::string sid = init->get_header_value("Mcp-Session-Id");
  REQUIRE(!sid.empty());
  httplib::Headers with_session = accept;
  with_session.emplace("Mcp-Session-Id", sid);
  auto called = c.Post("/s/t/mcp", with_session,
                       R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"deploy","arguments":{"env":"prod"}}})",
                       "application/json");
  REQUIRE(called);
  CHECK(called->status == 200);
  CHECK(called->get_header_value("Content-Type") == "text/event-stream");
  CHECK(called->body.find(R"("text":"deployed")") != std::string::npos);
  // The model paths of the session are untouched by it, and another session has its own MCP server.
  CHECK(f.call("GET", "/_hiccup/sessions/t/journal").second["journal"].empty());
  auto other = c.Post("/s/none/mcp", with_session, R"({"jsonrpc":"2.0","id":3,"method":"tools/list"})", "application/json");
  REQUIRE(other);
  CHECK(other->status == 404);  // that MCP session belongs to session t

  auto [status, list] = f.call("GET", "/_hiccup/sessions/t/tool_calls");
  CHECK(status == 200);
  CHECK(list["executions"] == json{{"deploy", 1}});
  CHECK(list["received"] == 1);
  CHECK(list["mcp_sessions"] == 1);
  REQUIRE(list["tool_calls"].size() == 1);
  CHECK(list["tool_calls"][0]["arguments"] == json{{"env", "prod"}});
  CHECK(list["tool_calls"][0]["reply_sent"] == true);
  CHECK(list["tool_calls"][0]["arrived_ms"].get<double>() >= 0);
  CHECK(f.call("POST", "/_hiccup/sessions/t/tool_calls").first == 405);
  // A reset starts the MCP server afresh.
  CHECK(f.call("POST", "/_hiccup/sessions/t/reset").first == 200);
  CHECK(f.call("GET", "/_hiccup/sessions/t/tool_calls").second["executions"].empty());
  auto gone = c.Post("/s/t/mcp", with_session, R"({"jsonrpc":"2.0","id":4,"method":"ping"})", "application/json");
  REQUIRE(gone);
  CHECK(gone->status == 404);
}

TEST_CASE("the default session's MCP endpoint is /mcp") {
  serve::SessionRegistry registry;
  serve::ControlApi api(registry);
  registry.create(std::string(serve::SessionRegistry::kDefaultId), harness::Scenario{});
  const mock::Route r = api.route("POST", "/mcp", "");
  REQUIRE(r.engine);
  CHECK(r.engine == registry.find("default")->mcp());
  CHECK(api.route("POST", "/s/default/mcp?x=1", "").engine == registry.find("default")->mcp());
  CHECK(api.route("POST", "/v1/chat/completions", "").engine == registry.find("default")->engine());
  CHECK(api.route("GET", "/_hiccup/sessions/default/tool_calls", "").deferred);
}

namespace control_api_timing_scale_test {

using nlohmann::json;
namespace serve = harness::serve;

/// One turn whose text arrives after an hour (event timing).
json timed_scenario() {
  return json::parse(R"({"schema": 1, "name": "an-hour", "provider": "openai-chat", "prompt": "Say hello.",
    "timing": {"scale": 0.5},
    "turns": [{"attempts": [{"events": [{"text": "Hello.", "delay_s": 3600}, {"finish": "stop"}]}]}]})");
}

TEST_CASE("serve --timing-scale reaches sessions created over the control API, and a create body may give its own") {
  serve::SessionRegistry registry;
  serve::ControlApi api(registry);
  const auto create = [&](json body) {
    const mock::DirectAnswer a = api.control("POST", "/_hiccup/sessions", body.dump());
    return std::make_pair(a.status, json::parse(a.body));
  };
  // Without a server scale: the scenario's own.
  auto [status, answer] = create({{"scenario", timed_scenario()}, {"id", "own"}});
  REQUIRE(status == 201);
  CHECK(answer["session"]["timing_scale"] == 0.5);
  CHECK(registry.find("own")->engine()->script().timing.scale == 0.5);
  // `hiccup serve --timing-scale 0`: every session created afterwards plays no delay.
  registry.set_timing_scale(0.0);
  std::tie(status, answer) = create({{"scenario", timed_scenario()}, {"id", "served"}});
  REQUIRE(status == 201);
  CHECK(answer["session"]["timing_scale"] == 0);
  CHECK(registry.find("served")->engine()->script().timing.scale == 0);
  CHECK(mock::event_delay_s(registry.find("served")->engine()->script().turns[0].attempts[0].events[0],
                            registry.find("served")->engine()->script().timing) == 0);
  // The create body's own scale wins over the server's.
  std::tie(status, answer) = create({{"scenario", timed_scenario()}, {"id", "tenth"}, {"timing_scale", 0.1}});
  REQUIRE(status == 201);
  CHECK(answer["session"]["timing_scale"] == 0.1);
  CHECK(mock::event_delay_s(registry.find("tenth")->engine()->script().turns[0].attempts[0].events[0],
                            registry.find("tenth")->engine()->script().timing) == Approx(360));
  // -0.0 is 0: played and echoed as 0, never as "-0.0".
  std::tie(status, answer) = create({{"scenario", timed_scenario()}, {"id", "negzero"}, {"timing_scale", -0.0}});
  REQUIRE(status == 201);
  CHECK(answer["session"]["timing_scale"].dump() == "0.0");
  CHECK_FALSE(std::signbit(registry.find("negzero")->engine()->script().timing.scale));
  // A bad scale is named by its pointer.
  for (const json& bad : {json(-1), json("fast"), json(1e7)}) {
    INFO(bad.dump());
    std::tie(status, answer) = create({{"scenario", timed_scenario()}, {"timing_scale", bad}});
    CHECK(status == 400);
    CHECK(answer["error"]["problems"][0]["pointer"] == "/timing_scale");
    CHECK(answer["error"]["problems"][0]["message"].get<std::string>().rfind("expected a number in 0..1000000", 0) == 0);
  }
}

}  // namespace control_api_timing_scale_test
