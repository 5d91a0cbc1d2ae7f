// Tests of the codec registry and shared helpers (codec.h).
#include <catch2/catch.hpp>

#include "runtime_under_test/codec.h"

using nlohmann::json;

TEST_CASE("every provider has a codec that names itself") {
  for (const std::string& name : rut::codec_names()) {
    const rut::ICodec* c = rut::codec_for(name);
    REQUIRE(c != nullptr);
    CHECK(c->provider() == name);
    CHECK_FALSE(c->default_model().empty());
  }
  CHECK(rut::codec_for("openai") == nullptr);
}

TEST_CASE("repair_json closes what a cut left open") {
  CHECK(rut::repair_json(R"({"command":"./depl)") == json{{"command", "./depl"}});
  CHECK(rut::repair_json(R"({"a":1,)") == json{{"a", 1}});
  CHECK(rut::repair_json(R"({"a":1,"b)") == json::parse(R"({"a":1,"b":null})"));
  CHECK(rut::repair_json(R"({"a":)") == json::parse(R"({"a":null})"));
  CHECK(rut::repair_json(R"({"a":[1,2)") == json::parse(R"({"a":[1,2]})"));
  CHECK(rut::repair_json(R"({"a":{"b":tr)") == json::parse(R"({"a":{"b":true}})"));
  CHECK(rut::repair_json(R"({"a":-)") == json::parse(R"({"a":null})"));
  CHECK(rut::repair_json(R"({"p":"a\)") == json{{"p", "a"}});
  CHECK(rut::repair_json("") == json::object());
  CHECK(rut::repair_json(R"({"done":true})") == json{{"done", true}});
  CHECK_FALSE(rut::repair_json("}}").has_value());
}

TEST_CASE("header_value matches names case-insensitively against lower-case names") {
  const rut::Headers h = {{"Retry-After", "30"}, {"retry-after-ms", "1500"}};
  CHECK(rut::header_value(h, "retry-after") == std::optional<std::string>("30"));
  CHECK(rut::header_value(h, "retry-after-ms") == std::optional<std::string>("1500"));
  CHECK_FALSE(rut::header_value(h, "x-should-retry").has_value());
}
