// The AWS event-stream encoder: the codec's published empty-message bytes, a header's layout, and
// both CRC32s recomputed over what was written.
#include "mock_server/eventstream/eventstream.h"

#include <catch2/catch.hpp>

namespace eventstream_test {

namespace es = mock::eventstream;

std::uint32_t u32(const std::string& s, std::size_t at) {
  return (static_cast<std::uint32_t>(static_cast<unsigned char>(s[at])) << 24) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 1])) << 16) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 2])) << 8) |
         static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 3]));
}

TEST_CASE("eventstream: the empty message is the codec's 16 published bytes") {
  // awslabs/aws-c-event-stream test vectors, "empty_message": 00000010 00000000 05c248eb 7d98c8ff.
  const std::string m = es::encode_message({}, "");
  const unsigned char expected[] = {0, 0, 0, 0x10, 0, 0, 0, 0, 0x05, 0xc2, 0x48, 0xeb, 0x7d, 0x98, 0xc8, 0xff};
  REQUIRE(m.size() == 16);
  CHECK(m == std::string(reinterpret_cast<const char*>(expected), sizeof expected));
}

TEST_CASE("eventstream: a string header and a payload, with lengths and both CRCs") {
  const std::string m = es::encode_message({{":event-type", "chunk"}}, "{}");
  // header: 1 + 11 + 1 + 2 + 5 = 20 bytes
  CHECK(u32(m, 0) == m.size());
  CHECK(u32(m, 4) == 20);
  CHECK(m.size() == 16 + 20 + 2);
  CHECK(u32(m, 8) == es::crc32(m.substr(0, 8)));
  CHECK(u32(m, m.size() - 4) == es::crc32(m.substr(0, m.size() - 4)));
  CHECK(m[12] == 11);
  CHECK(m.substr(13, 11) == ":event-type");
  CHECK(m[24] == 7);  // string
  CHECK(m[25] == 0);
  CHECK(m[26] == 5);
  CHECK(m.substr(27, 5) == "chunk");
  CHECK(m.substr(32, 2) == "{}");
}

TEST_CASE("eventstream: base64 is RFC 4648's") {
  // RFC 4648 §10 test vectors.
  CHECK(es::base64("") == "");
  CHECK(es::base64("f") == "Zg==");
  CHECK(es::base64("fo") == "Zm8=");
  CHECK(es::base64("foo") == "Zm9v");
  CHECK(es::base64("foob") == "Zm9vYg==");
  CHECK(es::base64("fooba") == "Zm9vYmE=");
  CHECK(es::base64("foobar") == "Zm9vYmFy");
  CHECK(es::base64(std::string("\xff\xfe", 2)) == "//4=");
  // Every 12-bit value in both halves of a 24-bit group (the encoder reads 12 bits at a time),
  // against one lookup per 6 bits.
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes, expected;
  for (unsigned v = 0; v < 4096; ++v) {
    const unsigned bits = (v << 12) | (4095 - v);
    for (int shift = 16; shift >= 0; shift -= 8) bytes += static_cast<char>((bits >> shift) & 0xFF);
    for (int shift = 18; shift >= 0; shift -= 6) expected += alphabet[(bits >> shift) & 63];
  }
  CHECK(es::base64(bytes) == expected);
}

TEST_CASE("eventstream: chunk and exception messages carry Bedrock's headers") {
  const std::string chunk = es::chunk_message("{\"type\":\"ping\"}");
  CHECK(chunk.find(":event-type") != std::string::npos);
  CHECK(chunk.find("chunk") != std::string::npos);
  CHECK(chunk.find(":message-type") != std::string::npos);
  CHECK(chunk.find("{\"bytes\":\"" + es::base64("{\"type\":\"ping\"}") + "\"}") != std::string::npos);
  const std::string ex = es::exception_message("throttlingException", "{\"message\":\"slow down\"}");
  CHECK(ex.find(":exception-type") != std::string::npos);
  CHECK(ex.find("throttlingException") != std::string::npos);
  CHECK(ex.find("exception") != std::string::npos);
  CHECK(ex.find(":event-type") == std::string::npos);
}

}  // namespace eventstream_test
