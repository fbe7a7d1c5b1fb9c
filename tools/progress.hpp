// The ccf tool's progress line: bytes and keys done, rate and time left, redrawn on standard
// error at most five times a second — only when standard error is a terminal (CCF_PROGRESS=1
// forces it, CCF_PROGRESS=0 turns it off), so that scripts and logs see nothing of it.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <unistd.h>

namespace ccf_tool {

class progress {
 public:
  using clock = std::chrono::steady_clock;

  /// A progress line for `what` ("build", "query"), over `total_bytes` of input (0: unknown,
  /// until set_total()).
  explicit progress(std::string what, std::uint64_t total_bytes = 0)
      : what_(std::move(what)),
        total_(total_bytes),
        on_(enabled()),
        start_(clock::now()),
        last_(start_) {}
  progress(const progress&) = delete;
  progress& operator=(const progress&) = delete;
  ~progress() { finish(); }

  static bool enabled() {
    const char* forced = std::getenv("CCF_PROGRESS");
    if (forced != nullptr && std::strcmp(forced, "1") == 0) return true;
    if (forced != nullptr && std::strcmp(forced, "0") == 0) return false;
    return ::isatty(STDERR_FILENO) == 1;
  }

  void set_total(std::uint64_t total_bytes) noexcept { total_ = total_bytes; }

  /// Reports `bytes` of input and `keys` done; cheap enough to call for every key.
  void update(std::uint64_t bytes, std::uint64_t keys) {
    if (!on_ || ++calls_ % 1024 != 0) return;
    const clock::time_point now = clock::now();
    if (now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    draw(bytes, keys, now);
  }
  /// Clears the progress line (the next update() may draw it again): before output that goes to
  /// the same terminal.
  void finish() {
    if (!on_ || !drawn_) return;
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    drawn_ = false;
  }

 private:
  void draw(std::uint64_t bytes, std::uint64_t keys, clock::time_point now) {
    const double seconds = std::chrono::duration<double>(now - start_).count();
    char line[160];
    int n = std::snprintf(line, sizeof line, "\rccf %s: %s keys, %s keys/s", what_.c_str(),
                          count(static_cast<double>(keys)).c_str(),
                          count(static_cast<double>(keys) / seconds).c_str());
    if (total_ != 0 && bytes <= total_ && n > 0) {
      const double done = static_cast<double>(bytes) / static_cast<double>(total_);
      const double left = done > 0 ? seconds * (1 - done) / done : 0;
      n += std::snprintf(line + n, sizeof line - static_cast<std::size_t>(n),
                         ", %.0f%% of %s, %d:%02d left", done * 100,
                         size(static_cast<double>(total_)).c_str(), static_cast<int>(left) / 60,
                         static_cast<int>(left) % 60);
    }
    std::fputs(line, stderr);
    std::fputs("\033[K", stderr);
    std::fflush(stderr);
    drawn_ = true;
  }
  static std::string count(double x) {
    char s[32];
    if (x >= 1e9) {
      std::snprintf(s, sizeof s, "%.2fG", x / 1e9);
    } else if (x >= 1e6) {
      std::snprintf(s, sizeof s, "%.2fM", x / 1e6);
    } else if (x >= 1e3) {
      std::snprintf(s, sizeof s, "%.1fk", x / 1e3);
    } else {
      std::snprintf(s, sizeof s, "%.0f", x);
    }
    return s;
  }
  static std::string size(double bytes) { return count(bytes) + "B"; }

  std::string what_;
  std::uint64_t total_;
  bool on_;
  bool drawn_ = false;
  std::uint64_t calls_ = 0;
  clock::time_point start_, last_;
};

}  // namespace ccf_tool
