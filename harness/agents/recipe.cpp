// Recipe loading: JSON files under harness/agents/recipes/, decoded with field-naming errors.
#include "harness/agents/recipe.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "harness/scenario_io.h"

namespace harness::agents {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

[[noreturn]] void bad(const std::string& field, const std::string& what) {
  throw std::runtime_error("recipe field \"" + field + "\": " + what);
}

std::string str(const json& j, const char* key, bool required) {
  if (!j.contains(key)) {
    if (required) bad(key, "missing");
    return {};
  }
  if (!j[key].is_string()) bad(key, "expected a string, found " + j[key].dump());
  return j[key].get<std::string>();
}

}  // namespace

Recipe command_recipe(const std::string& command, const std::string& provider) {
  Recipe r;
  r.name = "agent-cmd";
  r.description = "--agent-cmd: " + command;
  r.provider = provider;
  r.argv = {"/bin/sh", "-c", command};
  r.max_attempts = 10;
  return r;
}

Recipe recipe_from_json(const json& j) {
  if (!j.is_object()) throw std::runtime_error("a recipe must be a JSON object");
  static const std::vector<std::string> known = {
      "name", "version", "description", "provider", "install", "binary", "argv", "model", "env", "home_files",
      "tool", "max_attempts", "success_exit_codes", "exit_codes", "timeout_s", "output", "cancel"};
  for (const auto& [k, v] : j.items()) {
    if (std::find(known.begin(), known.end(), k) == known.end()) bad(k, "unknown field");
  }
  Recipe r;
  r.name = str(j, "name", true);
  r.version = str(j, "version", false);
  r.description = str(j, "description", false);
  if (j.contains("provider")) r.provider = str(j, "provider", true);
  r.install_hint = str(j, "install", false);
  r.binary = str(j, "binary", false);
  r.model = str(j, "model", false);
  if (!j.contains("argv") || !j["argv"].is_array() || j["argv"].empty()) bad("argv", "expected a non-empty array of strings");
  for (const json& a : j["argv"]) {
    if (!a.is_string()) bad("argv", "expected strings, found " + a.dump(-1, ' ', false, json::error_handler_t::replace));
    r.argv.push_back(a.get<std::string>());
  }
  if (j.contains("env")) {
    if (!j["env"].is_object()) bad("env", "expected an object of strings");
    for (const auto& [k, v] : j["env"].items()) {
      if (!v.is_string()) bad("env/" + k, "expected a string, found " + v.dump());
      r.env[k] = v.get<std::string>();
    }
  }
  if (j.contains("home_files")) {
    if (!j["home_files"].is_object()) bad("home_files", "expected an object: relative path → content");
    for (const auto& [k, v] : j["home_files"].items()) {
      if (k.empty() || k.front() == '/' || k.find("..") != std::string::npos) bad("home_files/" + k, "expected a relative path inside HOME");
      if (k.back() == '/' && !v.is_null()) bad("home_files/" + k, "a folder (path ending in /) takes null, found " + v.dump());
      r.home_files[k] = v;
    }
  }
  if (j.contains("tool")) {
    const json& t = j["tool"];
    if (!t.is_object()) bad("tool", "expected {\"name\", \"command_arg\"}");
    r.tool_name = str(t, "name", true);
    r.tool_command_arg = str(t, "command_arg", true);
  }
  if (j.contains("max_attempts")) {
    if (!j["max_attempts"].is_number_integer() || j["max_attempts"].get<int>() < 1) bad("max_attempts", "expected an integer >= 1");
    r.max_attempts = j["max_attempts"].get<int>();
  }
  if (j.contains("success_exit_codes")) {
    r.success_exit_codes.clear();
    if (!j["success_exit_codes"].is_array()) bad("success_exit_codes", "expected an array of integers");
    for (const json& c : j["success_exit_codes"]) {
      if (!c.is_number_integer()) bad("success_exit_codes", "expected integers, found " + c.dump());
      r.success_exit_codes.push_back(c.get<int>());
    }
  }
  if (j.contains("exit_codes")) {
    if (!j["exit_codes"].is_object()) bad("exit_codes", "expected an object: code → meaning");
    for (const auto& [k, v] : j["exit_codes"].items()) {
      if (!v.is_string()) bad("exit_codes/" + k, "expected a string");
      try {
        r.exit_code_meanings[std::stoi(k)] = v.get<std::string>();
      } catch (const std::exception&) {
        bad("exit_codes/" + k, "expected an integer key");
      }
    }
  }
  if (j.contains("output")) {
    const json& o = j["output"];
    if (!o.is_object()) bad("output", "expected {\"stream\": \"stdout\"|\"stderr\", \"failure_markers\": [strings]}");
    for (const auto& [k, v] : o.items()) {
      if (k != "stream" && k != "failure_markers" && k != "failure_lines" && k != "shown_text") {
        bad("output/" + k, "unknown field (known: stream, failure_markers, failure_lines, shown_text)");
      }
    }
    if (o.contains("stream")) {
      r.output_stream = str(o, "stream", true);
      if (r.output_stream != "stdout" && r.output_stream != "stderr") bad("output/stream", "expected \"stdout\" or \"stderr\", found \"" + r.output_stream + "\"");
    }
    if (o.contains("shown_text")) {
      const json& t = o["shown_text"];
      auto pointer_ok = [](const std::string& p) {
        try {
          (void)json::json_pointer(p);
          return !p.empty();
        } catch (const json::exception&) {
          return false;
        }
      };
      if (!t.is_object() || !t.contains("pointer") || !t["pointer"].is_string() || !pointer_ok(t["pointer"].get<std::string>())) {
        bad("output/shown_text", "expected {\"where\": {JSON pointer: string}, \"pointer\": JSON pointer of the text}");
      }
      r.shown_text_pointer = t["pointer"].get<std::string>();
      if (t.contains("where")) {
        if (!t["where"].is_object()) bad("output/shown_text/where", "expected an object: JSON pointer → string");
        for (const auto& [p, v] : t["where"].items()) {
          if (!pointer_ok(p) || !v.is_string()) bad("output/shown_text/where/" + p, "expected a JSON pointer mapped to a string");
          r.shown_text_where[p] = v.get<std::string>();
        }
      }
    }
    if (o.contains("failure_lines")) {
      if (!o["failure_lines"].is_array()) bad("output/failure_lines", "expected an array of {JSON pointer: value} objects");
      for (const json& rule : o["failure_lines"]) {
        if (!rule.is_object() || rule.empty()) bad("output/failure_lines", "expected non-empty {JSON pointer: value} objects, found " + rule.dump());
        std::map<std::string, json> m;
        for (const auto& [p, v] : rule.items()) {
          if (p.empty() || p[0] != '/') bad("output/failure_lines", "expected JSON pointers as keys, found \"" + p + "\"");
          m[p] = v;
        }
        r.failure_lines.push_back(std::move(m));
      }
    }
    if (o.contains("failure_markers")) {
      if (!o["failure_markers"].is_array()) bad("output/failure_markers", "expected an array of strings");
      for (const json& m : o["failure_markers"]) {
        if (!m.is_string() || m.get<std::string>().empty()) bad("output/failure_markers", "expected non-empty strings, found " + m.dump());
        r.failure_markers.push_back(m.get<std::string>());
      }
    }
  }
  if (j.contains("cancel")) {
    const json& c = j["cancel"];
    if (!c.is_object()) bad("cancel", "expected {\"method\": \"sigint\", \"resume_argv\": [strings], \"why\": string}");
    for (const auto& [k, v] : c.items()) {
      if (k != "method" && k != "argv" && k != "resume_argv" && k != "exit_wait_s" && k != "why") {
        bad("cancel/" + k, "unknown field (known: method, argv, resume_argv, exit_wait_s, why)");
      }
    }
    RecipeCancel rc;
    rc.method = str(c, "method", true);
    if (rc.method != "sigint") bad("cancel/method", "expected \"sigint\", found \"" + rc.method + "\"");
    rc.why = str(c, "why", true);
    auto strings = [&](const char* key, std::vector<std::string>& out, bool required) {
      if (!c.contains(key)) {
        if (required) bad(std::string("cancel/") + key, "missing");
        return;
      }
      if (!c[key].is_array() || c[key].empty()) bad(std::string("cancel/") + key, "expected a non-empty array of strings");
      for (const json& a : c[key]) {
        if (!a.is_string()) bad(std::string("cancel/") + key, "expected strings, found " + a.dump(-1, ' ', false, json::error_handler_t::replace));
        out.push_back(a.get<std::string>());
      }
    };
    strings("argv", rc.argv, false);
    strings("resume_argv", rc.resume_argv, true);
    if (c.contains("exit_wait_s")) {
      // At most an hour: a longer wait overflowed the runner's clock arithmetic (1e300 s ended 5 ms
      // after the SIGINT, a false liveness verdict).
      if (!c["exit_wait_s"].is_number() || !(c["exit_wait_s"].get<double>() > 0) || c["exit_wait_s"].get<double>() > 3600) {
        bad("cancel/exit_wait_s", "expected a number of seconds in (0, 3600]");
      }
      rc.exit_wait_s = c["exit_wait_s"].get<double>();
    }
    r.cancel = std::move(rc);
  }
  if (j.contains("timeout_s")) {
    if (!j["timeout_s"].is_number() || j["timeout_s"].get<double>() <= 0) bad("timeout_s", "expected a positive number");
    r.timeout_s = j["timeout_s"].get<double>();
  }
  return r;
}

std::string installed_data_dir() {
  // /proc/self/exe: the executable's real path, whatever PATH, symlink or cwd started it.
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path data = exe.parent_path().parent_path() / "share" / "hiccup";
  return fs::is_directory(data / "recipes", ec) ? data.string() : "";
}

std::string repo_root() {
  if (const char* root = std::getenv("HICCUP_ROOT"); root != nullptr && *root != '\0') return root;
  static const std::string installed = installed_data_dir();
  return installed.empty() ? std::string(HICCUP_SOURCE_DIR) : installed;
}

namespace {
// ROOT/INSTALLED when ROOT is an install's data folder (it holds INSTALLED), else ROOT/SOURCE.
std::string installed_or_source_path(const std::string& installed, const std::string& source) {
  const std::string root = repo_root();
  std::error_code ec;
  return fs::exists(root + "/" + installed, ec) ? root + "/" + installed : root + "/" + source;
}
}  // namespace

std::string default_recipes_dir() { return installed_or_source_path("recipes", "harness/agents/recipes"); }

std::string default_known_failures_path() {
  return installed_or_source_path("known-failures.json", "harness/agents/known-failures.json");
}

std::string agent_cache_dir() {
  // As scripts/install_agents.sh reads it: "${HICCUP_AGENT_CACHE:-$root/.cache/npm}".
  if (const char* cache = std::getenv("HICCUP_AGENT_CACHE"); cache != nullptr && *cache != '\0') {
    std::error_code ec;
    const fs::path absolute = fs::absolute(cache, ec);
    return ec ? std::string(cache) : absolute.string();
  }
  return repo_root() + "/.cache/npm";
}

std::string agent_binary(const Recipe& recipe) {
  if (recipe.binary.empty() || fs::path(recipe.binary).is_absolute()) return recipe.binary;
  const std::string_view prefix = kAgentCachePrefix;
  if (recipe.binary.rfind(prefix, 0) == 0) return agent_cache_dir() + "/" + recipe.binary.substr(prefix.size());
  return repo_root() + "/" + recipe.binary;
}

std::vector<std::string> recipe_names(const std::string& recipes_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(recipes_dir, ec)) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Recipe load_recipe(const std::string& name_or_path, const std::string& recipes_dir) {
  fs::path path = name_or_path;
  if (path.extension() != ".json") path = fs::path(recipes_dir) / (name_or_path + ".json");
  std::ifstream in(path);
  if (!in) {
    std::string known;
    for (const auto& n : recipe_names(recipes_dir)) known += (known.empty() ? "" : ", ") + n;
    throw std::runtime_error("unknown agent \"" + name_or_path + "\" (known: " +
                             (known.empty() ? std::string("none") : known) + "; or pass a recipe .json path)");
  }
  std::stringstream text;
  text << in.rdbuf();
  std::string error;
  const std::optional<json> parsed = parse_json_text(text.str(), {}, error);
  if (!parsed) throw std::runtime_error(path.string() + ": " + error);
  const json& j = *parsed;
  try {
    return recipe_from_json(j);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path.string() + ": " + e.what());
  }
}

}  // namespace harness::agents
