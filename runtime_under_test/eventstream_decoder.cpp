#include "runtime_under_test/eventstream_decoder.h"

#include <algorithm>

#include <zlib.h>

namespace rut {

namespace {

constexpr std::size_t kPrelude = 8;          // total length, headers length
constexpr std::size_t kPreludeWithCrc = 12;  // + prelude CRC
constexpr std::size_t kOverhead = 16;        // + message CRC

std::uint32_t u32(std::string_view s, std::size_t at) {
  return (static_cast<std::uint32_t>(static_cast<unsigned char>(s[at])) << 24) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 1])) << 16) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 2])) << 8) |
         static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 3]));
}

/// Parses a headers block; false (and `error`) when a header runs past it or has an unknown type.
bool parse_headers(std::string_view block, EventStreamMessage& m, std::string& error) {
  std::size_t at = 0;
  auto need = [&](std::size_t n) { return block.size() - at >= n; };
  while (at < block.size()) {
    const std::size_t name_len = static_cast<unsigned char>(block[at++]);
    if (!need(name_len + 1)) return error = "Header name runs past the headers block", false;
    std::string name(block.substr(at, name_len));
    at += name_len;
    const int type = static_cast<unsigned char>(block[at++]);
    std::size_t fixed = 0;
    switch (type) {
      case 0:
      case 1: fixed = 0; break;           // boolean true / false
      case 2: fixed = 1; break;           // byte
      case 3: fixed = 2; break;           // short
      case 4: fixed = 4; break;           // integer
      case 5: fixed = 8; break;           // long
      case 8: fixed = 8; break;           // timestamp
      case 9: fixed = 16; break;          // uuid
      case 6:
      case 7: {                           // byte array, string: uint16 length
        if (!need(2)) return error = "Header value length runs past the headers block", false;
        const std::size_t len = (static_cast<std::size_t>(static_cast<unsigned char>(block[at])) << 8) |
                                static_cast<unsigned char>(block[at + 1]);
        at += 2;
        if (!need(len)) return error = "Header value runs past the headers block", false;
        m.headers.emplace_back(std::move(name), std::string(block.substr(at, len)));
        at += len;
        continue;
      }
      default: return error = "Unrecognized header type tag " + std::to_string(type), false;
    }
    if (!need(fixed)) return error = "Header value runs past the headers block", false;
    at += fixed;
  }
  return true;
}

}  // namespace

std::string_view EventStreamMessage::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return v;
  }
  return {};
}

std::uint32_t eventstream_crc32(std::string_view bytes, std::uint32_t crc) {
  uLong c = crc;
  while (!bytes.empty()) {
    const std::size_t n = std::min<std::size_t>(bytes.size(), 1u << 30);
    c = ::crc32(c, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(n));
    bytes.remove_prefix(n);
  }
  return static_cast<std::uint32_t>(c);
}

bool EventStreamDecoder::fail(std::string message) {
  error_ = std::move(message);
  buffer_.clear();
  buffer_.shrink_to_fit();
  return false;
}

bool EventStreamDecoder::feed(std::string_view bytes, std::vector<EventStreamMessage>& out) {
  if (error_) return false;
  buffer_.append(bytes);
  std::size_t at = 0;
  while (buffer_.size() - at >= kPreludeWithCrc) {
    const std::string_view view = std::string_view(buffer_).substr(at);
    const std::uint32_t total = u32(view, 0);
    const std::uint32_t headers_len = u32(view, 4);
    const std::uint32_t prelude_crc = u32(view, kPrelude);
    const std::uint32_t computed = eventstream_crc32(view.substr(0, kPrelude));
    if (prelude_crc != computed) {
      return fail("The prelude checksum specified in the message (" + std::to_string(prelude_crc) +
                  ") does not match the calculated CRC32 checksum (" + std::to_string(computed) + ")");
    }
    if (total < kOverhead) return fail("Provided message too short to accommodate event stream message overhead");
    if (total > kMaxMessageBytes) {
      return fail("Reported message length " + std::to_string(total) + " exceeds the limit of " +
                  std::to_string(kMaxMessageBytes) + " bytes");
    }
    if (headers_len > total - kOverhead) return fail("Reported headers length runs past the message");
    if (view.size() < total) break;  // wait for the rest
    const std::uint32_t message_crc = u32(view, total - 4);
    const std::uint32_t whole = eventstream_crc32(view.substr(0, total - 4));
    if (message_crc != whole) {
      return fail("The message checksum (" + std::to_string(whole) + ") did not match the expected value of " +
                  std::to_string(message_crc));
    }
    EventStreamMessage m;
    std::string error;
    if (!parse_headers(view.substr(kPreludeWithCrc, headers_len), m, error)) return fail(error);
    m.payload = std::string(view.substr(kPreludeWithCrc + headers_len, total - kOverhead - headers_len));
    out.push_back(std::move(m));
    at += total;
  }
  buffer_.erase(0, at);
  return true;
}

std::optional<std::string> decode_base64(std::string_view text) {
  std::string out;
  out.reserve(text.size() / 4 * 3);
  std::uint32_t acc = 0;
  int bits = 0;
  std::size_t i = 0;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    else if (c == '=') break;
    else return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  for (; i < text.size(); ++i) {
    if (text[i] != '=') return std::nullopt;
  }
  return out;
}

}  // namespace rut
