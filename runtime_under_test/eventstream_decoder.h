// Incremental decoder of the AWS event stream (`application/vnd.amazon.eventstream`), the binary
// framing of Amazon Bedrock's InvokeModelWithResponseStream: bytes in any chunking in, messages
// out as soon as each is complete and both of its CRC32s check. Layout and error wording follow
// smithy-lang/smithy-typescript packages/eventstream-codec/src (splitMessage.ts,
// HeaderMarshaller.ts), the codec of aws/aws-sdk-js-v3; docs/WIRE-FORMATS.md "Bedrock event stream".
// Hostile input ends the stream with an error, never a crash or an unbounded buffer: a total
// length below 16 or above kMaxMessageBytes, a headers length past the message, a header running
// past its block or of an unknown type, a CRC that does not match.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rut {

/// One decoded message. Header values of type string (7) and byte array (6) are kept as bytes;
/// other types (booleans, integers, timestamps, UUIDs) are skipped after checking their length.
struct EventStreamMessage {
  std::vector<std::pair<std::string, std::string>> headers;
  std::string payload;
  /// The first header named `name` ("" when absent).
  [[nodiscard]] std::string_view header(std::string_view name) const;
};

/// Feed bytes as they arrive. After an error every feed returns nothing more.
class EventStreamDecoder {
 public:
  /// Larger messages are refused (the codec itself sets no limit; Bedrock's chunks are a few KB):
  /// a client must not buffer what a length field announces without bound.
  static constexpr std::size_t kMaxMessageBytes = 16u << 20;

  /// Decodes `bytes`, appending every completed message to `out`; false once the stream is broken
  /// (error() says why), true otherwise.
  bool feed(std::string_view bytes, std::vector<EventStreamMessage>& out);
  /// Why the stream broke, in the codec's words (e.g. "The prelude checksum specified in the
  /// message (1) does not match the calculated CRC32 checksum (2)"); nullopt while it is whole.
  [[nodiscard]] const std::optional<std::string>& error() const { return error_; }
  /// Bytes of a message begun and not complete (a stream that ends with some is truncated).
  [[nodiscard]] std::size_t pending_bytes() const { return buffer_.size(); }

 private:
  bool fail(std::string message);
  std::string buffer_;
  std::optional<std::string> error_;
};

/// CRC32 (IEEE 802.3, zlib's) of `bytes`, continuing from `crc`.
std::uint32_t eventstream_crc32(std::string_view bytes, std::uint32_t crc = 0);

/// Decodes standard base64 (RFC 4648 §4; padding optional); nullopt on any other character.
std::optional<std::string> decode_base64(std::string_view text);

}  // namespace rut
