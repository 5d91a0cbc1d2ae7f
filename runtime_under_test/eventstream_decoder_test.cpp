// The event-stream decoder: the codec's empty-message vector, every header type, any chunking, and
// hostile input (bad CRCs, lengths past the end, a truncated prelude, oversize and odd headers).
#include "runtime_under_test/eventstream_decoder.h"

#include <catch2/catch.hpp>

namespace eventstream_decoder_test {

using rut::EventStreamDecoder;
using rut::EventStreamMessage;

void put_u32(std::string& out, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out += static_cast<char>((v >> s) & 0xff);
}

/// A message with a raw headers block (`headers` as already encoded) and `payload`; `total_delta`
/// and `headers_delta` skew the announced lengths (the prelude CRC still matches them).
std::string message(const std::string& headers, const std::string& payload, long total_delta = 0, long headers_delta = 0) {
  std::string m;
  put_u32(m, static_cast<std::uint32_t>(16 + headers.size() + payload.size() + total_delta));
  put_u32(m, static_cast<std::uint32_t>(headers.size() + headers_delta));
  put_u32(m, rut::eventstream_crc32(m));
  m += headers;
  m += payload;
  put_u32(m, rut::eventstream_crc32(m));
  return m;
}

std::string string_header(const std::string& name, const std::string& value) {
  std::string h;
  h += static_cast<char>(name.size());
  h += name;
  h += static_cast<char>(7);
  h += static_cast<char>(value.size() >> 8);
  h += static_cast<char>(value.size() & 0xff);
  return h + value;
}

TEST_CASE("eventstream decoder: the codec's empty message") {
  const unsigned char bytes[] = {0, 0, 0, 0x10, 0, 0, 0, 0, 0x05, 0xc2, 0x48, 0xeb, 0x7d, 0x98, 0xc8, 0xff};
  EventStreamDecoder d;
  std::vector<EventStreamMessage> out;
  CHECK(d.feed(std::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes), out));
  REQUIRE(out.size() == 1);
  CHECK(out[0].headers.empty());
  CHECK(out[0].payload.empty());
  CHECK(d.pending_bytes() == 0);
}

TEST_CASE("eventstream decoder: headers of every type, any chunking gives the same messages") {
  std::string h = string_header(":event-type", "chunk");
  h += std::string("\x01t\x00", 3);                                   // bool true
  h += std::string("\x01" "b\x02\x7f", 4);                            // byte
  h += std::string("\x01s\x03\x00\x01", 5);                           // short
  h += std::string("\x01i\x04\x00\x00\x00\x01", 7);                   // int
  h += std::string("\x01l\x05\x00\x00\x00\x00\x00\x00\x00\x01", 11);  // long
  h += std::string("\x01" "a\x06\x00\x02xy", 7);                      // byte array
  h += std::string("\x01" "d\x08", 3) + std::string(8, '\0');         // timestamp
  h += std::string("\x01u\x09", 3) + std::string(16, '\x11');         // uuid
  const std::string bytes = message(h, "{\"bytes\":\"e30=\"}") + message(string_header(":message-type", "event"), "p2");
  for (std::size_t step : {std::size_t{1}, std::size_t{3}, std::size_t{13}, bytes.size()}) {
    CAPTURE(step);
    EventStreamDecoder d;
    std::vector<EventStreamMessage> out;
    for (std::size_t at = 0; at < bytes.size(); at += step) {
      INFO(d.error().value_or(""));
      CHECK(d.feed(std::string_view(bytes).substr(at, step), out));
    }
    REQUIRE(out.size() == 2);
    CHECK(out[0].header(":event-type") == "chunk");
    CHECK(out[0].header("a") == "xy");
    CHECK(out[0].payload == "{\"bytes\":\"e30=\"}");
    CHECK(out[1].header(":message-type") == "event");
    CHECK(out[1].payload == "p2");
  }
}

TEST_CASE("eventstream decoder: a bad prelude CRC is refused in the codec's words") {
  std::string m = message("", "x");
  m[9] = static_cast<char>(m[9] ^ 1);
  EventStreamDecoder d;
  std::vector<EventStreamMessage> out;
  CHECK_FALSE(d.feed(m, out));
  CHECK(out.empty());
  REQUIRE(d.error());
  CHECK(d.error()->find("The prelude checksum specified in the message") == 0);
  CHECK_FALSE(d.feed(message("", "y"), out));  // broken for good
  CHECK(out.empty());
}

TEST_CASE("eventstream decoder: a bad message CRC is refused") {
  std::string m = message(string_header("k", "v"), "payload");
  m[m.size() - 6] = static_cast<char>(m[m.size() - 6] ^ 1);
  EventStreamDecoder d;
  std::vector<EventStreamMessage> out;
  CHECK_FALSE(d.feed(m, out));
  REQUIRE(d.error());
  CHECK(d.error()->find("The message checksum (") == 0);
}

TEST_CASE("eventstream decoder: lengths that cannot hold, and a truncated prelude") {
  std::vector<EventStreamMessage> out;
  SECTION("total below the overhead") {
    EventStreamDecoder d;
    CHECK_FALSE(d.feed(message("", "", -4), out));
    CHECK(*d.error() == "Provided message too short to accommodate event stream message overhead");
  }
  SECTION("headers length past the message") {
    EventStreamDecoder d;
    CHECK_FALSE(d.feed(message("", "abc", 0, 10), out));
    CHECK(d.error()->find("headers length") != std::string::npos);
  }
  SECTION("a total past the limit is refused before it is buffered") {
    std::string m;
    put_u32(m, 0x7fffffff);
    put_u32(m, 0);
    put_u32(m, rut::eventstream_crc32(m));
    EventStreamDecoder d;
    CHECK_FALSE(d.feed(m, out));
    CHECK(d.error()->find("exceeds the limit") != std::string::npos);
    CHECK(d.pending_bytes() == 0);
  }
  SECTION("a length past the end waits; the stream ending there leaves it pending") {
    const std::string m = message(string_header("k", "v"), "payload");
    EventStreamDecoder d;
    CHECK(d.feed(std::string_view(m).substr(0, m.size() - 1), out));
    CHECK(out.empty());
    CHECK(d.pending_bytes() == m.size() - 1);
  }
  SECTION("a truncated prelude is pending, not an error") {
    EventStreamDecoder d;
    CHECK(d.feed(std::string_view("\0\0\0", 3), out));
    CHECK_FALSE(d.error());
    CHECK(d.pending_bytes() == 3);
  }
}

TEST_CASE("eventstream decoder: headers running past their block or of an unknown type") {
  std::vector<EventStreamMessage> out;
  // "oversize": a string header announcing 0xffff bytes in a block of 8.
  for (const std::string& h : {std::string("\x01k\x07\xff\xff" "abc", 8), std::string("\x05" "ab", 3),
                               std::string("\x01k\x04\x00", 4), std::string("\x01k\x0a", 3)}) {
    EventStreamDecoder d;
    CHECK_FALSE(d.feed(message(h, "p"), out));
    CHECK(d.error());
  }
  CHECK(out.empty());
}

TEST_CASE("eventstream decoder: base64") {
  CHECK(rut::decode_base64("Zm9vYmFy") == "foobar");
  CHECK(rut::decode_base64("Zm9vYg==") == "foob");
  CHECK(rut::decode_base64("Zm9vYg") == "foob");
  CHECK(rut::decode_base64("//4=") == std::string("\xff\xfe", 2));
  CHECK_FALSE(rut::decode_base64("Zm9v!"));
  CHECK_FALSE(rut::decode_base64("Zg==Zg"));
}

}  // namespace eventstream_decoder_test
