#include "mock_server/eventstream/eventstream.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>

#include <zlib.h>

namespace mock::eventstream {

namespace {

void put_u32(char* p, std::uint32_t v) {
  p[0] = static_cast<char>((v >> 24) & 0xff);
  p[1] = static_cast<char>((v >> 16) & 0xff);
  p[2] = static_cast<char>((v >> 8) & 0xff);
  p[3] = static_cast<char>(v & 0xff);
}

/// The header block of `headers` (string-typed, cut to 255 / 65,535 bytes as encode_message says).
template <typename Headers>
std::string header_block(const Headers& headers) {
  std::string head;
  for (const auto& [name, value] : headers) {
    const std::size_t n = std::min<std::size_t>(std::string_view(name).size(), 255);
    const std::size_t v = std::min<std::size_t>(std::string_view(value).size(), 65535);
    head += static_cast<char>(n);
    head.append(std::string_view(name).substr(0, n));
    head += static_cast<char>(7);  // string
    head += static_cast<char>((v >> 8) & 0xff);
    head += static_cast<char>(v & 0xff);
    head.append(std::string_view(value).substr(0, v));
  }
  return head;
}

/// Appends one message to `out`: prelude, `head` (a header block), a payload of `payload_size`
/// bytes written in place by `write(char* at)`, message CRC. `out` grows once.
template <typename WritePayload>
void append_message(std::string& out, std::string_view head, std::size_t payload_size, WritePayload write) {
  const std::size_t start = out.size();
  const std::size_t total = kMessageOverhead + head.size() + payload_size;
  out.resize(start + total);
  char* p = out.data() + start;
  put_u32(p, static_cast<std::uint32_t>(total));
  put_u32(p + 4, static_cast<std::uint32_t>(head.size()));
  put_u32(p + 8, crc32(std::string_view(p, 8)));
  std::copy(head.begin(), head.end(), p + 12);
  write(p + 12 + head.size());
  put_u32(p + total - 4, crc32(std::string_view(p, total - 4)));
}

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::size_t base64_size(std::size_t n) { return (n + 2) / 3 * 4; }

/// The base64 digits of every 12-bit value, two characters each: three input bytes are two
/// lookups (half the work of one lookup per 6 bits; a Bedrock answer's chunks are mostly base64).
struct PairTable {
  char digits[4096][2];
};
constexpr PairTable make_pair_table() {
  PairTable t{};
  for (int v = 0; v < 4096; ++v) {
    t.digits[v][0] = kAlphabet[v >> 6];
    t.digits[v][1] = kAlphabet[v & 63];
  }
  return t;
}
constexpr PairTable kPairs = make_pair_table();

/// Writes base64(bytes) at `out` (base64_size(bytes.size()) bytes); returns the end.
char* base64_to(char* out, std::string_view bytes) {
  const auto* in = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned>(in[i]) << 16) | (static_cast<unsigned>(in[i + 1]) << 8) | in[i + 2];
    std::memcpy(out, kPairs.digits[v >> 12], 2);
    std::memcpy(out + 2, kPairs.digits[v & 0xFFF], 2);
    out += 4;
  }
  if (bytes.size() - i == 1) {
    const unsigned a = in[i];
    out[0] = kAlphabet[a >> 2];
    out[1] = kAlphabet[(a & 3) << 4];
    out[2] = '=';
    out[3] = '=';
    out += 4;
  } else if (bytes.size() - i == 2) {
    const unsigned a = in[i], b = in[i + 1];
    out[0] = kAlphabet[a >> 2];
    out[1] = kAlphabet[((a & 3) << 4) | (b >> 4)];
    out[2] = kAlphabet[(b & 15) << 2];
    out[3] = '=';
    out += 4;
  }
  return out;
}

constexpr std::string_view kChunkPrefix = "{\"bytes\":\"";
constexpr std::string_view kChunkSuffix = "\"}";

}  // namespace

std::uint32_t crc32(std::string_view bytes, std::uint32_t crc) {
  uLong c = crc;
  // zlib takes uInt lengths: feed in pieces so a payload past 4 GiB would still be right.
  while (!bytes.empty()) {
    const std::size_t n = std::min<std::size_t>(bytes.size(), 1u << 30);
    c = ::crc32(c, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(n));
    bytes.remove_prefix(n);
  }
  return static_cast<std::uint32_t>(c);
}

std::string encode_message(const std::vector<std::pair<std::string, std::string>>& headers,
                           std::string_view payload) {
  std::string out;
  append_message(out, header_block(headers), payload.size(),
                 [&](char* at) { std::copy(payload.begin(), payload.end(), at); });
  return out;
}

std::string base64(std::string_view bytes) {
  std::string out(base64_size(bytes.size()), '\0');
  base64_to(out.data(), bytes);
  return out;
}

void append_chunk_message(std::string& out, std::string_view data) {
  static const std::string kHead = header_block(std::initializer_list<std::pair<std::string_view, std::string_view>>{
      {":event-type", "chunk"}, {":content-type", "application/json"}, {":message-type", "event"}});
  append_message(out, kHead, kChunkPrefix.size() + base64_size(data.size()) + kChunkSuffix.size(), [&](char* at) {
    at = std::copy(kChunkPrefix.begin(), kChunkPrefix.end(), at);
    at = base64_to(at, data);
    std::copy(kChunkSuffix.begin(), kChunkSuffix.end(), at);
  });
}

std::string chunk_message(std::string_view data) {
  std::string out;
  append_chunk_message(out, data);
  return out;
}

void append_exception_message(std::string& out, std::string_view type, std::string_view json) {
  const std::string head = header_block(std::initializer_list<std::pair<std::string_view, std::string_view>>{
      {":exception-type", type}, {":content-type", "application/json"}, {":message-type", "exception"}});
  append_message(out, head, json.size(), [&](char* at) { std::copy(json.begin(), json.end(), at); });
}

std::string exception_message(std::string_view type, std::string_view json) {
  std::string out;
  append_exception_message(out, type, json);
  return out;
}

}  // namespace mock::eventstream
