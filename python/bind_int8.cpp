// Bindings of the int8 dense kernels (toolsift/int8_dot.h): exact scans, gathers,
// top-n selection and IVF probes. Buffer checks and GIL handling only.
#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bindings.h"
#include "toolsift/csr.h"
#include "toolsift/dense_candidates.h"
#include "toolsift/int8_coarse.h"
#include "toolsift/int8_dot.h"

namespace toolsift::py_bridge {

namespace {

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

// Each query row's nprobe best IVF lists by int8 centroid score, best first, ties to the
// lower list (toolsift/dense_candidates.h ivf_probes): int64[m, min(nprobe, lists)].
py::array_t<int64_t> ivf_probes(const I8Array& q_codes_in, const F32Array& q_scales_in, const I8Array& cent_codes_in,
                                const F32Array& cent_scales_in, py::ssize_t nprobe, int threads) {
  const Int8Args a(q_codes_in, q_scales_in, cent_codes_in, cent_scales_in);
  if (a.n < 1) throw std::invalid_argument("ivf_probes needs at least one centroid");
  if (nprobe < 1) throw std::invalid_argument("nprobe must be >= 1, got " + std::to_string(nprobe));
  const float* qs = a.q_scales.data();
  for (py::ssize_t i = 0; i < a.m; ++i) {
    if (!(qs[i] >= 0.0f && qs[i] <= std::numeric_limits<float>::max())) {
      throw std::invalid_argument("q_scales[" + std::to_string(i) + "] must be finite and >= 0");
    }
  }
  const py::ssize_t p = std::min(nprobe, a.n);
  check_output_bytes(static_cast<double>(a.m) * static_cast<double>(p), 8.0, "ivf_probes");
  py::array_t<int64_t> out({a.m, p});
  int64_t* dst = out.mutable_data();
  {
    py::gil_scoped_release release;
    toolsift::ivf_probes(a.q_codes.data(), qs, a.queries(), a.rows(), static_cast<std::size_t>(p), dst, threads);
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

// An int8 matrix's exact prefilter (toolsift/int8_coarse.h) and the arrays it was built
// from: int8_top takes it only with those very arrays (read-only, so still the same).
struct Coarse {
  I8Array codes;
  F32Array scales;
  toolsift::Int8Coarse c;
  // Built over rows `rows` of codes (an IVF's list_ids; checked once, here), or over all.
  std::optional<I64Array> rows;
  std::vector<float> row_scales;  // scales[rows], in that order
};

// Whether no writable array reaches a's memory (a, its base, its base's base...), as
// kernels.buffers.frozen asks: a read-only view of a writable array could still change.
bool never_written(const py::array& a) {
  if (a.writeable()) return false;
  py::object base = a.attr("base");
  while (py::isinstance<py::array>(base)) {
    if (base.cast<py::array>().writeable()) return false;
    base = base.attr("base");
  }
  return true;
}

std::unique_ptr<Coarse> int8_coarse(const I8Array& codes, const F32Array& scales, const py::object& rows_in) {
  if (!never_written(codes) || !never_written(scales)) {
    throw std::invalid_argument("int8_coarse needs read-only codes and scales (the prefilter must not go stale)");
  }
  if (codes.ndim() != 2) throw std::invalid_argument("codes must be 2-d");
  require_1d(scales, "scales");
  if (scales.shape(0) != codes.shape(0)) throw std::invalid_argument("scales must have one entry per row of codes");
  const auto d = static_cast<std::size_t>(codes.shape(1));
  if (d == 0 || d > toolsift::kCoarseMaxDim) {
    throw std::invalid_argument("int8_coarse needs 1 <= dim <= " + std::to_string(toolsift::kCoarseMaxDim) +
                                ", got " + std::to_string(d));
  }
  const float* sc = scales.data();
  for (py::ssize_t j = 0; j < scales.shape(0); ++j) {
    // The bounds hold because a score grows with the dot product: scales >= 0.
    if (!(sc[j] >= 0.0f && sc[j] <= std::numeric_limits<float>::max())) {
      throw std::invalid_argument("scales[" + std::to_string(j) + "] must be finite and >= 0");
    }
  }
  auto out = std::make_unique<Coarse>(Coarse{codes, scales, {}, std::nullopt, {}});
  const toolsift::Int8Rows rows{codes.data(), sc, static_cast<std::size_t>(codes.shape(0)), d};
  if (rows_in.is_none()) {
    py::gil_scoped_release release;
    out->c = toolsift::int8_coarse_build(rows);
    return out;
  }
  // A prefilter of the rows `rows` (an IVF's list_ids, which int8_probe_top_rows then reads
  // through): read-only for good, so checked here once and never again.
  const auto take = rows_in.cast<I64Array>();
  if (!never_written(take)) throw std::invalid_argument("int8_coarse needs read-only rows (checked once)");
  require_1d(take, "rows");
  const int64_t* t = take.data();
  out->row_scales.resize(static_cast<std::size_t>(take.shape(0)));
  for (py::ssize_t j = 0; j < take.shape(0); ++j) {
    if (t[j] < 0 || t[j] >= codes.shape(0)) {
      throw std::invalid_argument("rows[" + std::to_string(j) + "]=" + std::to_string(t[j]) + " out of range for " +
                                  std::to_string(codes.shape(0)) + " rows");
    }
    out->row_scales[static_cast<std::size_t>(j)] = sc[t[j]];
  }
  out->rows = take;
  {
    py::gil_scoped_release release;
    out->c = toolsift::int8_coarse_build_rows(rows, t, static_cast<std::size_t>(take.shape(0)));
  }
  return out;
}

// The prefilter passed as `coarse` (None: nullptr), checked: built from a's very codes
// and scales, and a's query scales finite and >= 0 (the bounds need them).
const Coarse* coarse_for(const py::object& coarse_in, const Int8Args& a) {
  if (coarse_in.is_none()) return nullptr;
  if (!py::isinstance<Coarse>(coarse_in)) {
    throw py::type_error("coarse must be an Int8Coarse (from int8_coarse) or None");
  }
  const Coarse* coarse = &coarse_in.cast<const Coarse&>();
  if (coarse->rows) throw std::invalid_argument("coarse was built over chosen rows: int8_probe_top_rows takes it");
  if (coarse->codes.data() != a.codes.data() || coarse->codes.shape(0) != a.n || coarse->codes.shape(1) != a.d ||
      coarse->scales.data() != a.scales.data()) {
    throw std::invalid_argument("coarse was built from other codes or scales than these");
  }
  const float* qs = a.q_scales.data();
  for (py::ssize_t i = 0; i < a.m; ++i) {
    if (!(qs[i] >= 0.0f && qs[i] <= std::numeric_limits<float>::max())) {
      throw std::invalid_argument("q_scales[" + std::to_string(i) + "] must be finite and >= 0");
    }
  }
  return coarse;
}

// Per query row, the best n keys (keys[j] for matrix row j, distinct) with a positive
// int8 score, best first: (ids int64[m, n], counts int64[m]); row i's ids are
// ids[i, :counts[i]]. With `coarse` (int8_coarse of these codes and scales), rows the
// prefilter rules out are not read: the same result.
py::tuple int8_top(const I8Array& q_codes_in, const F32Array& q_scales_in, const I8Array& codes_in,
                   const F32Array& scales_in, const I64Array& keys_in, py::ssize_t n, int threads,
                   const py::object& coarse_in) {
  const Int8Args a(q_codes_in, q_scales_in, codes_in, scales_in);
  const I64Array keys = frozen(keys_in);
  require_1d(keys, "keys");
  if (keys.shape(0) != a.n) throw std::invalid_argument("keys must have one entry per row of codes");
  if (n < 1) throw std::invalid_argument("n must be >= 1, got " + std::to_string(n));
  const Coarse* coarse = coarse_for(coarse_in, a);
  n = std::min(n, a.n);  // never more keys than rows: a huge n allocates nothing extra
  check_output_bytes(static_cast<double>(a.m) * static_cast<double>(n), 8.0, "int8_top");
  py::array_t<int64_t> out({a.m, n});
  py::array_t<int64_t> counts(a.m);
  int64_t* dst = out.mutable_data();
  int64_t* cnt = counts.mutable_data();
  {
    py::gil_scoped_release release;
    if (coarse) {
      toolsift::int8_top_coarse(a.q_codes.data(), a.q_scales.data(), a.queries(), a.rows(), coarse->c, keys.data(),
                                static_cast<std::size_t>(n), dst, cnt, threads);
    } else {
      toolsift::int8_top(a.q_codes.data(), a.q_scales.data(), a.queries(), a.rows(), keys.data(),
                         static_cast<std::size_t>(n), dst, cnt, threads);
    }
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
                         const I64Array& probe_ptr_in, const I64Array& probes_in, py::ssize_t n, int threads,
                         const py::object& coarse_in) {
  const ProbeArgs p(q_codes_in, q_scales_in, codes_in, scales_in, list_ptr_in, list_ids_in, probe_ptr_in,
                    probes_in);
  const Coarse* coarse = coarse_for(coarse_in, p.a);
  if (n < 1) throw std::invalid_argument("n must be >= 1, got " + std::to_string(n));
  n = std::min(n, p.a.n);  // never more ids than listed rows
  check_output_bytes(static_cast<double>(p.a.m) * static_cast<double>(n), 8.0, "int8_probe_top");
  py::array_t<int64_t> out({p.a.m, n});
  py::array_t<int64_t> counts(p.a.m);
  int64_t* dst = out.mutable_data();
  int64_t* cnt = counts.mutable_data();
  {
    py::gil_scoped_release release;
    if (coarse) {
      toolsift::int8_probe_top_coarse(p.a.q_codes.data(), p.a.q_scales.data(), p.a.queries(), p.a.rows(), coarse->c,
                                      p.list_ptr.data(), p.list_ids.data(), p.probe_ptr.data(), p.probes.data(),
                                      static_cast<std::size_t>(n), dst, cnt, threads);
    } else {
      toolsift::int8_probe_top(p.a.q_codes.data(), p.a.q_scales.data(), p.a.queries(), p.a.rows(),
                               p.list_ptr.data(), p.list_ids.data(), p.probe_ptr.data(), p.probes.data(),
                               static_cast<std::size_t>(n), dst, cnt, threads);
    }
  }
  return py::make_tuple(out, counts);
}

// An IVF probe and its top-n over lists that keep no copy of their rows (toolsift/
// int8_coarse.h int8_probe_top_rows): `codes`, `scales` are the field's matrix, list_ids
// its rows in list order, `coarse` int8_coarse(codes, scales, rows=list_ids), which
// checked those ids once. (ids int64[m, n], counts int64[m]): matrix rows, best first.
py::tuple int8_probe_top_rows(const I8Array& q_codes_in, const F32Array& q_scales_in, const I8Array& codes_in,
                              const F32Array& scales_in, const I64Array& list_ptr_in, const I64Array& list_ids_in,
                              const I64Array& probe_ptr_in, const I64Array& probes_in, py::ssize_t n, int threads,
                              const py::object& coarse_in) {
  const Int8Args a(q_codes_in, q_scales_in, codes_in, scales_in);
  if (!py::isinstance<Coarse>(coarse_in)) throw py::type_error("coarse must be an Int8Coarse built with rows=");
  const Coarse& coarse = coarse_in.cast<const Coarse&>();
  const I64Array list_ids = frozen(list_ids_in);
  if (!coarse.rows || coarse.rows->data() != list_ids.data() || coarse.rows->shape(0) != list_ids.shape(0) ||
      coarse.codes.data() != a.codes.data() || coarse.codes.shape(0) != a.n || coarse.codes.shape(1) != a.d ||
      coarse.scales.data() != a.scales.data()) {
    throw std::invalid_argument("coarse was not built from these codes, scales and list_ids (rows=list_ids)");
  }
  const I64Array list_ptr = frozen(list_ptr_in), probe_ptr = stable(probe_ptr_in), probes = stable(probes_in);
  for (const auto* arr : {&list_ptr, &probe_ptr, &probes}) require_1d(*arr, "IVF arrays");
  const auto n_listed = static_cast<std::size_t>(list_ids.shape(0));
  if (list_ptr.shape(0) < 1) throw std::invalid_argument("list_ptr needs n_lists + 1 entries");
  const auto n_lists = static_cast<std::size_t>(list_ptr.shape(0) - 1);
  toolsift::check_csr({list_ptr.data(), list_ids.data(), n_listed}, n_lists, "list_ptr");
  if (probe_ptr.shape(0) != a.m + 1) throw std::invalid_argument("probe_ptr must have one entry per query + 1");
  toolsift::check_csr({probe_ptr.data(), probes.data(), static_cast<std::size_t>(probes.shape(0))},
                      static_cast<std::size_t>(a.m), "probe_ptr");
  for (py::ssize_t p = 0; p < probes.shape(0); ++p) {
    const int64_t l = probes.data()[p];
    if (l < 0 || static_cast<std::size_t>(l) >= n_lists) {
      throw std::invalid_argument("probes[" + std::to_string(p) + "]=" + std::to_string(l) + " is not a list (" +
                                  std::to_string(n_lists) + " lists)");
    }
  }
  const float* qs = a.q_scales.data();
  for (py::ssize_t i = 0; i < a.m; ++i) {
    if (!(qs[i] >= 0.0f && qs[i] <= std::numeric_limits<float>::max())) {
      throw std::invalid_argument("q_scales[" + std::to_string(i) + "] must be finite and >= 0");
    }
  }
  if (n < 1) throw std::invalid_argument("n must be >= 1, got " + std::to_string(n));
  n = std::min<py::ssize_t>(n, std::max<py::ssize_t>(static_cast<py::ssize_t>(n_listed), 1));
  check_output_bytes(static_cast<double>(a.m) * static_cast<double>(n), 8.0, "int8_probe_top_rows");
  py::array_t<int64_t> out({a.m, n});
  py::array_t<int64_t> counts(a.m);
  int64_t* dst = out.mutable_data();
  int64_t* cnt = counts.mutable_data();
  {
    py::gil_scoped_release release;
    toolsift::int8_probe_top_rows(a.q_codes.data(), qs, a.queries(), a.rows(), coarse.row_scales.data(), coarse.c,
                                  list_ptr.data(), list_ids.data(), n_listed, probe_ptr.data(), probes.data(),
                                  static_cast<std::size_t>(n), dst, cnt, threads);
  }
  return py::make_tuple(out, counts);
}

}  // namespace

const toolsift::Int8Coarse* coarse_of(const py::object& coarse, const I8Array& codes, const F32Array& scales) {
  if (coarse.is_none()) return nullptr;
  if (!py::isinstance<Coarse>(coarse)) throw py::type_error("coarse must be an Int8Coarse (from int8_coarse) or None");
  const Coarse& c = coarse.cast<const Coarse&>();
  if (c.codes.data() != codes.data() || c.codes.shape(0) != codes.shape(0) || c.codes.shape(1) != codes.shape(1) ||
      c.scales.data() != scales.data()) {
    throw std::invalid_argument("coarse was built from other codes or scales than these");
  }
  return &c.c;
}

const Int8Coarse* coarse_of_rows(const py::object& coarse, const I8Array& codes, const F32Array& scales,
                                 const I64Array& rows) {
  if (coarse.is_none()) return nullptr;
  if (!py::isinstance<Coarse>(coarse)) throw py::type_error("coarse must be an Int8Coarse (from int8_coarse) or None");
  const Coarse& c = coarse.cast<const Coarse&>();
  if (!c.rows || c.rows->data() != rows.data() || c.rows->shape(0) != rows.shape(0) || c.codes.data() != codes.data() ||
      c.codes.shape(0) != codes.shape(0) || c.codes.shape(1) != codes.shape(1) || c.scales.data() != scales.data()) {
    throw std::invalid_argument("coarse was not built from these codes, scales and rows (rows=list_ids)");
  }
  return &c.c;
}

void register_int8(py::module_& m) {
  m.def("int8_scan", &int8_scan, py::arg("q_codes"), py::arg("q_scales"), py::arg("codes"), py::arg("scales"),
        py::kw_only(), py::arg("threads") = 1,
        "Exact int8 dot products times both scales: float32[m, n] (toolsift/int8_dot.h).");
  m.def("ivf_probes", &ivf_probes, py::arg("q_codes"), py::arg("q_scales"), py::arg("cent_codes"),
        py::arg("cent_scales"), py::arg("nprobe"), py::kw_only(), py::arg("threads") = 1,
        "Each query row's nprobe best IVF lists by int8 centroid score, best first, ties to the lower list: "
        "int64[m, min(nprobe, lists)] (toolsift/dense_candidates.h).");
  m.def("int8_gather", &int8_gather, py::arg("q_codes"), py::arg("q_scales"), py::arg("codes"), py::arg("scales"),
        py::arg("cand_ptr"), py::arg("cand_ids"), py::kw_only(), py::arg("threads") = 1,
        "Exact int8 scores of each query's candidate rows: float32[len(cand_ids)] (toolsift/int8_dot.h).");
  py::class_<Coarse>(m, "Int8Coarse", "An int8 matrix's exact top-n prefilter (toolsift/int8_coarse.h).")
      .def_property_readonly("n_rows", [](const Coarse& c) { return c.c.n; })
      .def_property_readonly("dim", [](const Coarse& c) { return c.c.d; })
      .def_property_readonly("levels", [](const Coarse& c) {
        return std::vector<int>(c.c.levels, c.c.levels + 16);
      })
      .def_property_readonly("nbytes", [](const Coarse& c) {
        return c.c.nibbles.size() + c.c.resid_norm.size() * sizeof(float);
      });
  m.def("int8_coarse", &int8_coarse, py::arg("codes"), py::arg("scales"), py::kw_only(),
        py::arg("rows") = py::none(),
        "Build the exact top-n prefilter of read-only int8 codes and scales, for int8_top(coarse=...); with "
        "rows (read-only int64 row ids, an IVF's list_ids) the prefilter of codes[rows], for "
        "int8_probe_top_rows(coarse=...).");
  m.def("int8_probe_top_rows", &int8_probe_top_rows, py::arg("q_codes"), py::arg("q_scales"), py::arg("codes"),
        py::arg("scales"), py::arg("list_ptr"), py::arg("list_ids"), py::arg("probe_ptr"), py::arg("probes"),
        py::arg("n"), py::kw_only(), py::arg("threads") = 1, py::arg("coarse"),
        "IVF probe and selection over lists holding no copy of their rows: codes/scales are the field's matrix, "
        "list_ids its rows in list order, coarse = int8_coarse(codes, scales, rows=list_ids). Per query the best "
        "n matrix rows with a positive score, best first: (ids int64[m, n], counts int64[m]).");
  m.def("int8_coarse_supported", &toolsift::int8_coarse_supported,
        "Whether this CPU runs the prefiltered scan (elsewhere int8_top ignores coarse: same result).");
  m.def("int8_top", &int8_top, py::arg("q_codes"), py::arg("q_scales"), py::arg("codes"), py::arg("scales"),
        py::arg("keys"), py::arg("n"), py::kw_only(), py::arg("threads") = 1, py::arg("coarse") = py::none(),
        "Per query row the best n keys with a positive int8 score, best first (ties to the lower key): "
        "(ids int64[m, n], counts int64[m]). coarse: int8_coarse(codes, scales), read fewer rows.");
  m.def("int8_probe", &int8_probe, py::arg("q_codes"), py::arg("q_scales"), py::arg("codes"), py::arg("scales"),
        py::arg("list_ptr"), py::arg("list_ids"), py::arg("probe_ptr"), py::arg("probes"), py::kw_only(),
        py::arg("threads") = 1,
        "IVF probe: every row of each probed list, scored: (ptr int64[m+1], scores float32[], ids int64[]).");
  m.def("int8_probe_top", &int8_probe_top, py::arg("q_codes"), py::arg("q_scales"), py::arg("codes"),
        py::arg("scales"), py::arg("list_ptr"), py::arg("list_ids"), py::arg("probe_ptr"), py::arg("probes"),
        py::arg("n"), py::kw_only(), py::arg("threads") = 1, py::arg("coarse") = py::none(),
        "IVF probe and selection in one pass: per query the best n list ids with a positive score, unordered "
        "(best first with coarse): (ids int64[m, n], counts int64[m]). coarse: int8_coarse(codes, scales) of the "
        "list matrix, read fewer rows (the same ids).");
  m.def("int8_scan_portable", [](const I8Array& q_codes, const F32Array& q_scales, const I8Array& codes,
                                 const F32Array& scales) {
    // For tests: the portable loop on the same inputs, to compare with the vector path.
    const Int8Args a(q_codes, q_scales, codes, scales);
    py::array_t<float> out({a.m, a.n});
    toolsift::int8_scan_portable(a.q_codes.data(), a.q_scales.data(), a.queries(), a.rows(), out.mutable_data());
    return out;
  }, py::arg("q_codes"), py::arg("q_scales"), py::arg("codes"), py::arg("scales"));
  m.def("int8_dot_isa", &toolsift::int8_dot_isa, "The instruction set the int8 scan uses on this CPU.");
}

}  // namespace toolsift::py_bridge
