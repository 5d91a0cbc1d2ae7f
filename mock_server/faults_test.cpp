// Tests of the fault catalogue and the faults' JSON form.
#include <catch2/catch.hpp>

#include "mock_server/faults.h"

using mock::DecodeProblem;
using mock::Fault;
using nlohmann::json;

namespace {

std::optional<Fault> decode(const json& j, std::vector<DecodeProblem>& problems) {
  return mock::fault_from_json(j, "/turns/0/attempts/1/fault", problems);
}

}  // namespace

TEST_CASE("the catalogue lists every fault kind in variant order with doc lines") {
  const auto& cat = mock::fault_catalogue();
  REQUIRE(cat.size() == std::variant_size_v<Fault>);
  std::vector<std::string> names;
  for (const auto& k : cat) {
    names.emplace_back(k.name);
    CHECK_FALSE(k.doc.empty());
    REQUIRE_FALSE(k.fields.empty());
    CHECK(k.fields[0].name == "after_event");
    REQUIRE(k.fields.size() >= 2u);
    CHECK(k.fields[1].name == "after_fragment");
  }
  CHECK(names == std::vector<std::string>{"disconnect", "reset", "end", "cut", "error_event",
                                          "malformed", "stall"});
  CHECK(mock::fault_name(mock::ResetFault{}) == "reset");
  CHECK(mock::fault_name(mock::StallFault{}) == "stall");
  CHECK(cat[6].fields[2].name == "seconds");
  CHECK(cat[6].fields[2].type == "number");
}

TEST_CASE("after_event defaults to all events and is clamped to the attempt") {
  CHECK(mock::fault_after_event(mock::EndFault{}, 3) == 3);
  CHECK(mock::fault_after_event(mock::EndFault{1}, 3) == 1);
  CHECK(mock::fault_after_event(mock::EndFault{7}, 3) == 3);
  CHECK(mock::fault_after_event(mock::EndFault{-2}, 3) == 0);
}

TEST_CASE("every fault kind round-trips through JSON") {
  const std::vector<Fault> faults = {
      mock::DisconnectFault{1, 25}, mock::ResetFault{std::nullopt, 200}, mock::EndFault{0},
      mock::CutFault{2, 7},         mock::ErrorEventFault{1, 529},       mock::MalformedFault{},
      mock::StallFault{1, 90.5}};
  for (const auto& f : faults) {
    std::vector<DecodeProblem> problems;
    const auto back = decode(mock::fault_to_json(f), problems);
    INFO(mock::fault_to_json(f).dump());
    REQUIRE(problems.empty());
    REQUIRE(back);
    CHECK(*back == f);
  }
}

TEST_CASE("fault JSON writes defaults but omits an unset after_event") {
  CHECK(mock::fault_to_json(mock::ResetFault{}) == json{{"kind", "reset"}, {"idle_ms", 200}});
  CHECK(mock::fault_to_json(mock::CutFault{3, 5}) ==
        json{{"kind", "cut"}, {"after_event", 3}, {"bytes", 5}});
}

TEST_CASE("decoding fills defaults for omitted optional fields") {
  std::vector<DecodeProblem> problems;
  auto f = decode(json{{"kind", "reset"}, {"after_event", 1}}, problems);
  REQUIRE(f);
  CHECK(std::get<mock::ResetFault>(*f).idle_ms == 200);
  f = decode(json{{"kind", "error_event"}}, problems);
  REQUIRE(f);
  CHECK(std::get<mock::ErrorEventFault>(*f).status == 503);
  CHECK_FALSE(std::get<mock::ErrorEventFault>(*f).after_event);
  CHECK(problems.empty());
}

TEST_CASE("an unknown fault kind names the kind and lists the known ones") {
  std::vector<DecodeProblem> problems;
  CHECK_FALSE(decode(json{{"kind", "resett"}}, problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].pointer == "/turns/0/attempts/1/fault/kind");
  CHECK(problems[0].message ==
        "unknown fault \"resett\" (known: disconnect, reset, end, cut, error_event, malformed, "
        "stall)");
}

TEST_CASE("a missing or non-string kind is a problem at the right pointer") {
  std::vector<DecodeProblem> problems;
  CHECK_FALSE(decode(json{{"after_event", 1}}, problems));
  CHECK_FALSE(decode(json{{"kind", 3}}, problems));
  CHECK_FALSE(decode(json::array(), problems));
  REQUIRE(problems.size() == 3);
  CHECK(problems[0].pointer == "/turns/0/attempts/1/fault");
  CHECK(problems[0].message == "missing required field \"kind\"");
  CHECK(problems[1].pointer == "/turns/0/attempts/1/fault/kind");
  CHECK(problems[1].message == "expected string, found integer");
  CHECK(problems[2].message == "expected object, found array");
}

TEST_CASE("field problems point at the field: unknown, wrong type, negative, missing") {
  std::vector<DecodeProblem> problems;
  CHECK_FALSE(decode(json{{"kind", "reset"}, {"idle", 5}}, problems));
  CHECK_FALSE(decode(json{{"kind", "disconnect"}, {"delay_ms", "10"}}, problems));
  CHECK_FALSE(decode(json{{"kind", "reset"}, {"idle_ms", -1}}, problems));
  CHECK_FALSE(decode(json{{"kind", "cut"}}, problems));
  CHECK_FALSE(decode(json{{"kind", "cut"}, {"bytes", 0}}, problems));
  CHECK_FALSE(decode(json{{"kind", "stall"}, {"seconds", -0.5}}, problems));
  CHECK_FALSE(decode(json{{"kind", "end"}, {"after_event", 1.5}}, problems));
  REQUIRE(problems.size() == 7);
  const std::string at = "/turns/0/attempts/1/fault";
  CHECK(problems[0].pointer == at + "/idle");
  CHECK(problems[0].message == "unknown field \"idle\" for fault \"reset\" (known: kind, after_event, after_fragment, idle_ms)");
  CHECK(problems[1].pointer == at + "/delay_ms");
  CHECK(problems[1].message == "expected an integer in 0..1000000000, found string \"10\"");
  CHECK(problems[2].pointer == at + "/idle_ms");
  CHECK(problems[2].message == "expected an integer in 0..1000000000, found integer -1");
  CHECK(problems[3].pointer == at);
  CHECK(problems[3].message == "missing required field \"bytes\"");
  CHECK(problems[4].pointer == at + "/bytes");
  CHECK(problems[4].message == "expected an integer in 1..1000000000, found integer 0");
  CHECK(problems[5].pointer == at + "/seconds");
  CHECK(problems[5].message == "expected a number >= 0.0, found number -0.5");
  CHECK(problems[6].pointer == at + "/after_event");
  CHECK(problems[6].message == "expected an integer in 0..1000000000, found number 1.5");
}

TEST_CASE("an integer fault field out of range or of another type names the range and the value found") {
  std::vector<DecodeProblem> problems;
  CHECK_FALSE(decode(json::parse(R"({"kind": "reset", "after_event": 4294967296})"), problems));
  CHECK_FALSE(decode(json::parse(R"({"kind": "reset", "idle_ms": 1000000001})"), problems));
  CHECK_FALSE(decode(json::parse(R"({"kind": "reset", "idle_ms": 18446744073709551615})"), problems));
  CHECK_FALSE(decode(json::parse(R"({"kind": "disconnect", "delay_ms": true})"), problems));
  CHECK_FALSE(decode(json::parse(R"({"kind": "cut", "bytes": null})"), problems));
  CHECK_FALSE(decode(json::parse(R"({"kind": "cut", "bytes": [1]})"), problems));
  CHECK_FALSE(decode(json::parse(R"({"kind": "stall", "seconds": "5"})"), problems));
  REQUIRE(problems.size() == 7);
  CHECK(problems[0].message == "expected an integer in 0..1000000000, found integer 4294967296");
  CHECK(problems[1].message == "expected an integer in 0..1000000000, found integer 1000000001");
  CHECK(problems[2].message == "expected an integer in 0..1000000000, found integer 18446744073709551615");
  CHECK(problems[3].message == "expected an integer in 0..1000000000, found true");
  CHECK(problems[4].message == "expected an integer in 1..1000000000, found null");
  CHECK(problems[5].message == "expected an integer in 1..1000000000, found an array");
  CHECK(problems[6].message == "expected a number >= 0.0, found string \"5\"");
  // The largest accepted value decodes.
  problems.clear();
  auto f = decode(json::parse(R"({"kind": "reset", "after_event": 1000000000, "idle_ms": 1000000000})"), problems);
  REQUIRE(f);
  CHECK(problems.empty());
  CHECK(std::get<mock::ResetFault>(*f).idle_ms == 1000000000);
}

TEST_CASE("field names with pointer metacharacters are escaped") {
  std::vector<DecodeProblem> problems;
  CHECK_FALSE(decode(json{{"kind", "end"}, {"a/b~c", 1}}, problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].pointer == "/turns/0/attempts/1/fault/a~1b~0c");
}

TEST_CASE("decoding messages are lower-case without a trailing period") {
  std::vector<DecodeProblem> problems;
  decode(json{{"kind", "nope"}}, problems);
  decode(json{{"kind", "cut"}, {"bytes", "x"}, {"zzz", 1}}, problems);
  REQUIRE(problems.size() == 3);
  for (const auto& p : problems) {
    INFO(p.message);
    CHECK(std::islower(static_cast<unsigned char>(p.message.front())));
    CHECK(p.message.back() != '.');
  }
}

TEST_CASE("after_fragment needs after_event and round-trips through JSON") {
  std::vector<mock::DecodeProblem> problems;
  const auto f = mock::fault_from_json(nlohmann::json::parse(R"({"kind":"reset","after_event":1,"after_fragment":2})"),
                                       "/fault", problems);
  REQUIRE(f);
  CHECK(problems.empty());
  CHECK(mock::fault_after_fragment(*f) == std::optional<int>(2));
  CHECK(mock::fault_to_json(*f) == nlohmann::json::parse(R"({"kind":"reset","after_event":1,"after_fragment":2,"idle_ms":200})"));
  CHECK_FALSE(mock::fault_from_json(nlohmann::json::parse(R"({"kind":"end","after_fragment":0})"), "/fault", problems));
  REQUIRE(problems.size() == 1u);
  CHECK(problems[0].pointer == "/fault/after_fragment");
  CHECK_FALSE(mock::fault_from_json(nlohmann::json::parse(R"({"kind":"end","after_event":0,"after_fragment":-1})"), "/fault", problems));
}
