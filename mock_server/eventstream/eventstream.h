// The AWS event stream encoding (`application/vnd.amazon.eventstream`), the binary framing Amazon
// Bedrock's InvokeModelWithResponseStream answers with. One message:
//   prelude   total length (uint32 BE, the whole message), headers length (uint32 BE),
//             prelude CRC32 (uint32 BE, over the 8 bytes before it)
//   headers   per header: name length (uint8), name, value type (uint8; 7 = string),
//             value length (uint16 BE), value
//   payload   the rest
//   message CRC32 (uint32 BE, over every byte before it, the prelude CRC included)
// Sources: smithy-lang/smithy-typescript packages/eventstream-codec/src (splitMessage.ts,
// HeaderMarshaller.ts, EventStreamCodec.ts), the codec aws/aws-sdk-js-v3 uses; docs/WIRE-FORMATS.md
// "Bedrock event stream". CRC32 is zlib's (IEEE 802.3, the one the codec uses).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mock::eventstream {

/// The smallest message: a 12-byte prelude and a 4-byte message CRC, no headers, no payload.
inline constexpr std::size_t kMessageOverhead = 16;

/// CRC32 (IEEE, zlib's crc32) of `bytes`, continuing from `crc` (0 to start).
std::uint32_t crc32(std::string_view bytes, std::uint32_t crc = 0);

/// One message's bytes: `headers` as string-typed (type 7) headers in the order given, then
/// `payload`. Header names must be at most 255 bytes and values at most 65,535 (longer ones are
/// cut to those lengths: no caller sends such).
std::string encode_message(const std::vector<std::pair<std::string, std::string>>& headers,
                           std::string_view payload);

/// A Bedrock `chunk` event: headers `:event-type: chunk`, `:content-type: application/json`,
/// `:message-type: event`; payload `{"bytes":"<base64 of data>"}` (API_runtime_PayloadPart).
std::string chunk_message(std::string_view data);
/// chunk_message(data) appended to `out` (one growth of `out`, no temporaries: the Bedrock
/// answer's per-frame path).
void append_chunk_message(std::string& out, std::string_view data);

/// A Bedrock exception event: headers `:exception-type: <type>` (lower camel case, e.g.
/// `throttlingException`), `:content-type: application/json`, `:message-type: exception`;
/// payload `json` (e.g. `{"message":"…"}`).
std::string exception_message(std::string_view type, std::string_view json);
/// exception_message(type, json) appended to `out`.
void append_exception_message(std::string& out, std::string_view type, std::string_view json);

/// Standard base64 (RFC 4648 §4, with padding) of `bytes`.
std::string base64(std::string_view bytes);

}  // namespace mock::eventstream
