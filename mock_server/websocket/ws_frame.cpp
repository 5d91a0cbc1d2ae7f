// WebSocket framing (see ws_frame.h).
#include "mock_server/websocket/ws_frame.h"

#include <openssl/evp.h>
#include <openssl/sha.h>

namespace mock::ws {

namespace {

void put_length(std::string& out, std::uint8_t first, std::uint64_t n, bool masked) {
  out.push_back(static_cast<char>(first));
  const std::uint8_t mask_bit = masked ? 0x80 : 0;
  if (n <= 125) {
    out.push_back(static_cast<char>(mask_bit | n));
  } else if (n <= 0xFFFF) {
    out.push_back(static_cast<char>(mask_bit | 126));
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(n & 0xFF));
  } else {
    out.push_back(static_cast<char>(mask_bit | 127));
    for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>((n >> shift) & 0xFF));
  }
}

bool is_control(Opcode op) { return (static_cast<std::uint8_t>(op) & 0x8) != 0; }

}  // namespace

std::string encode_frame(Opcode opcode, std::string_view payload, bool fin, std::optional<std::uint32_t> mask) {
  std::string out;
  out.reserve(payload.size() + 14);
  put_length(out, static_cast<std::uint8_t>((fin ? 0x80 : 0) | static_cast<std::uint8_t>(opcode)), payload.size(),
             mask.has_value());
  if (!mask) {
    out.append(payload);
    return out;
  }
  const unsigned char key[4] = {static_cast<unsigned char>(*mask >> 24), static_cast<unsigned char>(*mask >> 16),
                                static_cast<unsigned char>(*mask >> 8), static_cast<unsigned char>(*mask)};
  out.append(reinterpret_cast<const char*>(key), 4);
  for (std::size_t i = 0; i < payload.size(); ++i) {
    out.push_back(static_cast<char>(static_cast<unsigned char>(payload[i]) ^ key[i % 4]));
  }
  return out;
}

std::string frame_header(Opcode opcode, std::uint64_t payload_length) {
  std::string out;
  put_length(out, static_cast<std::uint8_t>(0x80 | static_cast<std::uint8_t>(opcode)), payload_length, false);
  return out;
}

std::string close_payload(std::uint16_t code, std::string_view reason) {
  std::string out;
  out.push_back(static_cast<char>(code >> 8));
  out.push_back(static_cast<char>(code & 0xFF));
  out.append(reason.substr(0, 123));
  return out;
}

bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  const std::size_t n = s.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    int extra = 0;
    std::uint32_t cp = 0;
    std::uint32_t min = 0;
    if ((c & 0xE0) == 0xC0) extra = 1, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0) extra = 2, cp = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0) extra = 3, cp = c & 0x07, min = 0x10000;
    else return false;
    if (i + static_cast<std::size_t>(extra) >= n) return false;
    for (int k = 1; k <= extra; ++k) {
      const auto d = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += static_cast<std::size_t>(extra) + 1;
  }
  return true;
}

std::string accept_key(std::string_view client_key) {
  static constexpr std::string_view kGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  std::string input(client_key);
  input += kGuid;
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  unsigned char b64[4 * ((SHA_DIGEST_LENGTH + 2) / 3) + 1];
  const int len = EVP_EncodeBlock(b64, digest, SHA_DIGEST_LENGTH);
  return std::string(reinterpret_cast<const char*>(b64), static_cast<std::size_t>(len));
}

bool valid_client_key(std::string_view key) {
  if (key.size() != 24 || key.substr(22) != "==") return false;
  for (std::size_t i = 0; i < 22; ++i) {
    const char c = key[i];
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
    if (!ok) return false;
  }
  // The 22nd character carries 4 bits of the 16th byte and 2 padding bits, which must be 0.
  static constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  return (kAlphabet.find(key[21]) & 0x0F) == 0;
}

FrameDecoder::Status FrameDecoder::fail(std::uint16_t code, std::string message) {
  error_code_ = code;
  error_ = std::move(message);
  return Status::kError;
}

FrameDecoder::Status FrameDecoder::next(Message& out) {
  if (error_code_ != 0) return Status::kError;
  for (;;) {
    // Drop consumed bytes now and then, so a long connection does not grow the buffer.
    if (pos_ > 0 && (pos_ == buf_.size() || pos_ > (64u << 10))) {
      buf_.erase(0, pos_);
      pos_ = 0;
    }
    const std::size_t avail = buf_.size() - pos_;
    if (avail < 2) return Status::kNeedMore;
    const auto* p = reinterpret_cast<const unsigned char*>(buf_.data() + pos_);
    const bool fin = (p[0] & 0x80) != 0;
    if ((p[0] & 0x70) != 0) return fail(kCloseProtocolError, "reserved bits set without a negotiated extension");
    const auto op_bits = static_cast<std::uint8_t>(p[0] & 0x0F);
    if (op_bits != 0x0 && op_bits != 0x1 && op_bits != 0x2 && op_bits != 0x8 && op_bits != 0x9 && op_bits != 0xA) {
      return fail(kCloseProtocolError, "unknown opcode " + std::to_string(op_bits));
    }
    const auto opcode = static_cast<Opcode>(op_bits);
    const bool masked = (p[1] & 0x80) != 0;
    if (role_ == Role::kServer && !masked) return fail(kCloseProtocolError, "client frame not masked");
    if (role_ == Role::kClient && masked) return fail(kCloseProtocolError, "server frame masked");
    std::uint64_t len = p[1] & 0x7F;
    std::size_t head = 2;
    if (len == 126) {
      if (avail < 4) return Status::kNeedMore;
      len = (std::uint64_t{p[2]} << 8) | p[3];
      head = 4;
      if (len < 126) return fail(kCloseProtocolError, "length not in its shortest encoding");
    } else if (len == 127) {
      if (avail < 10) return Status::kNeedMore;
      len = 0;
      for (int k = 0; k < 8; ++k) len = (len << 8) | p[2 + k];
      head = 10;
      if ((len >> 63) != 0) return fail(kCloseProtocolError, "64-bit length with its most significant bit set");
      if (len <= 0xFFFF) return fail(kCloseProtocolError, "length not in its shortest encoding");
    }
    if (is_control(opcode)) {
      if (!fin) return fail(kCloseProtocolError, "fragmented control frame");
      if (len > 125) return fail(kCloseProtocolError, "control frame longer than 125 bytes");
    } else if (opcode == Opcode::kContinuation) {
      if (!in_message_) return fail(kCloseProtocolError, "continuation frame without a message to continue");
    } else if (in_message_) {
      return fail(kCloseProtocolError, "new data frame inside a fragmented message");
    }
    const std::size_t so_far = is_control(opcode) ? 0 : message_.size();
    if (len > max_message_bytes_ || so_far + len > max_message_bytes_) {
      return fail(kCloseTooBig, "message longer than " + std::to_string(max_message_bytes_) + " bytes");
    }
    const std::size_t key_bytes = masked ? 4 : 0;
    if (avail < head + key_bytes + len) return Status::kNeedMore;
    unsigned char key[4] = {0, 0, 0, 0};
    for (std::size_t k = 0; k < key_bytes; ++k) key[k] = p[head + k];
    const unsigned char* data = p + head + key_bytes;
    std::string payload(static_cast<std::size_t>(len), '\0');
    for (std::size_t i = 0; i < len; ++i) payload[i] = static_cast<char>(data[i] ^ key[i % 4]);
    pos_ += head + key_bytes + static_cast<std::size_t>(len);

    if (is_control(opcode)) {
      if (opcode == Opcode::kClose) {
        if (payload.size() == 1) return fail(kCloseProtocolError, "close payload of one byte");
        if (payload.size() >= 2) {
          const int code = (static_cast<unsigned char>(payload[0]) << 8) | static_cast<unsigned char>(payload[1]);
          const bool allowed = (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1011) ||
                               (code >= 3000 && code <= 4999);
          if (!allowed) return fail(kCloseProtocolError, "close code " + std::to_string(code) + " not allowed on the wire");
          if (!valid_utf8(std::string_view(payload).substr(2))) return fail(kCloseInvalidPayload, "close reason not UTF-8");
        }
      }
      out.opcode = opcode;
      out.payload = std::move(payload);
      return Status::kMessage;
    }
    if (opcode != Opcode::kContinuation) {
      in_message_ = true;
      message_opcode_ = opcode;
      message_.clear();
    }
    message_ += payload;
    if (!fin) continue;
    in_message_ = false;
    if (message_opcode_ == Opcode::kText && !valid_utf8(message_)) {
      return fail(kCloseInvalidPayload, "text message not valid UTF-8");
    }
    out.opcode = message_opcode_;
    out.payload = std::move(message_);
    message_.clear();
    return Status::kMessage;
  }
}

}  // namespace mock::ws
