// `hiccup report DIR`: regenerates DIR/report.html from DIR/summary.json (a report directory of
// `run`, `explore` or `matrix`, e.g. one downloaded from CI).
#include <filesystem>
#include <fstream>
#include <iostream>

#include "harness/cli/commands.h"
#include "harness/report/report.h"

namespace harness::cli {

int report_command(const Args& args) {
  constexpr const char* kUsage =
      "usage: hiccup report DIR\n"
      "  writes DIR/report.html (one self-contained page: index, filters, a timeline per failing case)\n"
      "  from DIR/summary.json, the report directory of `run`, `explore` or `matrix`\n"
      "exit codes: 0 written, 2 usage error, 3 missing or invalid summary.json\n";
  std::vector<std::string> positionals;
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return kExitPassed;
    }
    if (a.rfind("-", 0) == 0) {
      std::cerr << "error: unknown option \"" << a << "\"\n" << kUsage;
      return kExitUsage;
    }
    positionals.push_back(a);
  }
  if (positionals.size() != 1) {
    std::cerr << "error: " << (positionals.empty() ? "expected a report directory" : "expected one report directory") << "\n" << kUsage;
    return kExitUsage;
  }
  const std::filesystem::path dir = positionals.front();
  const std::filesystem::path summary_path = dir / "summary.json";
  std::ifstream in(summary_path);
  if (!in) {
    std::cerr << "error: " << summary_path.string() << ": cannot read it (is " << dir.string()
              << " a report directory of hiccup run, explore or matrix?)\n";
    return kExitInvalidInput;
  }
  nlohmann::json summary;
  try {
    summary = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    std::cerr << "error: " << summary_path.string() << ": not valid JSON: " << e.what() << '\n';
    return kExitInvalidInput;
  }
  if (!summary.is_object() || !summary.contains("cases") || !summary["cases"].is_array() ||
      !summary.contains("schema") || !summary["schema"].is_number_integer()) {
    std::cerr << "error: " << summary_path.string() << ": not a hiccup summary (expected an object with \"schema\" and \"cases\")\n";
    return kExitInvalidInput;
  }
  if (summary["schema"].get<int>() > kSummarySchemaVersion) {
    std::cerr << "error: " << summary_path.string() << ": schema version " << summary["schema"].get<int>()
              << " is newer than this hiccup reads (" << kSummarySchemaVersion << ")\n";
    return kExitInvalidInput;
  }
  const std::filesystem::path out = dir / "report.html";
  std::ofstream file(out);
  file << render_html(summary);
  file.close();
  if (!file) {
    std::cerr << "error: " << out.string() << ": cannot write it\n";
    return kExitInvalidInput;
  }
  std::cout << "wrote " << out.string() << '\n';
  return kExitPassed;
}

}  // namespace harness::cli
