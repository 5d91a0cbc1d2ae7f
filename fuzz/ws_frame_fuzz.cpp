// libFuzzer target: the mock's WebSocket frame decoder (mock_server/websocket/ws_frame.h) on
// arbitrary bytes as a client sends them. Byte 0 picks the role (even: server, odd: client) and a
// split point; the bytes after it are fed whole and in two pieces, and both feeds must give the same
// messages and the same error (chunking independence). Every text message must be valid UTF-8,
// every control frame at most 125 bytes, and re-encoding a message and decoding it again gives it back.
#include <cstdlib>
#include <vector>

#include "fuzz/fuzz_common.h"
#include "mock_server/websocket/ws_frame.h"

namespace {

using mock::ws::FrameDecoder;

struct Outcome {
  std::vector<mock::ws::Message> messages;
  FrameDecoder::Status last = FrameDecoder::Status::kNeedMore;
  std::uint16_t code = 0;
};

void drain(FrameDecoder& d, Outcome& out) {
  mock::ws::Message m;
  FrameDecoder::Status st;
  while ((st = d.next(m)) == FrameDecoder::Status::kMessage) out.messages.push_back(m);
  out.last = st;
  out.code = d.error_code();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto role = (data[0] & 1) ? FrameDecoder::Role::kClient : FrameDecoder::Role::kServer;
  const std::string_view bytes = hiccup_fuzz::as_text(data + 1, size - 1);
  const std::size_t at = (data[0] >> 1) % (bytes.size() + 1);
  constexpr std::size_t kLimit = 1u << 16;

  Outcome whole, split;
  FrameDecoder a(role, kLimit);
  a.feed(bytes);
  drain(a, whole);
  FrameDecoder b(role, kLimit);
  b.feed(bytes.substr(0, at));
  drain(b, split);
  if (split.last != FrameDecoder::Status::kError) {
    b.feed(bytes.substr(at));
    drain(b, split);
  }
  if (whole.last != split.last || whole.code != split.code || whole.messages.size() != split.messages.size()) std::abort();
  for (std::size_t i = 0; i < whole.messages.size(); ++i) {
    const auto& m = whole.messages[i];
    if (m.opcode != split.messages[i].opcode || m.payload != split.messages[i].payload) std::abort();
    if (m.opcode == mock::ws::Opcode::kText && !mock::ws::valid_utf8(m.payload)) std::abort();
    const bool control = m.opcode == mock::ws::Opcode::kClose || m.opcode == mock::ws::Opcode::kPing ||
                         m.opcode == mock::ws::Opcode::kPong;
    if (control && m.payload.size() > 125) std::abort();
    FrameDecoder again(role, kLimit);
    again.feed(role == FrameDecoder::Role::kServer ? mock::ws::encode_frame(m.opcode, m.payload, true, 0x5a5a5a5a)
                                                   : mock::ws::encode_frame(m.opcode, m.payload));
    mock::ws::Message back;
    if (again.next(back) != FrameDecoder::Status::kMessage || back.payload != m.payload) std::abort();
  }
  return 0;
}
