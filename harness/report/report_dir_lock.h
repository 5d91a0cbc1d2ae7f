// One writer per report directory: `hiccup explore` holds an exclusive advisory lock (flock) on
// REPORT_DIR/.hiccup-lock for as long as it reads and writes there, so a second exploration
// started on the same directory stops at once instead of removing or overwriting what the first
// one wrote. The kernel drops the lock when the holder exits, however it exits: no stale lock.
#pragma once

#include <optional>
#include <string>

namespace harness {

/// The lock file's name inside a report directory. It holds the holder's pid and command line
/// (for the refusal message only; the lock itself is the flock).
inline constexpr const char* kReportDirLockFile = ".hiccup-lock";

/// An exclusive lock on one report directory, held until destroyed. Move-only.
class ReportDirLock {
 public:
  /// Takes the lock on `dir` (which must exist) without waiting, writing "pid PID: HOLDER" into the
  /// lock file. nullopt with `error` set (lower-case, no trailing period) when another process
  /// holds it (naming that process as its lock file says) or when the lock file cannot be opened
  /// (a symlink in its place included: it is never followed).
  [[nodiscard]] static std::optional<ReportDirLock> take(const std::string& dir, const std::string& holder,
                                                         std::string& error);

  ReportDirLock(ReportDirLock&& other) noexcept;
  ReportDirLock& operator=(ReportDirLock&& other) noexcept;
  ReportDirLock(const ReportDirLock&) = delete;
  ReportDirLock& operator=(const ReportDirLock&) = delete;
  ~ReportDirLock();

 private:
  explicit ReportDirLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace harness
