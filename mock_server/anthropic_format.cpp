// The Anthropic Messages wire format (see anthropic_format.h). SKELETON: to be implemented.
#include "mock_server/anthropic_format.h"

namespace mock::anthropic {
namespace {

class Encoder final : public StreamEncoder {
 public:
  std::string open() override { return ""; }
  std::vector<std::string> event_units(const Event&, int) override { return {""}; }
  std::string error_event(int) override { return ""; }
  std::string malformed_frame() override { return ""; }
};

class Format final : public WireFormat {
 public:
  std::string_view name() const override { return "anthropic"; }
  std::vector<std::string> paths() const override { return {"POST /v1/messages"}; }
  bool matches(std::string_view path) const override { return path == "/v1/messages"; }
  DecodedRequest decode_request(std::string_view, std::string_view) const override {
    DecodedRequest out;
    out.rejection = Rejection{400, "anthropic is not implemented yet", false};
    return out;
  }
  std::string default_message(int) const override { return "error"; }
  ErrorAnswer error_answer(int, std::string_view message, std::optional<double>) const override {
    return {std::string(message), {}};
  }
  std::string call_id(std::size_t, int) const override { return ""; }
  std::unique_ptr<StreamEncoder> stream_encoder(const ResponseContext&) const override {
    return std::make_unique<Encoder>();
  }
  std::string unary_body(const std::vector<Event>&, const ResponseContext&) const override { return "{}"; }
};

}  // namespace

const WireFormat& format() {
  static const Format instance;
  return instance;
}

}  // namespace mock::anthropic
