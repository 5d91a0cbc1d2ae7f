// WebSocket framing and handshake (mock_server/websocket/ws_frame.h): round trips, RFC 6455's
// own examples, and hostile input (oversize lengths, unmasked or badly masked frames, bad UTF-8,
// truncated frames, fragments out of order, control frames broken).
#include <catch2/catch.hpp>

#include <string>

#include "mock_server/http_wire.h"
#include "mock_server/websocket/ws_frame.h"
#include "mock_server/websocket/ws_session.h"

namespace ws_frame_test {

using mock::ws::encode_frame;
using mock::ws::FrameDecoder;
using mock::ws::Message;
using mock::ws::Opcode;
using Status = FrameDecoder::Status;

constexpr std::uint32_t kMask = 0x37fa213d;  // RFC 6455 §5.7's example key

/// Decodes `bytes` as a server; returns the status of the first next() that is not kMessage, and
/// the messages before it.
Status decode_all(const std::string& bytes, std::vector<Message>& out, FrameDecoder& d) {
  d.feed(bytes);
  Message m;
  Status st;
  while ((st = d.next(m)) == Status::kMessage) out.push_back(m);
  return st;
}

TEST_CASE("websocket: RFC 6455 5.7 examples encode byte-exact") {
  CHECK(encode_frame(Opcode::kText, "Hello") == std::string("\x81\x05" "Hello", 7));
  CHECK(encode_frame(Opcode::kText, "Hello", true, kMask) == std::string("\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58", 11));
  CHECK(encode_frame(Opcode::kText, "Hel", false) == std::string("\x01\x03" "Hel", 5));
  CHECK(encode_frame(Opcode::kContinuation, "lo") == std::string("\x80\x02" "lo", 4));
  CHECK(encode_frame(Opcode::kText, std::string(256, 'x')).substr(0, 4) == std::string("\x81\x7e\x01\x00", 4));
  CHECK(encode_frame(Opcode::kBinary, std::string(65536, 'x')).substr(0, 10) ==
        std::string("\x82\x7f\x00\x00\x00\x00\x00\x01\x00\x00", 10));
}

TEST_CASE("websocket: the handshake's accept key is RFC 6455 1.3's") {
  CHECK(mock::ws::accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  CHECK(mock::ws::valid_client_key("dGhlIHNhbXBsZSBub25jZQ=="));
  CHECK_FALSE(mock::ws::valid_client_key("dGhlIHNhbXBsZSBub25jZQ"));     // no padding
  CHECK_FALSE(mock::ws::valid_client_key("dGhlIHNhbXBsZSBub25jZR=="));   // padding bits set
  CHECK_FALSE(mock::ws::valid_client_key("dGhlIHNhbXBsZSBub2*jZQ=="));   // not base64
}

TEST_CASE("websocket: masked client messages decode, fragmented or whole, fed byte by byte") {
  const std::string bytes = encode_frame(Opcode::kText, "{\"type\":", false, kMask) +
                            encode_frame(Opcode::kPing, "p", true, kMask + 1) +
                            encode_frame(Opcode::kContinuation, "\"response.create\"}", true, kMask + 2) +
                            encode_frame(Opcode::kText, std::string(70000, 'a'), true, kMask + 3);
  FrameDecoder d(FrameDecoder::Role::kServer);
  std::vector<Message> got;
  for (char c : bytes) {
    d.feed(&c, 1);
    Message m;
    while (d.next(m) == Status::kMessage) got.push_back(m);
  }
  REQUIRE(got.size() == 3);
  CHECK(got[0].opcode == Opcode::kPing);  // a control frame between fragments comes first
  CHECK(got[0].payload == "p");
  CHECK(got[1].opcode == Opcode::kText);
  CHECK(got[1].payload == "{\"type\":\"response.create\"}");
  CHECK(got[2].payload == std::string(70000, 'a'));
  CHECK(d.buffered_bytes() == 0);
}

TEST_CASE("websocket: a truncated frame waits for its bytes and never yields a message") {
  const std::string whole = encode_frame(Opcode::kText, "Hello", true, kMask);
  for (std::size_t n = 0; n < whole.size(); ++n) {
    FrameDecoder d(FrameDecoder::Role::kServer);
    std::vector<Message> got;
    CHECK(decode_all(whole.substr(0, n), got, d) == Status::kNeedMore);
    CHECK(got.empty());
  }
}

TEST_CASE("websocket: hostile frames fail the connection with the RFC's close code") {
  struct Case {
    const char* what;
    std::string bytes;
    std::uint16_t code;
  };
  std::string bad_utf8 = encode_frame(Opcode::kText, "\xc3\x28", true, kMask);
  std::string overlong = encode_frame(Opcode::kText, "\xc0\xaf", true, kMask);
  std::string surrogate = encode_frame(Opcode::kText, "\xed\xa0\x80", true, kMask);
  std::string split_utf8 = encode_frame(Opcode::kText, "\xe2\x82", false, kMask) + encode_frame(Opcode::kContinuation, "\xac", true, kMask);
  std::string huge = std::string("\x81\xff", 2) + std::string("\x00\x00\x00\x01\x00\x00\x00\x00", 8);  // 4 GiB
  std::string top_bit = std::string("\x81\xff", 2) + std::string("\x80\x00\x00\x00\x00\x00\x00\x00", 8);
  std::string non_minimal = std::string("\x81\xfe\x00\x05", 4) + "abcd" + "Hello";
  std::string rsv = encode_frame(Opcode::kText, "x", true, kMask);
  rsv[0] = static_cast<char>(rsv[0] | 0x40);
  std::string bad_close_code = encode_frame(Opcode::kClose, mock::ws::close_payload(1005, ""), true, kMask);
  std::string close_one_byte = encode_frame(Opcode::kClose, "\x03", true, kMask);
  std::string bad_close_reason = encode_frame(Opcode::kClose, mock::ws::close_payload(1000, "\xff"), true, kMask);
  const std::vector<Case> cases = {
      {"unmasked client frame", encode_frame(Opcode::kText, "Hello"), 1002},
      {"reserved bit without extension", rsv, 1002},
      {"unknown opcode 3", std::string("\x83\x80", 2) + "abcd", 1002},
      {"fragmented ping", encode_frame(Opcode::kPing, "p", false, kMask), 1002},
      {"ping over 125 bytes", encode_frame(Opcode::kPing, std::string(126, 'p'), true, kMask), 1002},
      {"continuation without a message", encode_frame(Opcode::kContinuation, "x", true, kMask), 1002},
      {"text inside a fragmented message", encode_frame(Opcode::kText, "a", false, kMask) + encode_frame(Opcode::kText, "b", true, kMask), 1002},
      {"invalid UTF-8 text", bad_utf8, 1007},
      {"overlong UTF-8", overlong, 1007},
      {"UTF-16 surrogate in UTF-8", surrogate, 1007},
      {"length over the limit", huge, 1009},
      {"64-bit length with top bit", top_bit, 1002},
      {"16-bit length for 5 bytes", non_minimal, 1002},
      {"close code 1005 on the wire", bad_close_code, 1002},
      {"close payload of one byte", close_one_byte, 1002},
      {"close reason not UTF-8", bad_close_reason, 1007},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    FrameDecoder d(FrameDecoder::Role::kServer, 1u << 20);
    std::vector<Message> got;
    CHECK(decode_all(c.bytes, got, d) == Status::kError);
    CHECK(d.error_code() == c.code);
    CHECK_FALSE(d.error().empty());
    Message m;
    CHECK(d.next(m) == Status::kError);  // stays failed
  }
  // A UTF-8 character split across fragments is valid: the message is checked whole.
  FrameDecoder d(FrameDecoder::Role::kServer);
  std::vector<Message> got;
  CHECK(decode_all(split_utf8, got, d) == Status::kNeedMore);
  REQUIRE(got.size() == 1);
  CHECK(got[0].payload == "\xe2\x82\xac");
}

TEST_CASE("websocket: a client's decoder refuses masked server frames") {
  FrameDecoder d(FrameDecoder::Role::kClient);
  std::vector<Message> got;
  CHECK(decode_all(encode_frame(Opcode::kText, "x", true, kMask), got, d) == Status::kError);
  FrameDecoder ok(FrameDecoder::Role::kClient);
  CHECK(decode_all(encode_frame(Opcode::kText, "x"), got, ok) == Status::kNeedMore);
  CHECK(got.size() == 1);
}

TEST_CASE("websocket: upgrade requests are accepted or refused with 400, 404, 405, 426") {
  mock::HttpRequest r;
  r.method = "GET";
  r.target = "/s/abc/v1/responses";
  r.headers = {{"Upgrade", "websocket"}, {"Connection", "keep-alive, Upgrade"},
               {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}, {"Sec-WebSocket-Version", "13"}};
  CHECK(mock::ws::is_upgrade(r));
  auto a = mock::ws::answer_upgrade(r);
  CHECK(a.accepted);
  CHECK(a.bytes.find("HTTP/1.1 101 Switching Protocols\r\n") == 0);
  CHECK(a.bytes.find("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n") != std::string::npos);
  CHECK(a.bytes.find("Sec-WebSocket-Extensions") == std::string::npos);  // permessage-deflate declined

  auto with = [&](auto edit) {
    mock::HttpRequest c = r;
    edit(c);
    return mock::ws::answer_upgrade(c);
  };
  CHECK(with([](mock::HttpRequest& c) { c.method = "POST"; }).status == 405);
  CHECK(with([](mock::HttpRequest& c) { c.target = "/v1/chat/completions"; }).status == 404);
  const auto v8 = with([](mock::HttpRequest& c) { c.headers[3].second = "8"; });
  CHECK(v8.status == 426);
  CHECK(v8.bytes.find("Sec-WebSocket-Version: 13\r\n") != std::string::npos);
  CHECK(with([](mock::HttpRequest& c) { c.headers[2].second = "short"; }).status == 400);
  CHECK(with([](mock::HttpRequest& c) { c.headers[1].second = "keep-alive"; }).status == 400);
  const auto refused = mock::ws::answer_upgrade(r, 403);
  CHECK_FALSE(refused.accepted);
  CHECK(refused.bytes.find("HTTP/1.1 403 ") == 0);
  CHECK(refused.bytes.find("\"error\"") != std::string::npos);
}

}  // namespace ws_frame_test
