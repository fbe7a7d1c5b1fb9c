// ccf — concurrent cuckoo filters.
// python/src/typed_arg.hpp: arguments that the package checks itself, taken as they come (any
// object) but named in signatures by their Python type: help(ccf.CuckooFilter) shows
// `capacity: int`, not pybind11's `capacity: handle`. The names follow the type stubs
// (python/src/ccf/__init__.pyi).
#pragma once

#include <pybind11/pybind11.h>

namespace ccf_py {

namespace py = pybind11;

/// An argument of any object, checked by the function that takes it; Name::text is the type
/// that signatures show.
template <class Name>
struct typed_arg {
  py::handle value;  // borrowed: the call's arguments hold it
  operator py::handle() const noexcept { return value; }
};

struct bool_name {
  static constexpr auto text = py::detail::const_name("bool");
};
struct int_name {
  static constexpr auto text = py::detail::const_name("int");
};
struct item_name {
  static constexpr auto text = py::detail::const_name("int | str | bytes | Buffer");
};
struct items_name {
  static constexpr auto text = py::detail::const_name("numpy.ndarray | Iterable");
};
struct path_name {
  static constexpr auto text = py::detail::const_name("str | bytes | os.PathLike");
};
struct buffer_name {
  static constexpr auto text = py::detail::const_name("Buffer");
};

using bool_arg = typed_arg<bool_name>;
using int_arg = typed_arg<int_name>;
using item_arg = typed_arg<item_name>;
using items_arg = typed_arg<items_name>;
using path_arg = typed_arg<path_name>;
using buffer_arg = typed_arg<buffer_name>;

}  // namespace ccf_py

namespace pybind11::detail {

template <class Name>
struct type_caster<ccf_py::typed_arg<Name>> {
  PYBIND11_TYPE_CASTER(ccf_py::typed_arg<Name>, Name::text);
  bool load(handle src, bool) {
    value.value = src;
    return src.ptr() != nullptr;
  }
  static handle cast(const ccf_py::typed_arg<Name>& arg, return_value_policy, handle) {
    return arg.value.inc_ref();
  }
};

}  // namespace pybind11::detail
