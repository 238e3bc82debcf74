// toolsift._core: registration, buffer checks and GIL handling only. The engine logic
// lives in cpp/; the documented API lives in src/toolsift.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#include "arrow_bridge.h"
#include "toolsift/csr.h"
#include "toolsift/int8_dot.h"
#include "toolsift/inverted_index.h"

namespace py = pybind11;

namespace toolsift::py_bridge {
void register_interner(py::module_& m);  // python/interner.cpp
void register_fused(py::module_& m);     // python/fused.cpp
}

using toolsift::Bm25Method;
using toolsift::Bm25Params;
using toolsift::Column;
using toolsift::IndexColumns;
using toolsift::InvertedIndex;
using toolsift::CandidateSet;
using toolsift::CsrView;
using toolsift::Prune;
using toolsift::QueryBatch;
using toolsift::TextQueries;
using toolsift::py_bridge::ColumnView;
using toolsift::py_bridge::import_column;

namespace {

using I32Array = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;
using I64Array = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using I8Array = py::array_t<int8_t, py::array::c_style>;
using F32Array = py::array_t<float, py::array::c_style>;

Bm25Params make_params(double k1, double b, const std::string& method) {
  Bm25Params p;
  p.k1 = k1;
  p.b = b;
  if (method == "lucene") {
    p.method = Bm25Method::kLucene;
  } else if (method == "atire") {
    p.method = Bm25Method::kAtire;
  } else {
    throw std::invalid_argument("unknown BM25 method '" + method + "' (expected 'lucene' or 'atire')");
  }
  p.validate();
  return p;
}

// Outputs sized by a caller's number (k, n_queries) are allocated and filled before any
// scoring; a request for more than half this machine's memory is refused with a
// ValueError instead of being left to the out-of-memory killer.
void check_output_bytes(double n_items, double bytes_each, const char* what) {
  static const double limit = [] {
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) return 0.5 * static_cast<double>(pages) * static_cast<double>(page);
#endif
    return 0.5 * 1024.0 * 1024.0 * 1024.0 * 1024.0;  // no way to ask: 512 GiB
  }();
  const double need = n_items * bytes_each;
  if (need > limit) {
    throw std::invalid_argument(std::string(what) + " asks for " + std::to_string(need / (1 << 30)) +
                                " GiB of output, more than half this machine's memory");
  }
}

toolsift::Scale parse_scale(const std::string& s) {
  if (s == "raw") return toolsift::Scale::kRaw;
  if (s == "bounded") return toolsift::Scale::kBounded;
  if (s == "linear") return toolsift::Scale::kLinear;
  throw std::invalid_argument("unknown scale '" + s + "' (expected 'raw', 'bounded' or 'linear')");
}

Prune parse_prune(const std::string& s) {
  if (s == "auto") return Prune::kAuto;
  if (s == "exhaustive") return Prune::kExhaustive;
  if (s == "maxscore") return Prune::kMaxScore;
  throw std::invalid_argument("unknown prune '" + s + "' (expected 'auto', 'exhaustive' or 'maxscore')");
}

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

std::string method_name(Bm25Method m) { return m == Bm25Method::kAtire ? "atire" : "lucene"; }

void require_1d(const py::array& a, const char* what) {
  if (a.ndim() != 1) throw std::invalid_argument(std::string(what) + " must be 1-d");
}

QueryBatch make_batch(const InvertedIndex& idx, const I32Array& terms, const I64Array& offsets) {
  require_1d(terms, "terms");
  require_1d(offsets, "offsets");
  if (offsets.shape(0) < 1) throw std::invalid_argument("offsets must have at least one element");
  QueryBatch q;
  q.terms = terms.data();
  q.offsets = offsets.data();
  q.n_queries = static_cast<std::size_t>(offsets.shape(0) - 1);
  idx.check_batch(q, static_cast<std::size_t>(terms.shape(0)));
  return q;
}

// The engine keeps two int64 words per group while it builds (the group -> documents
// pointer and its cursor): a group count no catalogue has (2**31 from a fuzzer) is refused
// here instead of ending in std::bad_alloc or the out-of-memory killer.
void check_group_count(int32_t n_groups) {
  check_output_bytes(static_cast<double>(n_groups) + 1.0, 16.0, "n_groups");
}

std::shared_ptr<InvertedIndex> build(const I32Array& tokens_in, const I64Array& offsets_in, int32_t n_terms,
                                     const std::optional<I32Array>& groups_in, int32_t n_groups, double k1, double b,
                                     const std::string& method) {
  const I32Array tokens = stable(tokens_in);
  const I64Array offsets = stable(offsets_in);
  const std::optional<I32Array> groups = groups_in ? std::optional<I32Array>(stable(*groups_in)) : std::nullopt;
  require_1d(tokens, "tokens");
  require_1d(offsets, "offsets");
  if (offsets.shape(0) < 1) throw std::invalid_argument("offsets must have at least one element (n_docs + 1)");
  const auto n_docs = static_cast<std::size_t>(offsets.shape(0) - 1);
  toolsift::check_doc_count(n_docs, "offsets");
  if (offsets.at(static_cast<py::ssize_t>(n_docs)) != tokens.shape(0)) {
    throw std::invalid_argument("offsets[-1] must equal len(tokens)");
  }
  const int32_t* g = nullptr;
  if (groups) {
    require_1d(*groups, "groups");
    if (static_cast<std::size_t>(groups->shape(0)) != n_docs) throw std::invalid_argument("groups must have one entry per document");
    g = groups->data();
  }
  const Bm25Params p = make_params(k1, b, method);
  if (groups) check_group_count(n_groups);
  py::gil_scoped_release release;
  const bool grouped = groups.has_value();
  return std::make_shared<InvertedIndex>(
      InvertedIndex::build(tokens.data(), offsets.data(), n_docs, n_terms, g, grouped, n_groups, p));
}

std::shared_ptr<InvertedIndex> from_arrays(const py::object& indptr, const py::object& doc_ids, const py::object& tfs,
                                           const py::object& doc_len, const py::object& groups, int32_t n_groups,
                                           double k1, double b, const std::string& method) {
  IndexColumns cols;
  cols.indptr = import_column<int64_t>(indptr, "indptr");
  cols.doc_ids = import_column<int32_t>(doc_ids, "doc_ids");
  cols.tfs = import_column<int32_t>(tfs, "tfs");
  cols.doc_len = import_column<int32_t>(doc_len, "doc_len");
  const bool grouped = !groups.is_none();
  if (grouped) cols.doc_group = import_column<int32_t>(groups, "doc_group");
  const Bm25Params p = make_params(k1, b, method);
  if (grouped) check_group_count(n_groups);
  py::gil_scoped_release release;
  return std::make_shared<InvertedIndex>(InvertedIndex::from_columns(std::move(cols), grouped, n_groups, p));
}

py::array_t<float> score_dense(const InvertedIndex& idx, const I32Array& terms_in, const I64Array& offsets_in,
                               const std::string& scale, bool group, int threads) {
  const I32Array terms = stable(terms_in);
  const I64Array offsets = stable(offsets_in);
  const toolsift::Scale sc = parse_scale(scale);
  const QueryBatch q = make_batch(idx, terms, offsets);
  const std::size_t width = group ? idx.n_groups() : idx.n_docs();
  check_output_bytes(static_cast<double>(q.n_queries) * static_cast<double>(width), 4.0, "score_dense");
  py::array_t<float> out({static_cast<py::ssize_t>(q.n_queries), static_cast<py::ssize_t>(width)});
  float* dst = out.mutable_data();
  {
    py::gil_scoped_release release;
    idx.score_dense(q, sc, group, dst, threads);
  }
  return out;
}

py::tuple topk(const InvertedIndex& idx, const I32Array& terms_in, const I64Array& offsets_in, int64_t k,
               const std::string& scale, bool group, int threads, const std::string& prune) {
  const I32Array terms = stable(terms_in);
  const I64Array offsets = stable(offsets_in);
  const toolsift::Scale sc = parse_scale(scale);
  const Prune pr = parse_prune(prune);
  if (k < 0) throw std::invalid_argument("k must be >= 0");
  const QueryBatch q = make_batch(idx, terms, offsets);
  const auto nq = static_cast<py::ssize_t>(q.n_queries);
  check_output_bytes(static_cast<double>(nq) * static_cast<double>(k), sizeof(int64_t) + sizeof(float), "topk: k");
  py::array_t<int64_t> ids({nq, static_cast<py::ssize_t>(k)});
  py::array_t<float> scores({nq, static_cast<py::ssize_t>(k)});
  int64_t* id_ptr = ids.mutable_data();
  float* sc_ptr = scores.mutable_data();
  {
    py::gil_scoped_release release;
    idx.topk(q, static_cast<std::size_t>(k), sc, group, id_ptr, sc_ptr, threads, pr);
  }
  return py::make_tuple(ids, scores);
}

py::tuple topk(const InvertedIndex& idx, const I32Array& terms, const I64Array& offsets, int64_t k,
               const std::string& scale, bool group, int threads, const std::string& prune);

// Texts -> queries map: one entry per text of the batch.
TextQueries make_text_queries(const QueryBatch& q, const I64Array& text_query, int64_t n_queries) {
  require_1d(text_query, "text_query");
  if (n_queries < 0) throw std::invalid_argument("n_queries must be >= 0");
  // Per query: a row pointer entry, a text range entry and an id list.
  check_output_bytes(static_cast<double>(n_queries), 2 * sizeof(int64_t) + sizeof(std::vector<int64_t>),
                     "candidates: n_queries");
  if (static_cast<std::size_t>(text_query.shape(0)) != q.n_queries) {
    throw std::invalid_argument("text_query has " + std::to_string(text_query.shape(0)) + " entries for " +
                                std::to_string(q.n_queries) + " texts");
  }
  TextQueries tq;
  tq.text_query = text_query.data();
  tq.n_queries = static_cast<std::size_t>(n_queries);
  InvertedIndex::check_text_queries(tq, q.n_queries);
  return tq;
}

py::tuple candidates(const InvertedIndex& idx, const I32Array& terms_in, const I64Array& offsets_in,
                     const I64Array& text_query_in, int64_t n_queries, int64_t n, const std::string& scale, bool group,
                     int threads, const std::string& prune) {
  const I32Array terms = stable(terms_in);
  const I64Array offsets = stable(offsets_in);
  const I64Array text_query = stable(text_query_in);
  const toolsift::Scale sc = parse_scale(scale);
  const Prune pr = parse_prune(prune);
  if (n < 0) throw std::invalid_argument("n must be >= 0");
  const QueryBatch q = make_batch(idx, terms, offsets);
  const TextQueries tq = make_text_queries(q, text_query, n_queries);
  std::vector<int64_t> ids, ptr;
  {
    py::gil_scoped_release release;
    ptr = idx.candidates(q, tq, static_cast<std::size_t>(n), sc, group, threads, pr, ids);
  }
  return py::make_tuple(to_array(std::move(ptr)), to_array(std::move(ids)));
}

py::tuple gather(const InvertedIndex& idx, const I32Array& terms_in, const I64Array& offsets_in,
                 const I64Array& text_query_in, const I64Array& cand_ptr_in, const I64Array& cand_ids_in,
                 const std::string& scale, bool group, int threads) {
  const I32Array terms = stable(terms_in);
  const I64Array offsets = stable(offsets_in);
  const I64Array text_query = stable(text_query_in);
  const I64Array cand_ptr = stable(cand_ptr_in);
  const I64Array cand_ids = stable(cand_ids_in);
  const toolsift::Scale sc = parse_scale(scale);
  const QueryBatch q = make_batch(idx, terms, offsets);
  require_1d(cand_ptr, "cand_ptr");
  require_1d(cand_ids, "cand_ids");
  if (cand_ptr.shape(0) < 1) throw std::invalid_argument("cand_ptr must have n_queries + 1 >= 1 entries");
  const TextQueries tq = make_text_queries(q, text_query, cand_ptr.shape(0) - 1);
  CandidateSet c;
  c.ptr = cand_ptr.data();
  c.ids = cand_ids.data();
  idx.check_candidates(c, tq.n_queries, static_cast<std::size_t>(cand_ids.shape(0)), group);
  std::vector<int64_t> off = InvertedIndex::gather_offsets(q.n_queries, tq, c);
  py::array_t<float> out(static_cast<py::ssize_t>(off.back()));
  float* dst = out.mutable_data();
  {
    py::gil_scoped_release release;
    idx.gather(q, tq, c, sc, group, off.data(), dst, threads);
  }
  return py::make_tuple(to_array(std::move(off)), out);
}

// An int8 query batch and matrix as every int8 binding takes them: the queries
// snapshotted (stable), the matrix read in place when read-only (frozen), shapes checked.
struct Int8Args {
  I8Array q_codes;
  F32Array q_scales;
  I8Array codes;
  F32Array scales;
  py::ssize_t m, n, d;

  Int8Args(const I8Array& q_codes_in, const F32Array& q_scales_in, const I8Array& codes_in,
           const F32Array& scales_in)
      : q_codes(stable(q_codes_in)), q_scales(stable(q_scales_in)), codes(frozen(codes_in)),
        scales(frozen(scales_in)) {
    if (q_codes.ndim() != 2 || codes.ndim() != 2) throw std::invalid_argument("q_codes and codes must be 2-d");
    require_1d(q_scales, "q_scales");
    require_1d(scales, "scales");
    m = q_codes.shape(0);
    n = codes.shape(0);
    d = q_codes.shape(1);
    if (codes.shape(1) != d) {
      throw std::invalid_argument("q_codes has dim " + std::to_string(d) + ", codes has dim " +
                                  std::to_string(codes.shape(1)));
    }
    if (q_scales.shape(0) != m) throw std::invalid_argument("q_scales must have one entry per row of q_codes");
    if (scales.shape(0) != n) throw std::invalid_argument("scales must have one entry per row of codes");
    if (d >= 131072) throw std::invalid_argument("dim must be below 131072 (int32 accumulation)");
  }

  toolsift::Int8Rows rows() const {
    return {codes.data(), scales.data(), static_cast<std::size_t>(n), static_cast<std::size_t>(d)};
  }
  std::size_t queries() const { return static_cast<std::size_t>(m); }
};

// Exact int8 scores of every query row against every matrix row: float32[m, n].
py::array_t<float> int8_scan(const I8Array& q_codes_in, const F32Array& q_scales_in, const I8Array& codes_in,
                             const F32Array& scales_in, int threads) {
  const Int8Args a(q_codes_in, q_scales_in, codes_in, scales_in);
  check_output_bytes(static_cast<double>(a.m) * static_cast<double>(a.n), 4.0, "int8_scan");
  py::array_t<float> out({a.m, a.n});
  float* dst = out.mutable_data();
  {
    py::gil_scoped_release release;
    toolsift::int8_scan(a.q_codes.data(), a.q_scales.data(), a.queries(), a.rows(), dst, threads);
  }
  return out;
}

// Exact int8 scores of query i against rows cand_ids[cand_ptr[i]:cand_ptr[i+1]]: float32[k].
py::array_t<float> int8_gather(const I8Array& q_codes_in, const F32Array& q_scales_in, const I8Array& codes_in,
                               const F32Array& scales_in, const I64Array& cand_ptr_in, const I64Array& cand_ids_in,
                               int threads) {
  const Int8Args a(q_codes_in, q_scales_in, codes_in, scales_in);
  const I64Array cand_ptr = stable(cand_ptr_in);
  const I64Array cand_ids = stable(cand_ids_in);
  require_1d(cand_ptr, "cand_ptr");
  require_1d(cand_ids, "cand_ids");
  if (cand_ptr.shape(0) != a.m + 1) throw std::invalid_argument("cand_ptr must have one entry per query + 1");
  const toolsift::CsrView c{cand_ptr.data(), cand_ids.data(), static_cast<std::size_t>(cand_ids.shape(0))};
  toolsift::check_csr(c, a.queries(), "cand_ptr");
  const int64_t* ids = cand_ids.data();
  for (py::ssize_t t = 0; t < cand_ids.shape(0); ++t) {
    if (ids[t] < 0 || ids[t] >= a.n) {
      throw std::invalid_argument("cand_ids[" + std::to_string(t) + "]=" + std::to_string(ids[t]) +
                                  " out of range for " + std::to_string(a.n) + " rows");
    }
  }
  py::array_t<float> out(cand_ids.shape(0));
  float* dst = out.mutable_data();
  {
    py::gil_scoped_release release;
    toolsift::int8_gather(a.q_codes.data(), a.q_scales.data(), a.queries(), a.rows(), cand_ptr.data(), ids, dst,
                          threads);
  }
  return out;
}

// Per query row, the best n keys (keys[j] for matrix row j, distinct) with a positive
// int8 score: (ids int64[m, n], counts int64[m]); row i's ids are ids[i, :counts[i]].
py::tuple int8_top(const I8Array& q_codes_in, const F32Array& q_scales_in, const I8Array& codes_in,
                   const F32Array& scales_in, const I64Array& keys_in, py::ssize_t n, int threads) {
  const Int8Args a(q_codes_in, q_scales_in, codes_in, scales_in);
  const I64Array keys = frozen(keys_in);
  require_1d(keys, "keys");
  if (keys.shape(0) != a.n) throw std::invalid_argument("keys must have one entry per row of codes");
  if (n < 1) throw std::invalid_argument("n must be >= 1, got " + std::to_string(n));
  n = std::min(n, a.n);  // never more keys than rows: a huge n allocates nothing extra
  check_output_bytes(static_cast<double>(a.m) * static_cast<double>(n), 8.0, "int8_top");
  py::array_t<int64_t> out({a.m, n});
  py::array_t<int64_t> counts(a.m);
  int64_t* dst = out.mutable_data();
  int64_t* cnt = counts.mutable_data();
  {
    py::gil_scoped_release release;
    toolsift::int8_top(a.q_codes.data(), a.q_scales.data(), a.queries(), a.rows(), keys.data(),
                       static_cast<std::size_t>(n), dst, cnt, threads);
  }
  return py::make_tuple(out, counts);
}

// An IVF probe's inputs, checked: the lists (CSR over the list matrix's rows, one id per
// listed row) and each query's probed lists (CSR over queries, each a list index). Also
// the probed rows per query (the sizes of its lists).
struct ProbeArgs {
  Int8Args a;
  I64Array list_ptr, list_ids, probe_ptr, probes;
  std::vector<int64_t> out_ptr;

  ProbeArgs(const I8Array& q_codes_in, const F32Array& q_scales_in, const I8Array& codes_in,
            const F32Array& scales_in, const I64Array& list_ptr_in, const I64Array& list_ids_in,
            const I64Array& probe_ptr_in, const I64Array& probes_in)
      : a(q_codes_in, q_scales_in, codes_in, scales_in),
        list_ptr(frozen(list_ptr_in)),
        list_ids(frozen(list_ids_in)),
        probe_ptr(stable(probe_ptr_in)),
        probes(stable(probes_in)) {
    for (const auto* arr : {&list_ptr, &list_ids, &probe_ptr, &probes}) require_1d(*arr, "IVF arrays");
    if (list_ptr.shape(0) < 1 || list_ids.shape(0) != a.n) {
      throw std::invalid_argument("list_ptr needs n_lists + 1 entries and list_ids one id per listed row");
    }
    const auto n_lists = static_cast<std::size_t>(list_ptr.shape(0) - 1);
    toolsift::check_csr({list_ptr.data(), list_ids.data(), static_cast<std::size_t>(a.n)}, n_lists, "list_ptr");
    if (probe_ptr.shape(0) != a.m + 1) throw std::invalid_argument("probe_ptr must have one entry per query + 1");
    toolsift::check_csr({probe_ptr.data(), probes.data(), static_cast<std::size_t>(probes.shape(0))},
                        static_cast<std::size_t>(a.m), "probe_ptr");
    const int64_t* pl = probes.data();
    const int64_t* lp = list_ptr.data();
    out_ptr.assign(static_cast<std::size_t>(a.m) + 1, 0);
    for (py::ssize_t i = 0; i < a.m; ++i) {
      int64_t total = 0;
      for (int64_t p = probe_ptr.data()[i]; p < probe_ptr.data()[i + 1]; ++p) {
        if (pl[p] < 0 || static_cast<std::size_t>(pl[p]) >= n_lists) {
          throw std::invalid_argument("probes[" + std::to_string(p) + "]=" + std::to_string(pl[p]) +
                                      " is not a list (" + std::to_string(n_lists) + " lists)");
        }
        total += lp[pl[p] + 1] - lp[pl[p]];
      }
      out_ptr[static_cast<std::size_t>(i) + 1] = out_ptr[static_cast<std::size_t>(i)] + total;
    }
  }
};

// An IVF probe (toolsift/int8_dot.h): (ptr int64[m+1], scores float32[], ids int64[]),
// query i's probed rows at ptr[i]:ptr[i+1], in probe order.
py::tuple int8_probe(const I8Array& q_codes_in, const F32Array& q_scales_in, const I8Array& codes_in,
                     const F32Array& scales_in, const I64Array& list_ptr_in, const I64Array& list_ids_in,
                     const I64Array& probe_ptr_in, const I64Array& probes_in, int threads) {
  ProbeArgs p(q_codes_in, q_scales_in, codes_in, scales_in, list_ptr_in, list_ids_in, probe_ptr_in, probes_in);
  check_output_bytes(static_cast<double>(p.out_ptr.back()), 12.0, "int8_probe");
  py::array_t<float> scores(static_cast<py::ssize_t>(p.out_ptr.back()));
  py::array_t<int64_t> ids(static_cast<py::ssize_t>(p.out_ptr.back()));
  float* sc = scores.mutable_data();
  int64_t* id = ids.mutable_data();
  {
    py::gil_scoped_release release;
    toolsift::int8_probe(p.a.q_codes.data(), p.a.q_scales.data(), p.a.queries(), p.a.rows(), p.list_ptr.data(),
                         p.list_ids.data(), p.probe_ptr.data(), p.probes.data(), p.out_ptr.data(), sc, id, threads);
  }
  return py::make_tuple(to_array(std::move(p.out_ptr)), scores, ids);
}

// An IVF probe and its top-n in one pass (toolsift/int8_dot.h): (ids int64[m, n],
// counts int64[m]), as int8_top over each query's probed rows.
py::tuple int8_probe_top(const I8Array& q_codes_in, const F32Array& q_scales_in, const I8Array& codes_in,
                         const F32Array& scales_in, const I64Array& list_ptr_in, const I64Array& list_ids_in,
                         const I64Array& probe_ptr_in, const I64Array& probes_in, py::ssize_t n, int threads) {
  const ProbeArgs p(q_codes_in, q_scales_in, codes_in, scales_in, list_ptr_in, list_ids_in, probe_ptr_in,
                    probes_in);
  if (n < 1) throw std::invalid_argument("n must be >= 1, got " + std::to_string(n));
  n = std::min(n, p.a.n);  // never more ids than listed rows
  check_output_bytes(static_cast<double>(p.a.m) * static_cast<double>(n), 8.0, "int8_probe_top");
  py::array_t<int64_t> out({p.a.m, n});
  py::array_t<int64_t> counts(p.a.m);
  int64_t* dst = out.mutable_data();
  int64_t* cnt = counts.mutable_data();
  {
    py::gil_scoped_release release;
    toolsift::int8_probe_top(p.a.q_codes.data(), p.a.q_scales.data(), p.a.queries(), p.a.rows(),
                             p.list_ptr.data(), p.list_ids.data(), p.probe_ptr.data(), p.probes.data(),
                             static_cast<std::size_t>(n), dst, cnt, threads);
  }
  return py::make_tuple(out, counts);
}

// One field's texts for the fused calls below: the index and the analysed batch.
struct FieldBatch {
  const InvertedIndex* idx;
  I32Array terms;
  I64Array offsets;
  I64Array text_query;
  QueryBatch q;
  TextQueries tq;
};

FieldBatch field_batch(const InvertedIndex& idx, const I32Array& terms, const I64Array& offsets,
                       const I64Array& text_query, int64_t n_queries) {
  FieldBatch f{&idx, stable(terms), stable(offsets), stable(text_query), {}, {}};
  f.q = make_batch(idx, f.terms, f.offsets);
  f.tq = make_text_queries(f.q, f.text_query, n_queries);
  return f;
}

// Every field's candidates of one batch and their row-wise union, in one call: the
// same as candidates() per field then union_csr(). A single small search otherwise
// pays the binding's fixed cost (argument conversion, array hand-over) five times,
// more than the engine's own work on a small catalogue.
py::tuple candidates_union(const std::vector<std::shared_ptr<InvertedIndex>>& indexes,
                           const std::vector<I32Array>& terms, const std::vector<I64Array>& offsets,
                           const std::vector<I64Array>& text_query, int64_t n_queries, int64_t n,
                           const std::string& scale, bool group, int threads, const std::string& prune) {
  const std::size_t nf = indexes.size();
  if (nf == 0 || terms.size() != nf || offsets.size() != nf || text_query.size() != nf) {
    throw std::invalid_argument("candidates_union: needs one terms, offsets and text_query per index (>= 1)");
  }
  if (n < 0) throw std::invalid_argument("n must be >= 0");
  const toolsift::Scale sc = parse_scale(scale);
  const Prune pr = parse_prune(prune);
  std::vector<FieldBatch> fields;
  for (std::size_t i = 0; i < nf; ++i) {
    if (!indexes[i]) throw std::invalid_argument("candidates_union: an index is None");
    fields.push_back(field_batch(*indexes[i], terms[i], offsets[i], text_query[i], n_queries));
  }
  std::vector<std::vector<int64_t>> ids(nf), ptrs(nf);
  std::vector<int64_t> out_ids, out_ptr;
  {
    py::gil_scoped_release release;
    std::vector<CsrView> parts;
    for (std::size_t i = 0; i < nf; ++i) {
      ptrs[i] = fields[i].idx->candidates(fields[i].q, fields[i].tq, static_cast<std::size_t>(n), sc, group, threads,
                                          pr, ids[i]);
      parts.push_back(CsrView{ptrs[i].data(), ids[i].data(), ids[i].size()});
    }
    out_ptr = toolsift::union_rows(parts, static_cast<std::size_t>(n_queries), out_ids);
  }
  return py::make_tuple(to_array(std::move(out_ptr)), to_array(std::move(out_ids)));
}

void check_ptr(const I64Array& ptr, std::size_t n_queries, std::size_t n_texts, const char* what) {
  require_1d(ptr, what);
  if (static_cast<std::size_t>(ptr.shape(0)) != n_queries + 1) {
    throw std::invalid_argument(std::string(what) + " must have n_queries + 1 entries");
  }
  toolsift::check_csr(CsrView{ptr.data(), nullptr, n_texts}, n_queries, what);
}

// Text i of a field must belong to query q exactly for ptr[q] <= i < ptr[q + 1]: the
// packing below reads text ptr[q] + r's block as query q's.
void check_owner(const FieldBatch& f, const I64Array& ptr, std::size_t n_queries, const char* what) {
  check_ptr(ptr, n_queries, f.q.n_queries, what);
  const int64_t* p = ptr.data();
  for (std::size_t q = 0; q < n_queries; ++q) {
    for (int64_t i = p[q]; i < p[q + 1]; ++i) {
      if (f.tq.text_query[i] != static_cast<int64_t>(q)) {
        throw std::invalid_argument(std::string(what) + " disagrees with the texts' text_query at text " +
                                    std::to_string(i));
      }
    }
  }
}

// The candidates' similarities of a batch of BM25 fields, laid out for the MFTR kernel:
// what toolsift.search.candidates.pack computes from four gather() calls and the two
// pack kernels (toolsift.kernels.pack), in one call and with the same values.
// need: the description, response and examples fields (texts CSR by need_ptr);
// params: the parameters field (texts CSR by arg_ptr; documents CSR by param_ptr per
// tool). Returns (need_sims float32[m, 3], need_off int64[nc], ap_sims float32[], ap_off int64[nc]).
py::tuple pack_fields(const std::vector<std::shared_ptr<InvertedIndex>>& need_idx, const std::vector<I32Array>& need_terms,
                      const std::vector<I64Array>& need_offsets, const std::vector<I64Array>& need_text_query,
                      const std::shared_ptr<InvertedIndex>& param_idx, const I32Array& param_terms_in,
                      const I64Array& param_offsets_in, const I64Array& param_text_query_in,
                      const I64Array& cand_ptr_in, const I64Array& cand_ids_in, const I64Array& need_ptr_in,
                      const I64Array& arg_ptr_in, const I64Array& param_ptr_in, const std::string& scale, int threads) {
  if (need_idx.size() != 3 || need_terms.size() != 3 || need_offsets.size() != 3 || need_text_query.size() != 3) {
    throw std::invalid_argument("pack_fields: needs exactly three need fields");
  }
  if (!param_idx) throw std::invalid_argument("pack_fields: the parameters index is None");
  const toolsift::Scale sc = parse_scale(scale);
  const I64Array cand_ptr = stable(cand_ptr_in), cand_ids = stable(cand_ids_in), need_ptr = stable(need_ptr_in),
                 arg_ptr = stable(arg_ptr_in), param_ptr = stable(param_ptr_in);
  require_1d(cand_ptr, "cand_ptr");
  require_1d(cand_ids, "cand_ids");
  if (cand_ptr.shape(0) < 1) throw std::invalid_argument("cand_ptr must have n_queries + 1 >= 1 entries");
  const auto nq = static_cast<std::size_t>(cand_ptr.shape(0) - 1);
  const auto nc = static_cast<std::size_t>(cand_ids.shape(0));
  CandidateSet c{cand_ptr.data(), cand_ids.data()};
  std::vector<FieldBatch> needs;
  for (std::size_t f = 0; f < 3; ++f) {
    if (!need_idx[f]) throw std::invalid_argument("pack_fields: a need index is None");
    needs.push_back(field_batch(*need_idx[f], need_terms[f], need_offsets[f], need_text_query[f],
                                static_cast<int64_t>(nq)));
    need_idx[f]->check_candidates(c, nq, nc, true);
    check_owner(needs[f], need_ptr, nq, "need_ptr");
  }
  FieldBatch par = field_batch(*param_idx, param_terms_in, param_offsets_in, param_text_query_in,
                               static_cast<int64_t>(nq));
  check_owner(par, arg_ptr, nq, "arg_ptr");
  require_1d(param_ptr, "param_ptr");
  const int64_t* pp = param_ptr.data();
  const int64_t* ids = cand_ids.data();
  const auto n_tools = static_cast<int64_t>(param_ptr.shape(0)) - 1;
  for (std::size_t i = 0; i < nc; ++i) {
    if (ids[i] >= n_tools) throw std::invalid_argument("cand_ids[" + std::to_string(i) + "] has no param_ptr entry");
    if (pp[ids[i] + 1] < pp[ids[i]]) throw std::invalid_argument("param_ptr decreases at tool " + std::to_string(ids[i]));
  }
  const int64_t* cp = cand_ptr.data();
  const int64_t* np_ = need_ptr.data();
  const int64_t* ap = arg_ptr.data();
  std::size_t m = 0;
  for (std::size_t q = 0; q < nq; ++q) m += static_cast<std::size_t>((np_[q + 1] - np_[q]) * (cp[q + 1] - cp[q]));
  // The parameters field scores the candidates' parameter documents: query q asks for
  // the parameters of each of its candidates, in candidate order.
  const bool with_params = ap[nq] > 0;
  std::vector<int64_t> doc_ptr(nq + 1, 0), doc_ids;
  if (with_params) {
    for (std::size_t q = 0; q < nq; ++q) {
      for (int64_t j = cp[q]; j < cp[q + 1]; ++j) {
        for (int64_t d = pp[ids[j]]; d < pp[ids[j] + 1]; ++d) doc_ids.push_back(d);
      }
      doc_ptr[q + 1] = static_cast<int64_t>(doc_ids.size());
    }
    param_idx->check_candidates(CandidateSet{doc_ptr.data(), doc_ids.data()}, nq, doc_ids.size(), false);
  }
  const CandidateSet docs{doc_ptr.data(), doc_ids.data()};
  std::vector<std::vector<int64_t>> off(3);
  for (std::size_t f = 0; f < 3; ++f) off[f] = InvertedIndex::gather_offsets(needs[f].q.n_queries, needs[f].tq, c);
  std::vector<int64_t> par_off = with_params ? InvertedIndex::gather_offsets(par.q.n_queries, par.tq, docs)
                                             : std::vector<int64_t>(1, 0);
  check_output_bytes(static_cast<double>(m), 3 * sizeof(float), "pack_fields");
  py::array_t<float> need_sims({static_cast<py::ssize_t>(m), static_cast<py::ssize_t>(3)});
  py::array_t<int64_t> need_off(static_cast<py::ssize_t>(nc));
  py::array_t<int64_t> ap_off(static_cast<py::ssize_t>(nc));
  std::size_t n_ap = 0;
  if (with_params) {
    for (std::size_t q = 0; q < nq; ++q) {
      n_ap += static_cast<std::size_t>((ap[q + 1] - ap[q]) * (doc_ptr[q + 1] - doc_ptr[q]));
    }
  }
  py::array_t<float> ap_sims(static_cast<py::ssize_t>(n_ap));
  float* ns = need_sims.mutable_data();
  int64_t* no = need_off.mutable_data();
  int64_t* ao = ap_off.mutable_data();
  float* as = ap_sims.mutable_data();
  {
    py::gil_scoped_release release;
    std::vector<std::vector<float>> sims(3);
    for (std::size_t f = 0; f < 3; ++f) {
      sims[f].resize(static_cast<std::size_t>(off[f].back()));
      needs[f].idx->gather(needs[f].q, needs[f].tq, c, sc, true, off[f].data(), sims[f].data(), threads);
    }
    std::size_t row = 0;
    for (std::size_t q = 0; q < nq; ++q) {
      for (int64_t j = cp[q]; j < cp[q + 1]; ++j) {
        no[j] = static_cast<int64_t>(row);
        for (int64_t t = np_[q]; t < np_[q + 1]; ++t, ++row) {
          for (std::size_t f = 0; f < 3; ++f) ns[row * 3 + f] = sims[f][static_cast<std::size_t>(off[f][t] + (j - cp[q]))];
        }
      }
    }
    if (!with_params) {
      std::fill(ao, ao + nc, int64_t{0});
    } else {
      std::vector<float> ps(static_cast<std::size_t>(par_off.back()));
      par.idx->gather(par.q, par.tq, docs, sc, false, par_off.data(), ps.data(), threads);
      std::size_t out = 0;
      for (std::size_t q = 0; q < nq; ++q) {
        int64_t local = 0;  // this candidate's first parameter within query q's block
        for (int64_t j = cp[q]; j < cp[q + 1]; ++j) {
          const int64_t n_par = pp[ids[j] + 1] - pp[ids[j]];
          ao[j] = static_cast<int64_t>(out);
          for (int64_t a = ap[q]; a < ap[q + 1]; ++a) {
            for (int64_t p = 0; p < n_par; ++p) as[out++] = ps[static_cast<std::size_t>(par_off[a] + local + p)];
          }
          local += n_par;
        }
      }
    }
  }
  return py::make_tuple(need_sims, need_off, ap_sims, ap_off);
}

py::tuple union_csr(const std::vector<I64Array>& ptrs_in, const std::vector<I64Array>& ids_in) {
  std::vector<I64Array> ptrs, ids;
  for (const auto& a : ptrs_in) ptrs.push_back(stable(a));
  for (const auto& a : ids_in) ids.push_back(stable(a));
  if (ptrs.size() != ids.size()) throw std::invalid_argument("union_csr: ptrs and ids differ in length");
  if (ptrs.empty()) throw std::invalid_argument("union_csr: needs at least one CSR");
  std::vector<CsrView> parts;
  const py::ssize_t rows = ptrs[0].ndim() == 1 ? ptrs[0].shape(0) - 1 : -1;
  for (std::size_t i = 0; i < ptrs.size(); ++i) {
    const std::string what = "ptrs[" + std::to_string(i) + "]";
    require_1d(ptrs[i], what.c_str());
    require_1d(ids[i], ("ids[" + std::to_string(i) + "]").c_str());
    if (ptrs[i].shape(0) - 1 != rows || rows < 0) throw std::invalid_argument(what + " has a different number of rows");
    CsrView v{ptrs[i].data(), ids[i].data(), static_cast<std::size_t>(ids[i].shape(0))};
    toolsift::check_csr(v, static_cast<std::size_t>(rows), what.c_str());
    parts.push_back(v);
  }
  std::vector<int64_t> out_ids, out_ptr;
  {
    py::gil_scoped_release release;
    out_ptr = toolsift::union_rows(parts, static_cast<std::size_t>(rows), out_ids);
  }
  return py::make_tuple(to_array(std::move(out_ptr)), to_array(std::move(out_ids)));
}

py::array_t<double> upper_bounds(const InvertedIndex& idx, const I32Array& terms, const I64Array& offsets) {
  const QueryBatch q = make_batch(idx, terms, offsets);
  py::array_t<double> out(static_cast<py::ssize_t>(q.n_queries));
  double* dst = out.mutable_data();
  for (std::size_t i = 0; i < q.n_queries; ++i) {
    dst[i] = idx.upper_bound(q.terms + q.offsets[i], static_cast<std::size_t>(q.offsets[i + 1] - q.offsets[i]));
  }
  return out;
}

ColumnView column(const InvertedIndex& idx, const std::string& name) {
  const IndexColumns& c = idx.columns();
  if (name == "indptr") return ColumnView::of(name, c.indptr);
  if (name == "doc_ids") return ColumnView::of(name, c.doc_ids);
  if (name == "tfs") return ColumnView::of(name, c.tfs);
  if (name == "doc_len") return ColumnView::of(name, c.doc_len);
  if (name == "doc_group") return ColumnView::of(name, c.doc_group);
  throw std::invalid_argument("unknown column '" + name + "' (expected indptr, doc_ids, tfs, doc_len or doc_group)");
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "toolsift engine core (C++): per-field inverted index and BM25 scoring.";
  toolsift::py_bridge::register_column_view(m);
  toolsift::py_bridge::register_interner(m);
  toolsift::py_bridge::register_fused(m);
  m.def("_stable_address", [](const I32Array& a) {
    // For tests: the address the kernels would read for ``a`` (its own when zero-copy).
    const I32Array kept = stable(a);
    return reinterpret_cast<std::uintptr_t>(kept.data());
  }, py::arg("a"));
  m.def("int8_scan", &int8_scan, py::arg("q_codes"), py::arg("q_scales"), py::arg("codes"), py::arg("scales"),
        py::kw_only(), py::arg("threads") = 1,
        "Exact int8 dot products times both scales: float32[m, n] (toolsift/int8_dot.h).");
  m.def("int8_gather", &int8_gather, py::arg("q_codes"), py::arg("q_scales"), py::arg("codes"), py::arg("scales"),
        py::arg("cand_ptr"), py::arg("cand_ids"), py::kw_only(), py::arg("threads") = 1,
        "Exact int8 scores of each query's candidate rows: float32[len(cand_ids)] (toolsift/int8_dot.h).");
  m.def("int8_top", &int8_top, py::arg("q_codes"), py::arg("q_scales"), py::arg("codes"), py::arg("scales"),
        py::arg("keys"), py::arg("n"), py::kw_only(), py::arg("threads") = 1,
        "Per query row the best n keys with a positive int8 score, unordered: (ids int64[m, n], counts int64[m]).");
  m.def("int8_probe", &int8_probe, py::arg("q_codes"), py::arg("q_scales"), py::arg("codes"), py::arg("scales"),
        py::arg("list_ptr"), py::arg("list_ids"), py::arg("probe_ptr"), py::arg("probes"), py::kw_only(),
        py::arg("threads") = 1,
        "IVF probe: every row of each probed list, scored: (ptr int64[m+1], scores float32[], ids int64[]).");
  m.def("int8_probe_top", &int8_probe_top, py::arg("q_codes"), py::arg("q_scales"), py::arg("codes"),
        py::arg("scales"), py::arg("list_ptr"), py::arg("list_ids"), py::arg("probe_ptr"), py::arg("probes"),
        py::arg("n"), py::kw_only(), py::arg("threads") = 1,
        "IVF probe and selection in one pass: per query the best n list ids with a positive score, unordered: "
        "(ids int64[m, n], counts int64[m]).");
  m.def("int8_scan_portable", [](const I8Array& q_codes, const F32Array& q_scales, const I8Array& codes,
                                 const F32Array& scales) {
    // For tests: the portable loop on the same inputs, to compare with the vector path.
    const Int8Args a(q_codes, q_scales, codes, scales);
    py::array_t<float> out({a.m, a.n});
    toolsift::int8_scan_portable(a.q_codes.data(), a.q_scales.data(), a.queries(), a.rows(), out.mutable_data());
    return out;
  }, py::arg("q_codes"), py::arg("q_scales"), py::arg("codes"), py::arg("scales"));
  m.def("int8_dot_isa", &toolsift::int8_dot_isa, "The instruction set the int8 scan uses on this CPU.");
  m.def("candidates_union", &candidates_union, py::arg("indexes"), py::arg("terms"), py::arg("offsets"),
        py::arg("text_query"), py::arg("n_queries"), py::arg("n"), py::arg("scale"), py::arg("group"),
        py::arg("threads"), py::arg("prune"),
        "Each index's candidates of its texts, unioned per query: (ptr int64[n_queries+1], ids int64[]).");
  m.def("pack_fields", &pack_fields, py::arg("need_indexes"), py::arg("need_terms"), py::arg("need_offsets"),
        py::arg("need_text_query"), py::arg("param_index"), py::arg("param_terms"), py::arg("param_offsets"),
        py::arg("param_text_query"), py::arg("cand_ptr"), py::arg("cand_ids"), py::arg("need_ptr"),
        py::arg("arg_ptr"), py::arg("param_ptr"), py::arg("scale"), py::arg("threads"),
        "Candidates' field similarities of BM25 fields, packed: (need_sims float32[m,3], need_off int64[nc], "
        "ap_sims float32[], ap_off int64[nc]).");
  m.def("union_csr", &union_csr, py::arg("ptrs"), py::arg("ids"),
        "Row-wise sorted union of several CSR id lists with the same rows: (ptr int64[], ids int64[]).");

  py::class_<InvertedIndex, std::shared_ptr<InvertedIndex>>(m, "InvertedIndex")
      .def_static("build", &build, py::arg("tokens"), py::arg("offsets"), py::arg("n_terms"), py::kw_only(),
                  py::arg("groups") = py::none(), py::arg("n_groups") = 0, py::arg("k1") = 1.5, py::arg("b") = 0.75,
                  py::arg("method") = "lucene")
      .def_static("from_arrays", &from_arrays, py::arg("indptr"), py::arg("doc_ids"), py::arg("tfs"),
                  py::arg("doc_len"), py::kw_only(), py::arg("groups") = py::none(), py::arg("n_groups") = 0,
                  py::arg("k1") = 1.5, py::arg("b") = 0.75, py::arg("method") = "lucene")
      .def("score_dense", &score_dense, py::arg("terms"), py::arg("offsets"), py::kw_only(),
           py::arg("scale") = "raw", py::arg("group") = false, py::arg("threads") = 1)
      .def("topk", &topk, py::arg("terms"), py::arg("offsets"), py::arg("k"), py::kw_only(),
           py::arg("scale") = "raw", py::arg("group") = false, py::arg("threads") = 1, py::arg("prune") = "auto")
      .def("candidates", &candidates, py::arg("terms"), py::arg("offsets"), py::arg("text_query"),
           py::arg("n_queries"), py::arg("n"), py::kw_only(), py::arg("scale") = "raw", py::arg("group") = false,
           py::arg("threads") = 1, py::arg("prune") = "auto",
           "Per query, the sorted union of each of its texts' top-n ids: (ptr int64[n_queries+1], ids int64[]).")
      .def("gather", &gather, py::arg("terms"), py::arg("offsets"), py::arg("text_query"), py::arg("cand_ptr"),
           py::arg("cand_ids"), py::kw_only(), py::arg("scale") = "raw", py::arg("group") = false,
           py::arg("threads") = 1,
           "Scores of each text against its query's candidates, text-major: (offsets int64[n_texts+1], "
           "scores float32[]).")
      .def("upper_bounds", &upper_bounds, py::arg("terms"), py::arg("offsets"))
      .def("column", &column, py::arg("name"))
      .def("idf", [](const InvertedIndex& idx) {
        const auto& v = idx.idf();
        return py::array_t<float>(static_cast<py::ssize_t>(v.size()), v.data());
      })
      .def_property_readonly("n_docs", &InvertedIndex::n_docs)
      .def_property_readonly("n_terms", &InvertedIndex::n_terms)
      .def_property_readonly("n_groups", &InvertedIndex::n_groups)
      .def_property_readonly("nnz", &InvertedIndex::nnz)
      .def_property_readonly("avgdl", &InvertedIndex::avgdl)
      .def_property_readonly("k1", [](const InvertedIndex& i) { return i.params().k1; })
      .def_property_readonly("b", [](const InvertedIndex& i) { return i.params().b; })
      .def_property_readonly("method", [](const InvertedIndex& i) { return method_name(i.params().method); })
      .def_property_readonly("has_groups", &InvertedIndex::grouped);
}
