// Writing JSON text directly, byte for byte as nlohmann's compact dump() writes it, for the stream
// encoders: the mock server encodes every frame of every answer, and building an nlohmann tree
// for each (its allocations, its destruction, its serializer) was over a fifth of an in-memory
// exploration case's instructions. mock_server/testdata/encoder_bytes.txt (encoder_bytes_test)
// pins the result to the bytes the tree-building encoders wrote.
#pragma once

#include <string>
#include <string_view>

namespace mock::json_text {

/// Appends `s` as a JSON string exactly as nlohmann's dump() writes it: `"` and `\\` escaped,
/// \b \f \n \r \t, other bytes below 0x20 as \u00xx (lower-case hex), the rest as is. A string with
/// a byte >= 0x80 is written by nlohmann itself, which checks its UTF-8 (and throws
/// nlohmann::json::type_error 316 on invalid UTF-8, as dump() does).
void append_string(std::string& out, std::string_view s);

/// Appends `v` in decimal, as nlohmann writes an integer.
void append_int(std::string& out, long long v);

/// A compact JSON text written into a caller's string: objects and arrays are opened and closed
/// explicitly, commas are placed by the writer. Keys must be plain ASCII needing no escaping (the
/// encoders' keys are literals). Nothing is validated: an unbalanced sequence writes unbalanced text.
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  Writer& begin_object() { return open('{'); }
  Writer& end_object() { return close('}'); }
  Writer& begin_array() { return open('['); }
  Writer& end_array() { return close(']'); }

  /// `"k":` (with a comma before it when a member precedes it).
  Writer& key(std::string_view k) {
    comma();
    out_ += '"';
    out_ += k;
    out_ += "\":";
    need_comma_ = false;
    return *this;
  }

  Writer& string(std::string_view s) {
    comma();
    append_string(out_, s);
    return done();
  }
  Writer& integer(long long v) {
    comma();
    append_int(out_, v);
    return done();
  }
  Writer& boolean(bool v) { return raw(v ? "true" : "false"); }
  Writer& null() { return raw("null"); }
  /// A value given as JSON text already (e.g. a call's arguments as nlohmann dumped them).
  Writer& raw(std::string_view json) {
    comma();
    out_ += json;
    return done();
  }

  /// Shorthands for `key(k)` followed by the value.
  Writer& member(std::string_view k, std::string_view s) { return key(k).string(s); }
  Writer& member(std::string_view k, const char* s) { return key(k).string(s); }
  Writer& member(std::string_view k, const std::string& s) { return key(k).string(s); }
  Writer& member(std::string_view k, long long v) { return key(k).integer(v); }
  Writer& member(std::string_view k, int v) { return key(k).integer(v); }
  Writer& member(std::string_view k, std::size_t v) { return key(k).integer(static_cast<long long>(v)); }
  Writer& member_raw(std::string_view k, std::string_view json) { return key(k).raw(json); }
  Writer& member_null(std::string_view k) { return key(k).null(); }

 private:
  void comma() {
    if (need_comma_) out_ += ',';
  }
  Writer& done() {
    need_comma_ = true;
    return *this;
  }
  Writer& open(char c) {
    comma();
    out_ += c;
    need_comma_ = false;
    return *this;
  }
  Writer& close(char c) {
    out_ += c;
    return done();
  }

  std::string& out_;
  bool need_comma_ = false;
};

}  // namespace mock::json_text
