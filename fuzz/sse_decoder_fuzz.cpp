// libFuzzer target: the runtime's SSE decoder (runtime_under_test/sse_decoder) on arbitrary bytes,
// fed whole and split at a point the first byte picks; both feeds must give the same frames
// (the decoder's chunking independence), and repair_json on the same bytes never throws.
#include <cstdlib>
#include <vector>

#include "fuzz/fuzz_common.h"
#include "runtime_under_test/codec.h"
#include "runtime_under_test/sse_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = hiccup_fuzz::as_text(data, size);
  std::vector<rut::SseFrame> whole, split;
  rut::SseDecoder a;
  a.feed(text, whole);
  const std::string unterminated_a = a.unterminated_data();
  a.finish(whole);
  rut::SseDecoder b;
  const std::size_t at = size == 0 ? 0 : data[0] % (size + 1);
  b.feed(text.substr(0, at), split);
  b.feed(text.substr(at), split);
  if (b.unterminated_data() != unterminated_a) std::abort();
  b.finish(split);
  if (whole != split) std::abort();  // chunking changed the frames
  for (const auto& f : whole) (void)rut::is_bare_error_object(f.data);
  (void)rut::repair_json(text);
  return 0;
}
