// ReportDirLock (see report_dir_lock.h): flock on REPORT_DIR/.hiccup-lock.
#include "harness/report/report_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

namespace harness {

std::optional<ReportDirLock> ReportDirLock::take(const std::string& dir, const std::string& holder,
                                                 std::string& error) {
  const std::string path = (std::filesystem::path(dir) / kReportDirLockFile).string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    error = path + ": cannot open the report directory's lock file: " + std::strerror(errno);
    return std::nullopt;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int why = errno;
    std::string who;
    char buf[512];
    const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
    if (n > 0) who.assign(buf, static_cast<std::size_t>(n));
    while (!who.empty() && (who.back() == '\n' || who.back() == '\r')) who.pop_back();
    for (char& c : who) {
      if (static_cast<unsigned char>(c) < 0x20) c = ' ';  // one line; no terminal escapes from the file
    }
    ::close(fd);
    if (why == EWOULDBLOCK) {
      error = dir + ": another exploration is writing to this report directory" +
              (who.empty() ? std::string() : " (" + who + ")") +
              "; it would remove or overwrite what that one writes: give each its own --report-dir "
              "(shards of one run: `hiccup report merge` joins them), or wait until it ends";
    } else {
      error = path + ": cannot lock the report directory: " + std::strerror(why);
    }
    return std::nullopt;
  }
  const std::string line = "pid " + std::to_string(::getpid()) + ": " + holder + "\n";
  if (::ftruncate(fd, 0) == 0) {
    (void)!::pwrite(fd, line.data(), line.size(), 0);  // informational only: the flock is the lock
  }
  return ReportDirLock(fd);
}

ReportDirLock::ReportDirLock(ReportDirLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

ReportDirLock& ReportDirLock::operator=(ReportDirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

ReportDirLock::~ReportDirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace harness
