// Scenario loader and writer: validation of SCENARIO-FORMAT.md in two phases and a third (the shape
// of every field, then cross-field rules such as a fault's after_event against its attempt's events,
// then the statuses the scenario's provider sends), pointer-precise problems, and the stable-order
// writer.
#include "harness/scenario_io.h"

#include "mock_server/faults.h"
#include "mock_server/json_text.h"
#include "mock_server/wire_format.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <type_traits>
#include <variant>

#include "runtime_under_test/codec.h"
#include "runtime_under_test/defects.h"
#include "runtime_under_test/retry_coordinator.h"
#include "runtime_under_test/runtime.h"

namespace harness {
namespace {

using nlohmann::json;

std::string too_large(std::uintmax_t bytes) {
  return "the file is " + std::to_string(bytes) + " bytes; scenario files are limited to " +
         std::to_string(kMaxScenarioBytes) + " bytes";
}

// Thrown by parse_json_bounded when the text nests deeper than mock::kMaxJsonDepth.
struct TooDeep {};

// Thrown by parse_json_bounded when an object names a key twice: `pointer` is the JSON pointer of
// the second occurrence. RFC 8259 section 4 says the names of an object SHOULD be unique and that
// parsers then differ; nlohmann keeps the last, so a scenario that names "faults" twice in a turn
// would lose the first list without a word.
struct DuplicateKey {
  std::string pointer;
};

// Thrown by parse_json_bounded for a number beyond a double's range (1e400), which nlohmann reports
// as out_of_range.406 (not a parse_error, so it used to escape every caller): `pointer` is the
// JSON pointer of the number, `byte` where the parser stood (1-based), `token` its text.
struct NumberOutOfRange {
  std::string pointer;
  std::size_t byte = 0;
  std::string token;
};

/// The message of a NumberOutOfRange, without its pointer.
std::string out_of_range_message(const NumberOutOfRange& n) {
  return "number " + mock::json_text::escape_input(n.token, 40) + " at byte " + std::to_string(n.byte) +
         " is out of range (JSON numbers must fit a double, at most about 1.8e308 in magnitude)";
}

/// nlohmann's parse_error text without its "[json.exception.parse_error.101] " prefix, made fit to
/// quote: it quotes the bytes read last, which may end inside a UTF-8 character or hold a control.
std::string parse_error_text(const nlohmann::json::parse_error& e) {
  std::string what = e.what();
  const auto pos = what.find("] ");
  if (pos != std::string::npos) what = what.substr(pos + 2);
  return mock::json_text::escape_input(what, 400);
}

/// "invalid json at byte N" (1-based, as nlohmann's parse_error::byte counts), or, when the parser
/// ran past the last byte (a truncated file; it counts the end as one byte more), "invalid json:
/// the text ends after byte SIZE".
std::string json_error_position(std::size_t byte, std::size_t size) {
  if (byte > size) return "invalid json: the text ends after byte " + std::to_string(size);
  return "invalid json at byte " + std::to_string(byte);
}

const char* const kDuplicateKeyMessage =
    "this key appears twice in its object; a JSON parser keeps only one of the two (which one differs), "
    "so remove or merge one";

// nlohmann's DOM builder, counting depth as containers open and refusing a key its object already
// has. Not a parser callback: after every object the callback parser scans the whole enclosing
// array for discarded values, so a scenario with N events took O(N²) (200,000 events: 7 s of
// CPU, blocking `hiccup serve`'s event loop).
class BoundedDomParser : public nlohmann::detail::json_sax_dom_parser<json> {
 public:
  BoundedDomParser(json& root, bool refuse_duplicate_keys)
      : json_sax_dom_parser(root, /*allow_exceptions=*/true), refuse_duplicates_(refuse_duplicate_keys) {}
  bool null() { element(); return json_sax_dom_parser::null(); }
  bool boolean(bool v) { element(); return json_sax_dom_parser::boolean(v); }
  bool number_integer(json::number_integer_t v) { element(); return json_sax_dom_parser::number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { element(); return json_sax_dom_parser::number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& s) {
    element();
    return json_sax_dom_parser::number_float(v, s);
  }
  bool string(json::string_t& v) { element(); return json_sax_dom_parser::string(v); }
  bool binary(json::binary_t& v) { element(); return json_sax_dom_parser::binary(v); }
  bool start_object(std::size_t n) {
    open(true);
    return json_sax_dom_parser::start_object(n);
  }
  bool key(json::string_t& k) {
    Level& level = levels_.back();
    if (refuse_duplicates_ && !level.keys.insert(k).second) {
      level.key = k;
      throw DuplicateKey{pointer()};
    }
    level.key = k;
    return json_sax_dom_parser::key(k);
  }
  bool end_object() { levels_.pop_back(); return json_sax_dom_parser::end_object(); }
  bool start_array(std::size_t n) {
    open(false);
    return json_sax_dom_parser::start_array(n);
  }
  bool end_array() { levels_.pop_back(); return json_sax_dom_parser::end_array(); }
  // nlohmann reports a number beyond a double's range through the SAX error callback as
  // out_of_range 406; it gets the pointer of the value being read here.
  template <class Exception>
  bool parse_error(std::size_t position, const std::string& last_token, const Exception& ex) {
    if constexpr (std::is_same_v<Exception, nlohmann::detail::out_of_range>) {
      throw NumberOutOfRange{value_pointer(), position, last_token};
    }
    return json_sax_dom_parser::parse_error(position, last_token, ex);
  }

 private:
  // One open container: an object's keys so far and its current key, or an array's current index.
  struct Level {
    bool object = false;
    std::set<std::string, std::less<>> keys;
    std::string key;
    std::size_t index = 0;
    bool started = false;
  };
  // A value begins: inside an array it is the next element.
  void element() {
    if (levels_.empty() || levels_.back().object) return;
    Level& level = levels_.back();
    if (level.started) ++level.index;
    level.started = true;
  }
  void open(bool object) {
    if (levels_.size() >= mock::kMaxJsonDepth) throw TooDeep{};
    element();
    levels_.push_back(Level{object, {}, {}, 0, false});
  }
  std::string pointer() const {
    std::string out;
    for (const Level& level : levels_) {
      out += '/';
      if (!level.object) {
        out += std::to_string(level.index);
        continue;
      }
      out += pointer_escape(level.key);
    }
    return out;
  }
  // The pointer of the value about to be read (in an array, the next element).
  std::string value_pointer() const {
    if (levels_.empty() || levels_.back().object) return pointer();
    const Level& last = levels_.back();
    std::string out = pointer();
    out.erase(out.rfind('/'));
    return out + "/" + std::to_string(last.started ? last.index + 1 : 0);
  }
  std::vector<Level> levels_;
  bool refuse_duplicates_;
};

// json::parse with a depth limit enforced by the parser itself, as it descends: nlohmann's parser
// is iterative, but copies, dumps and our validator recurse and overflow the stack near 100,000
// levels. Counting in the parser (not in a text scan) also counts brackets after a `"` in a
// `//` comment right. Throws TooDeep, DuplicateKey, or json::parse_error for invalid JSON (UTF-8
// included).
json parse_json_bounded(std::string_view text, bool ignore_comments, bool refuse_duplicate_keys = true) {
  json root;
  BoundedDomParser sax(root, refuse_duplicate_keys);
  json::sax_parse(text.begin(), text.end(), &sax, nlohmann::detail::input_format_t::json, /*strict=*/true,
                  ignore_comments);
  return root;
}

std::string type_of(const json& j) { return mock::found_text(j); }

std::string quote(std::string_view s) { return json(std::string(s)).dump(); }

/// Seconds as a message shows them: whole numbers as such ("3600"), others as they are ("0.5").
std::string seconds_text(double s) {
  if (std::isfinite(s) && s == std::floor(s) && std::fabs(s) < 9e15) return std::to_string(static_cast<long long>(s));
  std::ostringstream out;
  out << s;
  return out.str();
}

bool valid_name(const std::string& s) {
  if (s.empty()) return false;
  auto lower_digit = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!lower_digit(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return lower_digit(c) || c == '-'; });
}

std::string known_defects() {
  std::string out;
  for (const auto& info : rut::defect_catalogue()) {
    if (!out.empty()) out += ", ";
    out += info.name;
  }
  return out;
}

// Validation in three concerns, in the order a document is read (DocumentReader): the shape of
// every field on its own (ShapeReader: its type, its range, its known sub-fields), the rules
// between fields (CrossFieldRules: a fault's after_event against its attempt's events, an
// interrupt against the turns, ids across calls, what a non-streaming answer cannot hold, …) and
// what the scenario's provider sends (provider_rules). A cross-field rule reads values whose
// shape is already known; each rule about an attempt runs as soon as that attempt is read, so the
// problems come in document order.

/// The problems of one document, in the order they are found, each with the file and a pointer.
struct Problems {
  std::string file;
  std::vector<LoadProblem> list;
};

/// What the three concerns share: reporting a problem, and building JSON pointers.
class Checks {
 public:
  explicit Checks(Problems& problems) : problems_(problems) {}

  static std::string at(const std::string& base, std::string_view key) {
    return base + "/" + pointer_escape(key);
  }
  static std::string at(const std::string& base, std::size_t index) {
    return base + "/" + std::to_string(index);
  }

 protected:
  void problem(const std::string& pointer, std::string message) {
    problems_.list.push_back({problems_.file, pointer, std::move(message)});
  }

 private:
  Problems& problems_;
};

// ---- phase 1: the shape of every field ----------------------------------------------------------

/// Reads each field of a scenario into its value, checking the field on its own: its type, its
/// range, the keys it may hold (a field that needs another of its own object, as reuse_id needs id,
/// included). Never relates two fields of the document (CrossFieldRules does).
class ShapeReader : public Checks {
 public:
  using Checks::Checks;

  /// Reports keys of `obj` not in `allowed`.
  void only_keys(const json& obj, const std::string& pointer,
                 std::initializer_list<std::string_view> allowed) {
    for (const auto& [key, value] : obj.items()) {
      (void)value;
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string list;
        for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        problem(at(pointer, key), "unknown field " + quote(key) + " (known: " + list + ")");
      }
    }
  }

  bool is_object(const json& j, const std::string& pointer) {
    if (j.is_object()) return true;
    problem(pointer, "expected an object, found " + type_of(j));
    return false;
  }
  bool is_array(const json& j, const std::string& pointer) {
    if (j.is_array()) return true;
    problem(pointer, "expected an array, found " + type_of(j));
    return false;
  }

  std::optional<std::string> string(const json& j, const std::string& pointer) {
    if (j.is_string()) return j.get<std::string>();
    problem(pointer, "expected a string, found " + type_of(j));
    return std::nullopt;
  }

  std::optional<std::string> nonempty_string(const json& j, const std::string& pointer) {
    auto s = string(j, pointer);
    if (s && s->empty()) {
      problem(pointer, "expected a non-empty string, found \"\"");
      return std::nullopt;
    }
    return s;
  }

  std::optional<long long> integer(const json& j, const std::string& pointer, long long lo,
                                   long long hi) {
    std::string range = "an integer in " + std::to_string(lo) + ".." + std::to_string(hi);
    if (hi >= (1LL << 30)) range = "an integer >= " + std::to_string(lo);
    const std::string full_range = "an integer in " + std::to_string(lo) + ".." + std::to_string(hi);
    if (j.is_number_unsigned()) {
      auto v = j.get<unsigned long long>();
      if (v > static_cast<unsigned long long>(hi)) {
        problem(pointer, "expected " + full_range + ", found " + type_of(j));
        return std::nullopt;
      }
      if (static_cast<long long>(v) < lo) {
        problem(pointer, "expected " + range + ", found " + type_of(j));
        return std::nullopt;
      }
      return static_cast<long long>(v);
    }
    if (j.is_number_integer()) {
      auto v = j.get<long long>();
      if (v < lo || v > hi) {
        problem(pointer, "expected " + (v > hi ? full_range : range) + ", found " + type_of(j));
        return std::nullopt;
      }
      return v;
    }
    problem(pointer, "expected " + range + ", found " + type_of(j));
    return std::nullopt;
  }

  /// A number >= lo (strictly greater when `strict`).
  std::optional<double> number(const json& j, const std::string& pointer, double lo, bool strict) {
    std::string lo_s = lo == std::floor(lo) ? std::to_string(static_cast<long long>(lo)) : json(lo).dump();
    std::string range = std::string("a number ") + (strict ? "> " : ">= ") + lo_s;
    if (!j.is_number()) {
      problem(pointer, "expected " + range + ", found " + type_of(j));
      return std::nullopt;
    }
    double v = j.get<double>();
    if (!std::isfinite(v) || (strict ? v <= lo : v < lo)) {
      problem(pointer, "expected " + range + ", found " + type_of(j));
      return std::nullopt;
    }
    return v;
  }

  /// A number in 0..hi (-0 read as 0). Any other value (another type, negative, larger) is one problem that says
  /// the whole range: "expected " + `expected` + ", found " + what was found.
  std::optional<double> number_up_to(const json& j, const std::string& pointer, double hi, const std::string& expected) {
    if (j.is_number()) {
      const double v = j.get<double>();
      if (std::isfinite(v) && v >= 0 && v <= hi) return v == 0 ? 0.0 : v;  // -0.0 is 0
    }
    problem(pointer, "expected " + expected + ", found " + type_of(j));
    return std::nullopt;
  }

  std::optional<std::vector<std::string>> string_array(const json& j, const std::string& pointer) {
    if (!is_array(j, pointer)) return std::nullopt;
    std::vector<std::string> out;
    bool ok = true;
    for (std::size_t i = 0; i < j.size(); ++i) {
      auto s = string(j[i], at(pointer, i));
      if (s) out.push_back(*s); else ok = false;
    }
    if (!ok) return std::nullopt;
    return out;
  }

  std::vector<std::string> defect_names(const json& j, const std::string& pointer) {
    std::vector<std::string> out;
    if (!is_array(j, pointer)) return out;
    for (std::size_t i = 0; i < j.size(); ++i) {
      auto s = string(j[i], at(pointer, i));
      if (!s) continue;
      if (!rut::defect_from_name(*s)) {
        problem(at(pointer, i), "unknown defect " + quote(*s) + " (known: " + known_defects() + ")");
        continue;
      }
      out.push_back(*s);
    }
    return out;
  }

  // ---- sections -------------------------------------------------------------------------------

  /// The top-level fields before the script and the settings: unknown keys, `$schema`, `schema`,
  /// `name`, `description`, `tags`, `catches`, `provider`, `prompt`. False when `root` is not an
  /// object (nothing more can be read).
  bool header(const json& root, Scenario& s) {
    if (!root.is_object()) {
      problem("", "expected a scenario object at the top level, found " + type_of(root));
      return false;
    }
    only_keys(root, "", {"$schema", "schema", "name", "description", "tags", "catches", "provider", "prompt",
                         "session", "interrupt", "runtime", "max_virtual_s", "turns", "tools", "expect", "websocket",
                         "timing"});
    if (root.contains("$schema")) {
      if (auto u = string(root["$schema"], "/$schema")) s.json_schema = *u;
    }
    if (!root.contains("schema")) {
      problem("", "missing required field \"schema\" in the top-level object (expected 1)");
    } else if (!root["schema"].is_number_integer() || root["schema"].get<long long>() != 1) {
      problem("/schema", "expected schema 1, found " + type_of(root["schema"]));
    }
    if (!root.contains("name")) {
      problem("", "missing required field \"name\" in the top-level object");
    } else if (auto n = string(root["name"], "/name")) {
      if (valid_name(*n)) s.name = *n;
      else problem("/name", "expected a name matching [a-z0-9][a-z0-9-]*, found " + quote(*n));
    }
    if (root.contains("description")) {
      if (auto d = string(root["description"], "/description")) s.description = *d;
    }
    if (root.contains("tags")) {
      if (auto t = string_array(root["tags"], "/tags")) s.tags = *t;
    }
    if (root.contains("catches")) s.catches = defect_names(root["catches"], "/catches");
    if (root.contains("provider")) {
      if (auto pv = string(root["provider"], "/provider")) {
        if (*pv == "gemini" || *pv == "openai-chat" || *pv == "openai-responses" || *pv == "anthropic") {
          s.script.provider = *pv;
        } else {
          problem("/provider", "unknown provider " + quote(*pv) +
                                   " (known: gemini, openai-chat, openai-responses, anthropic)");
        }
      }
    }
    if (!root.contains("prompt")) {
      problem("", "missing required field \"prompt\" in the top-level object");
    } else if (auto pr = string(root["prompt"], "/prompt")) {
      if (pr->empty()) problem("/prompt", kEmptyPrompt);
      s.prompt = *pr;
    }
    return true;
  }

  /// A user message without text is no prompt: Gemini and Anthropic answer it with 400, and the
  /// history the runtime sends no longer holds the prompt where history-integrity looks for it.
  static constexpr const char* kEmptyPrompt =
      "expected a non-empty string, found \"\" (Gemini and Anthropic reject a user message without text with 400)";

  /// `session`: an array of `{ "prompt": string }`, the prompts after the first.
  void session(const json& j, const std::string& p, std::vector<SessionPrompt>& out) {
    if (!j.is_array()) {
      problem(p, "expected an array of {\"prompt\": …} objects, found " + type_of(j));
      return;
    }
    for (std::size_t i = 0; i < j.size(); ++i) {
      const std::string ip = at(p, i);
      if (!is_object(j[i], ip)) continue;
      only_keys(j[i], ip, {"prompt"});
      if (!j[i].contains("prompt")) {
        problem(ip, "missing required field \"prompt\"");
      } else if (auto s = string(j[i]["prompt"], at(ip, "prompt"))) {
        if (s->empty()) problem(at(ip, "prompt"), kEmptyPrompt);
        else out.push_back({*s});
      }
    }
  }

  /// `interrupt`: `{turn, attempt, after_event[, after_fragment]}`, `{turn, after_calls}` or
  /// `{turn, before_attempt}` (shape only; where it points is checked by interrupt_target once the turns are read).
  void interrupt(const json& j, const std::string& p, std::optional<Interrupt>& out) {
    if (!is_object(j, p)) return;
    only_keys(j, p, {"turn", "attempt", "after_event", "after_fragment", "after_calls", "before_attempt"});
    Interrupt in;
    bool ok = true;
    if (!j.contains("turn")) {
      problem(p, "missing required field \"turn\"");
      ok = false;
    } else if (auto v = integer(j["turn"], at(p, "turn"), 0, 1LL << 30)) {
      in.turn = static_cast<int>(*v);
    } else {
      ok = false;
    }
    const bool has_event = j.contains("after_event");
    const bool has_calls = j.contains("after_calls");
    const bool has_backoff = j.contains("before_attempt");
    const int points = int{has_event} + int{has_calls} + int{has_backoff};
    if (points != 1) {
      problem(p, points > 1 ? "has more than one of \"after_event\", \"after_calls\" and \"before_attempt\": an "
                              "interrupt is one point, choose one"
                            : "needs \"after_event\" (with \"attempt\": cancel while an attempt streams), "
                              "\"after_calls\" (cancel while a committed turn's calls run) or \"before_attempt\" "
                              "(cancel during the backoff before that attempt)");
      return;
    }
    if (has_event) {
      if (auto v = integer(j["after_event"], at(p, "after_event"), 0, 1LL << 30)) in.after_event = static_cast<int>(*v);
      else ok = false;
      if (!j.contains("attempt")) {
        problem(p, "missing required field \"attempt\" (after_event counts the events of one attempt)");
        ok = false;
      } else if (auto v = integer(j["attempt"], at(p, "attempt"), 0, 1LL << 30)) {
        in.attempt = static_cast<int>(*v);
      } else {
        ok = false;
      }
      if (j.contains("after_fragment")) {
        if (auto v = integer(j["after_fragment"], at(p, "after_fragment"), 0, 10000)) in.after_fragment = static_cast<int>(*v);
        else ok = false;
      }
    } else {
      if (j.contains("after_fragment")) {
        problem(at(p, "after_fragment"), "has meaning only with \"after_event\" (the call event it cuts inside)");
        ok = false;
      }
      const char* key = has_calls ? "after_calls" : "before_attempt";
      if (j.contains("attempt")) {
        problem(at(p, "attempt"), has_calls
                                      ? "has no meaning with \"after_calls\" (the calls of the turn's committed attempt run)"
                                      : "has no meaning with \"before_attempt\" (it names the attempt the backoff precedes)");
        ok = false;
      }
      if (auto v = integer(j[key], at(p, key), has_calls ? 0 : 1, 1LL << 30)) {
        (has_calls ? in.after_calls : in.before_attempt) = static_cast<int>(*v);
      } else {
        ok = false;
      }
    }
    if (ok) out = in;
  }

  void runtime(const json& j, const std::string& p, RuntimeSettings& rt) {
    if (!is_object(j, p)) return;
    only_keys(j, p, {"model", "max_attempts", "backoff_s", "fallback_model", "idle_timeout_s",
                     "defects", "consumer", "stream", "recovery", "continuation_prompt"});
    if (j.contains("recovery")) {
      if (auto s = string(j["recovery"], at(p, "recovery"))) {
        if (*s == "hold" || *s == "continue") rt.recovery = *s;
        else problem(at(p, "recovery"), "expected \"hold\" or \"continue\", found " + quote(*s));
      }
    }
    if (j.contains("continuation_prompt"))
      rt.continuation_prompt = nonempty_string(j["continuation_prompt"], at(p, "continuation_prompt"));
    if (j.contains("stream")) {
      if (j["stream"].is_boolean()) rt.stream = j["stream"].get<bool>();
      else problem(at(p, "stream"), "expected a boolean, found " + type_of(j["stream"]));
    }
    if (j.contains("model")) rt.model = string(j["model"], at(p, "model"));
    if (j.contains("max_attempts")) {
      if (auto v = integer(j["max_attempts"], at(p, "max_attempts"), 1, 100))
        rt.max_attempts = static_cast<int>(*v);
    }
    if (j.contains("backoff_s")) {
      const auto& b = j["backoff_s"];
      std::string bp = at(p, "backoff_s");
      if (is_array(b, bp)) {
        std::vector<double> steps;
        bool ok = true;
        for (std::size_t i = 0; i < b.size(); ++i) {
          if (auto v = number(b[i], at(bp, i), 0, false)) steps.push_back(*v); else ok = false;
        }
        if (ok) rt.backoff_s = steps;
      }
    }
    if (j.contains("fallback_model"))
      rt.fallback_model = nonempty_string(j["fallback_model"], at(p, "fallback_model"));
    if (j.contains("idle_timeout_s"))
      rt.idle_timeout_s = number(j["idle_timeout_s"], at(p, "idle_timeout_s"), kMinIdleTimeoutS, false);
    if (j.contains("defects")) rt.defects = defect_names(j["defects"], at(p, "defects"));
    if (j.contains("consumer")) {
      if (auto s = string(j["consumer"], at(p, "consumer"))) {
        if (*s == "headless" || *s == "subagent") rt.consumer = *s;
        else problem(at(p, "consumer"), "expected \"headless\" or \"subagent\", found " + quote(*s));
      }
    }
  }

  std::optional<mock::Event> event(const json& j, const std::string& p) {
    if (!is_object(j, p)) return std::nullopt;
    only_keys(j, p, {"text", "call", "finish", "reasoning", "after_fragment", "delay_s"});
    // The event's timing (SCENARIO-FORMAT.md "Event timing"), set on whichever event this is.
    std::optional<double> delay_s;
    if (j.contains("delay_s")) {
      // Scaled and summed, a larger one overflowed to infinity (the proxy journaled "delay_s": null).
      delay_s = number_up_to(j["delay_s"], at(p, "delay_s"), kMaxEventDelayS,
                             "a number of seconds in 0.." + std::to_string(static_cast<long long>(kMaxEventDelayS)) +
                                 " (about 11.6 days; an endless wait is a `stall` fault)");
      if (!delay_s) return std::nullopt;
    }
    std::optional<mock::Event> e = event_body(j, p);
    if (e && delay_s) std::visit([&](auto& ev) { ev.delay_s = delay_s; }, *e);
    return e;
  }

  /// An event's kind and fields (all but `delay_s`).
  std::optional<mock::Event> event_body(const json& j, const std::string& p) {
    if (j.contains("after_fragment") && !j.contains("finish")) {
      problem(at(p, "after_fragment"), "field \"after_fragment\" belongs to a finish event (a max_tokens finish that cuts the call before it)");
    }
    int kinds = static_cast<int>(j.contains("text")) + static_cast<int>(j.contains("call")) +
                static_cast<int>(j.contains("finish")) + static_cast<int>(j.contains("reasoning"));
    if (kinds != 1) {
      problem(p, "expected exactly one of \"text\", \"call\", \"finish\", \"reasoning\", found " +
                     std::to_string(kinds));
      return std::nullopt;
    }
    if (j.contains("reasoning")) {
      // {"reasoning": {"text": "…", "signature"?: "…"}} or {"reasoning": {"redacted": true,
      // "signature"?: "…"}}: SCENARIO-FORMAT.md "Reasoning".
      const auto& r = j["reasoning"];
      const std::string rp = at(p, "reasoning");
      if (!is_object(r, rp)) return std::nullopt;
      only_keys(r, rp, {"text", "signature", "redacted"});
      mock::ReasoningEvent reasoning;
      bool ok = true;
      if (r.contains("redacted")) {
        if (!r["redacted"].is_boolean()) {
          problem(at(rp, "redacted"), "expected a boolean, found " + type_of(r["redacted"]));
          ok = false;
        } else {
          reasoning.redacted = r["redacted"].get<bool>();
        }
      }
      if (reasoning.redacted) {
        if (r.contains("text")) {
          problem(at(rp, "text"), "redacted reasoning has no text (only its signature travels)");
          ok = false;
        }
      } else if (!r.contains("text")) {
        problem(rp, "missing required field \"text\"");
        ok = false;
      } else if (auto s = string(r["text"], at(rp, "text"))) {
        reasoning.text = *s;
      } else {
        ok = false;
      }
      if (r.contains("signature")) {
        // Empty would mean "the default": an explicit signature says something.
        if (auto s = nonempty_string(r["signature"], at(rp, "signature"))) reasoning.signature = *s; else ok = false;
      }
      if (!ok) return std::nullopt;
      return reasoning;
    }
    if (j.contains("text")) {
      auto s = string(j["text"], at(p, "text"));
      if (!s) return std::nullopt;
      return mock::TextEvent{*s};
    }
    if (j.contains("finish")) {
      auto s = string(j["finish"], at(p, "finish"));
      if (!s) return std::nullopt;
      auto reason = mock::finish_from_name(*s);
      if (!reason) {
        problem(at(p, "finish"), "unknown finish reason " + quote(*s) +
                                     " (known: stop, max_tokens, content_filter, malformed_call)");
        return std::nullopt;
      }
      mock::FinishEvent finish{*reason};
      if (j.contains("after_fragment")) {
        const auto v = integer(j["after_fragment"], at(p, "after_fragment"), 1, 10000);
        if (!v) return std::nullopt;
        if (*reason != mock::FinishReason::kMaxTokens) {
          problem(at(p, "after_fragment"), "a finish inside a call's arguments is the token limit's: expected finish "
                                           "\"max_tokens\", found " + quote(*s));
          return std::nullopt;
        }
        finish.after_fragment = static_cast<int>(*v);
      }
      return finish;
    }
    const auto& c = j["call"];
    std::string cp = at(p, "call");
    if (!is_object(c, cp)) return std::nullopt;
    only_keys(c, cp, {"name", "args", "id", "fragments", "reuse_id"});
    mock::CallEvent call;
    bool ok = true;
    if (!c.contains("name")) {
      problem(cp, "missing required field \"name\"");
      ok = false;
    } else if (auto s = nonempty_string(c["name"], at(cp, "name"))) {
      call.name = *s;
    } else {
      ok = false;
    }
    if (c.contains("args")) {
      if (is_object(c["args"], at(cp, "args"))) call.args = c["args"]; else ok = false;
    }
    if (c.contains("id")) {
      if (auto s = string(c["id"], at(cp, "id"))) call.id = *s; else ok = false;
    }
    if (c.contains("fragments")) {
      if (auto v = integer(c["fragments"], at(cp, "fragments"), 1, 10000)) call.fragments = static_cast<int>(*v);
      else ok = false;
    }
    if (c.contains("reuse_id")) {
      if (!c["reuse_id"].is_boolean()) {
        problem(at(cp, "reuse_id"), "expected a boolean, found " + type_of(c["reuse_id"]));
        ok = false;
      } else {
        call.reuse_id = c["reuse_id"].get<bool>();
        if (call.reuse_id && call.id.empty()) {
          problem(at(cp, "reuse_id"), "needs the \"id\" it repeats (the id of an earlier call of this attempt or of an "
                                      "earlier turn)");
          ok = false;
        }
      }
    }
    if (!ok) return std::nullopt;
    return call;
  }

  /// `turns`, required: a non-empty array. nullptr when there is nothing to read in it.
  const json* turns(const json& root) {
    if (!root.contains("turns")) {
      problem("", "missing required field \"turns\" in the top-level object");
      return nullptr;
    }
    const json& j = root["turns"];
    if (!is_array(j, "/turns")) return nullptr;
    if (j.empty()) {
      problem("/turns", "expected a non-empty array of turns, found an empty array");
      return nullptr;
    }
    return &j;
  }

  /// A turn `{"attempts": [...]}`: its attempts array when it has one (empty or not), else nullptr.
  const json* turn_attempts(const json& tj, const std::string& tp) {
    if (!is_object(tj, tp)) return nullptr;
    only_keys(tj, tp, {"attempts"});
    if (!tj.contains("attempts")) {
      problem(tp, "missing required field \"attempts\"");
      return nullptr;
    }
    const auto& aj = tj["attempts"];
    std::string ap = at(tp, "attempts");
    if (!is_array(aj, ap)) return nullptr;
    if (aj.empty()) problem(ap, "expected a non-empty array of attempts, found an empty array");
    return &aj;
  }

  /// An attempt's kind: an HTTP status (read whole here: `status`, `retry_after_s`, and no stream
  /// field), or a stream. True for a stream attempt, whose `events`, `slice_bytes` and `fault` are
  /// read next (events, slice_bytes, fault).
  bool stream_attempt(const json& j, const std::string& p, mock::Attempt& a) {
    if (!is_object(j, p)) return false;
    only_keys(j, p, {"status", "retry_after_s", "quota", "events", "fault", "slice_bytes", "websocket"});
    bool has_status = j.contains("status");
    bool has_events = j.contains("events");
    if (has_status && has_events) {
      problem(p, "expected either \"status\" or \"events\", found both");
      return false;
    }
    if (!has_status && !has_events) {
      problem(p, "expected either \"status\" or \"events\", found neither");
      return false;
    }
    if (has_status) {
      if (auto v = integer(j["status"], at(p, "status"), 400, 599)) a.status = static_cast<int>(*v);
      if (j.contains("retry_after_s")) {
        a.retry_after_s = number_up_to(j["retry_after_s"], at(p, "retry_after_s"), kMaxRetryAfterS,
                                       "a number of seconds in 0.." + std::to_string(static_cast<long long>(kMaxRetryAfterS)) +
                                           " (about 11.6 days)");
      }
      if (j.contains("quota")) {
        const std::string qp = at(p, "quota");
        const json& q = j["quota"];
        if (!q.is_string() || (q.get<std::string>() != "per_minute" && q.get<std::string>() != "per_day")) {
          problem(qp, "expected \"per_minute\" or \"per_day\" (the request quota a 429 says ran out), found " + type_of(q));
        } else if (a.status && *a.status != 429) {
          problem(qp, "field \"quota\" names the quota a 429 says ran out, found status " + std::to_string(*a.status));
        } else {
          a.quota = q.get<std::string>() == "per_day" ? mock::Quota::kPerDay : mock::Quota::kPerMinute;
        }
      }
      for (auto key : {"fault", "slice_bytes"}) {
        if (j.contains(key))
          problem(at(p, key), std::string("field \"") + key +
                                  "\" needs a stream attempt (\"events\"), found \"status\"");
      }
      return false;
    }
    for (auto key : {"retry_after_s", "quota"}) {
      if (j.contains(key))
        problem(at(p, key), std::string("field \"") + key + "\" needs a status attempt (\"status\"), found \"events\"");
    }
    return true;
  }

  /// A stream attempt's `events`, each read on its own.
  void events(const json& j, const std::string& p, mock::Attempt& a) {
    const auto& ev = j["events"];
    std::string ep = at(p, "events");
    if (is_array(ev, ep)) {
      for (std::size_t i = 0; i < ev.size(); ++i) {
        if (auto e = event(ev[i], at(ep, i))) a.events.push_back(*e);
      }
    }
  }

  /// A stream attempt's optional `slice_bytes`.
  void slice_bytes(const json& j, const std::string& p, mock::Attempt& a) {
    if (j.contains("slice_bytes")) {
      if (auto v = integer(j["slice_bytes"], at(p, "slice_bytes"), 1, 1 << 30))
        a.slice_bytes = static_cast<int>(*v);
    }
  }

  /// A stream attempt's optional `fault`, decoded in two phases by the fault catalogue (its kind,
  /// then its fields): the fault when it decoded without a problem.
  std::optional<mock::Fault> fault(const json& j, const std::string& p) {
    if (!j.contains("fault")) return std::nullopt;
    std::string fp = at(p, "fault");
    std::vector<mock::DecodeProblem> decode;
    std::optional<mock::Fault> fault;
    try {
      fault = mock::fault_from_json(j["fault"], fp, decode);
    } catch (const std::exception& e) {
      decode.push_back({fp, std::string("cannot decode fault: ") + e.what()});
    }
    for (auto& d : decode) problem(d.pointer, d.message);
    if (!decode.empty()) return std::nullopt;
    return fault;
  }

  void expect(const json& j, const std::string& p, Expect& e) {
    if (!is_object(j, p)) return;
    only_keys(j, p, {"outcome", "error", "final_text", "truncated", "executions", "requests", "waited_s"});
    if (j.contains("outcome")) {
      if (auto s = string(j["outcome"], at(p, "outcome"))) {
        if (*s == "completed" || *s == "failed") e.outcome = *s;
        else problem(at(p, "outcome"), "expected \"completed\" or \"failed\", found " + quote(*s));
      }
    }
    if (j.contains("error")) {
      if (auto s = string(j["error"], at(p, "error"))) {
        static const std::set<std::string> kErrors = {"retries_exhausted", "non_retryable", "quota_exhausted", "content_filter",
                                                      "invalid_request", "cancelled", "max_turns"};
        if (kErrors.count(*s)) e.error = *s;
        else
          problem(at(p, "error"),
                  "unknown error " + quote(*s) +
                      " (known: retries_exhausted, non_retryable, quota_exhausted, content_filter, invalid_request, cancelled, "
                      "max_turns)");
      }
    }
    if (j.contains("final_text")) e.final_text = string(j["final_text"], at(p, "final_text"));
    if (j.contains("truncated")) {
      if (!j["truncated"].is_boolean()) {
        problem(at(p, "truncated"), "expected a boolean, found " + type_of(j["truncated"]));
      } else if (e.outcome && *e.outcome == "failed") {
        problem(at(p, "truncated"), "a failed run has no answer to truncate: \"truncated\" needs outcome \"completed\"");
      } else {
        e.truncated = j["truncated"].get<bool>();
      }
    }
    if (j.contains("executions")) {
      const auto& xj = j["executions"];
      std::string xp = at(p, "executions");
      if (is_array(xj, xp)) {
        std::vector<ExpectedExecution> list;
        for (std::size_t i = 0; i < xj.size(); ++i) {
          std::string ip = at(xp, i);
          const auto& x = xj[i];
          if (!is_object(x, ip)) continue;
          only_keys(x, ip, {"name", "args", "count"});
          ExpectedExecution ex;
          if (!x.contains("name")) problem(ip, "missing required field \"name\"");
          else if (auto s = nonempty_string(x["name"], at(ip, "name"))) ex.name = *s;
          if (x.contains("args") && is_object(x["args"], at(ip, "args"))) ex.args = x["args"];
          if (!x.contains("count")) problem(ip, "missing required field \"count\"");
          else if (auto v = integer(x["count"], at(ip, "count"), 0, 1 << 30))
            ex.count = static_cast<int>(*v);
          list.push_back(std::move(ex));
        }
        e.executions = std::move(list);
      }
    }
    if (j.contains("requests")) {
      if (auto v = integer(j["requests"], at(p, "requests"), 0, 1 << 30))
        e.requests = static_cast<int>(*v);
    }
    if (j.contains("waited_s")) e.waited_s = number(j["waited_s"], at(p, "waited_s"), 0, false);
  }

  // ---- tools (SCENARIO-FORMAT.md "Tools") ------------------------------------------------------

  /// `tools`: an array of tools, each read on its own (names against each other: CrossFieldRules).
  void tools(const json& j, const std::string& p, mock::mcp::ToolScript& out) {
    if (!is_array(j, p)) return;
    for (std::size_t i = 0; i < j.size(); ++i) {
      if (auto t = tool(j[i], at(p, i))) out.tools.push_back(std::move(*t));
    }
  }

  std::optional<mock::mcp::Tool> tool(const json& j, const std::string& p) {
    if (!is_object(j, p)) return std::nullopt;
    only_keys(j, p, {"name", "description", "input_schema", "idempotent", "annotations", "calls"});
    mock::mcp::Tool t;
    bool ok = true;
    if (!j.contains("name")) {
      problem(p, "missing required field \"name\"");
      ok = false;
    } else if (auto n = string(j["name"], at(p, "name"))) {
      if (mock::mcp::valid_tool_name(*n)) {
        t.name = *n;
      } else {
        problem(at(p, "name"), "expected an MCP tool name, 1 to 128 of A-Z a-z 0-9 _ - . (MCP 2025-11-25 \"Tool names\"), "
                               "found " + mock::json_text::quote_input(*n, 80));
        ok = false;
      }
    } else {
      ok = false;
    }
    if (j.contains("description")) {
      if (auto d = string(j["description"], at(p, "description"))) t.description = *d; else ok = false;
    }
    if (j.contains("input_schema")) {
      const json& s = j["input_schema"];
      const std::string sp = at(p, "input_schema");
      if (!is_object(s, sp)) {
        ok = false;
      } else if (!s.contains("type") || s["type"] != "object") {
        problem(sp, "expected a JSON Schema for the arguments object, with \"type\": \"object\" (MCP: inputSchema), found " +
                        (s.contains("type") ? "\"type\": " + mock::json_text::escape_input(s["type"].dump(-1, ' ', false, json::error_handler_t::replace), 80)
                                            : std::string("no \"type\"")));
        ok = false;
      } else {
        t.input_schema = s;
      }
    }
    if (j.contains("idempotent")) {
      if (j["idempotent"].is_boolean()) {
        t.idempotent = j["idempotent"].get<bool>();
      } else {
        problem(at(p, "idempotent"), "expected a boolean, found " + type_of(j["idempotent"]));
        ok = false;
      }
    }
    if (j.contains("annotations")) {
      if (auto a = annotations(j["annotations"], at(p, "annotations"))) t.annotations = *a; else ok = false;
    }
    if (j.contains("calls")) {
      const json& c = j["calls"];
      const std::string cp = at(p, "calls");
      if (is_array(c, cp)) {
        for (std::size_t i = 0; i < c.size(); ++i) {
          if (auto call = tool_call(c[i], at(cp, i))) t.calls.push_back(*call); else ok = false;
        }
      } else {
        ok = false;
      }
    }
    if (!ok) return std::nullopt;
    return t;
  }

  /// MCP's tool annotations (2025-06-18 and later, schema ToolAnnotations): `title` a string, the
  /// four hints booleans. Other keys are refused (a misspelt hint would be sent and ignored).
  std::optional<json> annotations(const json& j, const std::string& p) {
    if (!is_object(j, p)) return std::nullopt;
    bool ok = true;
    for (const auto& [key, value] : j.items()) {
      const std::string kp = at(p, key);
      if (key == "title") {
        if (!value.is_string()) {
          problem(kp, "expected a string, found " + type_of(value));
          ok = false;
        }
      } else if (key == "readOnlyHint" || key == "destructiveHint" || key == "idempotentHint" || key == "openWorldHint") {
        if (!value.is_boolean()) {
          problem(kp, "expected a boolean, found " + type_of(value));
          ok = false;
        }
      } else {
        problem(kp, "unknown field " + quote(key) +
                        " (known: title, readOnlyHint, destructiveHint, idempotentHint, openWorldHint)");
        ok = false;
      }
    }
    if (!ok) return std::nullopt;
    return j;
  }

  /// One call's behaviour (`tools[].calls[i]`); which fields may go together is CrossFieldRules'.
  std::optional<mock::mcp::ToolCall> tool_call(const json& j, const std::string& p) {
    if (!is_object(j, p)) return std::nullopt;
    only_keys(j, p, {"duration_s", "result", "is_error", "jsonrpc_error", "hang", "reply_lost", "session_expired", "progress"});
    mock::mcp::ToolCall c;
    bool ok = true;
    if (j.contains("duration_s")) {
      if (auto v = number(j["duration_s"], at(p, "duration_s"), 0, false)) c.duration_s = *v; else ok = false;
    }
    if (j.contains("result")) {
      if (auto s = string(j["result"], at(p, "result"))) c.result = *s; else ok = false;
    }
    for (auto [key, field] : {std::pair{"is_error", &c.is_error}, std::pair{"hang", &c.hang},
                              std::pair{"reply_lost", &c.reply_lost}, std::pair{"session_expired", &c.session_expired}}) {
      if (!j.contains(key)) continue;
      if (j[key].is_boolean()) {
        *field = j[key].get<bool>();
      } else {
        problem(at(p, key), "expected a boolean, found " + type_of(j[key]));
        ok = false;
      }
    }
    if (j.contains("progress")) {
      if (auto v = integer(j["progress"], at(p, "progress"), 0, 1000)) c.progress = static_cast<int>(*v); else ok = false;
    }
    if (j.contains("jsonrpc_error")) {
      const json& e = j["jsonrpc_error"];
      const std::string ep = at(p, "jsonrpc_error");
      if (!is_object(e, ep)) {
        ok = false;
      } else {
        only_keys(e, ep, {"code", "message"});
        mock::mcp::JsonRpcError err;
        if (!e.contains("code")) {
          problem(ep, "missing required field \"code\" (a JSON-RPC error code, e.g. -32603)");
          ok = false;
        } else if (auto v = integer(e["code"], at(ep, "code"), -2147483648LL, 2147483647LL)) {
          err.code = *v;
        } else {
          ok = false;
        }
        if (!e.contains("message")) {
          problem(ep, "missing required field \"message\"");
          ok = false;
        } else if (auto m = nonempty_string(e["message"], at(ep, "message"))) {
          err.message = *m;
        } else {
          ok = false;
        }
        c.jsonrpc_error = err;
      }
    }
    if (!ok) return std::nullopt;
    return c;
  }

  void max_virtual_s(const json& root, Scenario& s) {
    if (root.contains("max_virtual_s")) s.max_virtual_s = number(root["max_virtual_s"], "/max_virtual_s", 0, true);
  }

  /// The scenario's `timing` object: `scale`, `max_delay_s` (docs/SCENARIO-FORMAT.md "Event timing").
  void timing(const json& root, Scenario& s) {
    if (!root.contains("timing")) return;
    const json& t = root["timing"];
    if (!is_object(t, "/timing")) return;
    only_keys(t, "/timing", {"scale", "max_delay_s"});
    if (t.contains("scale")) {
      if (auto v = number_up_to(t["scale"], "/timing/scale", kMaxTimingScale,
                                "a number in 0.." + std::to_string(static_cast<long long>(kMaxTimingScale)) +
                                    " (as --timing-scale takes)")) {
        s.script.timing.scale = *v;
      }
    }
    if (t.contains("max_delay_s")) s.script.timing.max_delay_s = number(t["max_delay_s"], "/timing/max_delay_s", 0, false);
  }

  /// The scenario's `websocket` object: `upgrade_status` (docs/SCENARIO-FORMAT.md "Over WebSocket").
  void websocket(const json& root, Scenario& s) {
    if (!root.contains("websocket") || !is_object(root["websocket"], "/websocket")) return;
    const json& w = root["websocket"];
    only_keys(w, "/websocket", {"upgrade_status"});
    if (!w.contains("upgrade_status")) return;
    const json& u = w["upgrade_status"];
    if (!u.is_number_integer() || (u != 403 && u != 404 && u != 405 && u != 426)) {
      problem("/websocket/upgrade_status", "expected 403, 404, 405 or 426 (the status refusing every upgrade), found " + type_of(u));
    } else {
      s.script.websocket_upgrade_status = u.get<int>();
    }
  }

  /// An attempt's `websocket` object: how it plays over WebSocket (docs/SCENARIO-FORMAT.md).
  void websocket_choices(const json& j, const std::string& p, mock::Attempt& a) {
    if (!j.contains("websocket")) return;
    const std::string wp = at(p, "websocket");
    const json& w = j["websocket"];
    if (!is_object(w, wp)) return;
    only_keys(w, wp, {"close_code", "string_error", "malformed_frame", "forget_response"});
    mock::WebSocketChoices c;
    if (w.contains("close_code")) {
      const json& cc = w["close_code"];
      if (!cc.is_number_integer() || (cc != 1000 && cc != 1006 && cc != 1011)) {
        problem(at(wp, "close_code"), "expected 1000, 1006 (no close frame) or 1011, found " + type_of(cc));
      } else {
        c.close_code = cc.get<int>();
      }
    }
    for (auto [key, field] : {std::pair{"string_error", &c.string_error}, std::pair{"malformed_frame", &c.malformed_frame},
                              std::pair{"forget_response", &c.forget_response}}) {
      if (!w.contains(key)) continue;
      if (!w[key].is_boolean()) {
        problem(at(wp, key), "expected a boolean, found " + type_of(w[key]));
      } else {
        *field = w[key].get<bool>();
      }
    }
    a.websocket = c;
  }
};

// ---- phase 2: rules between fields --------------------------------------------------------------

/// Rules that relate fields of a scenario whose fields each have their shape: within an attempt
/// (a cut against the call it cuts, a fault against the events), across the script (call ids, the
/// last turn, what a non-streaming answer cannot hold) and between the interrupt, the turns and
/// the runtime settings.
class CrossFieldRules : public Checks {
 public:
  using Checks::Checks;

  /// An attempt's `websocket` choices need what they act on: `string_error` a status attempt,
  /// `malformed_frame` a malformed fault, `close_code` a fault that ends the connection.
  void websocket_choices(const mock::Attempt& a, const std::string& p) {
    if (!a.websocket) return;
    const std::string wp = at(p, "websocket");
    if (a.websocket->string_error && !a.status) problem(at(wp, "string_error"), "needs a status attempt (the in-band error of a status), found \"events\"");
    if (a.websocket->malformed_frame && !(a.fault && std::holds_alternative<mock::MalformedFault>(*a.fault))) {
      problem(at(wp, "malformed_frame"), "needs a fault of kind \"malformed\"");
    }
    const bool ends = a.fault && (std::holds_alternative<mock::DisconnectFault>(*a.fault) || std::holds_alternative<mock::CutFault>(*a.fault) ||
                                  std::holds_alternative<mock::EndFault>(*a.fault));
    if (a.websocket->close_code && !ends) problem(at(wp, "close_code"), "needs a fault of kind \"disconnect\", \"cut\" or \"end\" (one that ends the connection)");
  }

  static std::string_view event_kind(const mock::Event& e) {
    if (std::holds_alternative<mock::TextEvent>(e)) return "text";
    if (std::holds_alternative<mock::CallEvent>(e)) return "call";
    if (std::holds_alternative<mock::ReasoningEvent>(e)) return "reasoning";
    return "finish";
  }

  /// A max_tokens finish with after_fragment cuts the call right before it, inside its arguments:
  /// that event must be a call that sends more fragments than the cut lets out, and the attempt's
  /// fault (`fault`, its JSON, or null; pointer `fp`) may not sit between the two. `ep`: the
  /// pointer of the attempt's events.
  void finish_cuts(const mock::Attempt& a, const std::string& ep, const json* fault, const std::string& fp) {
    for (std::size_t i = 0; i < a.events.size(); ++i) {
      const auto* f = std::get_if<mock::FinishEvent>(&a.events[i]);
      if (f == nullptr || !f->after_fragment) continue;
      const std::string cp = at(at(ep, i), "after_fragment");
      const auto* call = i > 0 ? std::get_if<mock::CallEvent>(&a.events[i - 1]) : nullptr;
      if (call == nullptr) {
        problem(cp, "expected the event before this finish to be the call it cuts, found " +
                        (i > 0 ? "a " + std::string(event_kind(a.events[i - 1])) + " event" : std::string("no event")));
        continue;
      }
      // As many fragments as the formats that stream arguments send (fewer for a short text).
      const std::size_t sent = mock::split_fragments(call->args.is_null() ? std::string("{}") : call->args.dump(),
                                                     std::max(call->fragments, 1)).size();
      if (static_cast<std::size_t>(*f->after_fragment) >= sent) {
        const std::string args_text = call->args.is_null() ? std::string("{}") : call->args.dump();
        problem(cp, "expected fewer than the " + std::to_string(sent) + " argument fragment(s) the call before it sends (events/" +
                        std::to_string(i - 1) + "/call/fragments is " +
                        (call->fragments > 0 ? std::to_string(call->fragments) : std::string("unset, default 1")) +
                        (sent < static_cast<std::size_t>(std::max(call->fragments, 1))
                             ? ", but its arguments' JSON text has only " + std::to_string(args_text.size()) + " bytes"
                             : std::string()) +
                        "; at least 2 fragments are needed to cut inside the arguments), found " + std::to_string(*f->after_fragment));
      }
      // A fault between the cut call and its finish: "after event i-1" would claim the call whole.
      if (fault != nullptr && fault->is_object()) {
        const auto ae = fault->find("after_event");
        if (ae != fault->end() && ae->is_number_integer() && ae->get<long long>() == static_cast<long long>(i)) {
          problem(fp + "/after_event",
                  "expected a fault outside the call events/" + std::to_string(i - 1) + " that the max_tokens finish events/" +
                      std::to_string(i) + " cuts (after_event " + std::to_string(i) +
                      " would come after that call whole); to cut it earlier use after_event " + std::to_string(i - 1) +
                      " with after_fragment");
        }
      }
    }
  }

  /// A provider sends reasoning before the part it leads to (a thinking block before the text or
  /// tool_use, a reasoning item before the message or function_call, a thought before the call
  /// that carries its signature), never as the last part of an answer: a reasoning event must be
  /// followed by a text or call event. (A fault may still fall right after it.) Reasoning events
  /// may follow one another (an Anthropic thinking block, then a redacted_thinking block:
  /// docs.claude.com "Extended thinking", "Thinking redaction"); the last of such a run must lead.
  /// `ep`: the pointer of the attempt's events.
  void reasoning_leads(const mock::Attempt& a, const std::string& ep) {
    for (std::size_t i = 0; i < a.events.size(); ++i) {
      if (!std::holds_alternative<mock::ReasoningEvent>(a.events[i])) continue;
      if (i + 1 < a.events.size() && std::holds_alternative<mock::ReasoningEvent>(a.events[i + 1])) continue;
      const bool leads = i + 1 < a.events.size() && (std::holds_alternative<mock::TextEvent>(a.events[i + 1]) ||
                                                     std::holds_alternative<mock::CallEvent>(a.events[i + 1]));
      if (!leads) {
        problem(at(ep, i), "expected a text or call event right after reasoning (a provider sends reasoning before the "
                           "part it leads to, never as the last part of an answer), found " +
                               (i + 1 < a.events.size() ? "a " + std::string(event_kind(a.events[i + 1])) + " event"
                                                        : std::string("no event")));
      }
    }
  }

  /// Places a decoded `fault` (pointer `fp`) on stream attempt `a`, whose JSON holds `count` events:
  /// its after_event within them and, with after_fragment, the call it cuts. `a.fault` is set only
  /// when the fault holds to these rules (the rules after it read no fault that broke one).
  void place_fault(const mock::Fault& fault, std::size_t count, const std::string& fp, mock::Attempt& a) {
    auto after = std::visit([](const auto& f) { return f.after_event; }, fault);
    if (after && (*after < 0 || static_cast<std::size_t>(*after) > count)) {
      problem(at(fp, "after_event"), "expected an integer in 0.." + std::to_string(count) +
                                         " (the attempt's event count), found integer " +
                                         std::to_string(*after));
    } else if (auto frag = mock::fault_after_fragment(fault)) {
      // The fault cuts a call: the event after_event names must be one, with more fragments
      // than go out before the fault (else the whole call is sent and nothing is cut).
      const std::size_t at_event = static_cast<std::size_t>(after.value_or(0));
      const auto* call = at_event < a.events.size() ? std::get_if<mock::CallEvent>(&a.events[at_event]) : nullptr;
      if (call == nullptr) {
        problem(at(fp, "after_fragment"),
                "expected event " + std::to_string(at_event) + " (after_event) to be a call, found " +
                    (at_event < a.events.size() ? "a " + std::string(event_kind(a.events[at_event])) + " event"
                                                : std::string("no event")));
      } else if (mock::cut_by_finish(a.events, at_event)) {
        problem(at(fp, "after_fragment"),
                "expected a call its finish does not cut already: events/" + std::to_string(at_event + 1) +
                    " (a max_tokens finish with after_fragment) cuts events/" + std::to_string(at_event));
      } else if (*frag >= std::max(call->fragments, 1)) {
        problem(at(fp, "after_fragment"),
                "expected fewer than the call's " + std::to_string(std::max(call->fragments, 1)) +
                    " fragment(s) (events/" + std::to_string(at_event) + "/call/fragments), found " +
                    std::to_string(*frag));
      } else {
        a.fault = fault;
      }
    } else {
      a.fault = fault;
    }
  }

  /// The server sends a scripted id as written. A call whose id repeats the id of an earlier call
  /// of its attempt, or of a call of an earlier turn, is a provider misbehaving (SCENARIO-FORMAT.md
  /// "Call ids"): only on purpose, marked `reuse_id`; unmarked it is a mistake. A `reuse_id` call
  /// must repeat one. Attempts of one turn are the same answer asked for again: they may share ids.
  void call_ids(const std::vector<mock::Turn>& turns) {
    std::set<std::string> earlier_turns;  // ids the calls of the turns before this one have
    for (std::size_t t = 0; t < turns.size(); ++t) {
      std::set<std::string> this_turn;
      for (std::size_t a = 0; a < turns[t].attempts.size(); ++a) {
        const mock::Attempt& at_a = turns[t].attempts[a];
        std::set<std::string> this_attempt;
        for (std::size_t i = 0; i < at_a.events.size(); ++i) {
          const auto* call = std::get_if<mock::CallEvent>(&at_a.events[i]);
          if (call == nullptr || call->id.empty()) continue;
          const std::string cp = "/turns/" + std::to_string(t) + "/attempts/" + std::to_string(a) + "/events/" +
                                 std::to_string(i) + "/call";
          const bool in_attempt = this_attempt.contains(call->id);
          const bool in_earlier_turn = earlier_turns.contains(call->id);
          if (call->reuse_id && !in_attempt && !in_earlier_turn) {
            problem(cp + "/reuse_id", "no earlier call has the id " + mock::json_text::quote_input(call->id) +
                                          " (an earlier call of this attempt, or a call of an earlier turn): nothing "
                                          "is reused; drop \"reuse_id\" or give the call the id it repeats");
          } else if (!call->reuse_id && in_attempt) {
            problem(cp + "/id", "expected an id no other call of this attempt has, found " +
                                    mock::json_text::quote_input(call->id) +
                                    " again (a provider that repeats an id on purpose: mark the call \"reuse_id\": true)");
          } else if (!call->reuse_id && in_earlier_turn) {
            problem(cp + "/id", "expected an id no call of an earlier turn has, found " +
                                    mock::json_text::quote_input(call->id) +
                                    " again (a provider that reuses an id on purpose: mark the call \"reuse_id\": true)");
          }
          this_attempt.insert(call->id);
          this_turn.insert(call->id);
        }
      }
      earlier_turns.insert(this_turn.begin(), this_turn.end());
    }
  }

  /// The interrupt must point at something the script can reach: a scripted turn; with
  /// after_event a text or call event of a streamed attempt of it; with after_calls a count below
  /// the calls of at least one of its attempts (else every call has run and nothing is cancelled).
  void interrupt_target(const Interrupt& in, const std::vector<mock::Turn>& turns) {
    const std::string p = "/interrupt";
    if (in.turn >= static_cast<int>(turns.size())) {
      problem(p + "/turn", "turn " + std::to_string(in.turn) + " is not scripted (the script has " +
                               std::to_string(turns.size()) + " turns)");
      return;
    }
    const mock::Turn& turn = turns[in.turn];
    if (in.before_attempt && !turn.attempts.empty()) {
      // The backoff before attempt a follows a failed attempt a - 1 (the script's last attempt
      // repeats): it must fail (an HTTP status or a fault), or no retry waits there.
      const std::size_t prev = std::min(static_cast<std::size_t>(*in.before_attempt - 1), turn.attempts.size() - 1);
      const mock::Attempt& a = turn.attempts[prev];
      if (!a.status && !a.fault) {
        problem(p + "/before_attempt", "expected an attempt that follows a failed one: /turns/" + std::to_string(in.turn) +
                                           "/attempts/" + std::to_string(prev) + " (attempt " +
                                           std::to_string(*in.before_attempt - 1) +
                                           ") has no status and no fault, so no retry waits before attempt " +
                                           std::to_string(*in.before_attempt));
      } else if (a.status && !((*a.status == 429 && a.quota != mock::Quota::kPerDay) || *a.status == 500 ||
                               *a.status == 502 || *a.status == 503 || *a.status == 504 || *a.status == 529)) {
        // docs/POLICY.md "An attempt": 429 (not a per-day quota), 500, 502, 503, 504 and 529 are
        // retried; any other status ends the run.
        problem(p + "/before_attempt", "expected an attempt that follows a retried failure: /turns/" + std::to_string(in.turn) +
                                           "/attempts/" + std::to_string(prev) + " answers HTTP " + std::to_string(*a.status) +
                                           (a.quota == mock::Quota::kPerDay ? " with a per-day quota" : "") +
                                           ", which a correct runtime does not retry, so no backoff precedes attempt " +
                                           std::to_string(*in.before_attempt));
      }
      return;
    }
    if (in.after_event) {
      if (*in.attempt >= static_cast<int>(turn.attempts.size())) {
        problem(p + "/attempt", "attempt " + std::to_string(*in.attempt) + " is not scripted (turn " +
                                    std::to_string(in.turn) + " has " + std::to_string(turn.attempts.size()) +
                                    " attempts)");
        return;
      }
      const mock::Attempt& a = turn.attempts[*in.attempt];
      const int e = *in.after_event;
      if (a.status) {
        problem(p + "/attempt", "/turns/" + std::to_string(in.turn) + "/attempts/" + std::to_string(*in.attempt) +
                                    " answers with HTTP status " + std::to_string(*a.status) +
                                    ": no event streams, so there is nothing to cancel after; expected an attempt "
                                    "with events");
      } else if (e >= static_cast<int>(a.events.size()) ||
                 std::holds_alternative<mock::FinishEvent>(a.events[e]) ||
                 std::holds_alternative<mock::ReasoningEvent>(a.events[e])) {
        problem(p + "/after_event", "expected the index of a text or call event of /turns/" + std::to_string(in.turn) +
                                        "/attempts/" + std::to_string(*in.attempt) +
                                        " (a cancel after the finish is after_calls on a committed turn)");
      } else if (in.after_fragment) {
        const std::string event = "/turns/" + std::to_string(in.turn) + "/attempts/" + std::to_string(*in.attempt) +
                                  "/events/" + std::to_string(e);
        const auto* c = std::get_if<mock::CallEvent>(&a.events[e]);
        if (c == nullptr) {
          problem(p + "/after_fragment", "expected after_event to index a call (the cancel lands inside its arguments), "
                                         "found a text event at " + event);
        } else {
          // The pieces it really sends: at most one per character of its arguments' JSON text.
          const int sent = static_cast<int>(
              mock::split_fragments(c->args.is_null() ? std::string("{}")
                                                    : c->args.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                                  std::max(c->fragments, 1)).size());
          if (*in.after_fragment >= sent) {
            problem(p + "/after_fragment",
                    "expected an integer in 0.." + std::to_string(sent - 1) + " (the call at " + event + " sends " +
                        std::to_string(sent) + " argument fragment(s)" +
                        (sent < std::max(c->fragments, 1) ? " of the " + std::to_string(c->fragments) +
                                                                " asked: at most one per character of its arguments"
                                                          : "") +
                        "; after all of them use after_event alone), found " + std::to_string(*in.after_fragment));
          }
        }
      }
      return;
    }
    int most = 0;
    for (const mock::Attempt& a : turn.attempts) {
      int n = 0;
      for (const mock::Event& e : a.events) n += std::holds_alternative<mock::CallEvent>(e) ? 1 : 0;
      most = std::max(most, n);
    }
    if (most == 0) {
      problem(p + "/after_calls", "turn " + std::to_string(in.turn) +
                                      " has no call in any attempt, so there is nothing to cancel while tools run "
                                      "(cancel while the answer streams with attempt and after_event)");
    } else if (*in.after_calls >= most) {
      problem(p + "/after_calls", "expected an integer in 0.." + std::to_string(most - 1) + " (turn " +
                                      std::to_string(in.turn) + "'s attempts have at most " + std::to_string(most) +
                                      " call(s)), found " + std::to_string(*in.after_calls) +
                                      ": after every call has run there is nothing to cancel");
    }
  }

  /// An interrupt is defined under hold only, and one while the answer streams needs a stream.
  /// The tools against each other (names unique; `idempotent` against annotations.idempotentHint)
  /// and each call's fields against each other: at most one ending (result or is_error, a
  /// JSON-RPC error, hang, reply_lost, session_expired), no duration for a hang (it never ends)
  /// and no progress for an expired session's call (it never runs).
  void tool_rules(const json& j, const mock::mcp::ToolScript& tools) {
    if (!j.is_array()) return;
    std::set<std::string, std::less<>> names;
    std::size_t read = 0;  // tools[] entries that read without a problem map onto `tools` in order
    for (std::size_t i = 0; i < j.size(); ++i) {
      const std::string p = "/tools/" + std::to_string(i);
      const json& tj = j[i];
      if (tj.is_object() && tj.contains("name") && tj["name"].is_string()) {
        const std::string& name = tj["name"].get_ref<const std::string&>();
        if (!names.insert(name).second) {
          problem(at(p, "name"), "tool " + mock::json_text::quote_input(name, 80) + " is offered twice (tool names are unique)");
        }
      }
      if (read >= tools.tools.size() || !tj.is_object() || !tj.contains("name") || tj["name"] != tools.tools[read].name) continue;
      const mock::mcp::Tool& t = tools.tools[read++];
      if (t.annotations && t.annotations->contains("idempotentHint") && tj.contains("idempotent") &&
          (*t.annotations)["idempotentHint"].get<bool>() != t.idempotent) {
        problem(at(p, "annotations") + "/idempotentHint",
                std::string("contradicts \"idempotent\": ") + (t.idempotent ? "true" : "false") +
                    " (the hint a client sees must say what the harness judges by)");
      }
      for (std::size_t c = 0; c < t.calls.size(); ++c) {
        const mock::mcp::ToolCall& call = t.calls[c];
        const std::string cp = at(at(p, "calls"), c);
        std::vector<std::string> endings;
        if (call.result) endings.emplace_back("result");
        if (call.is_error && !call.result) endings.emplace_back("is_error");
        if (call.jsonrpc_error) endings.emplace_back("jsonrpc_error");
        if (call.hang) endings.emplace_back("hang");
        if (call.reply_lost) endings.emplace_back("reply_lost");
        if (call.session_expired) endings.emplace_back("session_expired");
        if (endings.size() > 1) {
          problem(cp, "a call ends one way, found " + endings[0] + " and " + endings[1] +
                          " (result/is_error: the tool's answer; jsonrpc_error: a protocol error instead; hang: no answer "
                          "ever; reply_lost: the call runs, its answer is lost; session_expired: 404, the call does not run)");
        }
        if (call.session_expired && call.progress > 0) {
          problem(at(cp, "progress"), "a call refused with session_expired sends no progress (it never runs)");
        }
        if (call.hang && call.duration_s > 0) {
          problem(at(cp, "duration_s"), "a hung call never ends, so it has no duration (remove duration_s, or script "
                                        "reply_lost or a result after duration_s)");
        }
      }
    }
  }

  void interrupt_design(const Scenario& s) {
    if (s.interrupt && s.runtime.recovery == "continue") {
      problem("/runtime/recovery", "\"continue\" with an \"interrupt\" is not defined yet (docs/POLICY.md \"Recovery "
                                   "designs\"): a scenario with an interrupt plays under hold");
    }
    if (s.interrupt && s.interrupt->before_attempt && *s.interrupt->before_attempt >= s.runtime.max_attempts.value_or(4)) {
      problem("/interrupt/before_attempt", "attempt " + std::to_string(*s.interrupt->before_attempt) +
                                               " is beyond the retry budget (runtime.max_attempts " +
                                               std::to_string(s.runtime.max_attempts.value_or(4)) +
                                               "): no backoff precedes it");
    }
    if (auto why = unreachable_interrupt(s)) problem("/interrupt", *why);
    if (s.interrupt && s.interrupt->after_fragment && s.script.provider == "gemini") {
      problem("/interrupt/after_fragment", "has no meaning for gemini: Gemini sends a call whole, in one frame "
                                           "(WIRE-FORMATS.md), so no point lies inside its arguments; cancel before it "
                                           "with after_event on the event before, or after it with after_event alone");
    }
    if (s.interrupt && s.interrupt->after_event && s.runtime.stream == false) {
      problem("/interrupt/after_event", "has no meaning for non-streaming requests (runtime.stream is false: the answer "
                                        "arrives as one body); cancel while its calls run with after_calls");
    }
  }

  /// With `runtime.stream: false` the answer is one body: writing it in slices, streaming a call's
  /// arguments in fragments or cutting a call between fragments cannot happen. A field that would
  /// be silently dropped is an error.
  void streaming_only_fields(const std::vector<mock::Turn>& turns) {
    constexpr const char* kWhy = "has no meaning for non-streaming requests (runtime.stream is false: the answer is one body)";
    for (std::size_t t = 0; t < turns.size(); ++t) {
      for (std::size_t a = 0; a < turns[t].attempts.size(); ++a) {
        const mock::Attempt& at = turns[t].attempts[a];
        const std::string p = "/turns/" + std::to_string(t) + "/attempts/" + std::to_string(a);
        if (at.slice_bytes) problem(p + "/slice_bytes", kWhy);
        if (at.fault && mock::fault_after_fragment(*at.fault)) problem(p + "/fault/after_fragment", kWhy);
        // A fault after the finish never plays on a non-streaming answer: the body ends there.
        const auto finish = std::find_if(at.events.begin(), at.events.end(),
                                         [](const mock::Event& e) { return std::holds_alternative<mock::FinishEvent>(e); });
        if (at.fault && finish != at.events.end()) {
          const auto finish_index = static_cast<int>(finish - at.events.begin());
          const int after = mock::fault_after_event(*at.fault, at.events.size());
          if (after > finish_index) {
            problem(p + "/fault", "plays after event " + std::to_string(after) + " (after_event; the default is after every "
                                  "event), past the finish (event " + std::to_string(finish_index) +
                                  "), which a non-streaming answer never reaches: it would change nothing; place it at "
                                  "after_event <= " + std::to_string(finish_index) + " or drop it");
          }
        }
        for (std::size_t e = 0; e < at.events.size(); ++e) {
          const auto* c = std::get_if<mock::CallEvent>(&at.events[e]);
          if (c != nullptr && c->fragments > 1) problem(p + "/events/" + std::to_string(e) + "/call/fragments", kWhy);
          const auto* f = std::get_if<mock::FinishEvent>(&at.events[e]);
          if (f != nullptr && f->after_fragment) problem(p + "/events/" + std::to_string(e) + "/after_fragment", kWhy);
        }
      }
    }
  }

  /// A last turn that can complete with function calls is a script mistake: a correct runtime
  /// answers the calls with one more request, which no turn scripts (the server answers 500).
  /// An attempt the user's interrupt cancels mid-stream never completes: exempt.
  void last_turn_answers(const mock::Turn& turn, std::size_t index, const std::optional<Interrupt>& interrupt) {
    for (std::size_t a = 0; a < turn.attempts.size(); ++a) {
      if (interrupt && interrupt->after_event && interrupt->turn == static_cast<int>(index) &&
          interrupt->attempt == static_cast<int>(a)) {
        continue;
      }
      const mock::Attempt& at = turn.attempts[a];
      bool calls = false;
      for (std::size_t e = 0; e < at.events.size(); ++e) {
        // A call its max_tokens finish cuts is never delivered: no response is due for it.
        if (std::holds_alternative<mock::CallEvent>(at.events[e]) && !mock::cut_by_finish(at.events, e)) calls = true;
        const auto* f = std::get_if<mock::FinishEvent>(&at.events[e]);
        if (f == nullptr) continue;
        const bool completes = f->reason == mock::FinishReason::kStop || f->reason == mock::FinishReason::kMaxTokens;
        const bool fault_before = at.fault && mock::fault_after_event(*at.fault, at.events.size()) <= static_cast<int>(e) &&
                                  !std::holds_alternative<mock::StallFault>(*at.fault);
        if (calls && completes && !fault_before) {
          problem("/turns/" + std::to_string(index) + "/attempts/" + std::to_string(a),
                  "the last turn completes with function calls, so a correct runtime sends one more request "
                  "(with their function responses) that no turn scripts: add a turn that answers it");
        }
        break;
      }
    }
  }

};

// ---- phase 3: what the provider sends -----------------------------------------------------------

/// The first `quota: "per_day"` of `s` when `provider` has no per-day quota to say (Anthropic: its
/// request limits are per minute only, docs.claude.com "Rate limits": RPM, ITPM, OTPM), as its
/// pointer and the problem; nullopt otherwise.
std::optional<std::pair<std::string, std::string>> per_day_quota_unsaid(const Scenario& s, std::string_view provider) {
  if (provider != "anthropic") return std::nullopt;
  for (std::size_t t = 0; t < s.script.turns.size(); ++t) {
    const auto& attempts = s.script.turns[t].attempts;
    for (std::size_t a = 0; a < attempts.size(); ++a) {
      if (attempts[a].quota != mock::Quota::kPerDay) continue;
      return std::pair{"/turns/" + std::to_string(t) + "/attempts/" + std::to_string(a) + "/quota",
                       std::string("anthropic never says a per-day quota ran out (its request limits are per minute: "
                                   "docs.claude.com \"Rate limits\"); use \"per_minute\" or another provider")};
    }
  }
  return std::nullopt;
}

/// The statuses of the scenario's own provider (status_problems), once its provider is known (a
/// provider that is not a known format is already a problem at "/provider").
void provider_rules(const Scenario& s, Problems& problems) {
  const bool provider_known = std::none_of(problems.list.begin(), problems.list.end(),
                                           [](const LoadProblem& p) { return p.pointer == "/provider"; });
  if (!provider_known) return;
  for (LoadProblem& p : status_problems(s, s.script.provider, problems.file)) problems.list.push_back(std::move(p));
  if (auto why = per_day_quota_unsaid(s, s.script.provider)) problems.list.push_back({problems.file, why->first, why->second});
}

// ---- one document ---------------------------------------------------------------------------------

/// Reads one document in its order: each field's shape (ShapeReader), the rules between the fields
/// of each attempt as soon as it is read and those across the document once all is read
/// (CrossFieldRules), then the provider's (provider_rules).
class DocumentReader {
 public:
  explicit DocumentReader(std::string file) : problems_{std::move(file), {}}, shape_(problems_), rules_(problems_) {}

  void read(const json& root, Scenario& s) {
    if (!shape_.header(root, s)) return;
    if (root.contains("session")) shape_.session(root["session"], "/session", s.session);
    if (root.contains("runtime")) shape_.runtime(root["runtime"], "/runtime", s.runtime);
    shape_.max_virtual_s(root, s);
    shape_.timing(root, s);
    shape_.websocket(root, s);
    if (const json* turns_json = shape_.turns(root)) turns(*turns_json, "/turns", s.script.turns);
    if (root.contains("tools")) {
      shape_.tools(root["tools"], "/tools", s.tools);
      rules_.tool_rules(root["tools"], s.tools);
    }
    if (root.contains("expect")) shape_.expect(root["expect"], "/expect", s.expect);
    if (root.contains("interrupt")) shape_.interrupt(root["interrupt"], "/interrupt", s.interrupt);
    if (s.interrupt) rules_.interrupt_target(*s.interrupt, s.script.turns);
    rules_.interrupt_design(s);
    rules_.call_ids(s.script.turns);
    // A malformed interrupt is reported at its pointer; the rules that read it are not applied
    // (without it the last turn would be taken for one a correct runtime answers: a second,
    // misleading error).
    const bool interrupt_malformed = root.contains("interrupt") && !s.interrupt;
    if (!s.script.turns.empty() && !interrupt_malformed) {
      rules_.last_turn_answers(s.script.turns.back(), s.script.turns.size() - 1, s.interrupt);
    }
    if (s.runtime.stream == false) rules_.streaming_only_fields(s.script.turns);
    provider_rules(s, problems_);
  }

  /// Reports a problem the reading itself met (an internal error).
  void problem(const std::string& pointer, std::string message) {
    problems_.list.push_back({problems_.file, pointer, std::move(message)});
  }
  std::vector<LoadProblem>& problems() { return problems_.list; }

 private:
  /// The turns (a non-empty array), each attempt read as it comes.
  void turns(const json& j, const std::string& p, std::vector<mock::Turn>& out) {
    for (std::size_t t = 0; t < j.size(); ++t) {
      const std::string tp = Checks::at(p, t);
      mock::Turn turn;
      if (const json* aj = shape_.turn_attempts(j[t], tp)) {
        const std::string ap = Checks::at(tp, "attempts");
        for (std::size_t i = 0; i < aj->size(); ++i) {
          mock::Attempt a;
          attempt((*aj)[i], Checks::at(ap, i), a);
          turn.attempts.push_back(std::move(a));
        }
      }
      out.push_back(std::move(turn));
    }
  }

  void attempt(const json& j, const std::string& p, mock::Attempt& a) {
    if (j.is_object()) shape_.websocket_choices(j, p, a);
    if (!shape_.stream_attempt(j, p, a)) {
      rules_.websocket_choices(a, p);
      return;
    }
    shape_.events(j, p, a);
    rules_.finish_cuts(a, Checks::at(p, "events"), j.contains("fault") ? &j["fault"] : nullptr, Checks::at(p, "fault"));
    rules_.reasoning_leads(a, Checks::at(p, "events"));
    shape_.slice_bytes(j, p, a);
    if (auto fault = shape_.fault(j, p)) {
      const json& ev = j["events"];
      rules_.place_fault(*fault, ev.is_array() ? ev.size() : 0, Checks::at(p, "fault"), a);
    }
    rules_.websocket_choices(a, p);
  }

  Problems problems_;
  ShapeReader shape_;
  CrossFieldRules rules_;
};

/// Integral values print as integers (10, not 10.0).
json number_json(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9e15) return static_cast<long long>(v);
  return v;
}

nlohmann::ordered_json to_ordered(const json& j) {
  return nlohmann::ordered_json::parse(j.dump());
}

nlohmann::ordered_json event_json(const mock::Event& e) {
  nlohmann::ordered_json out;
  if (const auto* t = std::get_if<mock::TextEvent>(&e)) {
    out["text"] = t->text;
  } else if (const auto* c = std::get_if<mock::CallEvent>(&e)) {
    nlohmann::ordered_json call;
    call["name"] = c->name;
    call["args"] = to_ordered(c->args);
    if (!c->id.empty()) call["id"] = c->id;
    if (c->fragments > 0) call["fragments"] = c->fragments;
    if (c->reuse_id) call["reuse_id"] = true;
    out["call"] = call;
  } else if (const auto* r = std::get_if<mock::ReasoningEvent>(&e)) {
    nlohmann::ordered_json reasoning;
    if (r->redacted) reasoning["redacted"] = true;
    else reasoning["text"] = r->text;
    if (!r->signature.empty()) reasoning["signature"] = r->signature;
    out["reasoning"] = reasoning;
  } else {
    const auto& f = std::get<mock::FinishEvent>(e);
    out["finish"] = std::string(mock::finish_name(f.reason));
    if (f.after_fragment) out["after_fragment"] = *f.after_fragment;
  }
  const std::optional<double> delay = std::visit([](const auto& ev) { return ev.delay_s; }, e);
  if (delay) out["delay_s"] = to_ordered(number_json(*delay));
  return out;
}

nlohmann::ordered_json fault_json(const mock::Fault& f) {
  json raw = mock::fault_to_json(f);
  nlohmann::ordered_json out;
  out["kind"] = raw.value("kind", std::string(mock::fault_name(f)));
  for (const auto& [key, value] : raw.items()) {
    if (key == "kind") continue;
    out[key] = value.is_number_float() ? to_ordered(number_json(value.get<double>()))
                                       : to_ordered(value);
  }
  return out;
}

}  // namespace

std::string pointer_escape(std::string_view token) {
  std::string out;
  for (char c : token) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::vector<LoadProblem> timing_warnings(const Scenario& s) {
  std::vector<LoadProblem> out;
  const double idle = s.runtime.idle_timeout_s.value_or(rut::Config{}.idle_timeout_s);
  if (!std::isfinite(idle) || idle <= 0) return out;
  const bool streaming = s.runtime.stream.value_or(true);
  for (std::size_t t = 0; t < s.script.turns.size(); ++t) {
    const auto& attempts = s.script.turns[t].attempts;
    for (std::size_t a = 0; a < attempts.size(); ++a) {
      const std::string ap = "/turns/" + std::to_string(t) + "/attempts/" + std::to_string(a);
      if (!streaming) {
        // A non-streaming answer is one body, late by the sum of its events' delays (the events up
        // to the first finish: mock::ScriptEngine::plan_unary): that sum races the idle timeout,
        // whatever each delay is on its own.
        double sum = 0;
        std::size_t delayed = 0, last = 0;
        for (std::size_t e = 0; e < attempts[a].events.size(); ++e) {
          const double played = mock::event_delay_s(attempts[a].events[e], s.script.timing);
          if (played > 0) {
            sum += played;
            ++delayed;
            last = e;
          }
          if (std::holds_alternative<mock::FinishEvent>(attempts[a].events[e])) break;
        }
        if (delayed > 0 && sum > idle / 2 && sum < 2 * idle) {
          std::ostringstream msg;
          msg << "the delays of this answer's " << delayed << " delayed event(s) add up to " << sum
              << " s (timing scale " << s.script.timing.scale;
          if (s.script.timing.max_delay_s) msg << ", max_delay_s " << *s.script.timing.max_delay_s;
          msg << "), and a non-streaming answer (runtime.stream false) is one body late by their sum: that races the "
                 "idle timeout of "
              << idle
              << " s over HTTP: between half and twice it, a scheduling delay decides whether the runtime times out "
                 "(memory and http may disagree); keep the sum at most "
              << idle / 2 << " s (a smaller timing.scale, or timing.max_delay_s) or at least " << 2 * idle << " s";
          // The pointer of the delay that carries the sum into the band (the last one).
          out.push_back({s.source_path, ap + "/events/" + std::to_string(last) + "/delay_s", msg.str()});
        }
      }
      // An event's delay_s plays as a stall of delay_s × timing.scale, capped at timing.max_delay_s
      // (mock::event_delay_s): one that lands in the same band races the idle timeout as a stall does.
      // Non-streaming, the sum above speaks for the answer's delays.
      for (std::size_t e = 0; streaming && e < attempts[a].events.size(); ++e) {
        const double played = mock::event_delay_s(attempts[a].events[e], s.script.timing);
        if (played <= idle / 2 || played >= 2 * idle) continue;
        const double recorded = std::visit([](const auto& ev) { return ev.delay_s.value_or(0); }, attempts[a].events[e]);
        std::ostringstream msg;
        msg << "a delay of " << played << " s (delay_s " << recorded << ", timing scale " << s.script.timing.scale;
        if (s.script.timing.max_delay_s) msg << ", max_delay_s " << *s.script.timing.max_delay_s;
        msg << ") races the idle timeout of " << idle
            << " s over HTTP: between half and twice it, a scheduling delay decides whether the runtime times out "
               "(memory and http may disagree); keep the played delay at most "
            << idle / 2 << " s (a smaller timing.scale, or timing.max_delay_s) or at least " << 2 * idle << " s";
        out.push_back({s.source_path,
                       "/turns/" + std::to_string(t) + "/attempts/" + std::to_string(a) + "/events/" + std::to_string(e) +
                           "/delay_s",
                       msg.str()});
      }
      if (!attempts[a].fault) continue;
      const auto* stall = std::get_if<mock::StallFault>(&*attempts[a].fault);
      if (stall == nullptr || stall->seconds <= idle / 2 || stall->seconds >= 2 * idle) continue;
      std::ostringstream msg;
      msg << "a stall of " << stall->seconds << " s races the idle timeout of " << idle
          << " s over HTTP: between half and twice it, a scheduling delay decides whether the runtime times out "
             "(memory and http may disagree); keep it at most "
          << idle / 2 << " s or at least " << 2 * idle << " s";
      out.push_back({s.source_path,
                     "/turns/" + std::to_string(t) + "/attempts/" + std::to_string(a) + "/fault/seconds", msg.str()});
    }
  }
  return out;
}

std::vector<LoadProblem> scenario_warnings(const Scenario& s) {
  std::vector<LoadProblem> out = timing_warnings(s);
  for (LoadProblem& p : fallback_warnings(s)) out.push_back(std::move(p));
  for (LoadProblem& p : unplayed_warnings(s)) out.push_back(std::move(p));
  return out;
}

std::vector<LoadProblem> unplayed_warnings(const Scenario& s) {
  std::vector<LoadProblem> out;
  for (std::size_t t = 0; t < s.script.turns.size(); ++t) {
    const auto& attempts = s.script.turns[t].attempts;
    const std::string tp = "/turns/" + std::to_string(t) + "/attempts/";
    std::optional<std::size_t> whole;  // the first attempt that answers the turn whole
    mock::FinishReason whole_reason = mock::FinishReason::kStop;
    for (std::size_t a = 0; a < attempts.size(); ++a) {
      const mock::Attempt& at = attempts[a];
      std::optional<std::size_t> finish;
      bool delivers = false;
      for (std::size_t e = 0; e < at.events.size(); ++e) {
        const auto* f = std::get_if<mock::FinishEvent>(&at.events[e]);
        if (f != nullptr) {
          finish = e;
          break;
        }
        if (const auto* text = std::get_if<mock::TextEvent>(&at.events[e])) delivers = delivers || !text->text.empty();
        else if (std::holds_alternative<mock::CallEvent>(at.events[e])) delivers = true;  // reasoning alone is no answer
      }
      if (whole || at.status || at.fault || !finish || !delivers) continue;
      const auto& f = std::get<mock::FinishEvent>(at.events[*finish]);
      if ((f.reason == mock::FinishReason::kStop || f.reason == mock::FinishReason::kMaxTokens) && !f.after_fragment) {
        whole = a;
        whole_reason = f.reason;
      }
    }
    // No runtime asks for a turn again once an attempt answered it whole (a stop or max_tokens
    // finish after text or a call, no status, no fault); the user's interrupt is left alone.
    const bool interrupted = s.interrupt && s.interrupt->turn == static_cast<int>(t);
    if (whole && *whole + 1 < attempts.size() && !interrupted) {
      const std::size_t next = *whole + 1;
      out.push_back({s.source_path, tp + std::to_string(next),
                     "never requested: attempt " + std::to_string(*whole) +
                         " answers the turn whole (a " + std::string(mock::finish_name(whole_reason)) +
                         " finish, no status, no fault), so no runtime asks for this turn again" +
                         (attempts.size() - next > 1 ? " (nor for the " + std::to_string(attempts.size() - next - 1) + " attempt(s) after it)" : std::string()) +
                         "; give attempt " + std::to_string(*whole) + " a fault or a status, or remove the attempts after it"});
    }
  }
  return out;
}

std::vector<LoadProblem> cap_warnings(const Scenario& s) {
  std::vector<LoadProblem> out;
  const rut::Config defaults;
  const double cap = s.max_virtual_s.value_or(kDefaultMaxVirtualS);
  const int max_attempts = s.runtime.max_attempts.value_or(defaults.max_attempts);
  const std::vector<double>& backoff = s.runtime.backoff_s ? *s.runtime.backoff_s : defaults.backoff_s;
  const bool ignores_retry_after =
      std::find(s.runtime.defects.begin(), s.runtime.defects.end(), "ignore-retry-after") != s.runtime.defects.end();
  const std::string cap_text = s.max_virtual_s ? "max_virtual_s of " + seconds_text(cap) + " s"
                                               : "max_virtual_s (default " + seconds_text(cap) + " s)";
  double waited = 0;  // the run's virtual seconds spent in waits before retries so far
  bool summed_warned = false;
  for (std::size_t t = 0; t < s.script.turns.size(); ++t) {
    if (s.interrupt && static_cast<std::size_t>(s.interrupt->turn) <= t) break;  // the run ends at the interrupt
    const auto& attempts = s.script.turns[t].attempts;
    for (std::size_t a = 0; a < attempts.size(); ++a) {
      const mock::Attempt& at = attempts[a];
      const std::string ap = "/turns/" + std::to_string(t) + "/attempts/" + std::to_string(a);
      bool retried = true;  // the reference runtime retries after this attempt (RetryCoordinator)
      if (at.status) {
        const bool per_day = at.quota == mock::Quota::kPerDay;
        retried = (*at.status == 429 && !per_day) || *at.status >= 500;
      } else if (!at.fault) {
        // A stream without a fault: a whole answer ends the turn; a content filter finish gets at
        // most an immediate retry on the fallback model.
        const mock::FinishEvent* finish = nullptr;
        for (const auto& e : at.events) {
          if ((finish = std::get_if<mock::FinishEvent>(&e)) != nullptr) break;
        }
        if (finish != nullptr && !finish->after_fragment &&
            (finish->reason == mock::FinishReason::kStop || finish->reason == mock::FinishReason::kMaxTokens ||
             finish->reason == mock::FinishReason::kContentFilter)) {
          retried = false;
        }
      }
      if (!retried || static_cast<int>(a) + 1 >= max_attempts) break;  // the turn ends or the run does
      const double step = rut::RetryCoordinator::backoff_step_s(backoff, static_cast<int>(a) + 1);
      const double retry_after = ignores_retry_after ? 0 : at.retry_after_s.value_or(0);
      const double wait = std::max(step, retry_after);
      waited += wait;
      if (retry_after > cap) {
        out.push_back({s.source_path, ap + "/retry_after_s",
                       "a Retry-After of " + seconds_text(retry_after) + " s is longer than the run's " + cap_text +
                           ": the runtime waits it out, so the run always ends at the cap before the retry "
                           "(bounded-retries); keep it under the cap or raise max_virtual_s"});
        summed_warned = true;
      } else if (waited > cap && !summed_warned) {
        out.push_back({s.source_path, at.retry_after_s ? ap + "/retry_after_s" : ap,
                       "the waits before retries up to this attempt (runtime.backoff_s and Retry-After) add up to " +
                           seconds_text(waited) + " s, past the run's " + cap_text +
                           ": the run always ends at the cap (bounded-retries); shorten the waits or raise "
                           "max_virtual_s"});
        summed_warned = true;
      }
    }
  }
  return out;
}

std::vector<LoadProblem> fallback_warnings(const Scenario& s) {
  std::vector<LoadProblem> out = cap_warnings(s);
  // WebSocket fields act only over the Responses API's WebSocket mode: in a scenario of another
  // provider they take effect only when it is played with --provider openai-responses.
  if (s.script.provider != "openai-responses") {
    const std::string why = "takes effect only over WebSocket, the Responses API's mode, and this scenario's provider is " +
                            s.script.provider + " (play it with --provider openai-responses --transport websocket)";
    if (s.script.websocket_upgrade_status) out.push_back({s.source_path, "/websocket", why});
    for (std::size_t t = 0; t < s.script.turns.size(); ++t) {
      for (std::size_t a = 0; a < s.script.turns[t].attempts.size(); ++a) {
        if (s.script.turns[t].attempts[a].websocket) {
          out.push_back({s.source_path, "/turns/" + std::to_string(t) + "/attempts/" + std::to_string(a) + "/websocket", why});
        }
      }
    }
  }
  if (s.runtime.continuation_prompt && s.runtime.recovery == std::optional<std::string>("hold")) {
    out.push_back({s.source_path, "/runtime/continuation_prompt",
                   "a continuation prompt follows a kept cut turn, which the pinned \"hold\" design never keeps: it is "
                   "never sent (pin \"continue\", or leave runtime.recovery unset for `hiccup run --recovery continue`)"});
  }
  if (s.runtime.fallback_model) {
    const rut::ICodec* codec = rut::codec_for(s.script.provider);
    const std::string model = s.runtime.model ? *s.runtime.model : codec != nullptr ? codec->default_model() : "";
    if (!model.empty() && *s.runtime.fallback_model == model) {
      out.push_back({s.source_path, "/runtime/fallback_model",
                     "the fallback model " + json(model).dump() + " is the model the requests already use" +
                         (s.runtime.model ? std::string(" (runtime.model)") : " (the " + s.script.provider + " default)") +
                         ": the retry after a content-filter finish would be the unchanged request, which is filtered "
                         "again (no-unchanged-content-filter-retry); name another model"});
    }
  }
  return out;
}

std::optional<std::string> interrupt_point_missed(const mock::Attempt& a, const Interrupt& in, double idle_timeout_s,
                                                  const std::string& of, const mock::Script::Timing& timing) {
  if (!in.after_event || a.status) return std::nullopt;
  const int e = *in.after_event;
  if (e < 0 || e >= static_cast<int>(a.events.size())) return std::nullopt;
  // An event delayed past the idle timeout before the point: the runtime gives up on the stream
  // there (newcomer, stop 53: a retry was judged as coming after a cancel that never fired).
  for (int i = 0; i <= e; ++i) {
    const auto delay = std::visit([](const auto& ev) { return ev.delay_s; }, a.events[static_cast<std::size_t>(i)]);
    if (!delay) continue;
    double played = *delay * timing.scale;
    if (timing.max_delay_s) played = std::min(played, *timing.max_delay_s);
    if (played >= idle_timeout_s) {
      return "event " + std::to_string(i) + "'s delay_s" + of + " (" + nlohmann::json(played).dump() +
             " s) reaches the idle timeout before the interrupt point";
    }
  }
  if (const auto cut = mock::cut_by_finish(a.events, static_cast<std::size_t>(e));
      cut && (!in.after_fragment || *in.after_fragment > *cut)) {
    return "the max_tokens finish" + of + " cuts event " + std::to_string(e) + " after " + std::to_string(*cut) +
           " argument fragment(s), before the interrupt point";
  }
  if (!a.fault) return std::nullopt;
  const int fault_at = mock::fault_after_event(*a.fault, a.events.size());
  const auto fault_fragments = mock::fault_after_fragment(*a.fault);
  const bool point_first =
      fault_at > e || (in.after_fragment && fault_at == e && fault_fragments && *in.after_fragment <= *fault_fragments);
  const auto* stall = std::get_if<mock::StallFault>(&*a.fault);
  if (point_first || (stall != nullptr && stall->seconds < idle_timeout_s)) return std::nullopt;  // a short stall only delays
  return "the fault" + of + " (" + std::string(mock::fault_name(*a.fault)) + ") ends the stream before the interrupt point";
}

std::optional<std::string> unreachable_interrupt(const Scenario& s) {
  if (!s.interrupt || !s.interrupt->after_event || !s.interrupt->attempt) return std::nullopt;
  const Interrupt& in = *s.interrupt;
  if (in.turn < 0 || static_cast<std::size_t>(in.turn) >= s.script.turns.size()) return std::nullopt;
  const auto& attempts = s.script.turns[static_cast<std::size_t>(in.turn)].attempts;
  if (*in.attempt < 0 || static_cast<std::size_t>(*in.attempt) >= attempts.size()) return std::nullopt;
  const auto missed = interrupt_point_missed(attempts[static_cast<std::size_t>(*in.attempt)], in,
                                             s.runtime.idle_timeout_s.value_or(rut::Config{}.idle_timeout_s),
                                             " of /turns/" + std::to_string(in.turn) + "/attempts/" + std::to_string(*in.attempt),
                                             s.script.timing);
  if (!missed) return std::nullopt;
  const bool fault = missed->starts_with("the fault");
  return "points at nothing the stream reaches: " + *missed + (fault ? "; move the point before it, or the fault after it" : "");
}

std::optional<std::string> unplayable_in(const Scenario& s, std::string_view provider) {
  if (auto why = per_day_quota_unsaid(s, provider)) return why->first + ": " + why->second;
  if (s.interrupt && s.interrupt->after_fragment && provider == "gemini") {
    return "/interrupt/after_fragment: Gemini sends a call whole, so no point lies inside its arguments";
  }
  return std::nullopt;
}

std::vector<LoadProblem> status_problems(const Scenario& s, std::string_view provider, const std::string& file) {
  std::vector<LoadProblem> out;
  const mock::WireFormat* format = mock::wire_format(provider);
  if (format == nullptr) return out;
  for (std::size_t t = 0; t < s.script.turns.size(); ++t) {
    const auto& attempts = s.script.turns[t].attempts;
    for (std::size_t i = 0; i < attempts.size(); ++i) {
      const mock::Attempt& a = attempts[i];
      const std::string base = "/turns/" + std::to_string(t) + "/attempts/" + std::to_string(i);
      if (a.status) {
        if (auto note = format->status_note(*a.status)) out.push_back({file, base + "/status", *note});
      }
      if (const auto* e = a.fault ? std::get_if<mock::ErrorEventFault>(&*a.fault) : nullptr) {
        if (auto note = format->status_note(e->status)) out.push_back({file, base + "/fault/status", *note});
      }
    }
  }
  return out;
}

std::string format_problem(const LoadProblem& problem) {
  // For a terminal: what the file said (a key in the pointer, a value in the message) drives none.
  using mock::json_text::escape_input;
  constexpr std::size_t kWhole = std::string::npos;
  std::string out = "error: " + escape_input(problem.file, kWhole) + ": ";
  if (!problem.pointer.empty()) out += escape_input(problem.pointer, kWhole) + ": ";
  return out + escape_input(problem.message, kWhole);
}

LoadResult parse_scenario(std::string_view text, const std::string& file) {
  LoadResult result;
  if (text.size() > kMaxScenarioBytes) {
    result.problems.push_back({file, "", too_large(text.size())});
    return result;
  }
  json root;
  try {
    root = parse_json_bounded(text, /*ignore_comments=*/true);
  } catch (const TooDeep&) {
    result.problems.push_back({file, "", "arrays and objects nest deeper than " +
                                             std::to_string(mock::kMaxJsonDepth) + " levels"});
    return result;
  } catch (const DuplicateKey& d) {
    result.problems.push_back({file, d.pointer, kDuplicateKeyMessage});
    return result;
  } catch (const NumberOutOfRange& n) {
    result.problems.push_back({file, n.pointer, out_of_range_message(n)});
    return result;
  } catch (const json::parse_error& e) {
    result.problems.push_back({file, "", json_error_position(e.byte, text.size()) + ": " + parse_error_text(e)});
    return result;
  } catch (const std::exception& e) {
    result.problems.push_back({file, "", "invalid json: " + mock::json_text::escape_input(e.what(), 400)});
    return result;
  }
  Scenario s;
  DocumentReader reader(file);
  try {
    reader.read(root, s);
  } catch (const std::exception& e) {
    reader.problem("", std::string("internal loader error: ") + e.what());
  }
  result.problems = std::move(reader.problems());
  if (result.problems.empty()) {
    s.source_path = file;
    result.scenario = std::move(s);
  }
  return result;
}

LoadResult load_scenario_file(const std::string& path) {
  const auto refused = [&](std::string message) {
    LoadResult r;
    r.problems.push_back({path, "", std::move(message)});
    return r;
  };
  std::ifstream in(path, std::ios::binary);
  std::error_code ec;
  if (!in || std::filesystem::is_directory(path, ec)) {
    // The same words as a folder scan's for a path that is not there (collect_scenario_files).
    if (path.empty()) {
      LoadResult r;
      r.problems.push_back({"\"\"", "", "an empty path names no file or folder"});
      return r;
    }
    if (!std::filesystem::exists(path, ec)) return refused("no such file or folder");
    return refused(std::filesystem::is_directory(path, ec) ? "a folder, not a scenario file" : "cannot read file");
  }
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxScenarioBytes) return refused(too_large(size));
  // Read at most one byte past the limit whatever file_size said: a device, a pipe or a file that
  // grows has no size to check first (/dev/zero was read until memory ran out).
  std::string text;
  std::array<char, 1 << 16> chunk;
  while (in.read(chunk.data(), chunk.size()) || in.gcount() > 0) {
    text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxScenarioBytes) {
      return refused("more than " + std::to_string(kMaxScenarioBytes) +
                     " bytes read and the file goes on; scenario files are limited to " +
                     std::to_string(kMaxScenarioBytes) + " bytes");
    }
  }
  if (in.bad()) return refused("cannot read file");
  return parse_scenario(text, path);
}

nlohmann::ordered_json scenario_to_json(const Scenario& s) {
  using oj = nlohmann::ordered_json;
  oj out;
  if (!s.json_schema.empty()) out["$schema"] = s.json_schema;
  out["schema"] = s.schema;
  out["name"] = s.name;
  if (!s.description.empty()) out["description"] = s.description;
  if (!s.tags.empty()) out["tags"] = s.tags;
  if (!s.catches.empty()) out["catches"] = s.catches;
  out["provider"] = s.script.provider;
  out["prompt"] = s.prompt;
  if (!s.session.empty()) {
    oj list = oj::array();
    for (const SessionPrompt& sp : s.session) list.push_back({{"prompt", sp.prompt}});
    out["session"] = list;
  }
  if (s.interrupt) {
    oj in = oj::object();
    in["turn"] = s.interrupt->turn;
    if (s.interrupt->attempt) in["attempt"] = *s.interrupt->attempt;
    if (s.interrupt->after_event) in["after_event"] = *s.interrupt->after_event;
    if (s.interrupt->after_fragment) in["after_fragment"] = *s.interrupt->after_fragment;
    if (s.interrupt->after_calls) in["after_calls"] = *s.interrupt->after_calls;
    if (s.interrupt->before_attempt) in["before_attempt"] = *s.interrupt->before_attempt;
    out["interrupt"] = in;
  }

  const auto& rt = s.runtime;
  oj runtime = oj::object();
  if (rt.model) runtime["model"] = *rt.model;
  if (rt.max_attempts) runtime["max_attempts"] = *rt.max_attempts;
  if (rt.backoff_s) {
    oj steps = oj::array();
    for (double d : *rt.backoff_s) steps.push_back(to_ordered(number_json(d)));
    runtime["backoff_s"] = steps;
  }
  if (rt.fallback_model) runtime["fallback_model"] = *rt.fallback_model;
  if (rt.idle_timeout_s) runtime["idle_timeout_s"] = to_ordered(number_json(*rt.idle_timeout_s));
  if (!rt.defects.empty()) runtime["defects"] = rt.defects;
  if (rt.consumer) runtime["consumer"] = *rt.consumer;
  if (rt.stream) runtime["stream"] = *rt.stream;
  if (rt.recovery) runtime["recovery"] = *rt.recovery;
  if (rt.continuation_prompt) runtime["continuation_prompt"] = *rt.continuation_prompt;
  if (!runtime.empty()) out["runtime"] = runtime;
  if (s.max_virtual_s) out["max_virtual_s"] = to_ordered(number_json(*s.max_virtual_s));
  if (s.script.timing != mock::Script::Timing{}) {
    oj timing;
    if (s.script.timing.scale != 1) timing["scale"] = to_ordered(number_json(s.script.timing.scale));
    if (s.script.timing.max_delay_s) timing["max_delay_s"] = to_ordered(number_json(*s.script.timing.max_delay_s));
    out["timing"] = timing;
  }
  if (s.script.websocket_upgrade_status) out["websocket"] = oj{{"upgrade_status", *s.script.websocket_upgrade_status}};

  oj turns = oj::array();
  for (const auto& turn : s.script.turns) {
    oj attempts = oj::array();
    for (const auto& a : turn.attempts) {
      oj aj;
      if (a.status) {
        aj["status"] = *a.status;
        if (a.retry_after_s) aj["retry_after_s"] = to_ordered(number_json(*a.retry_after_s));
        if (a.quota) aj["quota"] = std::string(mock::quota_name(*a.quota));
      } else {
        oj events = oj::array();
        for (const auto& e : a.events) events.push_back(event_json(e));
        aj["events"] = events;
        if (a.fault) aj["fault"] = fault_json(*a.fault);
        if (a.slice_bytes) aj["slice_bytes"] = *a.slice_bytes;
      }
      if (a.websocket) {
        oj w = oj::object();
        if (a.websocket->close_code) w["close_code"] = *a.websocket->close_code;
        if (a.websocket->string_error) w["string_error"] = true;
        if (a.websocket->malformed_frame) w["malformed_frame"] = true;
        if (a.websocket->forget_response) w["forget_response"] = true;
        aj["websocket"] = w;
      }
      attempts.push_back(aj);
    }
    oj tj;
    tj["attempts"] = attempts;
    turns.push_back(tj);
  }
  out["turns"] = turns;

  if (!s.tools.tools.empty()) {
    oj tools = oj::array();
    for (const mock::mcp::Tool& t : s.tools.tools) {
      oj tj;
      tj["name"] = t.name;
      if (!t.description.empty()) tj["description"] = t.description;
      if (t.input_schema != json{{"type", "object"}}) tj["input_schema"] = to_ordered(t.input_schema);
      tj["idempotent"] = t.idempotent;
      if (t.annotations) tj["annotations"] = to_ordered(*t.annotations);
      if (!t.calls.empty()) {
        oj calls = oj::array();
        for (const mock::mcp::ToolCall& c : t.calls) {
          oj cj = oj::object();
          if (c.duration_s > 0) cj["duration_s"] = to_ordered(number_json(c.duration_s));
          if (c.result) cj["result"] = *c.result;
          if (c.is_error) cj["is_error"] = true;
          if (c.jsonrpc_error) cj["jsonrpc_error"] = {{"code", c.jsonrpc_error->code}, {"message", c.jsonrpc_error->message}};
          if (c.hang) cj["hang"] = true;
          if (c.reply_lost) cj["reply_lost"] = true;
          if (c.session_expired) cj["session_expired"] = true;
          if (c.progress > 0) cj["progress"] = c.progress;
          calls.push_back(cj);
        }
        tj["calls"] = calls;
      }
      tools.push_back(tj);
    }
    out["tools"] = tools;
  }

  const auto& e = s.expect;
  oj expect = oj::object();
  if (e.outcome) expect["outcome"] = *e.outcome;
  if (e.error) expect["error"] = *e.error;
  if (e.final_text) expect["final_text"] = *e.final_text;
  if (e.truncated) expect["truncated"] = *e.truncated;
  if (e.executions) {
    oj list = oj::array();
    for (const auto& x : *e.executions) {
      oj xj;
      xj["name"] = x.name;
      if (x.args) xj["args"] = to_ordered(*x.args);
      xj["count"] = x.count;
      list.push_back(xj);
    }
    expect["executions"] = list;
  }
  if (e.requests) expect["requests"] = *e.requests;
  if (e.waited_s) expect["waited_s"] = to_ordered(number_json(*e.waited_s));
  if (!expect.empty()) out["expect"] = expect;
  return out;
}

std::optional<nlohmann::json> parse_json_text(std::string_view text, const JsonTextOptions& options,
                                              LoadProblem& problem) {
  problem = LoadProblem{};
  try {
    return parse_json_bounded(text, options.ignore_comments, options.refuse_duplicate_keys);
  } catch (const TooDeep&) {
    problem.message = "arrays and objects nest deeper than " + std::to_string(mock::kMaxJsonDepth) + " levels";
  } catch (const DuplicateKey& d) {
    problem.pointer = d.pointer;
    problem.message = kDuplicateKeyMessage;
  } catch (const NumberOutOfRange& n) {
    problem.pointer = n.pointer;
    problem.message = out_of_range_message(n);
  } catch (const json::parse_error& e) {
    problem.message = json_error_position(e.byte, text.size()) + ": " + parse_error_text(e);
  }
  return std::nullopt;
}

std::optional<nlohmann::json> parse_json_text(std::string_view text, const JsonTextOptions& options,
                                              std::string& error) {
  LoadProblem problem;
  std::optional<nlohmann::json> j = parse_json_text(text, options, problem);
  if (!j) error = problem.pointer.empty() ? problem.message : problem.pointer + ": " + problem.message;
  return j;
}

std::optional<LoadProblem> duplicate_key(std::string_view text) {
  try {
    (void)parse_json_bounded(text, /*ignore_comments=*/false);
  } catch (const DuplicateKey& d) {
    return LoadProblem{"", d.pointer, kDuplicateKeyMessage};
  } catch (...) {
  }
  return std::nullopt;
}

std::string write_scenario(const Scenario& s) { return scenario_to_json(s).dump(2) + "\n"; }

bool is_report_dir(const std::string& dir) {
  std::ifstream in(std::filesystem::path(dir) / "summary.json");
  if (!in) return false;
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  json j;
  try {
    j = parse_json_bounded(text, /*ignore_comments=*/false, /*refuse_duplicate_keys=*/false);
  } catch (...) {
    return false;
  }
  return j.is_object() && j.contains("command") && j.contains("cases");
}

bool looks_like_scenario_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return true;  // the loader says why it cannot be read
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  json j;
  try {
    // A key named twice is the loader's to refuse in a scenario file; a JSON file that is not one
    // (a package.json, say) is skipped whatever its keys.
    j = parse_json_bounded(text, /*ignore_comments=*/true, /*refuse_duplicate_keys=*/false);
  } catch (...) {
    return true;  // not JSON, or too deep: the loader reports why
  }
  return j.is_object() && j.contains("turns");
}

std::vector<std::string> collect_scenario_files(const std::vector<std::string>& paths,
                                                std::vector<LoadProblem>& problems, const ScanOptions& scan,
                                                std::vector<std::string>* notes) {
  namespace fs = std::filesystem;
  std::vector<fs::path> skip;
  for (const auto& d : scan.skip_dirs) {
    std::error_code ec;
    skip.push_back(fs::weakly_canonical(d, ec));
  }
  auto note = [&](std::string line) {
    if (notes) notes->push_back(std::move(line));
  };
  std::vector<std::string> out;
  for (const auto& path : paths) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      std::vector<std::string> found, not_scenarios;
      fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec);
      if (ec) {
        problems.push_back({path, "", "cannot read folder: " + ec.message()});
        continue;
      }
      for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) break;
        std::error_code ec2;
        const fs::path p = it->path();
        if (it->is_directory(ec2)) {
          const std::string name = p.filename().string();
          std::error_code ec3;
          const fs::path canonical = fs::weakly_canonical(p, ec3);
          if (std::find(skip.begin(), skip.end(), canonical) != skip.end()) {
            note(p.generic_string() + ": skipped, the report directory of this run");
          } else if (is_report_dir(p.string())) {
            note(p.generic_string() + ": skipped, a report directory (it holds hiccup's summary.json)");
          } else if (fs::exists(p / "CMakeCache.txt", ec3)) {
            note(p.generic_string() + ": skipped, a build directory (it holds CMakeCache.txt)");
          } else if ((name.size() > 1 && name[0] == '.') || name == "node_modules") {
            // hidden folders and installed packages: never scenarios, often thousands of files
          } else {
            continue;
          }
          it.disable_recursion_pending();
          continue;
        }
        if (!it->is_regular_file(ec2) || p.extension() != ".json") continue;
        if (looks_like_scenario_file(p.string())) found.push_back(p.generic_string());
        else not_scenarios.push_back(p.generic_string());
      }
      std::sort(found.begin(), found.end());
      std::sort(not_scenarios.begin(), not_scenarios.end());
      if (!not_scenarios.empty()) {
        // File names come from the disk: escaped like every message that quotes input.
        std::string line = mock::json_text::escape_input(path, 400) + ": skipped " + std::to_string(not_scenarios.size()) +
                           " JSON file(s) that are not scenario files (no \"turns\"):";
        for (std::size_t k = 0; k < std::min<std::size_t>(3, not_scenarios.size()); ++k) {
          line += " " + mock::json_text::escape_input(not_scenarios[k], 400);
        }
        if (not_scenarios.size() > 3) line += " …";
        note(line);
      }
      if (found.empty()) problems.push_back({path, "", "no scenario files (*.json) in this folder"});
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::exists(path, ec)) {
      out.push_back(path);
    } else {
      problems.push_back(path.empty() ? LoadProblem{"\"\"", "", "an empty path names no file or folder"}
                                      : LoadProblem{path, "", "no such file or folder"});
    }
  }
  // A file named twice (directly and through its folder, say) is read once.
  std::vector<std::string> unique;
  for (const auto& f : out) {
    std::error_code ec;
    const auto canonical = fs::weakly_canonical(f, ec);
    const bool seen = std::any_of(unique.begin(), unique.end(), [&](const std::string& u) {
      std::error_code ec2;
      return fs::weakly_canonical(u, ec2) == canonical;
    });
    if (!seen) unique.push_back(f);
  }
  return unique;
}

}  // namespace harness
