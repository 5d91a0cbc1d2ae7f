// Writing JSON text directly, byte for byte as nlohmann's compact dump() writes it, for the stream
// encoders: the mock server encodes every frame of every answer, and building an nlohmann tree
// for each (its allocations, its destruction, its serializer) was over a fifth of an in-memory
// exploration case's instructions. mock_server/testdata/encoder_bytes.txt (encoder_bytes_test)
// pins the result to the bytes the tree-building encoders wrote.
// Also the one place where text from outside (request lines, paths, bodies, scenario files) is made
// fit for JSON and for a terminal before anything stores or quotes it: valid UTF-8, cut on
// character boundaries, control characters escaped (issue 42).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "json_reader/utf8.h"

namespace mock::json_text {

/// Appends `s` as a JSON string exactly as nlohmann's dump() writes it: `"` and `\\` escaped,
/// \b \f \n \r \t, other bytes below 0x20 as \u00xx (lower-case hex), the rest as is. A string with
/// a byte >= 0x80 is written by nlohmann itself; one that is not valid UTF-8 (which dump() would
/// refuse with type_error 316) gets U+FFFD for each ill-formed byte, a last-resort net: text from
/// outside is made valid where it is read (to_utf8, escape_input, percent_encode_unsafe). Never throws.
void append_string(std::string& out, std::string_view s);

/// Appends `v` in decimal, as nlohmann writes an integer.
void append_int(std::string& out, long long v);

/// json_reader/utf8.h (shared with the runtime): the length of the well-formed UTF-8 character `s`
/// starts with (0 when ill-formed or truncated), and whether all of `s` is well-formed UTF-8.
using json_reader::utf8_char_length;
using json_reader::is_utf8;

/// The longest prefix of `s` of at most `max_bytes` bytes that ends on a character boundary (never
/// half a UTF-8 character; a byte outside well-formed UTF-8 counts as a character of its own).
std::string_view cut_utf8(std::string_view s, std::size_t max_bytes);

/// `s` with each byte outside well-formed UTF-8 replaced by U+FFFD: for text kept as data.
std::string to_utf8(std::string_view s);

/// `s` made fit to quote in a message shown in a terminal or put in JSON: valid UTF-8 that drives no
/// terminal. C0 controls and DEL as \xNN (\n \r \t as such), C1 controls (U+0080–U+009F, e.g. the
/// 8-bit CSI) as \u00NN, a byte outside well-formed UTF-8 as \xNN; everything else, a backslash
/// included, as is, so escaping twice changes nothing. More than `max_bytes` bytes of `s` are cut on
/// a character boundary and end with "…".
std::string escape_input(std::string_view s, std::size_t max_bytes = 200);

/// `"` + escape_input(s, max_bytes) + `"`: how a message quotes what it was given.
std::string quote_input(std::string_view s, std::size_t max_bytes = 200);

/// A request target made valid UTF-8 and free of control characters, by percent-encoding (RFC 3986
/// §2.1, upper-case hex) each byte of an ill-formed UTF-8 sequence, each C0 control, DEL and both
/// bytes of a C1 control; everything else as sent (a target whose bytes are all fine is returned
/// unchanged). Such octets are not allowed raw in a URI, so this is the form a client should have
/// sent.
std::string percent_encode_unsafe(std::string_view target);

/// Whether every byte of `s` is printable ASCII (0x20..0x7E): such a target is what
/// percent_encode_unsafe() returns unchanged, so a caller can skip it (the common case, checked
/// without a copy).
bool is_printable_ascii(std::string_view s);

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
