// A small argument reader shared by the subcommands: flags with values (`--seed 7` or
// `--seed=7`), given once or, where a command documents it, repeatable; positionals; and usage
// errors as values (exit code 2).
#pragma once

#include <charconv>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace harness::cli {

/// Whether `s` is a whole number as written: one or more decimal digits, nothing else (however
/// many: it may not fit any integer type).
inline bool is_whole_number(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

/// Parses a whole non-negative integer; nullopt on anything else, and on a whole number out of
/// T's range.
template <typename T>
std::optional<T> parse_number(const std::string& s) {
  T v{};
  if (!is_whole_number(s)) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

class ArgReader {
 public:
  explicit ArgReader(const std::vector<std::string>& args) : args_(args) {}

  bool done() const { return i_ >= args_.size(); }
  /// The current argument; advances.
  std::string take() { return args_[i_++]; }
  /// Peek without advancing.
  const std::string& peek() const { return args_[i_]; }

  /// If the current argument is `flag` or `flag=VALUE`, consumes it and its value into `value`.
  /// A missing or empty value (`--jobs=`, `--report-dir ""`) sets error(): no option of hiccup's
  /// takes an empty value, and reading one as "not given" would silently drop what was asked.
  /// The option takes one value: given again, it sets error() `FLAG given twice ("A", then "B")`
  /// (taking the last one silently ran something else than one of the two meant). Returns true
  /// when the flag matched.
  bool value(const std::string& flag, std::string& value) {
    if (!repeatable_value(flag, value)) return false;
    once(flag, value);
    return true;
  }

  /// As value(), for an option that may be given several times (`--defect A --defect B`): each
  /// call consumes one occurrence.
  bool repeatable_value(const std::string& flag, std::string& value) {
    const std::string& a = args_[i_];
    if (a == flag) {
      if (i_ + 1 >= args_.size()) {
        error_ = flag + " needs a value";
        ++i_;
        return true;
      }
      value = args_[i_ + 1];
      i_ += 2;
    } else if (a.rfind(flag + "=", 0) == 0) {
      value = a.substr(flag.size() + 1);
      ++i_;
    } else {
      return false;
    }
    if (value.empty()) set_error(flag + " needs a value, found \"\"");
    return true;
  }

  /// Whether the current argument is exactly `flag` (consumed when it is).
  bool flag(const std::string& name) {
    if (args_[i_] != name) return false;
    ++i_;
    return true;
  }

  /// Records that the single-valued option `flag` was given with `value` (for the options a
  /// command reads itself, like explore's `--check-determinism [P]`); a second time sets error()
  /// as value() does.
  void once(const std::string& flag, const std::string& value) {
    auto [it, fresh] = given_.emplace(flag, value);
    if (!fresh) set_error(flag + " given twice (\"" + it->second + "\", then \"" + value + "\")");
  }

  /// Option `flag`'s value `text` as a whole number in lo..hi; otherwise nullopt, with error() set:
  /// for a whole number outside lo..hi, however many digits it has, `FLAG TEXT is out of range:
  /// expected LO..HI`; for any other text `FLAG expects EXPECTED, found "TEXT"`.
  template <typename T>
  std::optional<T> number(const std::string& flag, const std::string& text, T lo, T hi, const std::string& expected) {
    const std::optional<T> n = parse_number<T>(text);
    if (n && *n >= lo && *n <= hi) return n;
    if (is_whole_number(text)) {
      set_error(flag + " " + text + " is out of range: expected " + std::to_string(lo) + ".." + std::to_string(hi));
    } else {
      set_error(flag + " expects " + expected + ", found \"" + text + "\"");
    }
    return std::nullopt;
  }

  /// Option `flag`'s value `text` as a decimal number (`0.25`, `2`, `1e-3`) in lo..hi; otherwise
  /// nullopt, with error() set: `FLAG expects EXPECTED, found "TEXT"`.
  std::optional<double> decimal(const std::string& flag, const std::string& text, double lo, double hi,
                                const std::string& expected) {
    double v = 0;
    const char* end = text.data() + text.size();
    auto [p, ec] = std::from_chars(text.data(), end, v);
    if (!text.empty() && ec == std::errc() && p == end && v >= lo && v <= hi) return v == 0 ? 0.0 : v;  // "-0" is 0
    set_error(flag + " expects " + expected + ", found \"" + text + "\"");
    return std::nullopt;
  }

  const std::string& error() const { return error_; }
  void set_error(std::string e) { if (error_.empty()) error_ = std::move(e); }

 private:
  const std::vector<std::string>& args_;
  std::size_t i_ = 0;
  std::string error_;
  std::map<std::string, std::string> given_;  ///< single-valued option → its first value
};

}  // namespace harness::cli
