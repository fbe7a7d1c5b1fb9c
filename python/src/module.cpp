// ccf — concurrent cuckoo filters.
// python/src/module.cpp: the ccf._ccf extension module (the classes and functions of the ccf
// package; python/ccf/__init__.py re-exports them).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <sstream>
#include <string>

#include <ccf/runtime_filter.hpp>
#include <ccf/version.hpp>

#include "filter.hpp"
#include "items.hpp"
#include "typed_arg.hpp"

namespace py = pybind11;
using ccf_py::growing_filter;
using ccf_py::py_filter;
using ccf_py::static_filter;

namespace {

/// An integer argument (an int, or any object with __index__) in [lo, hi]: ValueError when it
/// is outside (however large), TypeError when it is no integer.
std::uint64_t integer_in(py::handle arg, const char* name, std::uint64_t lo, std::uint64_t hi) {
  const auto v = py::reinterpret_steal<py::object>(PyNumber_Index(arg.ptr()));
  if (!v) throw py::error_already_set();
  int sign = 0;
  const long long small = PyLong_AsLongLongAndOverflow(v.ptr(), &sign);
  if (small == -1 && PyErr_Occurred()) throw py::error_already_set();
  std::uint64_t value = static_cast<std::uint64_t>(small);
  bool fits = sign == 0 && small >= 0;
  if (sign > 0) {  // beyond a long long: maybe still an unsigned 64-bit integer
    const unsigned long long big = PyLong_AsUnsignedLongLong(v.ptr());
    fits = !(big == static_cast<unsigned long long>(-1) && PyErr_Occurred());
    PyErr_Clear();
    value = big;
  }
  if (!fits || value < lo || value > hi) {
    throw py::value_error(std::string("ccf: ") + name + " must be an integer in [" +
                          std::to_string(lo) + ", " + std::to_string(hi) + "], not " +
                          std::string(py::str(v)));
  }
  return value;
}
std::size_t check_capacity(py::handle capacity, const char* name) {
  return integer_in(capacity, name, 1, std::numeric_limits<std::size_t>::max());
}
std::uint64_t check_seed(py::handle seed) {
  return integer_in(seed, "seed", 0, std::numeric_limits<std::uint64_t>::max());
}
/// A bool argument: True or False (or a numpy.bool_). Anything else is a TypeError naming the
/// argument, not its truth value (None, 0.0 or "no" taken as False).
bool check_bool(py::handle arg, const char* name) {
  if (arg.ptr() == Py_True) return true;
  if (arg.ptr() == Py_False) return false;
  if (py::isinstance(arg, py::module_::import("numpy").attr("bool_")))
    return PyObject_IsTrue(arg.ptr()) == 1;
  throw py::type_error(std::string("ccf: ") + name + " must be a bool (True or False), not " +
                       Py_TYPE(arg.ptr())->tp_name);
}
void check_fpr(double fpr) {
  if (!(fpr > 0.0 && fpr <= 0.5)) {
    // Python's repr: a stream's six digits showed 0.50000001 as "0.5", a value in the range.
    throw py::value_error("ccf: fpr (the target false-positive rate) must be in (0, 0.5], not " +
                          py::repr(py::float_(fpr)).cast<std::string>());
  }
}

std::unique_ptr<static_filter> make_static(ccf_py::int_arg capacity, double fpr,
                                           ccf_py::bool_arg concurrent_arg, ccf_py::int_arg seed) {
  const std::size_t n = check_capacity(capacity, "capacity");
  const bool concurrent = check_bool(concurrent_arg, "concurrent");
  check_fpr(fpr);
  ccf::filter_config c = ccf::filter_config::for_rate(n, fpr, py_filter::kind_for(concurrent));
  c.seed = check_seed(seed);
  return std::make_unique<static_filter>(ccf::runtime_filter(c), concurrent);
}

std::unique_ptr<growing_filter> make_growing(ccf_py::int_arg initial_capacity, double fpr,
                                             ccf_py::bool_arg concurrent_arg,
                                             ccf_py::int_arg max_doublings, ccf_py::int_arg seed) {
  const std::size_t n = check_capacity(initial_capacity, "initial_capacity");
  const bool concurrent = check_bool(concurrent_arg, "concurrent");
  check_fpr(fpr);
  const auto doublings = static_cast<unsigned>(
      integer_in(max_doublings, "max_doublings", 0, ccf::detail::growing_max_max_doublings));
  ccf::filter_config c =
      ccf::filter_config::growing_for_rate(n, fpr, py_filter::kind_for(concurrent), doublings);
  c.seed = check_seed(seed);
  return std::make_unique<growing_filter>(ccf::runtime_filter(c), concurrent);
}

/// The Python object for a loaded filter: a GrowingCuckooFilter or a CuckooFilter.
py::object wrap(ccf::runtime_filter f, bool concurrent) {
  if (f.growing()) return py::cast(std::make_unique<growing_filter>(std::move(f), concurrent));
  return py::cast(std::make_unique<static_filter>(std::move(f), concurrent));
}

/// A loaded filter of class Wanted as an instance of cls, Wanted or a subclass of it: a subclass's
/// instance is made as pickle makes one (cls.__new__, the base's __init__, not the subclass's),
/// then given the table.
template <class Wanted>
py::object make_as(const py::type& cls, ccf::runtime_filter f, bool concurrent) {
  constexpr bool growing = std::is_same_v<Wanted, growing_filter>;
  const py::type base = py::type::of<Wanted>();
  if (cls.is(base)) return py::cast(std::make_unique<Wanted>(std::move(f), concurrent));
  if (!PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls.ptr()),
                        reinterpret_cast<PyTypeObject*>(base.ptr()))) {
    throw py::value_error(std::string("ccf: these bytes hold a ") +
                          (growing ? "GrowingCuckooFilter" : "CuckooFilter") + ", not a " +
                          std::string(py::str(cls.attr("__qualname__"))));
  }
  py::object self = cls.attr("__new__")(cls);
  if constexpr (growing) {
    base.attr("__init__")(self, 1, py::arg("concurrent") = concurrent,
                          py::arg("max_doublings") = 0);
  } else {
    base.attr("__init__")(self, 1, py::arg("concurrent") = concurrent);
  }
  self.cast<py_filter&>().adopt(std::move(f));
  return self;
}

/// Wanted.frombytes, a classmethod: an instance of cls (Wanted or a subclass).
template <class Wanted>
py::object from_bytes_as(const py::type& cls, ccf_py::buffer_arg data,
                         ccf_py::bool_arg concurrent_arg) {
  const bool concurrent = check_bool(concurrent_arg, "concurrent");
  ccf::runtime_filter f = py_filter::from_bytes(data, concurrent);
  constexpr bool want_growing = std::is_same_v<Wanted, growing_filter>;
  if (f.growing() != want_growing) {
    throw py::value_error(want_growing ? "ccf: these bytes hold a static filter: use "
                                         "CuckooFilter.frombytes or ccf.loads"
                                       : "ccf: these bytes hold a growing filter: use "
                                         "GrowingCuckooFilter.frombytes or ccf.loads");
  }
  return make_as<Wanted>(cls, std::move(f), concurrent);
}

/// ccf._restore's filter of class cls (a pickled filter's class, which may be a subclass).
py::object loads_as(const py::type& cls, ccf_py::buffer_arg data, ccf_py::bool_arg concurrent_arg) {
  const bool concurrent = check_bool(concurrent_arg, "concurrent");
  ccf::runtime_filter f = py_filter::from_bytes(data, concurrent);
  if (f.growing()) return make_as<growing_filter>(cls, std::move(f), concurrent);
  return make_as<static_filter>(cls, std::move(f), concurrent);
}

/// The instance state that pickling and copying keep: what __getstate__ gives (Python 3.11 and
/// later: the __dict__ and slots of a subclass's instance, None when there are none), else a
/// non-empty __dict__.
py::object instance_state(const py::object& self) {
  if (py::hasattr(self, "__getstate__")) return self.attr("__getstate__")();
  py::object d = py::getattr(self, "__dict__", py::none());
  return !d.is_none() && py::len(d) > 0 ? d : py::none();
}

/// Filter.__reduce__: ccf._restore(bytes, concurrent, class) and the instance state; for a
/// CuckooFilter or GrowingCuckooFilter itself with no state, ccf._restore(bytes, concurrent), as
/// earlier versions wrote it (they read it too).
py::tuple reduce(const py::object& self) {
  const py_filter& p = self.cast<const py_filter&>();
  // ccf._restore is a Python function, so that pickle can name it.
  const py::object restore = py::module_::import("ccf").attr("_restore");
  const py::type cls = py::type::of(self);
  py::object state = instance_state(self);
  const bool plain =
      cls.is(py::type::of<static_filter>()) || cls.is(py::type::of<growing_filter>());
  if (plain && state.is_none()) {
    return py::make_tuple(restore, py::make_tuple(p.to_bytes(), p.concurrent()));
  }
  return py::make_tuple(restore, py::make_tuple(p.to_bytes(), p.concurrent(), cls),
                        std::move(state));
}

/// Binds Wanted.frombytes as a classmethod.
template <class Wanted>
void def_frombytes(py::class_<Wanted, py_filter>& c, const char* doc) {
  const py::cpp_function f(&from_bytes_as<Wanted>, py::name("frombytes"), py::scope(c),
                           py::arg("cls"), py::arg("data"), py::kw_only(),
                           py::arg("concurrent") = true, doc);
  auto method = py::reinterpret_steal<py::object>(PyClassMethod_New(f.ptr()));
  if (!method) throw py::error_already_set();
  c.attr("frombytes") = method;
}

/// The filter's class name (a subclass's own) and its shape.
std::string filter_repr(const py::object& self) {
  const py_filter& p = self.cast<const py_filter&>();
  const std::string name = py::str(py::type::of(self).attr("__qualname__"));
  return p.single([&] {
    const ccf::runtime_filter& f = p.get();
    std::ostringstream s;
    s << name << "(size=" << f.size() << ", capacity=" << f.capacity() << ", fpr=" << f.design_fpr()
      << ", fingerprint_bits=" << f.fingerprint_bits()
      << ", slots_per_bucket=" << f.slots_per_bucket()
      << ", concurrent=" << (p.concurrent() ? "True" : "False") << ")";
    return s.str();
  });
}

const char* const filter_doc = R"(The methods and properties common to ccf's filters.

A cuckoo filter answers "may this item be in the set?": never wrongly "no" for an item added
(and not removed), and wrongly "yes" for other items at about the false-positive rate `fpr`.
Items are int (0 <= item < 2**64, hashed as 8 bytes little-endian), str (UTF-8), bytes or any
C-contiguous buffer (its bytes); numpy.uint64 arrays are taken in place by add_many and
contains_many. Hashes are ccf's own seeded XXH3: the same in every process, in C++ and in the
ccf tool. Use CuckooFilter or GrowingCuckooFilter to make one.)";

void bind_items(py::class_<py_filter>& c) {
  c.def("add", &py_filter::add, py::arg("item"),
        "Adds item. A full CuckooFilter raises FilterFullError (the filter is unchanged).\n"
        "Adding an item twice stores it twice (two removes take it out).")
      .def("remove", &py_filter::remove, py::arg("item"),
           "Removes one copy of item; returns whether one was found. Remove only items that\n"
           "were added: removing another may remove an item sharing its fingerprint.")
      .def("__contains__", &py_filter::contains, py::arg("item"),
           "Whether item may be in the filter (False is certain; True is wrong at about the\n"
           "false-positive rate).")
      .def("count", &py_filter::count, py::arg("item"),
           "How many copies of item's fingerprint the filter holds (at least the times item\n"
           "was added and not removed).")
      .def("hash", &py_filter::hash, py::arg("item"),
           "The 64-bit hash this filter gives item (stable across processes).")
      .def(
          "__len__", [](const py_filter& f) { return f.single([&] { return f.get().size(); }); },
          "The number of items held.")
      .def("add_many", &py_filter::add_many, py::arg("items"),
           "Adds many items: a numpy.uint64 array (C-contiguous, used in place, never copied;\n"
           "any other dtype or layout raises TypeError) or any iterable of items. Items are\n"
           "added in order; a full CuckooFilter raises FilterFullError, whose `inserted`\n"
           "attribute counts the items of this call that went in. A concurrent filter releases\n"
           "the GIL while it works, so other threads run meanwhile.")
      .def("contains_many", &py_filter::contains_many, py::arg("items"),
           "Membership of many items, as a numpy bool array: for a numpy.uint64 array (used in\n"
           "place; any other dtype or a non-contiguous array raises TypeError), of its shape;\n"
           "for any other iterable, one entry per item. A concurrent filter releases the GIL.")
      .def("update", &py_filter::add_many, py::arg("items"),
           "The same as add_many: adds a numpy.uint64 array (in place) or the items of any\n"
           "iterable (in batches of 65536); a concurrent filter releases the GIL while each\n"
           "batch goes in.")
      .def("apply_many", &py_filter::apply_many, py::arg("ops"), py::arg("items"),
           "Runs ops[i] on items[i], in order, and returns each op's answer as a numpy bool\n"
           "array (of items' shape for an array): CONTAINS (`in`), ADD (True: added; False:\n"
           "refused, the filter unchanged, and the stream goes on: no FilterFullError) or\n"
           "REMOVE (whether one copy was found and removed). ops: a numpy.uint8 array or any\n"
           "iterable of the codes or their names ('contains', 'add', 'remove'); items as for\n"
           "add_many. Both are checked before any op runs (ValueError for a bad code or a\n"
           "different number of ops and items). A large filter fetches the next ops' buckets\n"
           "meanwhile; a concurrent filter releases the GIL, and each op is atomic to others.")
      .def("clear", &py_filter::clear,
           "Removes every item (the table keeps its size). A concurrent filter first waits for\n"
           "the batches running, with the GIL released.");
}

void bind_properties(py::class_<py_filter>& c) {
  using f = py_filter;
  c.def_property_readonly(
       "capacity", [](const f& p) { return p.single([&] { return p.get().capacity(); }); },
       "Items the filter is sized for (a growing filter: at its current size).")
      .def_property_readonly(
          "load_factor", [](const f& p) { return p.single([&] { return p.get().load_factor(); }); },
          "The fraction of the table's slots in use.")
      .def_property_readonly(
          "fpr", [](const f& p) { return p.single([&] { return p.get().design_fpr(); }); },
          "The false-positive rate expected once the filter holds `capacity`\n"
          "items (at most the rate asked for; a growing filter: its bound at\n"
          "its current size).")
      .def_property_readonly(
          "expected_fpr",
          [](const f& p) { return p.single([&] { return p.get().expected_fpr(); }); },
          "A CuckooFilter: the false-positive rate expected at its current load (0.0 when\n"
          "empty; fpr when it holds capacity items). A GrowingCuckooFilter: the same as fpr,\n"
          "its bound at its current size, whatever its load.")
      .def_property_readonly(
          "size_in_bytes",
          [](const f& p) { return p.single([&] { return p.get().size_in_bytes(); }); },
          "The memory of the filter's table, in bytes.")
      .def_property_readonly(
          "memory_in_bytes",
          [](const f& p) { return p.single([&] { return p.get().memory_in_bytes(); }); },
          "Every byte the filter holds: its table; for a small growing filter, the hashes it\n"
          "keeps to rebuild the table when it doubles; for a concurrent filter, its lock words\n"
          "and counter shards.")
      .def_property_readonly(
          "fingerprint_bits",
          [](const f& p) { return p.single([&] { return p.get().fingerprint_bits(); }); },
          "Bits per slot (a growing filter: its slot width).")
      .def_property_readonly(
          "slots_per_bucket",
          [](const f& p) { return p.single([&] { return p.get().slots_per_bucket(); }); },
          "Slots in each bucket.")
      .def_property_readonly(
          "num_buckets", [](const f& p) { return p.single([&] { return p.get().num_buckets(); }); },
          "Buckets in the table.")
      .def_property_readonly(
          "growing", [](const f& p) { return p.single([&] { return p.get().growing(); }); },
          "Whether this is a growing filter.")
      .def_property_readonly(
          "doublings", [](const f& p) { return p.single([&] { return p.get().doublings(); }); },
          "How many times a growing filter doubled (0 for a static filter).")
      .def_property_readonly("concurrent", &f::concurrent,
                             "Whether several threads may use the filter at once (batch calls\n"
                             "then release the GIL).")
      .def_property_readonly(
          "seed", [](const f& p) { return p.single([&] { return p.get().seed(); }); },
          "The hash seed.");
}

void bind_files(py::class_<py_filter>& c) {
  c.def("save", &py_filter::save, py::arg("path"),
        "Writes the filter to a file (str, bytes or os.PathLike) in ccf's file format, which\n"
        "C++ ccf and the ccf tool read. OSError if the file cannot be written. A regular\n"
        "file is replaced only once the new one is whole (a temporary file beside it, synced\n"
        "and renamed over it); a FIFO or a device is written directly.")
      .def("__bytes__", &py_filter::to_bytes,
           "The filter in ccf's file format (as save writes it).")
      .def("__reduce__", &reduce,
           "Pickling and copying: the filter travels as its bytes, with its class (a subclass\n"
           "stays one) and its instance state (a subclass instance's __dict__).")
      .def("__repr__", &filter_repr);
}

void bind_classes(py::module_& m) {
  py::class_<py_filter> base(m, "Filter", filter_doc);
  bind_items(base);
  bind_properties(base);
  bind_files(base);

  py::class_<static_filter, py_filter> static_class(m, "CuckooFilter",
                                                    R"(A cuckoo filter of fixed capacity.

CuckooFilter(capacity, fpr=0.001, *, concurrent=True, seed=ccf.default_seed)

capacity: the items it must hold; fpr: the target false-positive rate, in (0, 0.5]. The layout of
least memory for them is picked (fingerprint bits and slots per bucket). Adding to a full filter
raises FilterFullError. concurrent=True: threads may use it at once and batch calls release the
GIL; concurrent=False: a faster single-threaded table that holds the GIL while it works.)");
  static_class.def(py::init(&make_static), py::arg("capacity"), py::arg("fpr") = 0.001,
                   py::kw_only(), py::arg("concurrent") = true,
                   py::arg("seed") = ccf::default_seed);
  def_frombytes(static_class,
                "A CuckooFilter (or an instance of the subclass it is called on) from bytes in\n"
                "ccf's file format (bytes(f), a file's content). FormatError if they are not a\n"
                "filter; ValueError if they hold a growing one.");

  py::class_<growing_filter, py_filter> growing_class(
      m, "GrowingCuckooFilter",
      R"(A cuckoo filter that doubles whenever it fills.

GrowingCuckooFilter(initial_capacity, fpr=0.001, *, concurrent=True, max_doublings=16,
                    seed=ccf.default_seed)

It holds initial_capacity items before it first doubles, and keeps its false-positive rate at most
fpr (in (0, 0.5]) for max_doublings doublings (at most 64; beyond them the rate rises). Adding
raises FilterFullError only where items added many times crowd it: the ninth copy of an item, an
item whose two buckets copies of another item fill even in the table doubled for it (which stays:
adding it again may succeed), a copy that finds no room while the filter is less than half full,
any item while copies keep it less than an eighth full.)");
  growing_class.def(py::init(&make_growing), py::arg("initial_capacity"), py::arg("fpr") = 0.001,
                    py::kw_only(), py::arg("concurrent") = true, py::arg("max_doublings") = 16,
                    py::arg("seed") = ccf::default_seed);
  def_frombytes(growing_class,
                "A GrowingCuckooFilter (or an instance of the subclass it is called on) from\n"
                "bytes in ccf's file format. FormatError if they are not a filter; ValueError\n"
                "if they hold a static one.");

  for (const char* name : {"Filter", "CuckooFilter", "GrowingCuckooFilter"})
    m.attr(name).attr("__module__") = "ccf";
}

void bind_functions(py::module_& m) {
  m.def(
      "load",
      [](ccf_py::path_arg path, ccf_py::bool_arg concurrent_arg) {
        const bool concurrent = check_bool(concurrent_arg, "concurrent");
        return wrap(py_filter::from_file(path, concurrent), concurrent);
      },
      py::arg("path"), py::kw_only(), py::arg("concurrent") = true,
      "Reads a filter file (saved by Filter.save, C++ ccf or `ccf build`): a CuckooFilter or a\n"
      "GrowingCuckooFilter, as the file holds. FormatError for a file that is not a valid\n"
      "filter; OSError if it cannot be read.");
  m.def(
      "loads",
      [](ccf_py::buffer_arg data, ccf_py::bool_arg concurrent_arg) {
        const bool concurrent = check_bool(concurrent_arg, "concurrent");
        return wrap(py_filter::from_bytes(data, concurrent), concurrent);
      },
      py::arg("data"), py::kw_only(), py::arg("concurrent") = true,
      "A filter from bytes in ccf's file format: a CuckooFilter or a GrowingCuckooFilter.\n"
      "FormatError if they are not a valid filter.");
  m.def("_loads_as", &loads_as, py::arg("cls"), py::arg("data"), py::kw_only(),
        py::arg("concurrent") = true,
        "A filter from bytes as an instance of cls, its class or a subclass of it (unpickling).");
}

}  // namespace

PYBIND11_MODULE(_ccf, m) {
  m.doc() = "ccf's concurrent cuckoo filters (the extension module behind the ccf package).";
  // numpy is imported as the module loads: the first use of pybind11's numpy API (a static it
  // sets up) or of the items' numpy types would otherwise import it inside a static's
  // initialisation, where a second thread that reaches the static waits holding the GIL the
  // import needs.
  ccf_py::item_hasher::import_numpy();
  (void)py::isinstance<py::array>(py::none());
  py::register_exception<ccf::format_error>(m, "FormatError", PyExc_ValueError);
  m.attr("FormatError").attr("__module__") = "ccf";
  m.attr("FormatError").attr("__doc__") =
      "Bytes or a file that are not a valid ccf filter (a ValueError).";
  ccf_py::filter_full_error =
      PyErr_NewExceptionWithDoc("ccf.FilterFullError",
                                "A filter refused an item: a CuckooFilter is full, or a "
                                "GrowingCuckooFilter is crowded by copies of items added many "
                                "times. Its `inserted` attribute: the items of the call added "
                                "before it.",
                                PyExc_Exception, nullptr);
  if (ccf_py::filter_full_error == nullptr) throw py::error_already_set();
  m.attr("FilterFullError") = py::reinterpret_borrow<py::object>(ccf_py::filter_full_error);
  m.attr("__version__") = ccf::version_string;
  m.attr("default_seed") = ccf::default_seed;
  m.attr("CONTAINS") = static_cast<int>(ccf::operation_kind::contains);
  m.attr("ADD") = static_cast<int>(ccf::operation_kind::insert);
  m.attr("REMOVE") = static_cast<int>(ccf::operation_kind::erase);
  bind_classes(m);
  bind_functions(m);
}
