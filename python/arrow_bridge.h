// Moving engine columns across the Python boundary without copies: export through the
// Arrow C Data Interface (PyCapsule protocol) and the buffer protocol; import from any
// object implementing __arrow_c_array__ (pyarrow arrays) or the buffer protocol (NumPy,
// memoryview), keeping the producer alive for as long as the engine uses the memory.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>

#include "toolsift/column.h"

namespace toolsift::py_bridge {

namespace py = pybind11;

// A typed, read-only view of one engine column, handed to Python.
struct ColumnView {
  std::string name;
  std::string format;  // Arrow format string: "i", "l", "f"
  std::size_t itemsize = 0;
  const void* data = nullptr;
  std::size_t size = 0;
  std::shared_ptr<const void> owner;

  template <class T>
  static ColumnView of(const std::string& name, const Column<T>& col);

  // (schema capsule, array capsule) per the Arrow PyCapsule interface.
  py::tuple arrow_c_array(const py::object& requested_schema) const;
  py::buffer_info buffer() const;
  std::uintptr_t address() const { return reinterpret_cast<std::uintptr_t>(data); }
};

// Builds a borrowed column from `obj`, which must hold exactly `expected_format` values
// (Arrow format string), contiguous, with no nulls. Throws std::invalid_argument naming
// `what` on a mismatch.
template <class T>
Column<T> import_column(const py::handle& obj, const char* what);

void register_column_view(py::module_& m);

}  // namespace toolsift::py_bridge
