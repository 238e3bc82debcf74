// Binding of toolsift::FusedSearcher: argument checks, copies and GIL handling only.
// A query's inputs are a few hundred integers at most, so they are copied into vectors
// the engine reads with the GIL released (no caller can change them meanwhile).
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bindings.h"
#include "hit_maker.h"
#include "toolsift/fused.h"
#include "toolsift/query_words.h"

namespace toolsift::py_bridge {

namespace {

using U8Array = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;

template <class T, class A>
std::vector<T> copy_1d(const A& a, const char* what) {
  if (a.ndim() != 1) throw std::invalid_argument(std::string(what) + " must be 1-d");
  return std::vector<T>(a.data(), a.data() + a.shape(0));
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
                 const py::tuple& params, py::ssize_t n, py::ssize_t k, const std::string& scale, int threads,
                 py::ssize_t sum_docs) {
  if (need_terms.size() != 3 || need_offsets.size() != 3) {
    throw std::invalid_argument("search: needs the three need fields' terms and offsets");
  }
  const MftrParams p = parse_params(params);
  FusedOptions o = options(n, k, scale, threads);
  if (sum_docs >= 0) o.sum_docs = static_cast<std::size_t>(sum_docs);
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

// A dense field's tool -> rows pointer (tool t owns rows ptr[t]:ptr[t+1]), copied and
// checked once (from 0, nondecreasing), which search_hybrid then takes as it is: at a
// million tools the pointer is 8 MB, and copying and checking an array on every search
// cost more CPU than the search's scoring (docs/results/scale-1M-2026-11-28d.md). Python
// reads it as a read-only int64 array (the buffer protocol, no copy).
class RowPtr {
 public:
  explicit RowPtr(const I64Array& ptr) : v_(copy_1d<int64_t>(ptr, "RowPtr")) {
    if (v_.empty() || v_[0] != 0) throw std::invalid_argument("RowPtr: a pointer has n + 1 >= 1 entries from 0");
    for (std::size_t i = 0; i + 1 < v_.size(); ++i) {
      if (v_[i + 1] < v_[i]) throw std::invalid_argument("RowPtr: the pointer decreases at " + std::to_string(i));
    }
  }
  const std::vector<int64_t>& values() const noexcept { return v_; }
  py::buffer_info buffer() const {
    return py::buffer_info(const_cast<int64_t*>(v_.data()), static_cast<py::ssize_t>(sizeof(int64_t)),
                           py::format_descriptor<int64_t>::format(), 1, {static_cast<py::ssize_t>(v_.size())},
                           {static_cast<py::ssize_t>(sizeof(int64_t))}, /*readonly=*/true);
  }

 private:
  std::vector<int64_t> v_;
};

// One hybrid need field's dense half as search_hybrid takes it: None (a BM25 field), or
// (codes int8[rows, d], scales float32[rows], tool_ptr RowPtr | int64[n_tools + 1] | None,
// q_codes int8[texts, d], q_scales float32[texts], w_bm, w_cos), codes None when every
// row is empty. The matrices are read in place (an index's own are read-only); a RowPtr
// was checked when made, an array is copied and checked here.
struct DenseArgs {
  I8Array codes, q_codes;
  F32Array scales, q_scales;
  I64Array tool_ptr;
  py::object rows_kept;  // the RowPtr read, held for the call
  DenseHalf half;
};

void dense_args(const py::object& spec, std::size_t n_texts, std::size_t n_tools, DenseArgs& a) {
  if (spec.is_none()) return;
  const auto t = spec.cast<py::tuple>();
  if (t.size() != 7) throw std::invalid_argument("search_hybrid: a dense half is a 7-tuple");
  a.half.hybrid = true;
  a.half.w_bm = t[5].cast<float>();
  a.half.w_cos = t[6].cast<float>();
  if (t[0].is_none()) return;
  a.half.has_cos = true;
  a.codes = frozen(t[0].cast<I8Array>());
  a.scales = frozen(t[1].cast<F32Array>());
  a.q_codes = stable(t[3].cast<I8Array>());
  a.q_scales = stable(t[4].cast<F32Array>());
  if (a.codes.ndim() != 2 || a.q_codes.ndim() != 2) throw std::invalid_argument("codes and q_codes must be 2-d");
  require_1d(a.scales, "scales");
  require_1d(a.q_scales, "q_scales");
  const auto n_rows = static_cast<std::size_t>(a.codes.shape(0));
  const auto d = static_cast<std::size_t>(a.codes.shape(1));
  if (static_cast<std::size_t>(a.scales.shape(0)) != n_rows) throw std::invalid_argument("scales: one per row");
  if (static_cast<std::size_t>(a.q_codes.shape(0)) != n_texts || static_cast<std::size_t>(a.q_codes.shape(1)) != d ||
      static_cast<std::size_t>(a.q_scales.shape(0)) != n_texts) {
    throw std::invalid_argument("q_codes/q_scales must have one row of the matrix's dim per text");
  }
  if (d >= 131072) throw std::invalid_argument("dim must be below 131072 (int32 accumulation)");
  if (t[2].is_none()) {
    if (n_rows != n_tools) throw std::invalid_argument("a dense half without tool_ptr needs one row per tool");
  } else if (py::isinstance<RowPtr>(t[2])) {
    const auto& rp = t[2].cast<const RowPtr&>().values();  // from 0, nondecreasing (checked when made)
    if (rp.size() != n_tools + 1 || static_cast<std::size_t>(rp.back()) > n_rows) {
      throw std::invalid_argument("tool_ptr must have n_tools + 1 entries within the rows");
    }
    a.rows_kept = t[2];
    a.half.tool_ptr = rp.data();
  } else {
    a.tool_ptr = stable(t[2].cast<I64Array>());
    require_1d(a.tool_ptr, "tool_ptr");
    if (static_cast<std::size_t>(a.tool_ptr.shape(0)) != n_tools + 1) {
      throw std::invalid_argument("tool_ptr must have n_tools + 1 entries");
    }
    const int64_t* tp = a.tool_ptr.data();
    if (tp[0] != 0 || static_cast<std::size_t>(tp[n_tools]) > n_rows) throw std::invalid_argument("tool_ptr out of range");
    for (std::size_t i = 0; i < n_tools; ++i) {
      if (tp[i + 1] < tp[i]) throw std::invalid_argument("tool_ptr decreases");
    }
    a.half.tool_ptr = tp;
  }
  a.half.rows = {a.codes.data(), a.scales.data(), n_rows, d};
  a.half.q_codes = a.q_codes.data();
  a.half.q_scales = a.q_scales.data();
}

// One need field's dense candidates: None, or (ptr int64[nq + 1], ids int64[]), copied.
struct Extra {
  std::vector<int64_t> ptr, ids;
};

void extra_args(const py::object& spec, std::size_t nq, std::size_t n_tools, Extra& e) {
  if (spec.is_none()) return;
  const auto t = spec.cast<py::tuple>();
  if (t.size() != 2) throw std::invalid_argument("search_hybrid: a field's dense candidates are (ptr, ids)");
  e.ptr = copy_1d<int64_t>(t[0].cast<I64Array>(), "extra ptr");
  e.ids = copy_1d<int64_t>(t[1].cast<I64Array>(), "extra ids");
  if (e.ptr.size() != nq + 1 || e.ptr[0] != 0 || static_cast<std::size_t>(e.ptr[nq]) != e.ids.size()) {
    throw std::invalid_argument("extra ptr must have n_queries + 1 entries, from 0 to len(ids)");
  }
  for (std::size_t q = 0; q < nq; ++q) {
    if (e.ptr[q + 1] < e.ptr[q]) throw std::invalid_argument("extra ptr decreases");
  }
  for (const int64_t id : e.ids) {
    if (id < 0 || static_cast<std::size_t>(id) >= n_tools) throw std::invalid_argument("extra ids out of range");
  }
}

// search() with hybrid need fields: `dense` (three dense_args specs) and `extra`, the
// candidates each need field's dense half adds (three extra_args specs). Returns
// search()'s tuple and, per hit, whether a BM25 field had it as a candidate (lexical
// bool[hits]) and each need field's cosine if that field's dense half added it
// (cos float32[hits, 3], NaN otherwise): toolsift.search.evidence's inputs.
py::tuple search_hybrid(const FusedSearcher& self, const std::vector<I32Array>& need_terms,
                        const std::vector<I64Array>& need_offsets, const I64Array& need_ptr,
                        const I32Array& param_terms, const I64Array& param_offsets, const I64Array& arg_ptr,
                        const U8Array& penalize_in, const py::tuple& params, py::ssize_t n, py::ssize_t k,
                        const std::string& scale, int threads, const std::vector<py::object>& dense,
                        const std::vector<py::object>& extra) {
  if (need_terms.size() != 3 || need_offsets.size() != 3 || dense.size() != 3 || extra.size() != 3) {
    throw std::invalid_argument(
        "search_hybrid: needs the three need fields' terms, offsets, dense halves and dense candidates");
  }
  const MftrParams p = parse_params(params);
  FusedOptions o = options(n, k, scale, threads);
  std::vector<uint8_t> penalize = copy_1d<uint8_t>(penalize_in, "penalize");
  const std::size_t nq = penalize.size();
  Field need[3] = {field(need_terms[0], need_offsets[0], need_ptr, nq),
                   field(need_terms[1], need_offsets[1], need_ptr, nq),
                   field(need_terms[2], need_offsets[2], need_ptr, nq)};
  Field par = field(param_terms, param_offsets, arg_ptr, nq);
  DenseArgs d[3];
  Extra e[3];
  HybridInputs h;
  const std::size_t n_texts = need[0].offsets.size() - 1;
  for (int f = 0; f < 3; ++f) {
    const auto i = static_cast<std::size_t>(f);
    dense_args(dense[i], n_texts, self.n_tools(), d[f]);
    h.need[f] = d[f].half;
    extra_args(extra[i], nq, self.n_tools(), e[f]);
    if (!e[f].ptr.empty()) {
      h.extra_ptr[f] = e[f].ptr.data();
      h.extra_ids[f] = e[f].ids.data();
    }
  }
  FusedBatch b;
  for (int f = 0; f < 3; ++f) b.need[f] = need[f].view();
  b.params = par.view();
  b.penalize = penalize.data();
  b.n_queries = nq;
  b.hybrid = &h;
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
  py::array_t<bool> lexical(static_cast<py::ssize_t>(out.lexical.size()));
  bool* lx = lexical.mutable_data();
  for (std::size_t i = 0; i < out.lexical.size(); ++i) lx[i] = out.lexical[i] != 0;
  py::array_t<float> cos({static_cast<py::ssize_t>(out.tool.size()), py::ssize_t{3}}, out.cos.data());
  return py::make_tuple(ptr, tool, score, matched, lexical, cos);
}

// The usual single search, set up once per index state, configuration and weights: one
// raw-text query's hits made straight into Python `hit_type` objects (what
// toolsift.search.hits._plain_hit makes: the attributes of `template`, with tool, score,
// rank and matched set), so a search on a small catalogue is not dominated by wrapping.
class FusedText {
 public:
  FusedText(std::shared_ptr<FusedSearcher> searcher, const py::tuple& params, py::ssize_t n, const std::string& scale,
            bool params_field, py::type hit_type, py::object tools, const py::dict& hit_template, bool lowercase)
      : searcher_(std::move(searcher)), params_(parse_params(params)), options_(options(n, 1, scale, 1)),
        params_field_(params_field), hits_(std::move(hit_type), std::move(tools), hit_template),
        words_(lowercase, std::size_t{1} << 17) {
    if (!searcher_) throw std::invalid_argument("FusedText: searcher is None");
  }

  // The hits of an ASCII text, analysed by the words taught with learn(); a tuple of the
  // words not taught yet (teach them, then call again); None for a text that is not ASCII.
  py::object search_text(const py::str& text, py::ssize_t k) const {
    py::object early;
    const std::vector<int32_t>* ids = analyse(text, early);
    return ids == nullptr ? early : py::object(search(*ids, k));
  }

  // search_text's hits as arrays with their MFTR terms, for an explanation's reasons:
  // (tool int64[], score float32[], matched bool[], terms float64[hits, 5]); a list of the
  // words not taught yet; or None for a text that is not ASCII.
  py::object search_terms(const py::str& text, py::ssize_t k) const {
    py::object early;
    const std::vector<int32_t>* ids = analyse(text, early);
    if (ids == nullptr) return early.is_none() ? early : py::object(py::list(early));
    FusedHits out;
    run(*ids, k, true, out);
    const auto hits = static_cast<py::ssize_t>(out.tool.size());
    py::array_t<bool> matched(hits);
    for (py::ssize_t i = 0; i < hits; ++i) matched.mutable_data()[i] = out.matched[static_cast<std::size_t>(i)] != 0;
    py::array_t<double> terms({hits, py::ssize_t{5}}, out.terms.data());
    return py::make_tuple(to_array(std::move(out.tool)), to_array(std::move(out.score)), matched, terms);
  }

  void learn(const std::string& word, const std::vector<int32_t>& ids) {
    words_.learn(word, ids.data(), ids.size());
  }

  py::list search(const std::vector<int32_t>& terms, py::ssize_t k) const {
    FusedHits out;
    run(terms, k, false, out);
    return hits_.make(out.tool, out.score, out.matched);
  }

 private:
  // text's term ids (taught words only), or null with `early` set to what search_text
  // returns instead: the tuple of words not taught yet, or None for a text not ASCII.
  const std::vector<int32_t>* analyse(const py::str& text, py::object& early) const {
    if (!PyUnicode_IS_ASCII(text.ptr())) {
      early = py::none();
      return nullptr;
    }
    Py_ssize_t n = 0;
    const char* data = PyUnicode_AsUTF8AndSize(text.ptr(), &n);
    if (data == nullptr) throw py::error_already_set();
    thread_local std::vector<int32_t> ids;
    thread_local std::vector<std::string> unknown;
    ids.clear();
    unknown.clear();
    if (!words_.terms(data, static_cast<std::size_t>(n), ids, unknown)) {
      py::tuple words(unknown.size());
      for (std::size_t i = 0; i < unknown.size(); ++i) words[i] = py::str(unknown[i]);
      early = std::move(words);
      return nullptr;
    }
    return &ids;
  }

  void run(const std::vector<int32_t>& terms, py::ssize_t k, bool breakdown, FusedHits& out) const {
    if (k < 1) throw std::invalid_argument("k must be >= 1, got " + std::to_string(k));
    FusedOptions o = options_;
    o.k = static_cast<std::size_t>(k);
    o.breakdown = breakdown;
    const OneTextBatch one(terms, params_field_);
    searcher_->check(one.batch);
    py::gil_scoped_release release;
    searcher_->search(one.batch, params_, o, out);
  }

  std::shared_ptr<FusedSearcher> searcher_;
  MftrParams params_;
  FusedOptions options_;
  bool params_field_;
  HitMaker hits_;
  QueryWords words_;
};

}  // namespace

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

void register_fused(py::module_& m) {
  // 2: search_hybrid takes each need field's dense candidates apart and returns the hits'
  // evidence (toolsift.search.fused_hybrid checks it: an older core takes the general path).
  m.attr("FUSED_HYBRID_VERSION") = 2;
  py::class_<FusedSearcher, std::shared_ptr<FusedSearcher>>(m, "FusedSearcher",
                                                            "Every BM25 field, MFTR and top-k in one call.")
      .def(py::init(&make_searcher), py::arg("need_indexes"), py::arg("param_index"), py::arg("param_ptr"),
           py::arg("param_required"), py::arg("tool_bits"))
      .def("search", &search, py::arg("need_terms"), py::arg("need_offsets"), py::arg("need_ptr"),
           py::arg("param_terms"), py::arg("param_offsets"), py::arg("arg_ptr"), py::arg("penalize"),
           py::arg("params"), py::arg("n"), py::arg("k"), py::arg("scale"), py::arg("threads"),
           py::arg("sum_docs") = -1,
           "A batch's top k per query: (ptr int64[nq+1], tool int64[], score float32[], matched bool[]).")
      .def("search_hybrid", &search_hybrid, py::arg("need_terms"), py::arg("need_offsets"), py::arg("need_ptr"),
           py::arg("param_terms"), py::arg("param_offsets"), py::arg("arg_ptr"), py::arg("penalize"),
           py::arg("params"), py::arg("n"), py::arg("k"), py::arg("scale"), py::arg("threads"), py::arg("dense"),
           py::arg("extra"),
           "search() with hybrid need fields (see python/fused.cpp): its tuple, then lexical bool[hits] and "
           "cos float32[hits, 3].");
  py::class_<RowPtr>(m, "RowPtr", py::buffer_protocol(),
                     "A tool -> rows pointer checked once, for search_hybrid's dense halves (np.asarray: read-only).")
      .def(py::init<const I64Array&>(), py::arg("ptr"))
      .def_buffer(&RowPtr::buffer)
      .def("__len__", [](const RowPtr& r) { return r.values().size(); });
  py::class_<FusedText>(m, "FusedText", "One raw-text query's hits in one call (see python/fused.cpp).")
      .def(py::init<std::shared_ptr<FusedSearcher>, const py::tuple&, py::ssize_t, const std::string&, bool, py::type,
                    py::object, const py::dict&, bool>(),
           py::arg("searcher"), py::arg("params"), py::arg("n"), py::arg("scale"), py::arg("params_field"),
           py::arg("hit_type"), py::arg("tools"), py::arg("hit_template"), py::arg("lowercase"))
      .def("search", &FusedText::search, py::arg("terms"), py::arg("k"))
      .def("search_text", &FusedText::search_text, py::arg("text"), py::arg("k"))
      .def("search_terms", &FusedText::search_terms, py::arg("text"), py::arg("k"))
      .def("learn", &FusedText::learn, py::arg("word"), py::arg("ids"));
}

}  // namespace toolsift::py_bridge
