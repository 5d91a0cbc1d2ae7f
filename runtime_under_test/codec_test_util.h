// Helpers the codec tests share: a whole stream fed through the SSE decoder and a codec's stream
// decoder the way ModelClient feeds it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime_under_test/codec.h"
#include "runtime_under_test/sse_decoder.h"

namespace rut::testing {

/// What a whole stream decodes to: parts in order, the finish, an error, and after which frame
/// the finish came.
struct Decoded {
  std::vector<ModelPart> parts;
  std::optional<FinishClass> finish;
  std::string finish_reason;
  std::optional<std::string> stream_error;
  bool undecodable = false;
  int frames = 0;         ///< frames handed to the decoder
  int finish_frame = -1;  ///< the frame (1-based) that carried the finish
};

/// Feeds `bytes` to an SseDecoder in pieces of `step` bytes (0: all at once) and every frame to
/// `decoder`, stopping at the first finish, error or undecodable frame as ModelClient does; with
/// `finish_at_end` an unterminated last line is flushed (SseDecoder::finish) and decoded too.
inline Decoded decode_with(IStreamDecoder& decoder, const std::string& bytes, std::size_t step = 0,
                           bool finish_at_end = false) {
  Decoded out;
  SseDecoder sse;
  bool stop = false;
  std::vector<SseFrame> frames;
  auto handle = [&] {
    for (const SseFrame& f : frames) {
      if (stop) break;
      DecodedChunk c = decoder.on_frame(f);
      ++out.frames;
      for (auto& p : c.parts) out.parts.push_back(std::move(p));
      if (c.undecodable) out.undecodable = stop = true;
      if (c.stream_error) {
        out.stream_error = c.stream_error;
        stop = true;
      }
      if (c.finish) {
        out.finish = c.finish;
        out.finish_reason = c.finish_reason;
        out.finish_frame = out.frames;
        stop = true;
      }
    }
    frames.clear();
  };
  const std::size_t n = step == 0 ? bytes.size() : step;
  for (std::size_t at = 0; at < bytes.size() && !stop; at += n) {
    sse.feed(std::string_view(bytes).substr(at, n), frames);
    handle();
  }
  if (finish_at_end) {
    sse.finish(frames);
    handle();
  }
  return out;
}

}  // namespace rut::testing
