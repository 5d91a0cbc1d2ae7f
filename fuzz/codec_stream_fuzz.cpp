// libFuzzer target, one binary per provider: the runtime codec's stream decoder (SSE frames of
// arbitrary bytes through SseDecoder into IStreamDecoder::on_frame, then repaired_open_call on the
// unterminated frame), its non-streaming decode_body and its error reader parse_error.
#include <vector>

#include "fuzz/fuzz_common.h"
#include "runtime_under_test/codec.h"
#include "runtime_under_test/sse_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const rut::ICodec* codec = rut::codec_for(hiccup_fuzz::kProvider);
  const std::string_view text = hiccup_fuzz::as_text(data, size);
  rut::SseDecoder sse;
  std::vector<rut::SseFrame> frames;
  sse.feed(text, frames);
  const std::string unterminated = sse.unterminated_data();
  sse.finish(frames);
  auto decoder = codec->stream_decoder();
  for (const auto& frame : frames) (void)decoder->on_frame(frame);
  (void)decoder->repaired_open_call(unterminated);
  (void)codec->decode_body(text);
  (void)codec->parse_error(text, {{"retry-after", std::string(text.substr(0, 16))}});
  return 0;
}
