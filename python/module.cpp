// toolsift._core: registration, buffer checks and GIL handling only. The engine logic
// lives in cpp/; the documented API lives in src/toolsift. The bindings are spread over
// bind_*.cpp (see bindings.h); this file makes the module and calls each file's register.
#include <cstdint>

#include "arrow_bridge.h"
#include "bindings.h"

namespace py = pybind11;
using toolsift::py_bridge::I32Array;
using toolsift::py_bridge::stable;

PYBIND11_MODULE(_core, m) {
  m.doc() = "toolsift engine core (C++): per-field inverted index and BM25 scoring.";
  toolsift::py_bridge::register_column_view(m);
  toolsift::py_bridge::register_interner(m);
  toolsift::py_bridge::register_fused(m);
  toolsift::py_bridge::register_pairs(m);
  m.def("_stable_address", [](const I32Array& a) {
    // For tests: the address the kernels would read for ``a`` (its own when zero-copy).
    const I32Array kept = stable(a);
    return reinterpret_cast<std::uintptr_t>(kept.data());
  }, py::arg("a"));
  toolsift::py_bridge::register_int8(m);
  toolsift::py_bridge::register_embed(m);
  toolsift::py_bridge::register_hybrid_text(m);
  toolsift::py_bridge::register_steps(m);
  toolsift::py_bridge::register_fields(m);
  toolsift::py_bridge::register_index(m);
}
