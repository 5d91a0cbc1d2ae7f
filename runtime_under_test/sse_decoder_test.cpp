// Tests of the incremental SSE decoder: chunking independence, line endings, comments, error lines.
#include "runtime_under_test/sse_decoder.h"

#include <catch2/catch.hpp>

namespace rut {
namespace {

std::vector<SseFrame> decode_in_chunks(const std::string& bytes, std::size_t chunk) {
  SseDecoder d;
  std::vector<SseFrame> out;
  for (std::size_t i = 0; i < bytes.size(); i += chunk) {
    d.feed(std::string_view(bytes).substr(i, chunk), out);
  }
  d.finish(out);
  return out;
}

}  // namespace

TEST_CASE("sse decoder yields the same frames under every chunking") {
  const std::string bytes =
      "data: {\"a\":1}\r\n\r\n: a comment\n\ndata: {\"b\":2}\n\n"
      "{\"error\":{\"code\":503,\"message\":\"x\",\"status\":\"UNAVAILABLE\"}}\n";
  const std::vector<SseFrame> expected = {
      {SseFrame::Kind::kData, "{\"a\":1}"},
      {SseFrame::Kind::kData, "{\"b\":2}"},
      {SseFrame::Kind::kErrorObject,
       "{\"error\":{\"code\":503,\"message\":\"x\",\"status\":\"UNAVAILABLE\"}}"}};
  for (std::size_t chunk = 1; chunk <= bytes.size(); ++chunk) {
    INFO("chunk size " << chunk);
    CHECK(decode_in_chunks(bytes, chunk) == expected);
  }
}

TEST_CASE("sse decoder accepts LF and CRLF line endings alike") {
  CHECK(decode_in_chunks("data: x\n\n", 3) == decode_in_chunks("data: x\r\n\r\n", 3));
  CHECK(decode_in_chunks("data: x\n\n", 100).size() == 1);
}

TEST_CASE("sse decoder drops an unterminated frame at the end of the stream") {
  CHECK(decode_in_chunks("data: {\"a\":1}\n", 4).empty());
  CHECK(decode_in_chunks("data: {\"a\":1}", 4).empty());
}

TEST_CASE("sse decoder finds a bare error object without a trailing newline") {
  auto frames = decode_in_chunks("{\"error\":{\"code\":503}}", 5);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].kind == SseFrame::Kind::kErrorObject);
}

TEST_CASE("sse decoder ignores event and id fields and junk lines") {
  auto frames = decode_in_chunks("event: x\nid: 3\nnot json\ndata: y\n\n", 2);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].data == "y");
}

}  // namespace rut
