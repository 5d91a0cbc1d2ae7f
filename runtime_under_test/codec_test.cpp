// Tests of the codec registry and shared helpers (codec.h).
#include <catch2/catch.hpp>

#include "runtime_under_test/codec.h"
#include "runtime_under_test/sse_decoder.h"

#include <map>

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

TEST_CASE("append_json_string writes a string as nlohmann's dump does, and never throws on bytes that are not UTF-8") {
  for (const std::string& s : {std::string(), std::string("plain text"), std::string("a \"quoted\" \\ path\\"),
                              std::string("{\"command\":\"ls \\\"x\\\"\"}"), std::string("\"\\\""), std::string("tab\tnew\nline\x01"),
                              std::string("caf\u00e9 \u2603"), std::string("del \x7f / slash")}) {
    std::string out = "x";
    rut::append_json_string(out, s);
    CHECK(out == "x" + json(s).dump());
  }
  std::string bad;
  rut::append_json_string(bad, "ok \xff\xfe");
  CHECK(bad == "\"ok \xEF\xBF\xBD\xEF\xBF\xBD\"");
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

TEST_CASE("parse_json refuses nesting deeper than 512 levels and invalid JSON as discarded") {
  const auto nested = [](std::size_t n) { return std::string(n, '[') + std::string(n, ']'); };
  CHECK(rut::parse_json(nested(512)).is_array());
  CHECK(rut::parse_json(nested(513)).is_discarded());
  CHECK(rut::parse_json(nested(1000000)).is_discarded());
  CHECK(rut::parse_json("{\"a\":").is_discarded());
  CHECK(rut::parse_json("\"\xff\"").is_discarded());
  CHECK(rut::parse_json(R"({"a":[1,{"b":2}]})") == json::parse(R"({"a":[1,{"b":2}]})"));
  // Objects count as levels; brackets inside strings (escaped quotes included) do not.
  const std::string objects = [] {
    std::string t;
    for (int i = 0; i < 512; ++i) t += "{\"k\":";
    return t + "1" + std::string(512, '}');
  }();
  CHECK(rut::parse_json(objects).is_object());
  CHECK(rut::parse_json("[" + objects + "]").is_discarded());
  const std::string in_string = "[\"\\\"" + std::string(2000, '[') + "\"]";
  REQUIRE(rut::parse_json(in_string).is_array());
  CHECK(rut::parse_json(in_string)[0].get<std::string>() == "\"" + std::string(2000, '['));
  CHECK(rut::parse_json("[1] trailing").is_discarded());
}

TEST_CASE("a stream frame nested 100000 deep is undecodable for every codec, not a stack overflow") {
  // fuzz/codec_stream_fuzz found it: Gemini's decoder copied the functionCall args of a frame
  // like this one recursively and overflowed the stack (ASan: stack-overflow).
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::map<std::string, std::string> frames = {
      {"gemini", R"({"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"x":)" + deep + "}}}]}}]}"},
      {"openai-chat", R"({"choices":[{"index":0,"delta":{"content":)" + deep + "}}]}"},
      {"openai-responses", R"({"type":"response.output_item.done","item":)" + deep + "}"},
      {"anthropic", R"({"type":"content_block_start","index":0,"content_block":)" + deep + "}"},
  };
  for (const auto& [provider, data] : frames) {
    INFO(provider);
    const rut::ICodec* codec = rut::codec_for(provider);
    REQUIRE(codec != nullptr);
    auto decoder = codec->stream_decoder();
    const rut::DecodedChunk chunk = decoder->on_frame(rut::SseFrame{rut::SseFrame::Kind::kData, data, ""});
    CHECK(chunk.undecodable);
    CHECK(chunk.parts.empty());
    CHECK(codec->decode_body(data).undecodable);
  }
}
