// Paths for the files and folders tests write under the system's temporary directory.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include <unistd.h>

namespace hiccup_test {

/// `temp_directory_path() / "NAME-PID"`, PID being this process's: ctest runs every TEST_CASE in
/// a process of its own, so two entries running at once, or the tests of two checkouts on one
/// machine, never write to the same path. Neither created nor removed: the test does both.
inline std::filesystem::path temp_path(std::string_view name) {
  return std::filesystem::temp_directory_path() / (std::string(name) + "-" + std::to_string(::getpid()));
}

}  // namespace hiccup_test
