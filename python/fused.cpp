// Binding of toolsift::FusedSearcher: argument checks, copies and GIL handling only.
// A query's inputs are a few hundred integers at most, so they are copied into vectors
// the engine reads with the GIL released (no caller can change them meanwhile).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "toolsift/fused.h"

namespace toolsift::py_bridge {

namespace py = pybind11;

namespace {

using I32Array = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;
using I64Array = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using U8Array = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;

template <class T, class A>
std::vector<T> copy_1d(const A& a, const char* what) {
  if (a.ndim() != 1) throw std::invalid_argument(std::string(what) + " must be 1-d");
  return std::vector<T>(a.data(), a.data() + a.shape(0));
}

Scale parse_scale(const std::string& s) {
  if (s == "raw") return Scale::kRaw;
  if (s == "bounded") return Scale::kBounded;
  if (s == "linear") return Scale::kLinear;
  throw std::invalid_argument("unknown scale '" + s + "' (expected 'raw', 'bounded' or 'linear')");
}

// (w_description, w_parameters, w_response, w_examples, bias, alpha, tau, w_req, w_opt,
// param_max_share, renormalize), as toolsift.search.fused builds it from ScoringParams.
MftrParams parse_params(const py::tuple& t) {
  if (t.size() != 11) throw std::invalid_argument("params: expected an 11-tuple");
  MftrParams p;
  for (int i = 0; i < 4; ++i) p.weights[i] = t[i].cast<double>();
  p.bias = t[4].cast<double>();
  p.alpha = t[5].cast<double>();
  p.tau = t[6].cast<double>();
  p.w_req = t[7].cast<double>();
  p.w_opt = t[8].cast<double>();
  p.max_share = t[9].cast<double>();
  p.renormalize = t[10].cast<bool>();
  return p;
}

FusedOptions options(py::ssize_t n, py::ssize_t k, const std::string& scale, int threads) {
  if (n < 1) throw std::invalid_argument("n must be >= 1, got " + std::to_string(n));
  if (k < 1) throw std::invalid_argument("k must be >= 1, got " + std::to_string(k));
  FusedOptions o;
  o.n = static_cast<std::size_t>(n);
  o.k = static_cast<std::size_t>(k);
  o.scale = parse_scale(scale);
  o.threads = threads;
  return o;
}

// One field's texts of a batch, owned.
struct Field {
  std::vector<int32_t> terms;
  std::vector<int64_t> offsets;
  std::vector<int64_t> text_ptr;
  FieldQueries view() const {
    FieldQueries f;
    f.texts.terms = terms.data();
    f.texts.offsets = offsets.data();
    f.texts.n_queries = offsets.empty() ? 0 : offsets.size() - 1;
    f.text_ptr = text_ptr.data();
    return f;
  }
};

Field field(const I32Array& terms, const I64Array& offsets, const I64Array& text_ptr, std::size_t nq) {
  Field f{copy_1d<int32_t>(terms, "terms"), copy_1d<int64_t>(offsets, "offsets"),
          copy_1d<int64_t>(text_ptr, "text_ptr")};
  if (f.offsets.empty()) throw std::invalid_argument("offsets must have n_texts + 1 >= 1 entries");
  if (f.offsets.back() != static_cast<int64_t>(f.terms.size())) {
    throw std::invalid_argument("offsets[-1] must equal the number of term ids");
  }
  if (f.text_ptr.size() != nq + 1) throw std::invalid_argument("text_ptr must have n_queries + 1 entries");
  return f;
}

std::shared_ptr<FusedSearcher> make_searcher(const std::vector<std::shared_ptr<InvertedIndex>>& need,
                                             const std::shared_ptr<InvertedIndex>& params, const I64Array& param_ptr,
                                             const U8Array& param_required, const U8Array& tool_bits) {
  if (need.size() != 3) throw std::invalid_argument("FusedSearcher: needs the three need fields' indexes");
  if (param_ptr.ndim() != 1 || param_ptr.shape(0) < 1) {
    throw std::invalid_argument("param_ptr must be 1-d with n_tools + 1 entries");
  }
  const auto n_tools = static_cast<std::size_t>(param_ptr.shape(0) - 1);
  if (tool_bits.ndim() != 1 || static_cast<std::size_t>(tool_bits.shape(0)) != n_tools) {
    throw std::invalid_argument("tool_bits must have one entry per tool");
  }
  if (param_required.ndim() != 1 || param_ptr.data()[n_tools] != param_required.shape(0)) {
    throw std::invalid_argument("param_required must have param_ptr[-1] entries");
  }
  std::shared_ptr<const InvertedIndex> n3[3] = {need[0], need[1], need[2]};
  return std::make_shared<FusedSearcher>(n3, params, param_ptr.data(), n_tools, param_required.data(),
                                         tool_bits.data());
}

py::tuple search(const FusedSearcher& self, const std::vector<I32Array>& need_terms,
                 const std::vector<I64Array>& need_offsets, const I64Array& need_ptr, const I32Array& param_terms,
                 const I64Array& param_offsets, const I64Array& arg_ptr, const U8Array& penalize_in,
                 const py::tuple& params, py::ssize_t n, py::ssize_t k, const std::string& scale, int threads) {
  if (need_terms.size() != 3 || need_offsets.size() != 3) {
    throw std::invalid_argument("search: needs the three need fields' terms and offsets");
  }
  const MftrParams p = parse_params(params);
  const FusedOptions o = options(n, k, scale, threads);
  std::vector<uint8_t> penalize = copy_1d<uint8_t>(penalize_in, "penalize");
  const std::size_t nq = penalize.size();
  Field need[3] = {field(need_terms[0], need_offsets[0], need_ptr, nq),
                   field(need_terms[1], need_offsets[1], need_ptr, nq),
                   field(need_terms[2], need_offsets[2], need_ptr, nq)};
  Field par = field(param_terms, param_offsets, arg_ptr, nq);
  FusedBatch b;
  for (int f = 0; f < 3; ++f) b.need[f] = need[f].view();
  b.params = par.view();
  b.penalize = penalize.data();
  b.n_queries = nq;
  self.check(b);
  FusedHits out;
  {
    py::gil_scoped_release release;
    self.search(b, p, o, out);
  }
  py::array_t<int64_t> ptr(static_cast<py::ssize_t>(out.ptr.size()), out.ptr.data());
  py::array_t<int64_t> tool(static_cast<py::ssize_t>(out.tool.size()), out.tool.data());
  py::array_t<float> score(static_cast<py::ssize_t>(out.score.size()), out.score.data());
  py::array_t<bool> matched(static_cast<py::ssize_t>(out.matched.size()));
  bool* m = matched.mutable_data();
  for (std::size_t i = 0; i < out.matched.size(); ++i) m[i] = out.matched[i] != 0;
  return py::make_tuple(ptr, tool, score, matched);
}

// One raw-text query: the same terms in every field, the parameters field included when
// `params_field` (IndexConfig.no_argument_params == "intent"); no penalty. Returns the
// hits as Python lists (tool positions, scores, matched): what the caller wraps.
py::tuple search_text(const FusedSearcher& self, const I32Array& terms_in, bool params_field, const py::tuple& params,
                      py::ssize_t n, py::ssize_t k, const std::string& scale) {
  const MftrParams p = parse_params(params);
  const FusedOptions o = options(n, k, scale, 1);
  Field one{copy_1d<int32_t>(terms_in, "terms"), {0, 0}, {0, 1}};
  one.offsets[1] = static_cast<int64_t>(one.terms.size());
  const Field none{{}, {0}, {0, 0}};
  const uint8_t penalize = 0;
  FusedBatch b;
  for (int f = 0; f < 3; ++f) b.need[f] = one.view();
  b.params = params_field ? one.view() : none.view();
  b.penalize = &penalize;
  b.n_queries = 1;
  self.check(b);
  FusedHits out;
  {
    py::gil_scoped_release release;
    self.search(b, p, o, out);
  }
  const std::size_t nh = out.tool.size();
  py::list tools(nh), scores(nh), matched(nh);
  for (std::size_t i = 0; i < nh; ++i) {
    tools[i] = py::int_(out.tool[i]);
    scores[i] = py::float_(static_cast<double>(out.score[i]));
    matched[i] = py::bool_(out.matched[i] != 0);
  }
  return py::make_tuple(tools, scores, matched);
}

}  // namespace

void register_fused(py::module_& m) {
  py::class_<FusedSearcher, std::shared_ptr<FusedSearcher>>(m, "FusedSearcher",
                                                            "Every BM25 field, MFTR and top-k in one call.")
      .def(py::init(&make_searcher), py::arg("need_indexes"), py::arg("param_index"), py::arg("param_ptr"),
           py::arg("param_required"), py::arg("tool_bits"))
      .def("search", &search, py::arg("need_terms"), py::arg("need_offsets"), py::arg("need_ptr"),
           py::arg("param_terms"), py::arg("param_offsets"), py::arg("arg_ptr"), py::arg("penalize"),
           py::arg("params"), py::arg("n"), py::arg("k"), py::arg("scale"), py::arg("threads"),
           "A batch's top k per query: (ptr int64[nq+1], tool int64[], score float32[], matched bool[]).")
      .def("search_text", &search_text, py::arg("terms"), py::arg("params_field"), py::arg("params"), py::arg("n"),
           py::arg("k"), py::arg("scale"),
           "One raw-text query's top k: (tools list[int], scores list[float], matched list[bool]).");
}

}  // namespace toolsift::py_bridge
