// ccf benchmarks — report.hpp: one result row of the throughput sweep, printed as a readable table
// on stdout and appended to the CSV file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <system_error>

#include "bench_support.hpp"

namespace ccf::bench {

struct result_row {
  std::string filter;
  unsigned bits = 0;  // fingerprint bits (0: not a fingerprint filter)
  unsigned threads = 1;
  std::string op;
  std::string dist = "-";
  bool batch = false;
  std::uint64_t table_bytes = 0;
  std::uint64_t items = 0;  // keys in the table while the operation ran
  double load = -1;         // items / slots (negative: not applicable)
  std::uint64_t ops = 0;
  double seconds = 0;
  double ceiling_mops = 0;            // two-line memory ceiling for this table and thread count
  std::int64_t false_negatives = -1;  // negative: not checked in this operation
  std::int64_t failed = -1;           // failed inserts (fill, mixes) or erases (erase)
  double fpr = -1;                    // measured false-positive rate (negative: not measured)
  unsigned repeat = 0;

  double mops() const noexcept {
    return seconds > 0 ? static_cast<double>(ops) / seconds / 1e6 : 0.0;
  }
  double ceiling_fraction() const noexcept {
    return ceiling_mops > 0 ? mops() / ceiling_mops : -1.0;
  }
};

inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

inline std::string fixed(double v, int digits) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(digits);
  out << v;
  return out.str();
}

inline std::string scientific(double v) {
  std::ostringstream out;
  out.setf(std::ios::scientific);
  out.precision(3);
  out << v;
  return out.str();
}

class reporter {
 public:
  static constexpr const char* csv_header =
      "host,cpu,cores,compiler,git_revision,filter,bits,threads,op,dist,batch,table_bytes,items,"
      "load,ops,seconds,mops,ceiling_mops,ceiling_fraction,false_negatives,failed,fpr,repeat";

  reporter(machine_info machine, const std::string& csv_path) : machine_(std::move(machine)) {
    if (!csv_path.empty()) {
      std::error_code ec;
      const bool fresh =
          !std::filesystem::exists(csv_path, ec) || std::filesystem::file_size(csv_path, ec) == 0;
      csv_.open(csv_path, std::ios::app);
      if (!csv_) throw std::runtime_error("ccf-bench: cannot open " + csv_path);
      if (fresh) csv_ << csv_header << "\n";
    }
  }

  void add(const result_row& r) {
    if (!header_printed_) {
      std::printf("%-14s %4s %3s %-13s %-7s %1s %9s %10s %6s %9s %6s %6s %7s %10s\n", "filter",
                  "bits", "thr", "op", "dist", "b", "MiB", "items", "load", "Mops/s", "%ceil", "FN",
                  "failed", "FPR");
      header_printed_ = true;
    }
    const double frac = r.ceiling_fraction();
    std::printf(
        "%-14s %4s %3u %-13s %-7s %1d %9.2f %10llu %6s %9.2f %6s %6s %7s %10s\n", r.filter.c_str(),
        r.bits ? std::to_string(r.bits).c_str() : "-", r.threads, r.op.c_str(), r.dist.c_str(),
        r.batch ? 1 : 0, static_cast<double>(r.table_bytes) / (1 << 20),
        static_cast<unsigned long long>(r.items), r.load >= 0 ? fixed(r.load, 3).c_str() : "-",
        r.mops(), frac >= 0 ? fixed(100 * frac, 1).c_str() : "-",
        r.false_negatives >= 0 ? std::to_string(r.false_negatives).c_str() : "-",
        r.failed >= 0 ? std::to_string(r.failed).c_str() : "-",
        r.fpr >= 0 ? scientific(r.fpr).c_str() : "-");
    std::fflush(stdout);
    if (csv_.is_open()) {
      csv_ << csv_field(machine_.host) << ',' << csv_field(machine_.cpu_model) << ','
           << machine_.cores << ',' << csv_field(machine_.compiler) << ','
           << csv_field(machine_.git_revision) << ',' << r.filter << ',' << r.bits << ','
           << r.threads << ',' << r.op << ',' << r.dist << ',' << (r.batch ? 1 : 0) << ','
           << r.table_bytes << ',' << r.items << ',' << (r.load >= 0 ? fixed(r.load, 5) : "") << ','
           << r.ops << ',' << fixed(r.seconds, 6) << ',' << fixed(r.mops(), 4) << ','
           << (r.ceiling_mops > 0 ? fixed(r.ceiling_mops, 4) : "") << ','
           << (frac >= 0 ? fixed(frac, 4) : "") << ','
           << (r.false_negatives >= 0 ? std::to_string(r.false_negatives) : "") << ','
           << (r.failed >= 0 ? std::to_string(r.failed) : "") << ','
           << (r.fpr >= 0 ? scientific(r.fpr) : "") << ',' << r.repeat << "\n";
      csv_.flush();
    }
  }

 private:
  machine_info machine_;
  std::ofstream csv_;
  bool header_printed_ = false;
};

}  // namespace ccf::bench
