// Shared by the binding translation units (python/bind_*.cpp and module.cpp): argument
// types, buffer checks and the hand-over helpers. The bindings are split over several
// files because compiling pybind11's templates is most of the C++ build: one file a group
// of functions lets ninja compile them on every core (README, "Install").
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "toolsift/fused.h"
#include "toolsift/int8_coarse.h"
#include "toolsift/inverted_index.h"

namespace toolsift::py_bridge {

namespace py = pybind11;

using I32Array = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;
using I64Array = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using I8Array = py::array_t<int8_t, py::array::c_style>;
using F32Array = py::array_t<float, py::array::c_style>;

Bm25Params make_params(double k1, double b, const std::string& method);

// Outputs sized by a caller's number (k, n_queries) are allocated and filled before any
// scoring; a request for more than half this machine's memory is refused with a
// ValueError instead of being left to the out-of-memory killer.
void check_output_bytes(double n_items, double bytes_each, const char* what);

Scale parse_scale(const std::string& s);
Prune parse_prune(const std::string& s);
void require_1d(const py::array& a, const char* what);
QueryBatch make_batch(const InvertedIndex& idx, const I32Array& terms, const I64Array& offsets);

// Texts -> queries map: one entry per text of the batch.
TextQueries make_text_queries(const QueryBatch& q, const I64Array& text_query, int64_t n_queries);

// Hands a vector to NumPy without copying: the array owns it through a capsule.
template <class T>
py::array_t<T> to_array(std::vector<T>&& v) {
  auto* heap = new std::vector<T>(std::move(v));
  py::capsule owner(heap, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(static_cast<py::ssize_t>(heap->size()), heap->data(), owner);
}

// A snapshot of a caller's array that no other thread can change while the GIL is
// released: the array itself when nobody else can write it (the private array pybind11
// made converting the argument: no other reference; or a read-only array owning its
// data), else a copy. Taken before validation, so what was checked is what is read.
// The copy is made here (array_t copies a pointer it is not given an owner for), not
// through the array's Python copy() method: a search passes ~30 arrays, and the method
// call cost ~0.7 us each, more than the engine's work on a small catalogue.
template <class A>
A stable(const A& a) {
  if (a.ref_count() == 1 || (!a.writeable() && a.owndata())) return a;
  return A(std::vector<py::ssize_t>(a.shape(), a.shape() + a.ndim()), a.data());
}

// A dense field's matrix, read in place while the GIL is released when read-only (an
// index's own matrix: toolsift freezes the arrays it makes, and a loaded one is a
// read-only file mapping), else copied like any caller's array: a scan reads megabytes,
// and copying them per search would cost more than the scan.
template <class A>
A frozen(const A& a) {
  if (!a.writeable()) return a;
  return stable(a);
}

// One field's texts for the fused calls (bind_fields.cpp): the index and the analysed batch.
struct FieldBatch {
  const InvertedIndex* idx;
  I32Array terms;
  I64Array offsets;
  I64Array text_query;
  QueryBatch q;
  TextQueries tq;
};

FieldBatch field_batch(const InvertedIndex& idx, const I32Array& terms, const I64Array& offsets,
                       const I64Array& text_query, int64_t n_queries);

// Each file registers its own functions on the module (module.cpp calls them).
// (w_description, w_parameters, w_response, w_examples, bias, alpha, tau, w_req, w_opt,
// param_max_share, renormalize) as a ScoringParams tuple (fused.cpp).
MftrParams parse_params(const py::tuple& t);
// A fused search's options, checked (fused.cpp).
FusedOptions options(py::ssize_t n, py::ssize_t k, const std::string& scale, int threads);
// The Int8Coarse of a Python prefilter object built from exactly these arrays, or null
// for None (bind_int8.cpp).
const Int8Coarse* coarse_of(const py::object& coarse, const I8Array& codes, const F32Array& scales);
// The same for a prefilter built over chosen rows of codes (int8_coarse(rows=rows): an IVF's
// list_ids), or null for None (bind_int8.cpp).
const Int8Coarse* coarse_of_rows(const py::object& coarse, const I8Array& codes, const F32Array& scales,
                                 const I64Array& rows);

void register_index(py::module_& m);   // bind_index.cpp: InvertedIndex
void register_int8(py::module_& m);    // bind_int8.cpp: int8 scans and IVF probes
void register_fields(py::module_& m);  // bind_fields.cpp: fused multi-field calls
void register_interner(py::module_& m);  // interner.cpp
void register_fused(py::module_& m);     // fused.cpp: one engine call per BM25 search
void register_pairs(py::module_& m);     // bind_pairs.cpp: batch pair scoring (toolsift.batch)
void register_embed(py::module_& m);     // bind_embed.cpp: static query vectors, int8 quantization
void register_hybrid_text(py::module_& m);  // bind_hybrid_text.cpp: one raw query on a hybrid index
void register_steps(py::module_& m);        // bind_steps.cpp: the request step splitter (ASCII text)

}  // namespace toolsift::py_bridge
