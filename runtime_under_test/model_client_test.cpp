// Tests of one model attempt: every error code, the stop-at-terminal rule, idle timeouts.
#include "runtime_under_test/model_client.h"

#include <catch2/catch.hpp>

#include "runtime_under_test/fake_transport.h"

namespace rut {

using namespace rut::test;

namespace {

struct Attempt {
  AttemptResult result;
  std::vector<ModelPart> streamed;
  double clock_s = 0;
  std::string target;
};

Attempt run_one(FakeResponse response, DefectSet defects = {}) {
  FakeTransport transport({{std::move(response)}});
  VirtualClock clock;
  ModelClient client(transport, clock, defects, 60);
  json contents = json::array({{{"role", "user"}, {"parts", json::array({{{"text", "p"}}})}}});
  Attempt a;
  a.result = client.run(client.make_request(contents, "m1"),
                        [&](const ModelPart& p) { a.streamed.push_back(p); });
  a.clock_s = clock.now_s();
  a.target = transport.requests.at(0).target;
  return a;
}

std::string code_of(const Attempt& a) {
  return a.result.error ? std::string(error_code_name(*a.result.error)) : std::string("ok");
}

}  // namespace

TEST_CASE("an attempt completes on STOP and ignores anything after the terminal frame") {
  auto a = run_one(stream({text_frame("hi"), finish_frame("STOP"), text_frame("late"),
                           "data: {broken\n\n"},
                          TransportEnd::kConnectionLost));
  CHECK(code_of(a) == "ok");
  CHECK(a.result.finish_reason == "STOP");
  REQUIRE(a.result.parts.size() == 1);
  CHECK(*a.result.parts[0].text == "hi");
  CHECK(a.streamed.size() == 1);
  CHECK(a.target == "/v1beta/models/m1:streamGenerateContent?alt=sse");
}

TEST_CASE("an attempt completes on MAX_TOKENS") {
  CHECK(code_of(run_one(stream({text_frame("x"), finish_frame("MAX_TOKENS")}))) == "ok");
}

TEST_CASE("status failures map to their error codes with RetryInfo") {
  CHECK(code_of(run_one(status(429, "RESOURCE_EXHAUSTED"))) == "http_429");
  for (int s : {500, 502, 503, 504, 529}) {
    CHECK(code_of(run_one(status(s, "UNAVAILABLE"))) == "http_5xx");
  }
  CHECK(code_of(run_one(status(400, "INVALID_ARGUMENT"))) == "invalid_request");
  for (int s : {401, 403, 404, 501}) {
    CHECK(code_of(run_one(status(s, "X"))) == "http_client_error");
  }
  auto a = run_one(status(503, "UNAVAILABLE", 30));
  CHECK(a.result.retry_after_s == 30);
  CHECK(a.result.status == 503);
}

TEST_CASE("stream faults map to their error codes") {
  CHECK(code_of(run_one(stream({text_frame("a")}, TransportEnd::kConnectionLost))) ==
        "connection_lost");
  CHECK(code_of(run_one({0, {}, TransportEnd::kConnectFailed})) == "connect_failed");
  CHECK(code_of(run_one(stream({text_frame("a")}))) == "incomplete_stream");
  CHECK(code_of(run_one(stream({text_frame("a"), "data: {nope\n\n", finish_frame()}))) ==
        "undecodable_frame");
  CHECK(code_of(run_one(stream({text_frame("a"), error_body(503, "UNAVAILABLE") + "\n"}))) ==
        "stream_error");
  CHECK(code_of(run_one(stream({finish_frame("MALFORMED_FUNCTION_CALL")}))) == "malformed_call");
  CHECK(code_of(run_one(stream({finish_frame("SAFETY")}))) == "content_filter");
  CHECK(code_of(run_one(stream({finish_frame("RECITATION")}))) == "content_filter");
  CHECK(code_of(run_one(stream({finish_frame("OTHER")}))) == "incomplete_stream");
}

TEST_CASE("a cut frame mid-stream is a lost connection, not an undecodable frame") {
  std::string f = text_frame("abc");
  CHECK(code_of(run_one(stream({f.substr(0, 10)}, TransportEnd::kConnectionLost))) ==
        "connection_lost");
}

TEST_CASE("an idle timeout advances the clock by idle_timeout_s") {
  auto a = run_one(stream({text_frame("a")}, TransportEnd::kIdleTimeout));
  CHECK(code_of(a) == "idle_timeout");
  CHECK(a.clock_s == 60);
  CHECK(a.result.message == "no data for 60 s");
  // A fraction of a second is said as it is (it read "no data for 0 s").
  FakeTransport transport({{stream({text_frame("a")}, TransportEnd::kIdleTimeout)}});
  VirtualClock clock;
  const DefectSet none;
  ModelClient client(transport, clock, none, 0.5);
  const json contents = json::array({{{"role", "user"}, {"parts", json::array({{{"text", "p"}}})}}});
  const AttemptResult r = client.run(client.make_request(contents, "m1"), [](const ModelPart&) {});
  CHECK(r.message == "no data for 0.5 s");
  CHECK(clock.now_s() == 0.5);
}

TEST_CASE("parts stream out before the attempt ends, failing attempts included") {
  auto a = run_one(stream({text_frame("a"), call_frame("deploy")}, TransportEnd::kConnectionLost));
  CHECK(code_of(a) == "connection_lost");
  REQUIRE(a.streamed.size() == 2);
  CHECK(a.streamed[1].call->name == "deploy");
}

TEST_CASE("defect content-filter-as-success turns SAFETY into a completed attempt") {
  CHECK(code_of(run_one(stream({finish_frame("SAFETY")}), {Defect::kContentFilterAsSuccess})) ==
        "ok");
}

TEST_CASE("defect commit-incomplete-stream accepts a clean end without terminal frame") {
  CHECK(code_of(run_one(stream({text_frame("a")}), {Defect::kCommitIncompleteStream})) == "ok");
  CHECK(code_of(run_one(stream({text_frame("a")}, TransportEnd::kConnectionLost),
                        {Defect::kCommitIncompleteStream})) == "connection_lost");
}

}  // namespace rut
