// Incremental Server-Sent Events decoder: bytes in any chunking in, complete frames out.
// Handles `data:` lines ended by LF or CRLF, a blank line ending a frame, comments (`:`), and the
// bare `{"error":{...}}` line Gemini writes as an in-stream error (WIRE-FORMATS.md "Gemini").
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rut {

/// One decoded unit of an SSE stream.
struct SseFrame {
  enum class Kind {
    kData,         ///< a frame's `data:` payload (lines joined with '\n')
    kErrorObject,  ///< a non-SSE line parsing as a bare JSON object with an "error" member
  };
  Kind kind = Kind::kData;
  std::string data;  ///< the payload (kData) or the whole JSON line (kErrorObject)
  std::string event; ///< the frame's `event:` field ("" when none)
  bool operator==(const SseFrame&) const = default;
};

/// Feed bytes as they arrive; frames come out as soon as they are complete. Independent of chunking:
/// any split of the same bytes yields the same frames.
class SseDecoder {
 public:
  /// Decodes `bytes`, appending every completed frame to `out`.
  void feed(std::string_view bytes, std::vector<SseFrame>& out);
  /// The stream ended: a leftover line that is a bare error object becomes a frame; an
  /// unterminated `data:` frame is dropped (the SSE spec discards an incomplete event).
  void finish(std::vector<SseFrame>& out);
  /// The data of the frame in progress that has not ended yet (its `data:` lines so far, the last
  /// one possibly cut), "" when none; call before finish().
  [[nodiscard]] std::string unterminated_data() const;

 private:
  void line(std::string_view text, std::vector<SseFrame>& out);
  std::string pending_;   // bytes of the current unterminated line
  std::string data_;      // data lines of the current frame
  bool has_data_ = false;
  std::string event_;     // the current frame's event: field
};

/// True when `text` parses as a JSON object with an "error" member.
bool is_bare_error_object(std::string_view text);

}  // namespace rut
