// ccf — concurrent cuckoo filters.
// kv/detail/log.hpp: an open log file of the key-value store — creating it, reading records,
// and finding where its valid records end (recovery).
//
// Records are read in place from the file's view (a read-only mapping, file_system.hpp) when the
// file system offers one and the bytes read lie inside it, otherwise with read_at into a caller's
// scratch buffer. Every read checks the record's checksum (record.hpp), so a get never returns
// bytes that were not written as that record.
//
// Recovery (scan). Records are parsed from a start position while they are valid; the first
// position that does not hold a valid record ends the log. What lies beyond it is the tail of an
// interrupted append (a torn record, or blocks of unsynced writes that never reached the disk)
// or corruption. To tell them apart the scan looks for valid records further on (every 8-byte
// aligned position; a record is only valid at the offset it was written at): their count is
// reported, so that the store can keep a copy of a tail that held records, or refuse to open.
// Checking a position costs the size its header claims, so a crafted tail whose every position
// claims a long record would make this quadratic: the bytes checked are bounded (the caller's
// limit), and a scan that reaches the bound says so (the store then counts the tail as holding
// records: it keeps a copy of it, or refuses to open).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "ccf/kv/detail/record.hpp"
#include "ccf/kv/file_system.hpp"

namespace ccf::kv::detail {

class log_file {
 public:
  /// Creates a new, empty log (header written and synced) with a random id and the given seed.
  static std::unique_ptr<log_file> create(file_system& fs, const std::string& path,
                                          std::uint64_t seed) {
    log_header h;
    std::random_device rd;
    for (std::size_t i = 0; i < h.id.size(); i += 4)
      put_u32(&h.id[i], rd());
    h.seed = seed;
    std::unique_ptr<file> f = fs.open(path, file_system::open_mode::create);
    f->truncate(0);
    const auto bytes = h.encode();
    f->write_at(0, bytes);
    f->sync();
    return std::unique_ptr<log_file>(new log_file(path, std::move(f), h));
  }
  /// Opens an existing log; throws corrupt_error when its header is bad.
  static std::unique_ptr<log_file> open(file_system& fs, const std::string& path) {
    std::unique_ptr<file> f = fs.open(path, file_system::open_mode::existing);
    std::array<std::byte, log_header_size> bytes{};
    const std::size_t got = f->read_at(0, bytes);
    std::string why;
    const std::optional<log_header> h =
        log_header::decode(std::span<const std::byte>(bytes.data(), got), why);
    if (!h) throw corrupt_error("ccf::kv: the log '" + path + "' is " + why);
    return std::unique_ptr<log_file>(new log_file(path, std::move(f), *h));
  }

  const std::string& path() const noexcept { return path_; }
  /// The file was renamed (messages name the new path).
  void moved_to(std::string path) { path_ = std::move(path); }
  const log_header& header() const noexcept { return header_; }
  file& raw() noexcept { return *file_; }
  std::uint64_t size() const { return file_->size(); }

  /// The valid record at `offset`, reading at most up to `end`; the views point into the file's
  /// mapping or into `scratch`.
  std::optional<record_view> read(std::uint64_t offset, std::uint64_t end,
                                  std::string& scratch) const {
    if (offset >= end) return std::nullopt;
    if (view_ != nullptr && end <= view_size_) {
      return parse_record(view_ + offset, end - offset, offset, id_low_);
    }
    const std::uint64_t size = claimed_size(offset, end);
    if (size == 0) return std::nullopt;
    scratch.resize(static_cast<std::size_t>(size));
    const std::span<std::byte> into(reinterpret_cast<std::byte*>(scratch.data()), scratch.size());
    if (file_->read_at(offset, into) != into.size()) return std::nullopt;
    return parse_record(into.data(), into.size(), offset, id_low_);
  }
  /// The record at `offset` (below `end`), where a walk over the log or an index slot found one;
  /// throws corrupt_error when it is not valid there.
  record_view record_at(std::uint64_t offset, std::uint64_t end, std::string& scratch) const {
    const std::optional<record_view> r = read(offset, end, scratch);
    if (!r) {
      throw corrupt_error("ccf::kv: the log '" + path_ + "' is corrupt at offset " +
                          std::to_string(offset) + " (no valid record there)");
    }
    return *r;
  }
  /// record_at for an offset an index slot names: the slot of a key always names its live put
  /// record, so a delete record there (only a forged index snapshot can point at one) is a
  /// corrupt_error, never the key's value.
  record_view indexed_record_at(std::uint64_t offset, std::uint64_t end,
                                std::string& scratch) const {
    const record_view r = record_at(offset, end, scratch);
    if (r.erased) {
      throw corrupt_error("ccf::kv: the index of the log '" + path_ +
                          "' names the delete record at offset " + std::to_string(offset) +
                          " (a damaged index snapshot): remove the file 'index' next to it to "
                          "rebuild the index from the log");
    }
    return r;
  }

  struct scan_result {
    std::uint64_t end = 0;      // end of the valid records
    std::uint64_t records = 0;  // valid records in [from, end)
    std::uint64_t beyond = 0;   // valid records found after `end`
    bool stopped = false;       // the search after `end` checked `search_limit` bytes and stopped
  };
  /// Calls apply(offset, record) for the valid records from `from` on, up to the first position
  /// that holds none (see the top of this file); the search after it checksums at most
  /// search_limit(bytes after it) bytes.
  template <class Apply, class Limit>
  scan_result scan(std::uint64_t from, Apply&& apply, Limit&& search_limit) const {
    const std::uint64_t size = file_->size();
    scan_result r;
    std::string scratch;
    std::uint64_t at = from;
    for (std::optional<record_view> rec; (rec = read(at, size, scratch)); at += rec->size) {
      apply(at, *rec);
      ++r.records;
    }
    r.end = at;
    const std::uint64_t budget = search_limit(size - at);
    std::uint64_t checked = 0;
    for (std::uint64_t p = pad8(at + 1); p + record_header_size <= size; p += 8) {
      const std::uint64_t claimed = claimed_size(p, size);
      if (claimed == 0) continue;
      if ((checked += claimed) > budget) {
        r.stopped = true;
        break;
      }
      if (const std::optional<record_view> rec = read(p, size, scratch)) {
        ++r.beyond;
        p += rec->size - 8;
      }
    }
    return r;
  }

 private:
  log_file(std::string path, std::unique_ptr<file> f, const log_header& h)
      : path_(std::move(path)), file_(std::move(f)), header_(h), id_low_(h.id_low()) {
    view_ = file_->view();
    view_size_ = view_ != nullptr ? file_->view_size() : 0;
  }

  /// The size of the record whose header is at `offset`, as the header claims it, when the
  /// header is one a record can have (claimed_record_size) and the record fits below `end`;
  /// else 0.
  std::uint64_t claimed_size(std::uint64_t offset, std::uint64_t end) const {
    std::array<std::byte, record_header_size> h{};
    if (end - offset < h.size()) return 0;
    if (view_ != nullptr && offset + h.size() <= view_size_) {
      std::memcpy(h.data(), view_ + offset, h.size());
    } else if (file_->read_at(offset, h) != h.size()) {
      return 0;
    }
    const std::uint64_t size = claimed_record_size(h.data());
    return size <= end - offset ? size : 0;
  }

  std::string path_;
  std::unique_ptr<file> file_;
  log_header header_;
  std::uint64_t id_low_;
  const std::byte* view_ = nullptr;
  std::uint64_t view_size_ = 0;
};

}  // namespace ccf::kv::detail
