// The summary.json listener: cumulative, written at run end; the machine-readable verdict of a
// run (seed, digests, violations per case).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "harness/report/report.h"
#include "harness/version.h"

namespace harness {
namespace {

class SummaryListener final : public ReportListener {
 public:
  explicit SummaryListener(std::function<void(const nlohmann::json&)> sink) : sink_(std::move(sink)) {}
  void run_starting(const RunInfo& info) override { info_ = info; }
  void case_ended(const ReportCase& c) override {
    nlohmann::json j = {{"name", c.name}, {"classname", c.classname}, {"passed", c.passed},
                        {"digest", c.digest}, {"wall_ms", c.wall_ms}};
    j["violations"] = nlohmann::json::array();
    for (const Violation& v : c.violations) j["violations"].push_back(violation_to_json(v));
    if (!c.detail.empty()) j["detail"] = c.detail;
    for (const auto& [k, v] : c.extra.items()) j[k] = v;
    if (!c.transcript.is_null()) j["transcript"] = c.transcript;
    cases_.push_back(std::move(j));
  }
  void run_ended(const RunTotals& t) override {
    nlohmann::json j = {{"schema", kSummarySchemaVersion},       {"command", info_.command},   {"seed", info_.seed},
                        {"transport", info_.transport}, {"defects", info_.defects},
                        {"provider", info_.provider}, {"passed", t.passed},
                        {"failed", t.failed}, {"wall_ms", t.wall_ms},       {"cases", cases_},
                        {"hiccup_version", std::string(kHiccupVersion)}};
    if (t.differences > 0) j["differences"] = t.differences;
    for (const auto& [k, v] : t.extra.items()) j[k] = v;
    if (!info_.agent.empty()) {
      j["agent"] = info_.agent;
      // A black box has no seed of ours, except the one a black-box exploration generates from.
      if (info_.command != "explore") j["seed"] = nullptr;
    }
    sink_(j);
  }

 private:
  std::function<void(const nlohmann::json&)> sink_;
  RunInfo info_;
  nlohmann::json cases_ = nlohmann::json::array();
};

}  // namespace

std::string running_binary() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec || self.empty() ? std::string("hiccup") : shell_quote(self.string());
}

std::string absolute_path(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::absolute(path, ec);
  return ec || path.empty() ? path : p.lexically_normal().string();
}

std::string shell_quote(std::string_view a) {
  const bool plain = !a.empty() && a.find_first_not_of(
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=,:+@%") == std::string_view::npos;
  if (plain) return std::string(a);
  std::string out = "'";
  for (char c : a) out += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void write_report_file(const std::string& path, std::string_view text, bool append) {
  auto fail = [&](const std::string& what, int err) {
    throw ReportWriteError(what + ": cannot write" + (err != 0 ? std::string(": ") + std::strerror(err) : std::string()));
  };
  if (append) {  // $GITHUB_STEP_SUMMARY: the runner's own file, wherever it points
    errno = 0;
    std::ofstream out(path, std::ios::binary | std::ios::app);
    if (out) out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (out) out.flush();
    if (!out) fail(path, errno);
    return;
  }
  // A temporary file beside `path`, renamed over it: a symlink at `path` is replaced, never followed
  // (report.html written through a planted link landed wherever it pointed), and a reader sees the
  // old file or the new one, never half of one.
  const std::string temp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, errno);
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      ::unlink(temp.c_str());
      fail(path, err);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 || ::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    fail(path, err);
  }
}

void FanoutListener::run_ended(const RunTotals& t) {
  RunTotals with = t;
  if (!command_line_.empty()) with.extra["command_line"] = command_line_;
  std::string failed;
  for (auto& l : listeners_) {
    try {
      l->run_ended(with);
    } catch (const ReportWriteError& e) {
      failed += (failed.empty() ? "" : "; ") + std::string(e.what());
    }
  }
  if (!failed.empty()) throw ReportWriteError(failed);
}

std::unique_ptr<ReportListener> make_summary_json_listener(std::function<void(const nlohmann::json&)> sink) {
  return std::make_unique<SummaryListener>(std::move(sink));
}

std::unique_ptr<ReportListener> make_summary_listener(std::string path) {
  return make_summary_json_listener([path = std::move(path)](const nlohmann::json& j) { write_report_file(path, j.dump(2) + '\n'); });
}

}  // namespace harness
