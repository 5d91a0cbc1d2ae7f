// libFuzzer target: the scenario loader (harness/scenario_io) on arbitrary text; a scenario it
// accepts must survive its writer and load again to the same JSON (parse(write(s)) == s).
#include <cstdlib>

#include "fuzz/fuzz_common.h"
#include "harness/scenario_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const harness::LoadResult r = harness::parse_scenario(hiccup_fuzz::as_text(data, size), "fuzz.json");
  if (!r.scenario) return 0;
  const std::string written = harness::write_scenario(*r.scenario);
  const harness::LoadResult again = harness::parse_scenario(written, "fuzz.json");
  if (!again.scenario) std::abort();  // the writer produced a scenario its own loader rejects
  if (harness::write_scenario(*again.scenario) != written) std::abort();
  return 0;
}
