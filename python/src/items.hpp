// ccf — concurrent cuckoo filters.
// python/src/items.hpp: how the Python package turns items into ccf's 64-bit key hashes.
//
// Every item is a byte string to ccf: an int is its 8 bytes little-endian (0 <= item < 2**64), a
// str its UTF-8 encoding, bytes and other buffer objects their bytes. The byte string is hashed
// exactly as ccf::runtime_filter::hash_of does (XXH3 with the filter's key seed), so a filter built
// by C++ or by the ccf tool answers the same in Python, in any process.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <ccf/hash.hpp>

namespace ccf_py {

namespace py = pybind11;

static_assert(std::endian::native == std::endian::little,
              "ccf's Python package hashes an int as its 8 bytes little-endian, in place");

/// Raises `type` with `message` (for the Python exceptions pybind11 has no class for).
[[noreturn]] inline void raise(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  throw py::error_already_set();
}

/// Hashes byte strings and Python items as ccf does for a filter with a given seed.
class item_hasher {
 public:
  explicit item_hasher(std::uint64_t seed) : key_seed_(ccf::key_seed(seed)) {}

  std::uint64_t bytes(std::string_view b) const noexcept {
    return ccf::hash<std::string_view>{}(b, key_seed_);
  }
  /// The hash of v's 8 bytes, little-endian: that of the int v.
  std::uint64_t u64(std::uint64_t v) const noexcept {
    char b[sizeof v];
    std::memcpy(b, &v, sizeof v);
    return bytes(std::string_view(b, sizeof v));
  }
  /// Hashes values[0, n) into out[0, n).
  void u64s(const std::uint64_t* values, std::size_t n, std::uint64_t* out) const noexcept {
    for (std::size_t i = 0; i < n; ++i)
      out[i] = u64(values[i]);
  }

  /// The hash of a str's UTF-8 encoding. An ASCII str is its own encoding; any other is encoded
  /// into a temporary: PyUnicode_AsUTF8AndSize keeps the encoding inside the str for as long as
  /// it lives, and a batch of non-ASCII strs grew by that much for good.
  std::uint64_t str(PyObject* o) const {
    if (PyUnicode_IS_ASCII(o)) {
      Py_ssize_t n = 0;
      const char* s = PyUnicode_AsUTF8AndSize(o, &n);
      if (s == nullptr) throw py::error_already_set();
      return bytes(std::string_view(s, static_cast<std::size_t>(n)));
    }
    const py::object utf8 = py::reinterpret_steal<py::object>(PyUnicode_AsUTF8String(o));
    if (!utf8) throw py::error_already_set();
    return bytes(std::string_view(PyBytes_AS_STRING(utf8.ptr()), PyBytes_GET_SIZE(utf8.ptr())));
  }

  /// The hash of one Python item; TypeError, ValueError or OverflowError for what is not an item.
  std::uint64_t item(py::handle obj) const {
    PyObject* o = obj.ptr();
    if (PyBytes_Check(o)) return bytes(std::string_view(PyBytes_AS_STRING(o), PyBytes_GET_SIZE(o)));
    if (PyUnicode_Check(o)) return str(o);
    if (PyLong_Check(o)) return u64(int_value(o));
    if (is_numpy_integer(o))
      return u64(int_value(py::reinterpret_steal<py::object>(index(o)).ptr()));
    // numpy's other scalars expose their bytes as buffers, and numpy.float64 is a float: neither
    // is hashed as bytes (5.0 would not be the item 5). A numpy bool is an int, as a bool is.
    if (is_instance(o, numpy().boolean)) return u64(PyObject_IsTrue(o) == 1 ? 1 : 0);
    if (PyFloat_Check(o) || is_instance(o, numpy().any)) not_an_item(o);
    if (PyObject_CheckBuffer(o)) {
      refuse_masked(o);
      return buffer(o);
    }
    if (PyIndex_Check(o)) return u64(int_value(py::reinterpret_steal<py::object>(index(o)).ptr()));
    not_an_item(o);
  }

  /// Imports numpy and looks up its scalar types, which item() needs for items that are not
  /// bytes, str or int. The module calls it at import: done later, by the first such item, the
  /// import would run inside a static's initialisation, where a second thread that reaches it
  /// waits holding the GIL that the import needs.
  static void import_numpy() { numpy(); }

  /// Whether `o` is a numpy bool scalar (an int to numpy, not an op code to apply_many).
  static bool is_numpy_bool(PyObject* o) { return is_instance(o, numpy().boolean); }

  /// TypeError for a numpy masked array, whose mask a batch or a buffer item would ignore.
  static void refuse_masked(PyObject* o) {
    if (!is_instance(o, numpy().masked)) return;
    throw py::type_error(
        "ccf: numpy masked arrays are not supported (the mask would be ignored): pass "
        "a.compressed() for the values not masked, or a.filled(value)");
  }

  /// The hashes of the items of an iterable, appended to `out`, at most `limit` of them; returns
  /// whether the iterable is exhausted. A signal's handler (Ctrl-C) runs every few thousand items,
  /// and its exception is raised from here.
  bool items(py::iterator& it, std::vector<std::uint64_t>& out, std::size_t limit) const {
    for (std::size_t i = 0; i < limit; ++i) {
      if (i % 4096 == 4095 && PyErr_CheckSignals() != 0) throw py::error_already_set();
      if (it == py::iterator::sentinel()) return true;
      out.push_back(item(*it));
      ++it;
    }
    return it == py::iterator::sentinel();
  }

 private:
  [[noreturn]] static void not_an_item(PyObject* o) {
    throw py::type_error(std::string("ccf: an item is an int, str, bytes or a buffer, not ") +
                         Py_TYPE(o)->tp_name);
  }
  /// An int in [0, 2**64): ValueError below, OverflowError above.
  static std::uint64_t int_value(PyObject* o) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow == 0) {
      if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
      if (v < 0) throw py::value_error("ccf: an int item must be in [0, 2**64), not negative");
      return static_cast<std::uint64_t>(v);
    }
    if (overflow < 0) throw py::value_error("ccf: an int item must be in [0, 2**64), not negative");
    const unsigned long long u = PyLong_AsUnsignedLongLong(o);
    if (u == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
      PyErr_Clear();
      raise(PyExc_OverflowError, "ccf: an int item must be in [0, 2**64), not 2**64 or more");
    }
    return u;
  }
  static PyObject* index(PyObject* o) {
    PyObject* i = PyNumber_Index(o);
    if (i == nullptr) throw py::error_already_set();
    return i;
  }
  /// numpy's scalar types that items are told apart by, and its masked array type, looked up once
  /// and kept for the process.
  struct numpy_scalars {
    PyObject* integer;
    PyObject* boolean;
    PyObject* any;
    PyObject* masked;     // numpy.ma.MaskedArray
    PyObject* timedelta;  // numpy.timedelta64: a numpy integer, but no index
  };
  static const numpy_scalars& numpy() {
    static const numpy_scalars types = [] {
      const py::module_ np = py::module_::import("numpy");
      auto kept = [&](const char* name) { return py::object(np.attr(name)).release().ptr(); };
      py::object masked = py::module_::import("numpy.ma").attr("MaskedArray");
      return numpy_scalars{kept("integer"), kept("bool_"), kept("generic"), masked.release().ptr(),
                           kept("timedelta64")};
    }();
    return types;
  }
  static bool is_instance(PyObject* o, PyObject* type) {
    const int r = PyObject_IsInstance(o, type);
    if (r < 0) throw py::error_already_set();
    return r == 1;
  }
  static bool is_numpy_integer(PyObject* o) {
    return is_instance(o, numpy().integer) && !is_instance(o, numpy().timedelta);
  }
  /// Whether a buffer format (struct module syntax) has a Python object field ('O'), outside the
  /// :names: of a structure's fields.
  static bool holds_objects(std::string_view format) noexcept {
    bool in_name = false;
    for (const char c : format) {
      if (c == ':') {
        in_name = !in_name;
      } else if (!in_name && c == 'O') {
        return true;
      }
    }
    return false;
  }
  std::uint64_t buffer(PyObject* o) const {
    Py_buffer view;
    if (PyObject_GetBuffer(o, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
      PyErr_Clear();
      throw py::type_error(std::string("ccf: a buffer item must be C-contiguous bytes; this ") +
                           Py_TYPE(o)->tp_name + " is not");
    }
    // An object array's bytes are pointers: equal arrays would be other items in each process.
    if (view.format != nullptr && holds_objects(view.format)) {
      PyBuffer_Release(&view);
      throw py::type_error(std::string("ccf: a buffer of Python objects (") + Py_TYPE(o)->tp_name +
                           " of format 'O') is not an item: its bytes are addresses");
    }
    const std::uint64_t h = bytes(
        std::string_view(static_cast<const char*>(view.buf), static_cast<std::size_t>(view.len)));
    PyBuffer_Release(&view);
    return h;
  }

  std::uint64_t key_seed_;
};

/// The data of a numpy array of native unsigned T (uint64 items, uint8 ops), C-contiguous, used
/// in place; TypeError for any other array (never a silent conversion or copy). `what` names the
/// array's elements in the message.
template <class T>
const T* array_data(const py::array& a, const char* what) {
  static_assert(std::is_unsigned_v<T>);
  const std::string name = "uint" + std::to_string(8 * sizeof(T));
  const py::dtype dt = a.dtype();
  const std::string order = py::str(dt.attr("byteorder"));
  const bool native = order == "=" || order == "|" || order == "<";
  if (dt.kind() != 'u' || dt.itemsize() != sizeof(T) || !native) {
    throw py::type_error(std::string("ccf: a numpy array of ") + what + " must have dtype " + name +
                         ", not " + std::string(py::str(py::handle(dt))) +
                         " (convert it with a.astype(numpy." + name + "))");
  }
  if ((a.flags() & py::array::c_style) == 0) {
    throw py::type_error(std::string("ccf: a numpy array of ") + what +
                         " must be C-contiguous (use numpy.ascontiguousarray)");
  }
  return static_cast<const T*>(a.data());
}
inline const std::uint64_t* u64_data(const py::array& a) {
  return array_data<std::uint64_t>(a, "items");
}

}  // namespace ccf_py
