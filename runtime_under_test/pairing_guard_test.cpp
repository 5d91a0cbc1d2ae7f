// Tests of the pre-send pairing guard.
#include "runtime_under_test/pairing_guard.h"

#include <catch2/catch.hpp>

namespace rut {

using nlohmann::json;

namespace {
json call(const std::string& name, const std::string& id = "") {
  json fc = {{"name", name}, {"args", json::object()}};
  if (!id.empty()) fc["id"] = id;
  return {{"functionCall", fc}};
}
json resp(const std::string& name, const std::string& id = "") {
  json fr = {{"name", name}, {"response", {{"output", "ok"}}}};
  if (!id.empty()) fr["id"] = id;
  return {{"functionResponse", fr}};
}
json content(const std::string& role, json parts) { return {{"role", role}, {"parts", parts}}; }
}  // namespace

TEST_CASE("pairing guard drops a second response to one call by name") {
  json c = json::array({content("user", json::array({{{"text", "p"}}})),
                        content("model", json::array({call("deploy")})),
                        content("user", json::array({resp("deploy"), resp("deploy")}))});
  CHECK(apply_pairing_guard(c) == 1);
  CHECK(c[2]["parts"].size() == 1);
}

TEST_CASE("pairing guard matches by id when present") {
  json c = json::array({content("user", json::array({{{"text", "p"}}})),
                        content("model", json::array({call("deploy", "a"), call("deploy", "b")})),
                        content("user", json::array({resp("deploy", "b"), resp("deploy", "z"),
                                                     resp("deploy", "a")}))});
  CHECK(apply_pairing_guard(c) == 1);
  CHECK(c[2]["parts"][0]["functionResponse"]["id"] == "b");
  CHECK(c[2]["parts"][1]["functionResponse"]["id"] == "a");
}

TEST_CASE("pairing guard removes a response content that matches nothing") {
  json c = json::array({content("user", json::array({{{"text", "p"}}})),
                        content("model", json::array({{{"text", "no calls"}}})),
                        content("user", json::array({resp("deploy")}))});
  CHECK(apply_pairing_guard(c) == 1);
  CHECK(c.size() == 2);
}

TEST_CASE("pairing guard leaves valid pairing alone") {
  json c = json::array({content("user", json::array({{{"text", "p"}}})),
                        content("model", json::array({call("a"), call("b")})),
                        content("user", json::array({resp("a"), resp("b")}))});
  json before = c;
  CHECK(apply_pairing_guard(c) == 0);
  CHECK(c == before);
}

}  // namespace rut
