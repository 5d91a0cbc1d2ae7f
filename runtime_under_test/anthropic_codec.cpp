// The Anthropic Messages codec (see anthropic_codec.h). SKELETON: to be implemented.
#include "runtime_under_test/anthropic_codec.h"

namespace rut {
namespace {

class Decoder final : public IStreamDecoder {
 public:
  DecodedChunk on_frame(const SseFrame&) override { return DecodedChunk{{}, {}, "", {}, true}; }
  std::optional<FunctionCall> repaired_open_call(std::string_view) const override { return std::nullopt; }
};

class Codec final : public ICodec {
 public:
  std::string_view provider() const override { return "anthropic"; }
  std::string default_model() const override { return "claude-sonnet-4-5"; }
  HttpRequest make_request(const nlohmann::json&, std::string_view, const std::vector<std::string>&,
                           bool) const override {
    return HttpRequest{};
  }
  std::unique_ptr<IStreamDecoder> stream_decoder() const override { return std::make_unique<Decoder>(); }
  DecodedChunk decode_body(std::string_view) const override { return DecodedChunk{{}, {}, "", {}, true}; }
  ProviderError parse_error(std::string_view, const Headers&) const override { return {}; }
};

}  // namespace

const ICodec& anthropic_codec() {
  static const Codec instance;
  return instance;
}

}  // namespace rut
