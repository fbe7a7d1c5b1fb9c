// ccf — concurrent cuckoo filters.
// python/src/filter.hpp: the filter behind ccf.CuckooFilter and ccf.GrowingCuckooFilter.
//
// py_filter wraps a ccf::runtime_filter. Threads: a sequential filter never releases the GIL, so
// Python threads take turns on it. A concurrent filter releases the GIL for every batch (add_many,
// contains_many, apply_many, update, save, bytes), so threads run their batches on it at once;
// clear(), which the filter does not allow during other operations, waits for the running batches
// (a shared_mutex held shared by batches, exclusively by clear) without the GIL, then clears with
// both the GIL and the lock, so no single-item call starts beside it either (one that began
// without the GIL while a save streamed may still be finishing: the filter allows that).
//
// Lock order: the shared_mutex before the GIL. A thread may wait for the GIL while it holds the
// mutex (clear, taking the GIL back; a batch, to run signal handlers), but never waits for the
// mutex while it holds the GIL (every member releases the GIL first, and a batch unlocks the
// mutex before it takes the GIL back for good), so the two never wait on each other.
//
// A save of a concurrent filter streams from a snapshot that single-item calls wait for, and the
// save may wait for Python code (another thread reading the FIFO it writes). So while one streams,
// single-item calls and property reads release the GIL (single()): the count of streaming saves is
// read and changed only with the GIL held, so no call that holds the GIL is running when a save
// begins, and none begins while one streams.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <numeric>
#include <optional>
#include <ostream>
#include <shared_mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <ccf/runtime_filter.hpp>

#include "items.hpp"
#include "save_file.hpp"
#include "typed_arg.hpp"

namespace ccf_py {

class py_filter;
/// The concurrent filter whose batch, stopped between chunks, runs signal handlers in this
/// thread (or null).
inline thread_local const py_filter* handlers_during_batch_of = nullptr;

/// ccf.FilterFullError, set by the module.
inline PyObject* filter_full_error = nullptr;

/// Raises an exception of `type` with `message` and an `inserted` attribute: how many items of the
/// call went in before it stopped.
[[noreturn]] inline void raise_with_inserted(PyObject* type, const std::string& message,
                                             std::size_t inserted) {
  py::object e = py::reinterpret_borrow<py::object>(type)(message);
  e.attr("inserted") = inserted;
  PyErr_SetObject(type, e.ptr());
  throw py::error_already_set();
}

/// Raises ccf.FilterFullError; its `inserted` attribute says how many items of the call went in
/// (those before the first refused one). A static filter refuses an item when it is full, or,
/// less than half full, when copies of the item fill its two buckets; a growing one doubles
/// instead, and refuses only where copies of items added many times crowd it (docs/growing.md,
/// "When"). The message says which, as the ccf tool's does.
[[noreturn]] inline void raise_full(std::size_t inserted, const ccf::runtime_filter& f) {
  const std::string done =
      std::to_string(inserted) + " items of this call inserted, the next refused";
  const std::string once_only =
      "add an item that may repeat only where `in` says it is not there yet";
  const std::size_t copies = 2 * f.slots_per_bucket();
  std::string msg;
  if (f.growing()) {
    msg = "ccf: the growing filter refused an item (" + done +
          "): copies of items added many times crowd its buckets (the table may have doubled for "
          "it: adding it again may succeed); " +
          once_only + " (docs/growing.md, When)";
  } else if (f.load_factor() < 0.5) {
    msg = "ccf: the filter refused an item (" + done + ") while less than half full: an item is " +
          "held at most 2 x " + std::to_string(f.slots_per_bucket()) + " = " +
          std::to_string(copies) + " times (" + std::to_string(f.slots_per_bucket()) +
          " for the rare item whose two buckets are one), as copies of it crowd its buckets; " +
          once_only;
  } else {
    msg = "ccf: the filter is full (" + done + "); use a larger capacity or a GrowingCuckooFilter";
  }
  raise_with_inserted(filter_full_error, msg, inserted);
}

/// Thrown by py_filter::insert_batch when a growing filter's doubling finds no memory: how many
/// items of the batch went in before the one that asked for it.
struct doubling_failed {
  std::size_t inserted;
};

/// Raises MemoryError with an `inserted` attribute, as FilterFullError has: the items of the call
/// before the one whose doubling found no memory went in; that one and those after did not.
[[noreturn]] inline void raise_no_memory(std::size_t inserted, const ccf::runtime_filter& f) {
  raise_with_inserted(PyExc_MemoryError,
                      "ccf: no memory to double the growing filter (its table is " +
                          std::to_string(f.size_in_bytes()) + " bytes; " +
                          std::to_string(inserted) + " items of this call inserted, the next not)",
                      inserted);
}

class py_filter {
 public:
  py_filter(ccf::runtime_filter f, bool concurrent)
      : f_(std::move(f)), concurrent_(concurrent), hasher_(f_.seed()) {}
  virtual ~py_filter() = default;
  py_filter(const py_filter&) = delete;
  py_filter& operator=(const py_filter&) = delete;

  static ccf::filter_kind kind_for(bool concurrent) noexcept {
    return concurrent ? ccf::filter_kind::concurrent : ccf::filter_kind::sequential;
  }

  const ccf::runtime_filter& get() const noexcept { return f_; }
  /// Gives a filter just made, which no other code has seen yet, the table `f` (of the same
  /// concurrency): how an instance of a subclass is loaded.
  void adopt(ccf::runtime_filter f) {
    f_ = std::move(f);
    hasher_ = item_hasher(f_.seed());
  }
  bool concurrent() const noexcept { return concurrent_; }
  std::uint64_t hash(item_arg item) const { return hasher_.item(item); }

  /// Runs op(), a single-item call or a property read of the filter, with the GIL held, or
  /// released while a save streams (see the top of this file). Call with the GIL held.
  template <class Op>
  auto single(Op&& op) const {
    if (streaming_saves_ == 0) return op();
    py::gil_scoped_release nogil;
    return op();
  }

  /// Whether an insert may double the table of a concurrent growing filter (it doubles past
  /// 95 % load; a sequential filter is guarded by the GIL, which it keeps).
  bool may_double() const noexcept {
    return concurrent_ && f_.growing() && f_.load_factor() >= 0.9;
  }

  // ---- one item (hashed with the GIL held, then single()) ----
  void add(item_arg item) {
    const std::uint64_t h = hasher_.item(item);
    bool in = false;
    try {
      if (may_double()) {
        // A doubling copies the whole table (a second or more for a large one): every other
        // Python thread stopped meanwhile. The insert runs as a batch does, without the GIL.
        batch_guard unlocked(*this);
        in = f_.insert_hash(h);
      } else {
        in = single([&] { return f_.insert_hash(h); });
      }
    } catch (const std::bad_alloc&) {
      if (!f_.growing()) throw;
      raise_no_memory(0, f_);
    }
    if (!in) raise_full(0, f_);
  }
  bool remove(item_arg item) {
    const std::uint64_t h = hasher_.item(item);
    return single([&] { return f_.erase_hash(h); });
  }
  bool contains(item_arg item) const {
    const std::uint64_t h = hasher_.item(item);
    return single([&] { return f_.contains_hash(h); });
  }
  std::size_t count(item_arg item) const {
    const std::uint64_t h = hasher_.item(item);
    return single([&] { return f_.count_hash(h); });
  }

  // ---- batches ----
  /// add_many and update in Python: a numpy array (in place) or the items of any other iterable.
  void add_many(items_arg items) {
    item_hasher::refuse_masked(items.value.ptr());
    if (py::isinstance<py::array>(items))
      return add_array(py::reinterpret_borrow<py::array>(items));
    add_iterable(items);
  }
  py::array_t<bool> contains_many(items_arg items) const {
    item_hasher::refuse_masked(items.value.ptr());
    if (py::isinstance<py::array>(items))
      return contains_array(py::reinterpret_borrow<py::array>(items));
    return contains_iterable(items);
  }
  /// apply_many in Python: ops[i] (CONTAINS, ADD or REMOVE, or their names) applied to items[i],
  /// in order, as ccf's apply_many does (a refused add answers False and the stream goes on).
  /// Numpy arrays (ops uint8, items uint64) are used in place; any other iterables are read
  /// first. Every op code and the two lengths are checked before any op runs.
  py::array_t<bool> apply_many(items_arg ops, items_arg items) {
    item_hasher::refuse_masked(ops.value.ptr());
    item_hasher::refuse_masked(items.value.ptr());
    std::vector<std::uint8_t> owned_codes;
    const std::span<const std::uint8_t> codes = op_codes(ops, owned_codes);
    std::vector<std::uint64_t> hashes;  // an iterable's items, hashed
    std::vector<py::ssize_t> shape;
    const std::uint64_t* values = nullptr;
    const bool in_place = py::isinstance<py::array>(items);  // values not hashed yet
    if (in_place) {
      const auto a = py::reinterpret_borrow<py::array>(items);
      values = u64_data(a);
      shape.assign(a.shape(), a.shape() + a.ndim());
    } else {
      py::iterator it = py::iter(items);
      hasher_.items(it, hashes, static_cast<std::size_t>(-1));
      values = hashes.data();
      shape.push_back(static_cast<py::ssize_t>(hashes.size()));
    }
    const std::size_t n = static_cast<std::size_t>(
        std::accumulate(shape.begin(), shape.end(), py::ssize_t{1}, std::multiplies<>()));
    if (codes.size() != n) {
      throw py::value_error("ccf: apply_many needs one op per item, got " +
                            std::to_string(codes.size()) + " ops for " + std::to_string(n) +
                            " items; no op ran");
    }
    py::array_t<bool> results(shape);
    if (!apply_codes(codes, values, in_place, results.mutable_data())) {
      throw py::error_already_set();  // a signal's handler raised; the ops before it ran
    }
    return results;
  }
  /// Waits for the running batches without the GIL (one of them may wait on Python code: a
  /// save to a FIFO that another Python thread reads), then clears with the lock and the GIL.
  void clear() {
    std::unique_lock<std::shared_mutex> lock(mutex_, std::defer_lock);
    if (concurrent_ && handlers_during_batch_of == this) {
      throw std::runtime_error(
          "ccf: clear() in a signal handler run during a batch of the same filter would wait "
          "for that batch forever");
    }
    if (concurrent_) {
      py::gil_scoped_release nogil;
      lock.lock();
    }  // the GIL is taken back with the lock held: the lock order above
    f_.clear();
  }

  // ---- files and bytes ----
  py::bytes to_bytes() const {
    if (std::optional<py::bytes> b = to_bytes_in_place()) return *std::move(b);
    std::vector<std::byte> b;
    {
      batch_guard g(*this);
      b = f_.to_bytes();
    }
    return py::bytes(reinterpret_cast<const char*>(b.data()), b.size());
  }
  /// The filter's file written straight into a bytes object of its size: made in a vector and
  /// then copied, it took twice the file's size at its peak (a pickle of a large filter). Empty
  /// if the file did not fill it exactly: a concurrent growing filter's file may change size
  /// meanwhile (another thread's insert into a small one, whose file keeps every hash, or a
  /// doubling), and to_bytes then makes it in a vector.
  std::optional<py::bytes> to_bytes_in_place() const {
    std::vector<std::byte> none;
    const std::uint64_t n = f_.read_bytes(0, 0, none);
    if (n > static_cast<std::uint64_t>(PY_SSIZE_T_MAX)) return std::nullopt;
    auto out = py::reinterpret_steal<py::bytes>(
        PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(n)));
    if (!out) throw py::error_already_set();
    bool whole = false;
    {
      batch_guard g(*this);  // the bytes object is this thread's alone until it returns
      fixed_out_buffer buffer(PyBytes_AS_STRING(out.ptr()), static_cast<std::size_t>(n));
      std::ostream stream(&buffer);
      try {
        f_.save(stream);
        whole = buffer.written() == n;
      } catch (const std::runtime_error&) {  // stream_out: the buffer was too small
      }
    }
    if (!whole) return std::nullopt;
    return out;
  }
  /// Writes the filter's file (save_file.hpp: a regular file is replaced only once the new one is
  /// whole). Opening and writing may wait (a FIFO that another Python thread reads), so neither
  /// holds the GIL: a sequential filter, which the GIL guards, is serialised first; a concurrent
  /// one streams under its shared lock, counted in streaming_saves_ (with the GIL held) while it
  /// does. A failed write is an OSError.
  void save(path_arg path) const {
    const std::string p = fs_path(path);
    std::vector<std::byte> bytes;
    if (!concurrent_) bytes = f_.to_bytes();
    int err = 0;
    do {
      // A signal that interrupted the open (a FIFO waiting for its reader) runs its handler; if
      // that raises nothing, the save goes on, as open() does in Python (PEP 475).
      if (err == EINTR && PyErr_CheckSignals() != 0) throw py::error_already_set();
      std::optional<streaming_save> counted;  // first made, last dropped: with the GIL held
      if (concurrent_) counted.emplace(*this);
      std::optional<batch_guard> streaming;
      if (concurrent_) streaming.emplace(*this);  // releases the GIL
      std::optional<py::gil_scoped_release> nogil;
      if (!concurrent_) nogil.emplace();
      err = write_file(p, bytes);
    } while (err == EINTR);
    if (err != 0) {
      errno = err;
      io_error(path);
    }
  }
  /// A filter read from bytes or a file; the GIL is released while it loads.
  static ccf::runtime_filter from_bytes(py::handle data, bool concurrent) {
    const py::buffer_info info = py::reinterpret_borrow<py::buffer>(data).request();
    if (!c_contiguous(info)) {
      throw py::type_error("ccf: filter bytes must be a contiguous buffer (bytes, bytearray ...)");
    }
    const std::span<const std::byte> span(static_cast<const std::byte*>(info.ptr),
                                          static_cast<std::size_t>(info.size * info.itemsize));
    py::gil_scoped_release nogil;
    return ccf::runtime_filter::load(span, kind_for(concurrent));
  }
  static ccf::runtime_filter from_file(py::handle path, bool concurrent) {
    const std::string p = fs_path(path);
    std::optional<ccf::runtime_filter> f;
    int err = 0;
    do {
      // A signal that interrupted the open (a FIFO waiting for its writer) runs its handler; if
      // that raises nothing, the load goes on, as open() does in Python (PEP 475).
      if (err == EINTR && PyErr_CheckSignals() != 0) throw py::error_already_set();
      err = 0;
      // Opening may wait (a FIFO that another Python thread writes): not with the GIL held.
      py::gil_scoped_release nogil;
      errno = 0;
      std::ifstream in(p, std::ios::binary);
      if (!in) {
        err = errno;
      } else {
        try {
          f.emplace(ccf::runtime_filter::load(in, kind_for(concurrent)));
        } catch (const ccf::format_error&) {
          if (!in.bad()) throw;  // bytes that are no filter: FormatError
          err = errno;           // the file could not be read (a directory, EIO): OSError
        }
      }
    } while (err == EINTR && !f);
    if (!f) {
      errno = err != 0 ? err : EIO;
      io_error(path);
    }
    return std::move(*f);
  }

 private:
  static constexpr std::size_t array_chunk = 16384;     // hashes of an array per batch
  static constexpr std::size_t iterable_chunk = 65536;  // hashes of an iterable per batch
  static constexpr std::size_t signal_chunks = 64;      // array chunks between signal checks

  /// For a concurrent filter: the GIL released and the filter's lock held shared, for a batch.
  class batch_guard {
   public:
    explicit batch_guard(const py_filter& f) : f_(f), concurrent_(f.concurrent_) {
      if (!f.concurrent_) return;
      nogil_.emplace();
      lock_ = std::shared_lock(f.mutex_);
    }
    /// Runs the handlers of signals received (Ctrl-C); true when one raised, its error then set.
    /// Only the main thread runs them: a concurrent batch takes the GIL back for it, the lock
    /// still held (clear() in a handler raises: it would wait for this batch), and stops looking
    /// when it runs in another thread.
    bool interrupted() {
      if (!concurrent_) return PyErr_CheckSignals() != 0;
      if (!may_be_signalled_) return false;
      py::gil_scoped_acquire gil;
      const py_filter* const outer = std::exchange(handlers_during_batch_of, &f_);
      bool raised = PyErr_CheckSignals() != 0;
      if (!raised) {
        try {  // Python code, which may run a handler itself
          const py::module_ threading = py::module_::import("threading");
          may_be_signalled_ =
              threading.attr("get_ident")().equal(threading.attr("main_thread")().attr("ident"));
        } catch (py::error_already_set& e) {
          e.restore();
          raised = true;
        }
      }
      handlers_during_batch_of = outer;
      return raised;
    }

   private:
    const py_filter& f_;
    bool concurrent_;
    bool may_be_signalled_ = true;
    std::optional<py::gil_scoped_release> nogil_;
    std::shared_lock<std::shared_mutex> lock_;  // released before the GIL is taken back
  };

  /// Counts a save streaming (made and dropped with the GIL held).
  class streaming_save {
   public:
    explicit streaming_save(const py_filter& f) : f_(f) { ++f_.streaming_saves_; }
    ~streaming_save() { --f_.streaming_saves_; }
    streaming_save(const streaming_save&) = delete;
    streaming_save& operator=(const streaming_save&) = delete;

   private:
    const py_filter& f_;
  };

  /// Writes the file at p (a sequential filter's `bytes`, or a concurrent filter streamed),
  /// without the GIL; returns 0 or an errno.
  int write_file(const std::string& p, std::span<const std::byte> bytes) const {
    const int err = write_file_once(p, bytes, false);
    // The new file could not be renamed over the old one: written again, in place.
    return err == save_file::write_in_place ? write_file_once(p, bytes, true) : err;
  }
  int write_file_once(const std::string& p, std::span<const std::byte> bytes, bool in_place) const {
    save_file file(in_place);
    if (const int err = file.open(p); err != 0) return err;
    std::ostream out(&file.buffer());
    try {
      if (concurrent_) {
        f_.save(out);
      } else {
        out.write(reinterpret_cast<const char*>(bytes.data()),
                  static_cast<std::streamsize>(bytes.size()));
      }
    } catch (const std::runtime_error&) {  // stream_out: the stream failed
    }
    if (out.fail()) return file.write_error();
    return file.commit();
  }

  /// Adds the items of any iterable, hashing them in chunks (the GIL held) and inserting each
  /// chunk as a batch. An item that is not one raises after the items before it are added.
  void add_iterable(py::handle items) {
    py::iterator it = py::iter(items);
    std::vector<std::uint64_t> hashes;
    std::size_t done = 0;
    for (bool last = false; !last;) {
      hashes.clear();
      try {
        last = hasher_.items(it, hashes, iterable_chunk);
      } catch (...) {
        insert_hashes(hashes, done);  // the Python error is held by the exception meanwhile
        throw;
      }
      insert_hashes(hashes, done);
    }
  }
  /// Inserts `hashes` (a batch), counting into `done`; FilterFullError at the first refusal,
  /// MemoryError where a doubling found no memory.
  void insert_hashes(std::span<const std::uint64_t> hashes, std::size_t& done) {
    std::size_t n = 0;
    try {
      batch_guard g(*this);
      n = insert_batch(hashes);
    } catch (const doubling_failed& e) {
      raise_no_memory(done + e.inserted, f_);
    }
    done += n;
    if (n < hashes.size()) raise_full(done, f_);
  }
  /// f_.insert_many_hashes(hashes), a growing filter's one by one: a doubling that finds no
  /// memory (std::bad_alloc) ends the batch with the items before it in, and throws
  /// doubling_failed saying how many (an exception from insert_many_hashes could not).
  std::size_t insert_batch(std::span<const std::uint64_t> hashes) {
    if (!f_.growing()) return f_.insert_many_hashes(hashes);
    std::size_t i = 0;
    try {
      while (i < hashes.size() && f_.insert_hash(hashes[i]))
        ++i;
    } catch (const std::bad_alloc&) {
      throw doubling_failed{i};
    }
    return i;
  }

  void add_array(const py::array& a) {
    const std::uint64_t* values = u64_data(a);
    const std::size_t n = static_cast<std::size_t>(a.size());
    std::size_t done = 0;
    bool interrupted = false;
    try {
      batch_guard g(*this);
      std::vector<std::uint64_t> hashes(std::min(n, array_chunk));
      for (std::size_t chunk = 1; done < n; ++chunk) {
        const std::size_t m = std::min(array_chunk, n - done);
        hasher_.u64s(values + done, m, hashes.data());
        const std::size_t in = insert_batch(std::span(hashes.data(), m));
        done += in;
        if (in < m) break;
        if (chunk % signal_chunks == 0 && done < n && g.interrupted()) {
          interrupted = true;
          break;
        }
      }
    } catch (const doubling_failed& e) {
      raise_no_memory(done + e.inserted, f_);
    }
    if (interrupted) throw py::error_already_set();  // the items before went in
    if (done < n) raise_full(done, f_);
  }
  py::array_t<bool> contains_array(const py::array& a) const {
    const std::uint64_t* values = u64_data(a);
    const std::size_t n = static_cast<std::size_t>(a.size());
    py::array_t<bool> found(std::vector<py::ssize_t>(a.shape(), a.shape() + a.ndim()));
    bool* out = found.mutable_data();
    bool interrupted = false;
    {
      batch_guard g(*this);
      std::vector<std::uint64_t> hashes(std::min(n, array_chunk));
      for (std::size_t i = 0, chunk = 1; i < n; i += array_chunk, ++chunk) {
        const std::size_t m = std::min(array_chunk, n - i);
        hasher_.u64s(values + i, m, hashes.data());
        f_.contains_many_hashes(std::span(hashes.data(), m), std::span(out + i, m));
        if (chunk % signal_chunks == 0 && i + m < n && g.interrupted()) {
          interrupted = true;
          break;
        }
      }
    }
    if (interrupted) throw py::error_already_set();
    return found;
  }
  /// The op codes of apply_many: a numpy uint8 array in place, or an iterable's codes (ints or
  /// names) read into `owned`; ValueError, naming the op, for a code outside CONTAINS, ADD,
  /// REMOVE.
  static std::span<const std::uint8_t> op_codes(py::handle ops, std::vector<std::uint8_t>& owned) {
    std::span<const std::uint8_t> codes;
    if (py::isinstance<py::array>(ops)) {
      const auto a = py::reinterpret_borrow<py::array>(ops);
      codes = {array_data<std::uint8_t>(a, "ops"), static_cast<std::size_t>(a.size())};
    } else {
      std::size_t i = 0;
      for (const py::handle op : ops) {
        if (i++ % 4096 == 4095 && PyErr_CheckSignals() != 0) throw py::error_already_set();
        owned.push_back(op_code(op, owned.size()));
      }
      codes = owned;
    }
    for (std::size_t i = 0; i < codes.size(); ++i) {
      if (codes[i] > static_cast<std::uint8_t>(ccf::operation_kind::erase))
        bad_op(i, std::to_string(codes[i]));
    }
    return codes;
  }
  /// One op of an iterable: CONTAINS (0), ADD (1), REMOVE (2), or "contains", "add", "remove".
  static std::uint8_t op_code(py::handle op, std::size_t i) {
    if (PyUnicode_Check(op.ptr())) {
      const std::string name = py::str(op);
      for (std::uint8_t c = 0; c < op_names.size(); ++c) {
        if (name == op_names[c]) return c;
      }
      throw py::value_error("ccf: apply_many: op " + std::to_string(i) + " is '" + name +
                            "', not 'contains', 'add' or 'remove'; no op ran");
    }
    if (!PyIndex_Check(op.ptr()) || PyBool_Check(op.ptr()) ||
        item_hasher::is_numpy_bool(op.ptr())) {
      throw py::type_error(std::string("ccf: apply_many: an op is ccf.CONTAINS, ccf.ADD, "
                                       "ccf.REMOVE or its name, not ") +
                           Py_TYPE(op.ptr())->tp_name);
    }
    const auto index = py::reinterpret_steal<py::object>(PyNumber_Index(op.ptr()));
    if (!index) throw py::error_already_set();
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
    if (overflow != 0 || v < 0 || v > static_cast<long long>(ccf::operation_kind::erase))
      bad_op(i, py::str(index));
    return static_cast<std::uint8_t>(v);
  }
  [[noreturn]] static void bad_op(std::size_t i, const std::string& code) {
    throw py::value_error("ccf: apply_many: op " + std::to_string(i) + " is " + code +
                          ", not ccf.CONTAINS (0), ccf.ADD (1) or ccf.REMOVE (2); no op ran");
  }
  static constexpr std::array<const char*, 3> op_names{"contains", "add", "remove"};
  /// An op code of an array that became bad after the check: std::invalid_argument, a ValueError
  /// once the GIL is back, thrown when the ops before op i have run.
  [[noreturn]] static void changed_op(std::size_t i, std::uint8_t code) {
    throw std::invalid_argument("ccf: apply_many: op " + std::to_string(i) + " became " +
                                std::to_string(code) +
                                " while the stream ran (the ops array changed); the ops before "
                                "it ran");
  }

  /// Runs apply_many's ops in chunks (the GIL released for a concurrent filter), the items
  /// `values` hashed already or hashed chunk by chunk; false when a signal's handler raised
  /// between chunks (its error set, the ops before run).
  bool apply_codes(std::span<const std::uint8_t> codes, const std::uint64_t* values, bool raw,
                   bool* out) {
    const std::size_t n = codes.size();
    batch_guard g(*this);
    std::vector<std::uint64_t> hashes(raw ? std::min(n, array_chunk) : 0);
    std::vector<ccf::operation<std::uint64_t>> batch(std::min(n, array_chunk));
    for (std::size_t i = 0, chunk = 1; i < n; i += array_chunk, ++chunk) {
      const std::size_t m = std::min(array_chunk, n - i);
      const std::uint64_t* h = values + i;
      if (raw) {
        hasher_.u64s(h, m, hashes.data());
        h = hashes.data();
      }
      // Each code is checked again as it is copied: an array may have changed since (an items
      // generator, another thread, a signal handler); the ops before a bad one run, then it
      // throws.
      std::size_t good = 0;
      std::uint8_t code = 0;
      for (; good < m; ++good) {
        code = codes[i + good];
        if (code > static_cast<std::uint8_t>(ccf::operation_kind::erase)) break;
        batch[good] = {static_cast<ccf::operation_kind>(code), h[good]};
      }
      f_.apply_many_hashes(std::span(batch.data(), good), std::span(out + i, good));
      if (good < m) changed_op(i + good, code);
      if (chunk % signal_chunks == 0 && i + m < n && g.interrupted()) return false;
    }
    return true;
  }

  /// contains_many of any iterable, hashed and looked up a chunk at a time: the answers take a
  /// byte per item (hashing the whole iterable first took eight more, a generator's included).
  py::array_t<bool> contains_iterable(py::handle items) const {
    py::iterator it = py::iter(items);
    std::vector<std::uint64_t> hashes;
    std::vector<std::unique_ptr<bool[]>> answers;  // a chunk's each
    std::size_t n = 0;
    for (bool last = false; !last;) {
      hashes.clear();
      last = hasher_.items(it, hashes, iterable_chunk);
      if (hashes.empty()) break;
      answers.push_back(std::make_unique<bool[]>(hashes.size()));
      batch_guard g(*this);
      f_.contains_many_hashes(hashes, std::span(answers.back().get(), hashes.size()));
      n += hashes.size();
    }
    py::array_t<bool> found(static_cast<py::ssize_t>(n));
    bool* out = found.mutable_data();
    for (std::size_t i = 0; i < answers.size(); ++i) {
      const std::size_t m = std::min(iterable_chunk, n - i * iterable_chunk);
      std::copy_n(answers[i].get(), m, out + i * iterable_chunk);
    }
    return found;
  }

  /// Whether a buffer's items lie one after another in C order, in any number of dimensions.
  static bool c_contiguous(const py::buffer_info& info) {
    py::ssize_t step = info.itemsize;
    for (py::ssize_t d = info.ndim; d-- > 0;) {
      if (info.shape[d] > 1 && info.strides[d] != step) return false;
      step *= info.shape[d];
    }
    return true;
  }
  /// A path (str, bytes or os.PathLike) as the bytes the OS takes; ValueError for one with a
  /// null byte, as open() raises (the OS would see the path cut short at it).
  static std::string fs_path(py::handle path) {
    std::string p = py::bytes(py::module_::import("os").attr("fsencode")(path));
    if (p.find('\0') != std::string::npos) throw py::value_error("ccf: embedded null byte in path");
    return p;
  }
  [[noreturn]] static void io_error(py::handle path) {
    PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path.ptr());
    throw py::error_already_set();
  }

  ccf::runtime_filter f_;
  bool concurrent_;
  item_hasher hasher_;
  mutable std::shared_mutex mutex_;
  mutable std::size_t streaming_saves_ = 0;  // guarded by the GIL
};

/// ccf.CuckooFilter: a filter of fixed capacity.
class static_filter final : public py_filter {
 public:
  using py_filter::py_filter;
};

/// ccf.GrowingCuckooFilter: a filter that doubles when it fills.
class growing_filter final : public py_filter {
 public:
  using py_filter::py_filter;
};

}  // namespace ccf_py

namespace pybind11::detail {

/// Every method bound on ccf.Filter takes its filter through this caster (a method bound on a
/// derived class would not: bind methods on Filter). An instance made by
/// `CuckooFilter.__new__(CuckooFilter)` and never given to `__init__` holds no filter (pybind11
/// would hand its methods uninitialised memory): such an instance raises TypeError instead.
template <>
class type_caster<ccf_py::py_filter> : public type_caster_base<ccf_py::py_filter> {
 public:
  bool load(handle src, bool convert) {
    return load_impl<type_caster<ccf_py::py_filter>>(src, convert);
  }
  void load_value(value_and_holder&& v_h) {
    if (!v_h.holder_constructed()) {
      const auto cls = reinterpret_borrow<object>(reinterpret_cast<PyObject*>(Py_TYPE(v_h.inst)));
      throw type_error("ccf: this " + std::string(str(cls.attr("__qualname__"))) +
                       " holds no filter: it was made by __new__, not initialised by __init__");
    }
    type_caster_base<ccf_py::py_filter>::load_value(std::move(v_h));
  }
};

}  // namespace pybind11::detail
