// WebSocket framing (RFC 6455 §5) and the opening handshake's key (§4.2.2) for the mock server's
// WebSocket transport (ws_session.h). Own framing, not Boost.Beast: the server runs its own epoll
// loop and blocking worker threads on raw file descriptors (http_server.h), and a fault must cut
// a frame at an exact byte, close without a close frame or reset mid-frame; Beast's
// websocket::stream owns its socket through Asio and writes whole frames. The decoder is checked
// by hostile-input unit tests (ws_frame_test.cpp) and fuzzed (fuzz/ws_frame_fuzz.cpp).
// No extensions are negotiated (permessage-deflate, which codex offers, is declined by leaving
// Sec-WebSocket-Extensions out of the 101), so RSV1-3 must be 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mock::ws {

/// Frame opcodes (RFC 6455 §5.2).
enum class Opcode : std::uint8_t {
  kContinuation = 0x0,
  kText = 0x1,
  kBinary = 0x2,
  kClose = 0x8,
  kPing = 0x9,
  kPong = 0xA,
};

/// Close status codes used here (RFC 6455 §7.4.1).
inline constexpr std::uint16_t kCloseNormal = 1000;
inline constexpr std::uint16_t kCloseProtocolError = 1002;
inline constexpr std::uint16_t kCloseUnsupportedData = 1003;
inline constexpr std::uint16_t kCloseNoStatus = 1005;    ///< never sent: a close frame without a code
inline constexpr std::uint16_t kCloseAbnormal = 1006;    ///< never sent: the connection ended without a close frame
inline constexpr std::uint16_t kCloseInvalidPayload = 1007;
inline constexpr std::uint16_t kCloseTooBig = 1009;
inline constexpr std::uint16_t kCloseInternalError = 1011;

/// One frame's bytes: FIN (unless `fin` is false), `opcode`, the shortest length encoding, and —
/// when `mask` is set (a client's frame) — the masking key and the masked payload.
std::string encode_frame(Opcode opcode, std::string_view payload, bool fin = true,
                         std::optional<std::uint32_t> mask = std::nullopt);

/// A frame header (2–14 bytes) announcing `payload_length` bytes of `opcode` with FIN set, unmasked:
/// a cut frame is this header followed by fewer bytes than announced.
std::string frame_header(Opcode opcode, std::uint64_t payload_length);

/// A close frame's payload: the code (network order) and a UTF-8 reason (at most 123 bytes).
std::string close_payload(std::uint16_t code, std::string_view reason);

/// Whether `s` is well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
bool valid_utf8(std::string_view s);

/// Sec-WebSocket-Accept for a client's Sec-WebSocket-Key: base64(SHA-1(key + the RFC's GUID))
/// (RFC 6455 §4.2.2 item 5.4; SHA-1 from OpenSSL libcrypto).
std::string accept_key(std::string_view client_key);

/// Whether `key` is a valid Sec-WebSocket-Key: base64 of 16 bytes (24 characters, "==" ending).
bool valid_client_key(std::string_view key);

/// One complete message (a data message reassembled from its fragments) or control frame.
struct Message {
  Opcode opcode = Opcode::kText;  ///< kText, kBinary, kClose, kPing or kPong
  std::string payload;            ///< unmasked
};

/// Incremental decoder of a peer's frames: feed() what the socket gave, then next() until it
/// returns kNeedMore. Enforces RFC 6455 §5: masking by role (a server requires masked client frames,
/// a client refuses masked server frames), RSV bits 0, known opcodes, control frames unfragmented
/// and at most 125 bytes, the shortest length encoding, the 64-bit length's top bit 0, fragments in
/// order, text messages valid UTF-8, close payloads well-formed, and a message size limit.
class FrameDecoder {
 public:
  enum class Role { kServer, kClient };  ///< whose decoder this is
  enum class Status { kNeedMore, kMessage, kError };

  explicit FrameDecoder(Role role, std::size_t max_message_bytes = 32u << 20)
      : role_(role), max_message_bytes_(max_message_bytes) {}

  void feed(const char* data, std::size_t n) { buf_.append(data, n); }
  void feed(std::string_view s) { buf_.append(s); }

  /// The next complete message into `out` (kMessage), or kNeedMore, or kError: the peer broke the
  /// protocol; error_code() is the close code to answer with (1002, 1007 or 1009) and error() says
  /// what, lower-case. After kError the decoder stays in error.
  Status next(Message& out);

  std::uint16_t error_code() const { return error_code_; }
  const std::string& error() const { return error_; }
  /// Bytes buffered and not yet decoded (a partial frame).
  std::size_t buffered_bytes() const { return buf_.size() - pos_; }

 private:
  Status fail(std::uint16_t code, std::string message);

  Role role_;
  std::size_t max_message_bytes_;
  std::string buf_;
  std::size_t pos_ = 0;
  bool in_message_ = false;         // a fragmented data message is open
  Opcode message_opcode_ = Opcode::kText;
  std::string message_;
  std::uint16_t error_code_ = 0;
  std::string error_;
};

}  // namespace mock::ws
