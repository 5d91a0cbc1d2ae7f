// libFuzzer target: json_reader::parse against what it replaced, nlohmann::json::parse after the
// brackets-outside-strings depth scan, at the runtime's and server's depth limit (512) and at a
// small one (4), so that the limit itself is exercised. A different verdict, or a different value
// or type anywhere in the tree (floats bit for bit), aborts with both texts.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fuzz/fuzz_common.h"
#include "json_reader/json_reader.h"
#include "json_reader/reference.h"

using json = nlohmann::json;
using json_reader::reference::same;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = hiccup_fuzz::as_text(data, size);
  for (const std::size_t depth : {std::size_t{512}, std::size_t{4}}) {
    const json want = json_reader::reference::parse(text, depth);
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
