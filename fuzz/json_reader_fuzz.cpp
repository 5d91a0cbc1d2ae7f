// libFuzzer target: json_reader::parse against what it replaced, nlohmann::json::parse after the
// brackets-outside-strings depth scan, at the runtime's and server's depth limit (512) and at a
// small one (4), so that the limit itself is exercised. A different verdict, or a different value
// or type anywhere in the tree (floats bit for bit), aborts with both texts.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fuzz/fuzz_common.h"
#include "json_reader/json_reader.h"

namespace {

using json = nlohmann::json;

json reference(std::string_view text, std::size_t max_depth) {
  std::size_t depth = 0;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i++];
    if (c == '"') {
      while (i < text.size() && text[i] != '"') i += text[i] == '\\' ? 2 : 1;
      ++i;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return json(json::value_t::discarded);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
}

bool same(const json& a, const json& b) {
  if (a.type() != b.type()) return false;
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
      if (ia.key() != ib.key() || !same(*ia, *ib)) return false;
    }
    return true;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!same(a[i], b[i])) return false;
    }
    return true;
  }
  if (a.is_number_float()) {
    const double x = a.get<double>(), y = b.get<double>();
    return std::memcmp(&x, &y, sizeof x) == 0;
  }
  return a == b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = hiccup_fuzz::as_text(data, size);
  for (const std::size_t depth : {std::size_t{512}, std::size_t{4}}) {
    const json want = reference(text, depth);
    const json got = json_reader::parse(text, depth);
    const bool agree = want.is_discarded() == got.is_discarded() && (want.is_discarded() || same(want, got));
    if (!agree) {
      std::fprintf(stderr, "json_reader differs from nlohmann at depth %zu: %s, reader %s\n", depth,
                   want.is_discarded() ? "discarded" : want.dump().c_str(),
                   got.is_discarded() ? "discarded" : got.dump().c_str());
      std::abort();
    }
  }
  return 0;
}
