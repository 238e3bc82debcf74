// Binding of toolsift/pair_scores.h (batch pair scoring): argument checks, snapshots of
// the inputs and GIL handling only. Every index the engine will follow is checked here,
// so a bad array raises ValueError instead of reading out of bounds.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "bindings.h"
#include "toolsift/pair_scores.h"

namespace toolsift::py_bridge {

namespace {

using U8Array = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;
using F32In = py::array_t<float, py::array::c_style | py::array::forcecast>;

[[noreturn]] void bad(const std::string& msg) { throw std::invalid_argument(msg); }

std::size_t length(const py::array& a, const char* what) {
  require_1d(a, what);
  return static_cast<std::size_t>(a.shape(0));
}

// The catalogue's parameter table, checked: param_ptr non-decreasing from >= 0, one
// required flag per parameter, one field mask per tool.
struct Tools {
  I64Array param_ptr;
  U8Array required, bits;
  ToolTable table;
};

// `every_tool` false: only the sizes here; the caller checks the entries of each tool it
// names (tool_entries), as score_pairs does for its pairs' few hundred tools: a search
// through score_packed_pairs would otherwise pass over the whole table per call (1M
// entries at a million tools; docs/results/scale-1M-2026-11-28d.md).
Tools tool_table(const I64Array& param_ptr, const U8Array& required, const U8Array& bits, bool every_tool = true) {
  Tools t{stable(param_ptr), stable(required), stable(bits), {}};
  const std::size_t np = length(t.param_ptr, "param_ptr");
  if (np < 1) bad("param_ptr must have n_tools + 1 entries");
  const std::size_t nt = np - 1;
  const int64_t* pp = t.param_ptr.data();
  if (length(t.bits, "tool_bits") != nt) bad("tool_bits must have one entry per tool");
  t.table = {pp, t.required.data(), t.bits.data(), nt};
  if (!every_tool) return t;
  if (pp[0] < 0) bad("param_ptr[0] must be >= 0");
  for (std::size_t i = 0; i < nt; ++i) {
    if (pp[i + 1] < pp[i]) bad("param_ptr decreases at tool " + std::to_string(i));
  }
  if (length(t.required, "param_required") < static_cast<std::size_t>(pp[nt])) {
    bad("param_required must have param_ptr[-1] entries");
  }
  return t;
}

// Tool `i`'s parameter range, checked as tool_table checks every tool's: within
// param_required, not decreasing.
void tool_entries(const Tools& t, int64_t i) {
  const int64_t* pp = t.param_ptr.data();
  if (pp[i] < 0 || pp[i + 1] < pp[i]) bad("param_ptr decreases at tool " + std::to_string(i));
  if (static_cast<std::size_t>(pp[i + 1]) > static_cast<std::size_t>(t.required.shape(0))) {
    bad("param_required must have param_ptr[-1] entries");
  }
}

// A CSR pointer over n_queries queries and n_items items: from 0, non-decreasing.
void check_ptr(const I64Array& ptr, std::size_t n_queries, std::size_t n_items, const char* what) {
  if (length(ptr, what) != n_queries + 1) bad(std::string(what) + " must have n_queries + 1 entries");
  const int64_t* p = ptr.data();
  if (p[0] != 0) bad(std::string(what) + "[0] must be 0");
  for (std::size_t q = 0; q < n_queries; ++q) {
    if (p[q + 1] < p[q]) bad(std::string(what) + " decreases at query " + std::to_string(q));
  }
  if (static_cast<std::size_t>(p[n_queries]) != n_items) {
    bad(std::string(what) + "[-1] must be " + std::to_string(n_items));
  }
}

// score_packed_pairs: a Candidates layout (toolsift.search.candidates) -> float32[n, 6].
py::array_t<float> score_pairs(const I64Array& query_in, const I64Array& tool_in, const I64Array& need_off_in,
                               const I64Array& ap_off_in, const I64Array& n_needs_in, const I64Array& n_args_in,
                               const U8Array& penalize_in, const F32In& need_sims_in, const F32In& ap_sims_in,
                               const I64Array& param_ptr, const U8Array& param_required, const U8Array& tool_bits,
                               const py::tuple& params, int threads) {
  const MftrParams p = parse_params(params);
  const Tools tools = tool_table(param_ptr, param_required, tool_bits, /*every_tool=*/false);
  const I64Array query = stable(query_in), tool = stable(tool_in), need_off = stable(need_off_in),
                 ap_off = stable(ap_off_in), n_needs = stable(n_needs_in), n_args = stable(n_args_in);
  const U8Array penalize = stable(penalize_in);
  const F32In need_sims = stable(need_sims_in), ap_sims = stable(ap_sims_in);
  const std::size_t n = length(query, "query");
  if (length(tool, "tool") != n || length(need_off, "need_off") != n || length(ap_off, "ap_off") != n) {
    bad("query, tool, need_off and ap_off must have one entry per pair");
  }
  const std::size_t nq = length(n_needs, "n_needs");
  if (length(n_args, "n_args") != nq || length(penalize, "penalize") != nq) {
    bad("n_needs, n_args and penalize must have one entry per query");
  }
  if (need_sims.ndim() != 2 || need_sims.shape(1) != 3) bad("need_sims must be float32[m, 3]");
  const auto m = static_cast<int64_t>(need_sims.shape(0));
  const auto n_ap = static_cast<int64_t>(length(ap_sims, "ap_sims"));
  const int64_t* pp = tools.table.param_ptr;
  for (std::size_t i = 0; i < n; ++i) {
    const int64_t q = query.data()[i], t = tool.data()[i];
    if (q < 0 || static_cast<std::size_t>(q) >= nq) bad("query out of range at pair " + std::to_string(i));
    if (t < 0 || static_cast<std::size_t>(t) >= tools.table.n_tools) bad("tool out of range at pair " + std::to_string(i));
    tool_entries(tools, t);
    const int64_t nn = n_needs.data()[q], na = n_args.data()[q], no = need_off.data()[i], ao = ap_off.data()[i];
    if (nn < 0 || na < 0) bad("n_needs and n_args must be >= 0");
    if (nn > 0 && (no < 0 || no > m - nn)) bad("need_off out of range at pair " + std::to_string(i));
    const int64_t n_par = pp[t + 1] - pp[t];
    if (na > 0 && n_par > 0 && (ao < 0 || na > (n_ap - ao) / n_par)) {
      bad("ap_off out of range at pair " + std::to_string(i));
    }
  }
  check_output_bytes(static_cast<double>(n), sizeof(float) * kPairValues, "pair scores");
  py::array_t<float> out({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(kPairValues)});
  PackedPairs c{query.data(), tool.data(), need_off.data(), ap_off.data(), n_needs.data(), n_args.data(),
                penalize.data(), need_sims.data(), ap_sims.data(), n};
  float* o = out.mutable_data();
  {
    py::gil_scoped_release release;
    score_packed_pairs(c, tools.table, p, threads, o);
  }
  return out;
}

// A caller's float32 array of exactly `rows` x `cols` (rows may be 0).
F32In matrix(const F32In& a, std::size_t rows, std::size_t cols, const char* what) {
  F32In s = stable(a);
  if (s.ndim() != 2 || static_cast<std::size_t>(s.shape(0)) != rows ||
      (rows > 0 && static_cast<std::size_t>(s.shape(1)) != cols)) {
    bad(std::string(what) + " must be float32[" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
  }
  return s;
}

// tables: the caller's float32[capacity, n_tools, 6], C-contiguous and writeable, written
// in place (taken as a plain array: a converted copy would take the results with it).
float* table_buffer(py::array& tables, std::size_t n_tools, std::size_t& capacity) {
  if (!tables.dtype().is(py::dtype::of<float>()) || tables.ndim() != 3 ||
      static_cast<std::size_t>(tables.shape(1)) != n_tools ||
      static_cast<std::size_t>(tables.shape(2)) != kPairValues) {
    bad("tables must be float32[capacity, n_tools, 6]");
  }
  if (!(tables.flags() & py::array::c_style) || !tables.writeable()) bad("tables must be C-contiguous and writeable");
  capacity = static_cast<std::size_t>(tables.shape(0));
  return static_cast<float*>(tables.mutable_data());
}

void score_tables(const std::vector<F32In>& need_in, const I64Array& need_ptr_in, const F32In& params_in,
                  const I64Array& arg_ptr_in, const U8Array& penalize_in, const I64Array& rows_in,
                  const I64Array& param_ptr, const U8Array& param_required, const U8Array& tool_bits,
                  const py::tuple& params, int threads, py::array tables) {
  if (need_in.size() != 3) bad("need: the description, response and examples scores");
  const MftrParams p = parse_params(params);
  const Tools tools = tool_table(param_ptr, param_required, tool_bits);
  const std::size_t nt = tools.table.n_tools;
  const I64Array need_ptr = stable(need_ptr_in), arg_ptr = stable(arg_ptr_in), rows = stable(rows_in);
  const U8Array penalize = stable(penalize_in);
  const std::size_t nq = length(penalize, "penalize");
  if (length(rows, "rows") != nq) bad("rows must have one entry per query");
  length(need_ptr, "need_ptr");
  length(arg_ptr, "arg_ptr");
  if (static_cast<std::size_t>(need_ptr.shape(0)) != nq + 1) bad("need_ptr must have n_queries + 1 entries");
  if (static_cast<std::size_t>(arg_ptr.shape(0)) != nq + 1) bad("arg_ptr must have n_queries + 1 entries");
  const auto n_need = static_cast<std::size_t>(std::max<int64_t>(0, need_ptr.data()[nq]));
  const auto n_arg = static_cast<std::size_t>(std::max<int64_t>(0, arg_ptr.data()[nq]));
  check_ptr(need_ptr, nq, n_need, "need_ptr");
  check_ptr(arg_ptr, nq, n_arg, "arg_ptr");
  const int64_t* pp = tools.table.param_ptr;
  const F32In need[3] = {matrix(need_in[0], n_need, nt, "description scores"),
                         matrix(need_in[1], n_need, nt, "response scores"),
                         matrix(need_in[2], n_need, nt, "examples scores")};
  const F32In par = matrix(params_in, n_arg, static_cast<std::size_t>(pp[nt] - pp[0]), "parameter scores");
  std::size_t capacity = 0;
  float* out = table_buffer(tables, nt, capacity);
  std::vector<uint8_t> taken(capacity, 0);
  for (std::size_t q = 0; q < nq; ++q) {
    const int64_t r = rows.data()[q];
    if (r < 0 || static_cast<std::size_t>(r) >= capacity) bad("rows out of range at query " + std::to_string(q));
    if (taken[static_cast<std::size_t>(r)]++) bad("rows must be distinct");
  }
  WholeCatalogue w;
  for (int f = 0; f < 3; ++f) w.need[f] = need[f].data();
  w.need_ptr = need_ptr.data();
  w.params = par.data();
  w.arg_ptr = arg_ptr.data();
  w.penalize = penalize.data();
  w.n_queries = nq;
  py::gil_scoped_release release;
  score_whole_catalogue(w, tools.table, p, rows.data(), threads, out);
}

// The largest and smallest values of a key array (0, -1 when empty).
template <class T>
std::pair<int64_t, int64_t> bounds(const T* a, std::size_t n) {
  if (n == 0) return {0, -1};
  const auto mm = std::minmax_element(a, a + n);
  return {static_cast<int64_t>(*mm.first), static_cast<int64_t>(*mm.second)};
}

using I32Keys = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;

py::array_t<float> fill_rows(const I32Keys& qkey_in, const I32Keys& tkey_in, const I64Array& table_of_in,
                             const I64Array& tool_of_in, const py::array& tables,
                             const I64Array& inverse_in, const F32In& grouped_in, int threads) {
  const I32Keys qkey = stable(qkey_in), tkey = stable(tkey_in);
  const I64Array table_of = stable(table_of_in), tool_of = stable(tool_of_in), inverse = stable(inverse_in);
  const F32In grouped = stable(grouped_in);
  const std::size_t n = length(qkey, "qkey");
  if (length(tkey, "tkey") != n) bad("qkey and tkey must have one entry per row");
  const std::size_t n_inv = length(inverse, "inverse");
  if (n_inv != 0 && n_inv != n) bad("inverse must be empty or have one entry per row");
  // The tables are read in place (a copy would cost more than the pass: they are the
  // scorer's whole table memory); their owner does not write them during the call.
  if (!tables.dtype().is(py::dtype::of<float>()) || tables.ndim() != 3 ||
      static_cast<std::size_t>(tables.shape(2)) != kPairValues || !(tables.flags() & py::array::c_style)) {
    bad("tables must be C-contiguous float32[capacity, n_tools, 6]");
  }
  const auto capacity = static_cast<int64_t>(tables.shape(0));
  const auto n_tools = static_cast<int64_t>(tables.shape(1));
  if (grouped.ndim() != 2 || (grouped.shape(0) > 0 && static_cast<std::size_t>(grouped.shape(1)) != kPairValues)) {
    bad("grouped must be float32[m, 6]");
  }
  const auto m = static_cast<int64_t>(grouped.shape(0));
  const std::size_t n_slots = length(table_of, "table_of"), n_ids = length(tool_of, "tool_of");
  const auto qb = bounds(qkey.data(), n), tb = bounds(tkey.data(), n);
  if (n > 0 && (qb.first < 0 || static_cast<std::size_t>(qb.second) >= n_slots)) bad("qkey out of range");
  if (n > 0 && (tb.first < 0 || static_cast<std::size_t>(tb.second) >= n_ids)) bad("tkey out of range");
  const int64_t top_table = bounds(table_of.data(), n_slots).second;
  if (top_table >= capacity) bad("table_of out of range");
  // A tool position is read from a table only: without tables (table_of all -1, a
  // placeholder tables array) any position is fine.
  if (top_table >= 0 && bounds(tool_of.data(), n_ids).second >= n_tools) bad("tool_of out of range");
  if (bounds(inverse.data(), n_inv).second >= m) bad("inverse out of range");
  check_output_bytes(static_cast<double>(n), sizeof(float) * kPairValues, "row values");
  py::array_t<float> out({static_cast<py::ssize_t>(kPairValues), static_cast<py::ssize_t>(n)});
  RowKeys k{qkey.data(), tkey.data(), table_of.data(), tool_of.data(), n_inv ? inverse.data() : nullptr, n};
  float* o = out.mutable_data();
  {
    py::gil_scoped_release release;
    fill_pair_rows(k, static_cast<const float*>(tables.data()), static_cast<std::size_t>(n_tools), grouped.data(),
                   threads, o);
  }
  return out;
}

py::tuple group(const I64Array& query_in, const I64Array& tool_in, int64_t n_queries, int64_t n_tools) {
  const I64Array query = stable(query_in), tool = stable(tool_in);
  const std::size_t n = length(query, "query");
  if (length(tool, "tool") != n) bad("query has " + std::to_string(n) + " rows, tool has " +
                                     std::to_string(tool.shape(0)));
  if (n_queries < 0 || n_tools < 0) bad("n_queries and n_tools must be >= 0");
  for (std::size_t i = 0; i < n; ++i) {
    const int64_t q = query.data()[i];
    if (q < 0) continue;
    if (q >= n_queries) bad("query index " + std::to_string(q) + " out of range for " + std::to_string(n_queries) +
                            " queries");
    const int64_t t = tool.data()[i];
    if (t < 0 || t >= n_tools) bad("tool index out of range for " + std::to_string(n_tools) + " tools");
  }
  py::array_t<int64_t> ptr(static_cast<py::ssize_t>(n_queries + 1));
  std::vector<int64_t> tools(n);
  py::array_t<int64_t> inverse(static_cast<py::ssize_t>(n));
  int64_t* pp = ptr.mutable_data();
  int64_t* inv = inverse.mutable_data();
  std::size_t m = 0;
  {
    py::gil_scoped_release release;
    m = group_pairs(query.data(), tool.data(), n, static_cast<std::size_t>(n_queries),
                    static_cast<std::size_t>(n_tools), pp, tools.data(), inv);
  }
  tools.resize(m);
  return py::make_tuple(ptr, to_array(std::move(tools)), inverse);
}

}  // namespace

void register_pairs(py::module_& m) {
  m.def("score_packed_pairs", &score_pairs, py::arg("query"), py::arg("tool"), py::arg("need_off"),
        py::arg("ap_off"), py::arg("n_needs"), py::arg("n_args"), py::arg("penalize"), py::arg("need_sims"),
        py::arg("ap_sims"), py::arg("param_ptr"), py::arg("param_required"), py::arg("tool_bits"), py::arg("params"),
        py::arg("threads"),
        "MFTR score and terms of packed candidates: float32[n, 6] (see cpp/include/toolsift/pair_scores.h).");
  m.def("score_whole_catalogue", &score_tables, py::arg("need"), py::arg("need_ptr"), py::arg("params_scores"),
        py::arg("arg_ptr"), py::arg("penalize"), py::arg("rows"), py::arg("param_ptr"), py::arg("param_required"),
        py::arg("tool_bits"), py::arg("params"), py::arg("threads"), py::arg("tables"),
        "Every tool's score and terms for each query, into tables[rows[q]] (in place).");
  m.def("fill_pair_rows", &fill_rows, py::arg("qkey"), py::arg("tkey"), py::arg("table_of"), py::arg("tool_of"),
        py::arg("tables"), py::arg("inverse"), py::arg("grouped"), py::arg("threads"),
        "Each row's six values from a table or the grouped results: float32[6, rows] (NaN: not scored).");
  m.def("group_pairs", &group, py::arg("query"), py::arg("tool"), py::arg("n_queries"), py::arg("n_tools"),
        "Distinct (query, tool) pairs as CSR by query and each row's entry: (ptr, tools, inverse).");
}

}  // namespace toolsift::py_bridge
