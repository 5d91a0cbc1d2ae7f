#include "mock_server/eventstream/eventstream.h"

#include <algorithm>

#include <zlib.h>

namespace mock::eventstream {

namespace {

void put_u32(std::string& out, std::uint32_t v) {
  out += static_cast<char>((v >> 24) & 0xff);
  out += static_cast<char>((v >> 16) & 0xff);
  out += static_cast<char>((v >> 8) & 0xff);
  out += static_cast<char>(v & 0xff);
}

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
  std::string head;
  for (const auto& [name, value] : headers) {
    const std::size_t n = std::min<std::size_t>(name.size(), 255);
    const std::size_t v = std::min<std::size_t>(value.size(), 65535);
    head += static_cast<char>(n);
    head.append(name, 0, n);
    head += static_cast<char>(7);  // string
    head += static_cast<char>((v >> 8) & 0xff);
    head += static_cast<char>(v & 0xff);
    head.append(value, 0, v);
  }
  const std::size_t total = kMessageOverhead + head.size() + payload.size();
  std::string out;
  out.reserve(total);
  put_u32(out, static_cast<std::uint32_t>(total));
  put_u32(out, static_cast<std::uint32_t>(head.size()));
  put_u32(out, crc32(out));
  out += head;
  out += payload;
  put_u32(out, crc32(out));
  return out;
}

std::string base64(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const auto a = static_cast<unsigned char>(bytes[i]), b = static_cast<unsigned char>(bytes[i + 1]),
               c = static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[a >> 2];
    out += kAlphabet[((a & 3) << 4) | (b >> 4)];
    out += kAlphabet[((b & 15) << 2) | (c >> 6)];
    out += kAlphabet[c & 63];
  }
  if (bytes.size() - i == 1) {
    const auto a = static_cast<unsigned char>(bytes[i]);
    out += kAlphabet[a >> 2];
    out += kAlphabet[(a & 3) << 4];
    out += "==";
  } else if (bytes.size() - i == 2) {
    const auto a = static_cast<unsigned char>(bytes[i]), b = static_cast<unsigned char>(bytes[i + 1]);
    out += kAlphabet[a >> 2];
    out += kAlphabet[((a & 3) << 4) | (b >> 4)];
    out += kAlphabet[(b & 15) << 2];
    out += '=';
  }
  return out;
}

std::string chunk_message(std::string_view data) {
  return encode_message({{":event-type", "chunk"}, {":content-type", "application/json"}, {":message-type", "event"}},
                        "{\"bytes\":\"" + base64(data) + "\"}");
}

std::string exception_message(std::string_view type, std::string_view json) {
  return encode_message(
      {{":exception-type", std::string(type)}, {":content-type", "application/json"}, {":message-type", "exception"}},
      json);
}

}  // namespace mock::eventstream
