// A small argument reader shared by the subcommands: flags with values (`--seed 7` or
// `--seed=7`), given once or, where a command documents it, repeatable; positionals; and usage
// errors as values (exit code 2).
#pragma once

#include <charconv>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace harness::cli {

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

  const std::string& error() const { return error_; }
  void set_error(std::string e) { if (error_.empty()) error_ = std::move(e); }

 private:
  const std::vector<std::string>& args_;
  std::size_t i_ = 0;
  std::string error_;
  std::map<std::string, std::string> given_;  ///< single-valued option → its first value
};

/// Parses a whole non-negative integer; nullopt on anything else.
template <typename T>
std::optional<T> parse_number(const std::string& s) {
  T v{};
  if (s.empty() || s[0] == '-' || s[0] == '+') return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace harness::cli
