// Incremental SSE decoder (see sse_decoder.h).
#include "runtime_under_test/sse_decoder.h"

#include <nlohmann/json.hpp>

#include "runtime_under_test/codec.h"

namespace rut {

bool is_bare_error_object(std::string_view text) {
  auto parsed = parse_json(text);
  return parsed.is_object() && parsed.contains("error");
}

void SseDecoder::feed(std::string_view bytes, std::vector<SseFrame>& out) {
  while (!bytes.empty()) {
    const std::size_t nl = bytes.find('\n');
    if (nl == std::string_view::npos) {
      pending_.append(bytes);
      return;
    }
    std::string_view text = bytes.substr(0, nl);
    if (!pending_.empty()) {  // the line began in an earlier chunk
      pending_.append(text);
      text = pending_;
    }
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    line(text, out);
    pending_.clear();
    bytes.remove_prefix(nl + 1);
  }
}

void SseDecoder::finish(std::vector<SseFrame>& out) {
  std::string_view text = pending_;
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  if (!text.empty() && is_bare_error_object(text)) {
    out.push_back({SseFrame::Kind::kErrorObject, std::string(text), ""});
  }
  pending_.clear();
  data_.clear();
  event_.clear();
  has_data_ = false;
}

std::string SseDecoder::unterminated_data() const {
  std::string out = has_data_ ? data_ : std::string();
  std::string_view text = pending_;
  if (text.starts_with("data:")) {
    text.remove_prefix(5);
    if (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    if (has_data_) out.push_back('\n');
    out.append(text);
  }
  return out;
}

void SseDecoder::line(std::string_view text, std::vector<SseFrame>& out) {
  if (text.empty()) {
    if (has_data_) out.push_back({SseFrame::Kind::kData, std::move(data_), std::move(event_)});
    data_.clear();
    event_.clear();
    has_data_ = false;
    return;
  }
  if (text.front() == ':') return;  // comment
  if (text.starts_with("data:")) {
    text.remove_prefix(5);
    if (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    if (has_data_) data_.push_back('\n');
    data_.append(text);
    has_data_ = true;
    return;
  }
  if (text.starts_with("event:")) {
    text.remove_prefix(6);
    if (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    event_ = std::string(text);
    return;
  }
  if (text.front() == '{' && is_bare_error_object(text)) {
    out.push_back({SseFrame::Kind::kErrorObject, std::string(text), ""});
  }
  // other fields (event:, id:, retry:) and junk lines are ignored
}

}  // namespace rut
