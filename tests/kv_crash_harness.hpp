// Real process crashes of the key-value store (used by tests/kv_crash_test.cpp and
// tests/long_kv_crash_test.cpp). Each round forks a child that opens the store in a temporary
// directory (POSIX file system, durability::every_write) and runs random puts and erases on a few
// keys from 1 or more writer threads (some rounds also compact), writing to a pipe a line before
// each operation ("b <thread> <key> <value or ->") and one after it returns ("a <thread>"). The
// parent kills the child with SIGKILL after 0-50 ms, reads the lines, reopens the store and checks
// every key: its value must be that of a write w (or, for an erase, the key absent; or the value
// before the round) that no acknowledged write of the same key started after w returned. So every
// acknowledged write is there unless a later write replaced it, and a key may also hold the value
// of the operation in flight (at most one per thread); never another value. What the store holds
// then is the starting point of the next round.
//
// The parent is single-threaded when it forks (gtest runs tests on one thread); the child runs its
// workload and leaves with _exit.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "ccf/kv/store.hpp"

namespace ccf_test::kv_crash {

struct config {
  int threads = 1;
  int rounds = 200;
  int keys = 16;
  std::uint64_t seed = 1;
};

/// The number of rounds: CCF_KV_CRASH_ROUNDS if set, else `default_rounds` (scaled).
inline int rounds_from_env(int default_rounds, double scale) {
  if (const char* r = std::getenv("CCF_KV_CRASH_ROUNDS")) return std::max(1, std::atoi(r));
  return std::max(1, static_cast<int>(default_rounds * scale));
}

/// Writes one line with one write() (atomic on a pipe: lines are shorter than PIPE_BUF).
inline void emit(int fd, const std::string& line) {
  if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) ::_exit(5);
}

[[noreturn]] inline void child_main(const std::string& dir, int fd, const config& c,
                                    std::uint64_t seed, bool compact,
                                    std::uint64_t snapshot_every) {
  try {
    ccf::kv::options o;
    o.sync = ccf::kv::durability::every_write;
    o.snapshot_every_bytes = snapshot_every;
    auto s = ccf::kv::store::open(dir, o);
    emit(fd, "o\n");
    std::vector<std::thread> threads;
    for (int t = 0; t < c.threads; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937_64 rng(seed * 1000 + static_cast<std::uint64_t>(t));
        try {
          for (int i = 0; i < 20000; ++i) {
            if (compact && t == 0 && rng() % 16 == 0) s->compact();
            const std::string key = "key-" + std::to_string(rng() % static_cast<unsigned>(c.keys));
            if (rng() % 4 == 0) {
              emit(fd, "b " + std::to_string(t) + " " + key + " -\n");
              s->erase(key);
            } else {
              std::string v = "s";
              v.append(std::to_string(seed)).append("t").append(std::to_string(t));
              v.append("i").append(std::to_string(i)).append("_");
              v.resize(v.size() + rng() % 300, static_cast<char>('a' + rng() % 26));
              emit(fd, "b " + std::to_string(t) + " " + key + " " + v + "\n");
              s->put(key, v);
            }
            emit(fd, "a " + std::to_string(t) + "\n");
          }
        } catch (const std::exception& e) {
          std::string what = e.what();
          for (char& ch : what)
            if (ch == '\n') ch = ' ';
          emit(fd, "x " + std::to_string(t) + " " + what.substr(0, 1000) + "\n");
          ::_exit(2);
        }
      });
    }
    for (std::thread& t : threads)
      t.join();
    s->close();
  } catch (const std::exception& e) {
    emit(fd, std::string("x - ") + e.what() + "\n");
    ::_exit(2);
  }
  ::_exit(0);
}

/// One write the child announced.
struct write_op {
  std::optional<std::string> value;  // nullopt: erase
  std::size_t begin = 0;             // line numbers: the announcement and the acknowledgement
  std::size_t ack = SIZE_MAX;        // SIZE_MAX: in flight when killed
};

/// Reads from fd until `deadline` (or EOF); returns false at EOF.
inline bool read_until(int fd, std::string& out, std::chrono::steady_clock::time_point deadline) {
  char buf[65536];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() < 0) return true;
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left.count()) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return true;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

/// Runs c.rounds kill rounds in a fresh temporary directory; returns the rounds run.
inline int run(const config& c) {
  char tmpl[] = "/tmp/ccf_kv_crash_XXXXXX";
  const char* made = ::mkdtemp(tmpl);
  EXPECT_NE(made, nullptr);
  if (made == nullptr) return 0;
  const std::string dir = std::string(made) + "/db";
  std::mt19937_64 rng(c.seed);
  std::map<std::string, std::string> state;            // what the store held after the last round
  std::uint64_t acked_total = 0, in_flight_total = 0;  // in flight: announced, not acknowledged
  int round = 0;
  for (; round < c.rounds && !::testing::Test::HasFailure(); ++round) {
    int fds[2];
    if (::pipe(fds) != 0) {
      ADD_FAILURE() << "pipe failed";
      break;
    }
    const bool compact = rng() % 3 == 0;
    const std::uint64_t snapshot_every = rng() % 3 == 0 ? 4096 + rng() % 65536 : 0;
    const std::uint64_t child_seed = rng();
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      child_main(dir, fds[1], c, child_seed, compact, snapshot_every);
    }
    ::close(fds[1]);
    if (pid < 0) {  // (never kill(-1, ...))
      ADD_FAILURE() << "fork failed";
      ::close(fds[0]);
      break;
    }
    std::string text;
    const auto delay = std::chrono::microseconds(rng() % 50001);
    read_until(fds[0], text, std::chrono::steady_clock::now() + delay);
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    while (read_until(fds[0], text, std::chrono::steady_clock::now() + std::chrono::seconds(10))) {
    }
    ::close(fds[0]);
    const std::string ctx = "round " + std::to_string(round) + " (seed " + std::to_string(c.seed) +
                            ", " + std::to_string(c.threads) + " threads" +
                            (compact ? ", compacting" : "") + ")";

    // Parse: per key, the writes of this round; per thread, its write in flight.
    std::map<std::string, std::vector<write_op>> writes;
    std::vector<std::pair<std::string, std::size_t>> open_op(static_cast<std::size_t>(c.threads));
    std::istringstream lines(text);
    std::string line;
    for (std::size_t n = 0; std::getline(lines, line) && !lines.eof(); ++n) {
      std::istringstream f(line);
      std::string kind, key, value;
      int t = 0;
      f >> kind;
      if (kind == "x") {
        ADD_FAILURE() << ctx << ": the child failed: " << line;
        continue;
      }
      if (kind == "o") continue;
      f >> t;
      auto& [k, at] = open_op.at(static_cast<std::size_t>(t));
      if (kind == "b") {
        ++in_flight_total;
        f >> key >> value;
        write_op w;
        if (value != "-") w.value = value;
        w.begin = n;
        writes[key].push_back(w);
        k = key;
        at = writes[key].size() - 1;
      } else if (kind == "a") {
        writes[k][at].ack = n;
        ++acked_total;
        --in_flight_total;
      }
    }
    if (!text.empty() && text.back() != '\n') ADD_FAILURE() << ctx << ": a partial line";

    // Reopen and check.
    std::map<std::string, std::string> seen;
    try {
      auto s = ccf::kv::store::open(dir);
      EXPECT_EQ(s->opened().dropped_records, 0u) << ctx;
      s->for_each([&](std::string_view k, std::string_view v) {
        EXPECT_TRUE(seen.emplace(std::string(k), std::string(v)).second) << ctx << ": twice";
      });
      EXPECT_EQ(seen.size(), s->size()) << ctx;
      s->close();
    } catch (const std::exception& e) {
      ADD_FAILURE() << ctx << ": reopening threw: " << e.what();
      break;
    }
    for (const auto& [key, v] : seen)
      EXPECT_TRUE(key.starts_with("key-")) << ctx << ": unknown key " << key;
    for (int i = 0; i < c.keys; ++i) {
      const std::string key = "key-" + std::to_string(i);
      const auto now = seen.find(key);
      const std::optional<std::string> got =
          now == seen.end() ? std::nullopt : std::optional<std::string>(now->second);
      std::vector<write_op> candidates = writes[key];
      const auto before = state.find(key);
      write_op prior;  // the value before the round: returned before the round's first line
      if (before != state.end()) prior.value = before->second;
      prior.ack = 0;
      candidates.insert(candidates.begin(), prior);
      bool allowed = false;
      for (std::size_t j = 0; j < candidates.size(); ++j) {
        const write_op& w = candidates[j];
        bool replaced = false;
        for (std::size_t l = 1; l < candidates.size(); ++l) {
          const write_op& w2 = candidates[l];
          replaced |= l != j && w2.ack != SIZE_MAX && w.ack != SIZE_MAX && w2.begin > w.ack;
        }
        allowed |= !replaced && w.value == got;
      }
      EXPECT_TRUE(allowed) << ctx << ": key " << key << " holds "
                           << (got ? got->substr(0, 30) : std::string("nothing")) << " after "
                           << writes[key].size() << " writes of this round";
    }
    state = std::move(seen);
  }
  std::filesystem::remove_all(made);
  std::printf("[ kv_crash ] %d rounds, %d thread(s): %llu acknowledged writes, %llu in flight\n",
              round, c.threads, static_cast<unsigned long long>(acked_total),
              static_cast<unsigned long long>(in_flight_total));
  return round;
}

}  // namespace ccf_test::kv_crash
