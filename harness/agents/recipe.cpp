// Recipe loading: JSON files under harness/agents/recipes/, decoded with field-naming errors.
#include "harness/agents/recipe.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "harness/scenario_io.h"
#include "mock_server/faults.h"
#include "mock_server/json_text.h"
#include "mock_server/mcp/tool_script.h"

namespace harness::agents {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// What a message says it found: the type and, for a scalar, the value (mock::found_text).
std::string found(const json& j) { return mock::found_text(j); }

std::string quote_text(std::string_view s) { return mock::json_text::quote_input(s, 80); }

std::string at(const std::string& base, std::string_view key) { return base + "/" + pointer_escape(key); }
std::string at(const std::string& base, std::size_t index) { return base + "/" + std::to_string(index); }

/// Reads a recipe's fields, recording every problem (pointer, message) instead of stopping at the
/// first: a recipe author sees all that is wrong in one go.
class RecipeReader {
 public:
  std::vector<RecipeProblem> problems;

  void bad(std::string pointer, std::string message) { problems.push_back({std::move(pointer), std::move(message)}); }

  /// Reports each key of `obj` (at `pointer`) not in `known`.
  void only_keys(const json& obj, const std::string& pointer, std::initializer_list<std::string_view> known) {
    std::string list;
    for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    for (const auto& [k, v] : obj.items()) {
      (void)v;
      if (std::find(known.begin(), known.end(), k) == known.end()) {
        bad(at(pointer, k), "unknown field " + quote_text(k) + " (known: " + list + ")");
      }
    }
  }

  /// `obj[key]` as a string; absent: "" (a problem when `required`).
  std::string str(const json& obj, const std::string& pointer, const char* key, bool required) {
    if (!obj.contains(key)) {
      if (required) bad(pointer, std::string("missing required field \"") + key + "\"");
      return {};
    }
    if (!obj[key].is_string()) {
      bad(at(pointer, key), "expected a string, found " + found(obj[key]));
      return {};
    }
    if (required && obj[key].get_ref<const std::string&>().empty()) {
      bad(at(pointer, key), "expected a non-empty string");
      return {};
    }
    return obj[key].get<std::string>();
  }

  /// `obj[key]` as a non-empty array of strings, each element checked.
  void strings(const json& obj, const std::string& pointer, const char* key, bool required,
               std::vector<std::string>& out) {
    if (!obj.contains(key)) {
      if (required) bad(pointer, std::string("missing required field \"") + key + "\"");
      return;
    }
    const json& a = obj[key];
    const std::string p = at(pointer, key);
    if (!a.is_array() || a.empty()) {
      bad(p, "expected a non-empty array of strings, found " + (a.is_array() ? std::string("an empty array") : found(a)));
      return;
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i].is_string()) out.push_back(a[i].get<std::string>());
      else bad(at(p, i), "expected a string, found " + found(a[i]));
    }
  }

  /// A JSON pointer given as a string (RFC 6901: empty, or '/'-separated with ~0 ~1 escapes).
  static bool pointer_ok(const std::string& p) {
    try {
      (void)json::json_pointer(p);
      return !p.empty();
    } catch (const json::exception&) {
      return false;
    }
  }

  void read(const json& j, Recipe& r) {
    if (!j.is_object()) {
      bad("", "expected a recipe object at the top level, found " + found(j));
      return;
    }
    only_keys(j, "", {"name", "version", "description", "provider", "install", "binary", "argv", "model", "env",
                      "home_files", "tool", "max_attempts", "success_exit_codes", "exit_codes", "timeout_s", "output",
                      "cancel", "mcp", "resumes_truncated_answer"});
    r.name = str(j, "", "name", true);
    r.version = str(j, "", "version", false);
    r.description = str(j, "", "description", false);
    if (j.contains("provider")) r.provider = str(j, "", "provider", true);
    r.install_hint = str(j, "", "install", false);
    r.binary = str(j, "", "binary", false);
    r.model = str(j, "", "model", false);
    strings(j, "", "argv", true, r.argv);
    if (j.contains("env")) {
      if (!j["env"].is_object()) {
        bad("/env", "expected an object of strings, found " + found(j["env"]));
      } else {
        for (const auto& [k, v] : j["env"].items()) {
          if (v.is_string()) r.env[k] = v.get<std::string>();
          else bad(at("/env", k), "expected a string, found " + found(v));
        }
      }
    }
    if (j.contains("home_files")) {
      if (!j["home_files"].is_object()) {
        bad("/home_files", "expected an object: relative path → content, found " + found(j["home_files"]));
      } else {
        for (const auto& [k, v] : j["home_files"].items()) {
          if (k.empty() || k.front() == '/' || k.find("..") != std::string::npos) {
            bad(at("/home_files", k), "expected a relative path inside HOME as the key, found " + quote_text(k));
          } else if (k.back() == '/' && !v.is_null()) {
            bad(at("/home_files", k), "a folder (path ending in /) takes null, found " + found(v));
          } else {
            r.home_files[k] = v;
          }
        }
      }
    }
    if (j.contains("tool")) {
      const json& t = j["tool"];
      if (!t.is_object()) {
        bad("/tool", "expected {\"name\", \"command_arg\"}, found " + found(t));
      } else {
        only_keys(t, "/tool", {"name", "command_arg"});
        r.tool_name = str(t, "/tool", "name", true);
        r.tool_command_arg = str(t, "/tool", "command_arg", true);
      }
    }
    if (j.contains("max_attempts")) {
      const json& m = j["max_attempts"];
      if (m.is_number_integer() && m.get<long long>() >= 1 && m.get<long long>() <= 1000) r.max_attempts = m.get<int>();
      else bad("/max_attempts", "expected an integer in 1..1000, found " + found(m));
    }
    if (j.contains("resumes_truncated_answer")) {
      const json& b = j["resumes_truncated_answer"];
      if (b.is_boolean()) r.resumes_truncated_answer = b.get<bool>();
      else bad("/resumes_truncated_answer", "expected true or false, found " + found(b));
    }
    if (j.contains("success_exit_codes")) {
      const json& codes = j["success_exit_codes"];
      r.success_exit_codes.clear();
      if (!codes.is_array()) {
        bad("/success_exit_codes", "expected an array of integers, found " + found(codes));
      } else {
        for (std::size_t i = 0; i < codes.size(); ++i) {
          const json& c = codes[i];
          if (c.is_number_integer() && c.get<long long>() >= 0 && c.get<long long>() <= 255) r.success_exit_codes.push_back(c.get<int>());
          else bad(at("/success_exit_codes", i), "expected an exit code (an integer in 0..255), found " + found(c));
        }
      }
    }
    if (j.contains("exit_codes")) {
      const json& e = j["exit_codes"];
      if (!e.is_object()) {
        bad("/exit_codes", "expected an object: exit code → meaning, found " + found(e));
      } else {
        for (const auto& [k, v] : e.items()) {
          int code = -1;
          const auto [end, ec] = std::from_chars(k.data(), k.data() + k.size(), code);
          const bool key_ok = ec == std::errc() && end == k.data() + k.size() && code >= 0 && code <= 255;
          if (!key_ok) bad(at("/exit_codes", k), "expected an exit code (0..255) as the key, found " + quote_text(k));
          if (!v.is_string()) bad(at("/exit_codes", k), "expected a string, found " + found(v));
          if (key_ok && v.is_string()) r.exit_code_meanings[code] = v.get<std::string>();
        }
      }
    }
    if (j.contains("output")) read_output(j["output"], r);
    if (j.contains("cancel")) read_cancel(j["cancel"], r);
    if (j.contains("mcp")) read_mcp(j["mcp"], r);
    if (j.contains("timeout_s")) {
      const json& t = j["timeout_s"];
      if (t.is_number() && t.get<double>() > 0 && t.get<double>() <= 86400) r.timeout_s = t.get<double>();
      else bad("/timeout_s", "expected a number of seconds in (0, 86400], found " + found(t));
    }
  }

  /// A {JSON pointer: value} rule matching a JSON line (failure_lines, shown_text's retract); nullopt
  /// (problems recorded) when it is not a non-empty object keyed by pointers.
  std::optional<std::map<std::string, json>> line_rule(const json& rule, const std::string& pointer) {
    if (!rule.is_object() || rule.empty()) {
      bad(pointer, "expected a non-empty {JSON pointer: value} object, found " +
                       (rule.is_object() ? std::string("an empty object") : found(rule)));
      return std::nullopt;
    }
    std::map<std::string, json> m;
    bool ok = true;
    for (const auto& [p, v] : rule.items()) {
      if (!pointer_ok(p)) {
        bad(at(pointer, p), "expected a JSON pointer (\"/…\") as the key, found " + quote_text(p));
        ok = false;
      }
      m[p] = v;
    }
    if (!ok) return std::nullopt;
    return m;
  }

  /// An array of line rules at `pointer` (failure_lines, retract's attempt_lines), each checked.
  std::vector<std::map<std::string, json>> line_rules(const json& rules, const std::string& pointer) {
    std::vector<std::map<std::string, json>> out;
    if (!rules.is_array()) {
      bad(pointer, "expected an array of {JSON pointer: value} objects, found " + found(rules));
      return out;
    }
    for (std::size_t i = 0; i < rules.size(); ++i) {
      if (auto m = line_rule(rules[i], at(pointer, i))) out.push_back(std::move(*m));
    }
    return out;
  }

  /// shown_text's optional `notices` ([{starts, ends}]) and `retract` ({where, attempt_lines}).
  void read_shown_text_extras(const json& t, const std::string& tp, Recipe& r) {
    if (t.contains("notices")) {
      const json& n = t["notices"];
      if (!n.is_array()) {
        bad(tp + "/notices", "expected an array of {\"starts\": marker, \"ends\": marker} objects, found " + found(n));
      } else {
        for (std::size_t i = 0; i < n.size(); ++i) {
          const std::string np = at(tp + "/notices", i);
          if (!n[i].is_object()) {
            bad(np, "expected {\"starts\": marker, \"ends\": marker}, found " + found(n[i]));
            continue;
          }
          only_keys(n[i], np, {"starts", "ends"});
          // str reports a missing, empty or non-string `starts`.
          Recipe::Notice notice{str(n[i], np, "starts", true), str(n[i], np, "ends", false)};
          if (!notice.starts.empty()) r.shown_text_notices.push_back(std::move(notice));
        }
      }
    }
    if (t.contains("retract")) {
      const json& x = t["retract"];
      const std::string xp = tp + "/retract";
      if (!x.is_object()) {
        bad(xp, "expected {\"where\": {JSON pointer: value}, \"attempt_lines\": [{JSON pointer: value}]}, found " + found(x));
        return;
      }
      only_keys(x, xp, {"where", "attempt_lines"});
      if (!x.contains("where")) {
        bad(xp, "missing required field \"where\" (the line that takes the attempt's text back)");
      } else if (auto m = line_rule(x["where"], xp + "/where")) {
        r.shown_text_retract = std::move(*m);
      }
      if (x.contains("attempt_lines")) r.shown_text_attempt_lines = line_rules(x["attempt_lines"], xp + "/attempt_lines");
    }
  }

  void read_output(const json& o, Recipe& r) {
    if (!o.is_object()) {
      bad("/output", "expected {\"stream\": \"stdout\"|\"stderr\", \"failure_markers\": [strings], …}, found " + found(o));
      return;
    }
    only_keys(o, "/output", {"stream", "failure_markers", "failure_lines", "shown_text"});
    if (o.contains("stream")) {
      const std::string stream = str(o, "/output", "stream", true);
      if (stream == "stdout" || stream == "stderr") r.output_stream = stream;
      else if (o["stream"].is_string()) bad("/output/stream", "expected \"stdout\" or \"stderr\", found " + quote_text(stream));
    }
    if (o.contains("shown_text")) {
      const json& t = o["shown_text"];
      const std::string tp = "/output/shown_text";
      if (!t.is_object()) {
        bad(tp, "expected {\"where\": {JSON pointer: string}, \"pointer\": JSON pointer of the text}, found " + found(t));
      } else {
        only_keys(t, tp, {"where", "pointer", "notices", "retract"});
        read_shown_text_extras(t, tp, r);
        if (!t.contains("pointer")) {
          bad(tp, "missing required field \"pointer\" (the JSON pointer of the text)");
        } else if (!t["pointer"].is_string() || !pointer_ok(t["pointer"].get<std::string>())) {
          bad(tp + "/pointer", "expected a JSON pointer (\"/…\"), found " + found(t["pointer"]));
        } else {
          r.shown_text_pointer = t["pointer"].get<std::string>();
        }
        if (t.contains("where")) {
          if (!t["where"].is_object()) {
            bad(tp + "/where", "expected an object: JSON pointer → string, found " + found(t["where"]));
          } else {
            for (const auto& [p, v] : t["where"].items()) {
              if (!pointer_ok(p)) bad(at(tp + "/where", p), "expected a JSON pointer (\"/…\") as the key, found " + quote_text(p));
              else if (!v.is_string()) bad(at(tp + "/where", p), "expected a string, found " + found(v));
              else r.shown_text_where[p] = v.get<std::string>();
            }
          }
        }
      }
    }
    if (o.contains("failure_lines")) r.failure_lines = line_rules(o["failure_lines"], "/output/failure_lines");
    if (o.contains("failure_markers")) {
      const json& markers = o["failure_markers"];
      if (!markers.is_array()) {
        bad("/output/failure_markers", "expected an array of strings, found " + found(markers));
      } else {
        for (std::size_t i = 0; i < markers.size(); ++i) {
          const json& m = markers[i];
          if (m.is_string() && !m.get<std::string>().empty()) r.failure_markers.push_back(m.get<std::string>());
          else bad(at("/output/failure_markers", i), "expected a non-empty string, found " + found(m));
        }
      }
    }
  }

  void read_mcp(const json& m, Recipe& r) {
    if (!m.is_object()) {
      bad("/mcp", "expected {\"tool_name\": string, \"tool_timeout_s\": number, \"home_files\"|\"argv\"|\"env\": …, "
                  "\"why\": string}, found " + found(m));
      return;
    }
    only_keys(m, "/mcp", {"server", "tool_name", "tool_timeout_s", "home_files", "argv", "env", "why"});
    RecipeMcp rm;
    if (m.contains("server")) {
      rm.server = str(m, "/mcp", "server", true);
      if (m["server"].is_string() && (rm.server.empty() || !mock::mcp::valid_tool_name(rm.server))) {
        bad("/mcp/server", "expected a server name of 1 to 128 of A-Z a-z 0-9 _ - ., found " + quote_text(rm.server));
      }
    }
    rm.tool_name = str(m, "/mcp", "tool_name", true);
    if (m.contains("tool_name") && m["tool_name"].is_string() && rm.tool_name.find("{tool}") == std::string::npos) {
      bad("/mcp/tool_name", "expected a name holding {tool} (e.g. \"mcp__{server}__{tool}\"), found " + quote_text(rm.tool_name));
    }
    if (m.contains("tool_timeout_s")) {
      const json& t = m["tool_timeout_s"];
      if (t.is_number() && t.get<double>() >= 0 && t.get<double>() <= 3600) rm.tool_timeout_s = t.get<double>();
      else bad("/mcp/tool_timeout_s", "expected a number of seconds in [0, 3600] (0: the CLI lets none be set), found " + found(t));
    }
    if (m.contains("home_files")) {
      if (!m["home_files"].is_object()) {
        bad("/mcp/home_files", "expected an object: relative path → content, found " + found(m["home_files"]));
      } else {
        for (const auto& [k, v] : m["home_files"].items()) {
          if (k.empty() || k.front() == '/' || k.back() == '/' || k.find("..") != std::string::npos) {
            bad(at("/mcp/home_files", k), "expected a relative file path inside HOME as the key, found " + quote_text(k));
          } else if (!v.is_object() && !v.is_string()) {
            bad(at("/mcp/home_files", k), "expected an object (merged into the recipe's) or a string (appended), found " + found(v));
          } else {
            rm.home_files[k] = v;
          }
        }
      }
    }
    strings(m, "/mcp", "argv", false, rm.argv);
    if (m.contains("env")) {
      if (!m["env"].is_object()) {
        bad("/mcp/env", "expected an object of strings, found " + found(m["env"]));
      } else {
        for (const auto& [k, v] : m["env"].items()) {
          if (v.is_string()) rm.env[k] = v.get<std::string>();
          else bad(at("/mcp/env", k), "expected a string, found " + found(v));
        }
      }
    }
    rm.why = str(m, "/mcp", "why", true);
    r.mcp = std::move(rm);
  }

  void read_cancel(const json& c, Recipe& r) {
    if (!c.is_object()) {
      bad("/cancel", "expected {\"method\": \"sigint\", \"resume_argv\": [strings], \"why\": string}, found " + found(c));
      return;
    }
    only_keys(c, "/cancel", {"method", "argv", "resume_argv", "exit_wait_s", "why"});
    RecipeCancel rc;
    rc.method = str(c, "/cancel", "method", true);
    if (c.contains("method") && c["method"].is_string() && rc.method != "sigint") {
      bad("/cancel/method", "expected \"sigint\", found " + quote_text(rc.method));
    }
    rc.why = str(c, "/cancel", "why", true);
    strings(c, "/cancel", "argv", false, rc.argv);
    strings(c, "/cancel", "resume_argv", true, rc.resume_argv);
    if (c.contains("exit_wait_s")) {
      // At most an hour: a longer wait overflowed the runner's clock arithmetic (1e300 s ended 5 ms
      // after the SIGINT, a false liveness verdict).
      const json& w = c["exit_wait_s"];
      if (w.is_number() && w.get<double>() > 0 && w.get<double>() <= 3600) rc.exit_wait_s = w.get<double>();
      else bad("/cancel/exit_wait_s", "expected a number of seconds in (0, 3600], found " + found(w));
    }
    r.cancel = std::move(rc);
  }
};

}  // namespace

std::string format_recipe_problems(const std::string& file, const std::vector<RecipeProblem>& problems) {
  std::string out;
  for (const RecipeProblem& p : problems) {
    if (!out.empty()) out += '\n';
    if (!file.empty()) out += mock::json_text::escape_input(file, 4096) + ": ";
    if (!p.pointer.empty()) out += p.pointer + ": ";
    out += p.message;
  }
  return out;
}

RecipeError::RecipeError(std::string file, std::vector<RecipeProblem> problems)
    : std::runtime_error(format_recipe_problems(file, problems)), file_(std::move(file)), problems_(std::move(problems)) {}

std::string error_lines(const std::exception& e, const std::string& prefix) {
  std::string out = prefix;
  for (const char* c = e.what(); *c != '\0'; ++c) {
    out += *c;
    if (*c == '\n') out += prefix;
  }
  return out;
}

Recipe command_recipe(const std::string& command, const std::string& provider) {
  Recipe r;
  r.name = "agent-cmd";
  r.description = "--agent-cmd: " + command;
  r.provider = provider;
  r.argv = {"/bin/sh", "-c", command};
  r.max_attempts = 10;
  return r;
}

std::string mcp_model_name(const RecipeMcp& mcp, const std::string& tool) {
  std::string out;
  const std::string& p = mcp.tool_name;
  for (std::size_t i = 0; i < p.size();) {
    if (p.compare(i, 6, "{tool}") == 0) {
      out += tool;
      i += 6;
    } else if (p.compare(i, 8, "{server}") == 0) {
      out += mcp.server;
      i += 8;
    } else {
      out += p[i++];
    }
  }
  return out;
}

Recipe with_mcp(const Recipe& recipe) {
  if (!recipe.mcp) return recipe;
  Recipe r = recipe;
  const RecipeMcp& m = *recipe.mcp;
  for (const auto& [path, content] : m.home_files) {
    auto it = r.home_files.find(path);
    if (it == r.home_files.end()) {
      r.home_files[path] = content;
    } else if (it->second.is_object() && content.is_object()) {
      it->second.merge_patch(content);
    } else if (it->second.is_string() && content.is_string()) {
      it->second = it->second.get<std::string>() + content.get<std::string>();
    } else {
      it->second = content;
    }
  }
  auto append = [&](std::vector<std::string>& argv) { argv.insert(argv.end(), m.argv.begin(), m.argv.end()); };
  append(r.argv);
  if (r.cancel) {
    if (!r.cancel->argv.empty()) append(r.cancel->argv);
    append(r.cancel->resume_argv);
  }
  for (const auto& [k, v] : m.env) r.env[k] = v;
  return r;
}

Recipe recipe_from_json(const json& j) {
  RecipeReader reader;
  Recipe r;
  reader.read(j, r);
  if (!reader.problems.empty()) throw RecipeError("", std::move(reader.problems));
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
  // A UTF-8 byte order mark at the start is accepted and ignored, as in scenario files (RFC 8259
  // §8.1 lets a parser ignore one; nlohmann's lexer skips it): docs/AGENTS.md "Recipes".
  LoadProblem problem;
  const std::optional<json> parsed = parse_json_text(text.str(), {}, problem);
  if (!parsed) throw RecipeError(path.string(), {{problem.pointer, problem.message}});
  try {
    return recipe_from_json(*parsed);
  } catch (const RecipeError& e) {
    throw RecipeError(path.string(), e.problems());
  }
}

}  // namespace harness::agents
