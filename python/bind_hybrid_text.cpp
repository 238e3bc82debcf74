// Binding of toolsift::HybridText (toolsift/hybrid_text.h): argument checks, owners and
// GIL handling only. The arrays it reads are an index's own (read-only); the binding keeps
// them alive as long as the engine object.
#include <cmath>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bindings.h"
#include "hit_maker.h"
#include "toolsift/combine_needs.h"
#include "toolsift/csr.h"
#include "toolsift/hybrid_text.h"

namespace toolsift::py_bridge {

namespace {

using U8Array = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;

// One need field: None (a BM25 field), or (codes int8[rows, d] | None, scales float32[rows],
// tool_ptr int64[n_tools + 1] | None, w_bm, w_cos, adds, live_codes int8[live, d],
// live_scales float32[live], live_rows int64[live], coarse | None, groups int64[rows] | None,
// depth, ivf): the field's dense half as search_hybrid takes it (codes None: every row
// empty) and how its candidates are found (DenseField.top_tools on its live rows; with ivf,
// (centroid codes int8[lists, d], centroid scales float32[lists], list_ptr int64[lists + 1],
// list_ids int64[listed], nprobe), DenseField.top_tools_ivf).
struct NeedArgs {
  I8Array codes, live_codes, cent_codes;
  F32Array scales, live_scales, cent_scales;
  I64Array tool_ptr, live_rows, groups, list_ptr, list_ids;
  std::vector<float> list_scales;
  py::object coarse;
  DenseHalf half;
  IvfLists ivf;
  DenseCandidates cand;
};

template <class A>
A read_only(const py::handle& h, const char* what) {
  A a = h.cast<A>();
  if (a.writeable()) throw std::invalid_argument(std::string(what) + " must be read-only (an index's own array)");
  return a;
}

// A need field's IVF index (IvfIndex: its int8 centroids, lists and nprobe), checked once.
void ivf_args(const py::tuple& t, NeedArgs& a) {
  if (t.size() != 5) throw std::invalid_argument("HybridText: an IVF index is a 5-tuple");
  a.cent_codes = read_only<I8Array>(t[0], "centroid codes");
  a.cent_scales = read_only<F32Array>(t[1], "centroid scales");
  a.list_ptr = read_only<I64Array>(t[2], "list_ptr");
  a.list_ids = read_only<I64Array>(t[3], "list_ids");
  const auto nprobe = t[4].cast<py::ssize_t>();
  require_1d(a.cent_scales, "centroid scales");
  require_1d(a.list_ptr, "list_ptr");
  require_1d(a.list_ids, "list_ids");
  const std::size_t d = a.half.rows.d, n_rows = a.half.rows.n;
  if (a.cent_codes.ndim() != 2 || a.cent_codes.shape(0) < 1 || static_cast<std::size_t>(a.cent_codes.shape(1)) != d ||
      a.cent_scales.shape(0) != a.cent_codes.shape(0)) {
    throw std::invalid_argument("IVF centroids must be int8[lists >= 1, d] with one scale per list");
  }
  const auto n_lists = static_cast<std::size_t>(a.cent_codes.shape(0));
  const auto n_listed = static_cast<std::size_t>(a.list_ids.shape(0));
  if (static_cast<std::size_t>(a.list_ptr.shape(0)) != n_lists + 1) {
    throw std::invalid_argument("list_ptr needs n_lists + 1 entries");
  }
  check_csr({a.list_ptr.data(), a.list_ids.data(), n_listed}, n_lists, "list_ptr");
  const int64_t* ids = a.list_ids.data();
  a.list_scales.resize(n_listed);
  for (std::size_t i = 0; i < n_listed; ++i) {
    if (ids[i] < 0 || static_cast<std::size_t>(ids[i]) >= n_rows) throw std::invalid_argument("list_ids out of range");
    a.list_scales[i] = a.half.rows.scales[ids[i]];
  }
  if (nprobe < 1) throw std::invalid_argument("nprobe must be >= 1");
  a.ivf.centroids = {a.cent_codes.data(), a.cent_scales.data(), n_lists, d};
  a.ivf.list_ptr = a.list_ptr.data();
  a.ivf.list_ids = ids;
  a.ivf.list_scales = a.list_scales.data();
  a.ivf.n_listed = n_listed;
  a.ivf.nprobe = std::min(static_cast<std::size_t>(nprobe), n_lists);
  a.cand.ivf = &a.ivf;
  a.cand.coarse = nullptr;  // an IVF's prefilter is over its listed rows: set_coarse gives it
}

void need_args(const py::object& spec, std::size_t n_tools, std::size_t d, NeedArgs& a) {
  if (spec.is_none()) return;
  const auto t = spec.cast<py::tuple>();
  if (t.size() != 13) throw std::invalid_argument("HybridText: a dense need field is a 13-tuple");
  a.half.hybrid = true;
  a.half.w_bm = t[3].cast<float>();
  a.half.w_cos = t[4].cast<float>();
  if (t[0].is_none()) return;  // every row empty: cosine 0, no candidates
  a.half.has_cos = true;
  a.codes = read_only<I8Array>(t[0], "codes");
  a.scales = read_only<F32Array>(t[1], "scales");
  if (a.codes.ndim() != 2 || static_cast<std::size_t>(a.codes.shape(1)) != d) {
    throw std::invalid_argument("codes must be 2-d with the token table's dim");
  }
  require_1d(a.scales, "scales");
  const auto n_rows = static_cast<std::size_t>(a.codes.shape(0));
  if (static_cast<std::size_t>(a.scales.shape(0)) != n_rows) throw std::invalid_argument("scales: one per row");
  if (t[2].is_none()) {
    if (n_rows != n_tools) throw std::invalid_argument("a dense half without tool_ptr needs one row per tool");
  } else {
    a.tool_ptr = read_only<I64Array>(t[2], "tool_ptr");
    require_1d(a.tool_ptr, "tool_ptr");
    const int64_t* tp = a.tool_ptr.data();
    if (static_cast<std::size_t>(a.tool_ptr.shape(0)) != n_tools + 1 || tp[0] != 0 ||
        static_cast<std::size_t>(tp[n_tools]) > n_rows) {
      throw std::invalid_argument("tool_ptr must have n_tools + 1 entries within the rows");
    }
    for (std::size_t i = 0; i < n_tools; ++i) {
      if (tp[i + 1] < tp[i]) throw std::invalid_argument("tool_ptr decreases");
    }
    a.half.tool_ptr = tp;
  }
  a.half.rows = {a.codes.data(), a.scales.data(), n_rows, d};
  a.cand.adds = t[5].cast<bool>();
  a.live_codes = read_only<I8Array>(t[6], "live_codes");
  a.live_scales = read_only<F32Array>(t[7], "live_scales");
  a.live_rows = read_only<I64Array>(t[8], "live_rows");
  require_1d(a.live_scales, "live_scales");
  require_1d(a.live_rows, "live_rows");
  const auto n_live = static_cast<std::size_t>(a.live_rows.shape(0));
  if (a.live_codes.ndim() != 2 || static_cast<std::size_t>(a.live_codes.shape(0)) != n_live ||
      static_cast<std::size_t>(a.live_codes.shape(1)) != d || static_cast<std::size_t>(a.live_scales.shape(0)) != n_live) {
    throw std::invalid_argument("live_codes/live_scales must have one row of the table's dim per live row");
  }
  const int64_t* lr = a.live_rows.data();
  for (std::size_t i = 0; i < n_live; ++i) {
    if (lr[i] < 0 || static_cast<std::size_t>(lr[i]) >= n_rows) throw std::invalid_argument("live_rows out of range");
  }
  a.coarse = t[9];
  a.cand.coarse = coarse_of(a.coarse, a.live_codes, a.live_scales);
  if (!t[10].is_none()) {
    a.groups = read_only<I64Array>(t[10], "groups");
    require_1d(a.groups, "groups");
    if (static_cast<std::size_t>(a.groups.shape(0)) != n_rows) throw std::invalid_argument("groups: one per row");
    const int64_t* g = a.groups.data();
    for (std::size_t i = 0; i < n_rows; ++i) {
      if (g[i] < 0 || static_cast<std::size_t>(g[i]) >= n_tools) throw std::invalid_argument("groups out of range");
    }
    a.cand.groups = g;
  } else if (n_rows != n_tools) {
    throw std::invalid_argument("a field without groups needs one row per tool");
  }
  const auto depth = t[11].cast<py::ssize_t>();
  if (depth < 0) throw std::invalid_argument("depth must be >= 0");
  a.cand.depth = static_cast<std::size_t>(depth);
  a.cand.live = {a.live_codes.data(), a.live_scales.data(), n_live, d};
  a.cand.live_rows = lr;
  a.cand.rows = a.half.rows;
  if (!t[12].is_none()) ivf_args(t[12].cast<py::tuple>(), a);
}

class PyHybridText {
 public:
  PyHybridText(std::shared_ptr<FusedSearcher> searcher, const py::dict& vocab, int32_t unk, std::string prefix,
               py::ssize_t max_chars, std::vector<std::string> added, const py::object& table_codes,
               const py::object& table_mult, py::ssize_t max_tokens, const std::vector<py::object>& need,
               const py::tuple& params, py::ssize_t n, const std::string& scale, bool params_field, bool lowercase,
               int threads) {
    if (!searcher) throw std::invalid_argument("HybridText: searcher is None");
    if (need.size() != 3) throw std::invalid_argument("HybridText: needs the three need fields");
    if (max_chars < 1 || max_tokens < 1) throw std::invalid_argument("max_chars and max_tokens must be >= 1");
    std::unordered_map<std::string, int32_t> map;
    map.reserve(vocab.size());
    for (const auto& item : vocab) map.emplace(item.first.cast<std::string>(), item.second.cast<int32_t>());
    codes_ = read_only<I8Array>(table_codes, "table codes");
    mult_ = read_only<F32Array>(table_mult, "table mult");
    if (codes_.ndim() != 2 || codes_.shape(1) < 1) throw std::invalid_argument("table codes must be 2-d");
    require_1d(mult_, "table mult");
    if (mult_.shape(0) != codes_.shape(0)) throw std::invalid_argument("table mult: one per token");
    for (const auto& item : map) {
      if (item.second < 0 || item.second >= codes_.shape(0)) throw std::invalid_argument("vocab id out of the table");
    }
    if (unk < 0 || unk >= codes_.shape(0)) throw std::invalid_argument("unk id out of the table");
    const auto d = static_cast<std::size_t>(codes_.shape(1));
    TokenTable table{codes_.data(), mult_.data(), static_cast<std::size_t>(codes_.shape(0)), d,
                     static_cast<std::size_t>(max_tokens)};
    DenseHalf half[3];
    DenseCandidates cand[3];
    for (int f = 0; f < 3; ++f) {
      need_args(need[static_cast<std::size_t>(f)], searcher->n_tools(), d, need_[f]);
      half[f] = need_[f].half;
      cand[f] = need_[f].cand;
    }
    engine_ = std::make_unique<HybridText>(
        std::move(searcher), WordPiece(std::move(map), unk, std::move(prefix), static_cast<std::size_t>(max_chars),
                                       std::move(added)),
        table, half, cand, parse_params(params), options(n, 1, scale, 1), params_field, lowercase, threads);
  }

  // (tool int64[], score float32[], matched bool[], lexical bool[], cos float32[hits, 3]),
  // with breakdown also terms float64[hits, 5] (the hits' MFTR terms); a list of the BM25
  // words not taught yet; or None (not ASCII, or WordPiece's fast path refuses the text).
  py::object search_text(const py::str& text, py::ssize_t k, bool breakdown) const {
    FusedHits out;
    std::vector<std::string> unknown;
    return hits_tuple(run_text(text, k, breakdown, out, unknown), out, unknown, breakdown);
  }

  static py::object hits_tuple(HybridText::Status status, FusedHits& out, const std::vector<std::string>& unknown,
                               bool breakdown = false) {
    if (status == HybridText::Status::kNotTaken) return py::none();
    if (status == HybridText::Status::kUnknownWords) return py::cast(unknown);
    const auto hits = static_cast<py::ssize_t>(out.tool.size());
    py::array_t<bool> matched(hits), lexical(hits);
    for (py::ssize_t i = 0; i < hits; ++i) {
      matched.mutable_data()[i] = out.matched[static_cast<std::size_t>(i)] != 0;
      lexical.mutable_data()[i] = out.lexical[static_cast<std::size_t>(i)] != 0;
    }
    py::array_t<float> cos({hits, py::ssize_t{3}}, out.cos.data());
    if (breakdown) {
      py::array_t<double> terms({hits, py::ssize_t{5}}, out.terms.data());
      return py::make_tuple(to_array(std::move(out.tool)), to_array(std::move(out.score)), matched, lexical, cos,
                            terms);
    }
    return py::make_tuple(to_array(std::move(out.tool)), to_array(std::move(out.score)), matched, lexical, cos);
  }

  // Makes search_hits' and steps_hits' Hit objects from now on (HitMaker's arguments).
  void set_hits(py::type hit_type, py::object tools, const py::dict& hit_template) {
    hits_.emplace(std::move(hit_type), std::move(tools), hit_template);
  }

  // Need field f's null floor (toolsift.search.evidence): a hit only its dense half found
  // is matched when its cosine there is above it.
  void set_floor(int f, double floor) {
    if (f < 0 || f > 2) throw std::invalid_argument("field must be 0, 1 or 2");
    if (std::isnan(floor)) throw std::invalid_argument("a null floor is a number");
    floor_[f] = floor;
  }

  // search_text's hits as Hit objects (set_hits), each matched by the rule of
  // toolsift.search.evidence.hit_evidence: found, and a BM25 field had it as a candidate or
  // a dense half added it with a cosine above that field's null floor. A tuple of the BM25
  // words not taught yet; None (not taken, as search_text); or the int f of a need field
  // whose floor is needed and not set yet (set_floor(f, ...), then call again).
  py::object search_hits(const py::str& text, py::ssize_t k) const {
    FusedHits out;
    std::vector<std::string> unknown;
    return as_hits(run_text(text, k, false, out, unknown), out, unknown);
  }

  // steps_hits: search_steps' answer as search_hits gives search_text's.
  py::object steps_hits(const std::vector<py::str>& readings, py::ssize_t k) const {
    FusedHits out;
    std::vector<std::string> unknown;
    return as_hits(run_steps(readings, k, false, out, unknown), out, unknown);
  }

  // search_text's answer for a multi-step request: readings[0] the whole request, then its
  // steps (toolsift/hybrid_text.h search_steps); None when a reading is not ASCII or
  // WordPiece's fast path refuses one. breakdown: as search_text's.
  py::object search_steps(const std::vector<py::str>& readings, py::ssize_t k, bool breakdown) const {
    FusedHits out;
    std::vector<std::string> unknown;
    return hits_tuple(run_steps(readings, k, breakdown, out, unknown), out, unknown, breakdown);
  }

  // search_text's / search_steps' answer for a request analysed in Python (a text these
  // analysers do not take): the whole request's BM25 term ids and each reading's WordPiece
  // ids (one reading: a one-step request; more: the whole request, then its steps). None
  // for a token id outside the table.
  py::object search_ids(const std::vector<int32_t>& terms, const std::vector<std::vector<int64_t>>& readings,
                        py::ssize_t k, bool breakdown) const {
    FusedHits out;
    return hits_tuple(run_ids(terms, readings, k, breakdown, out), out, {}, breakdown);
  }

  // search_ids' answer as search_hits gives search_text's.
  py::object ids_hits(const std::vector<int32_t>& terms, const std::vector<std::vector<int64_t>>& readings,
                      py::ssize_t k) const {
    FusedHits out;
    return as_hits(run_ids(terms, readings, k, false, out), out, {});
  }

  void learn(const std::string& word, const std::vector<int32_t>& ids) { engine_->learn(word, ids.data(), ids.size()); }

  void set_coarse(int f, const py::object& coarse) {
    if (f < 0 || f > 2) throw std::invalid_argument("field must be 0, 1 or 2");
    NeedArgs& a = need_[f];
    if (!a.half.has_cos || a.cand.groups != nullptr) {
      throw std::invalid_argument("only a need field with one row per tool and a cosine takes a prefilter");
    }
    const Int8Coarse* c = a.cand.ivf != nullptr ? coarse_of_rows(coarse, a.codes, a.scales, a.list_ids)
                                                : coarse_of(coarse, a.live_codes, a.live_scales);
    a.coarse = coarse;  // kept alive with the engine (a prefilter once set is never dropped)
    engine_->set_coarse(f, c);
  }

  py::object token_ids(const py::str& text) const {
    if (!PyUnicode_IS_ASCII(text.ptr())) return py::none();
    Py_ssize_t n = 0;
    const char* data = PyUnicode_AsUTF8AndSize(text.ptr(), &n);
    if (data == nullptr) throw py::error_already_set();
    std::vector<int32_t> ids;
    if (!engine_->token_ids(data, static_cast<std::size_t>(n), ids)) return py::none();
    return py::cast(ids);
  }

 private:
  // The engine's answer for one text (kNotTaken for a text that is not ASCII).
  HybridText::Status run_text(const py::str& text, py::ssize_t k, bool breakdown, FusedHits& out,
                              std::vector<std::string>& unknown) const {
    if (k < 1) throw std::invalid_argument("k must be >= 1, got " + std::to_string(k));
    if (!PyUnicode_IS_ASCII(text.ptr())) return HybridText::Status::kNotTaken;
    Py_ssize_t n = 0;
    const char* data = PyUnicode_AsUTF8AndSize(text.ptr(), &n);
    if (data == nullptr) throw py::error_already_set();
    py::gil_scoped_release release;
    return engine_->search(data, static_cast<std::size_t>(n), static_cast<std::size_t>(k), out, unknown, breakdown);
  }

  // The engine's answer for a request's readings (kNotTaken when one is not ASCII).
  HybridText::Status run_steps(const std::vector<py::str>& readings, py::ssize_t k, bool breakdown, FusedHits& out,
                               std::vector<std::string>& unknown) const {
    if (k < 1) throw std::invalid_argument("k must be >= 1, got " + std::to_string(k));
    if (readings.empty()) throw std::invalid_argument("search_steps needs at least one reading");
    std::vector<const char*> texts;
    std::vector<std::size_t> lens;
    for (const py::str& text : readings) {
      if (!PyUnicode_IS_ASCII(text.ptr())) return HybridText::Status::kNotTaken;
      Py_ssize_t n = 0;
      const char* data = PyUnicode_AsUTF8AndSize(text.ptr(), &n);
      if (data == nullptr) throw py::error_already_set();
      texts.push_back(data);
      lens.push_back(static_cast<std::size_t>(n));
    }
    py::gil_scoped_release release;
    return engine_->search_steps(texts.data(), lens.data(), texts.size(), static_cast<std::size_t>(k), out, unknown,
                                 breakdown);
  }

  // The engine's answer for an analysed request.
  HybridText::Status run_ids(const std::vector<int32_t>& terms, const std::vector<std::vector<int64_t>>& readings,
                             py::ssize_t k, bool breakdown, FusedHits& out) const {
    if (k < 1) throw std::invalid_argument("k must be >= 1, got " + std::to_string(k));
    if (readings.empty()) throw std::invalid_argument("search_ids needs at least one reading");
    std::vector<int64_t> tokens, ptr{0};
    for (const auto& r : readings) {
      tokens.insert(tokens.end(), r.begin(), r.end());
      ptr.push_back(static_cast<int64_t>(tokens.size()));
    }
    py::gil_scoped_release release;
    return engine_->search_ids(terms, tokens.data(), ptr.data(), readings.size(), static_cast<std::size_t>(k), out,
                               breakdown);
  }

  // An engine answer as search_hits gives it.
  py::object as_hits(HybridText::Status status, const FusedHits& out, const std::vector<std::string>& unknown) const {
    if (!hits_) throw std::logic_error("HybridText: set_hits was not called");
    if (status == HybridText::Status::kNotTaken) return py::none();
    if (status == HybridText::Status::kUnknownWords) return py::tuple(py::cast(unknown));
    const std::size_t n = out.tool.size();
    std::vector<uint8_t> matched(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      if (!out.matched[i]) continue;  // added only to fill k
      bool hit = out.lexical[i] != 0;
      for (std::size_t f = 0; f < 3 && !hit; ++f) {
        const float c = out.cos[i * 3 + f];
        if (std::isnan(c)) continue;  // not that field's dense candidate
        if (std::isnan(floor_[f])) return py::int_(f);
        hit = static_cast<double>(c) > floor_[f];
      }
      matched[i] = hit;
    }
    return hits_->make(out.tool, out.score, matched);
  }

  std::optional<HitMaker> hits_;
  double floor_[3] = {std::nan(""), std::nan(""), std::nan("")};  // NaN: not set yet
  I8Array codes_;
  F32Array mult_;
  NeedArgs need_[3];
  std::unique_ptr<HybridText> engine_;
};

// combine_needs(block float32[readings, candidates]) -> (scores float32[candidates],
// chosen int64[candidates]): toolsift/combine_needs.h.
py::tuple combine_needs_py(const py::array_t<float, py::array::c_style | py::array::forcecast>& block) {
  if (block.ndim() != 2) throw std::invalid_argument("combine_needs: block must be 2-d [readings, candidates]");
  const auto n = static_cast<std::size_t>(block.shape(0)), m = static_cast<std::size_t>(block.shape(1));
  if (n == 0 && m > 0) throw std::invalid_argument("combine_needs: at least one reading");
  py::array_t<float> out(static_cast<py::ssize_t>(m));
  py::array_t<int64_t> chosen(static_cast<py::ssize_t>(m));
  {
    py::gil_scoped_release release;
    combine_needs(block.data(), n, m, out.mutable_data(), chosen.mutable_data());
  }
  return py::make_tuple(out, chosen);
}

// combine_needs_top(block, k) -> (idx int64[<= k], scores float32[<= k]): toolsift/combine_needs.h.
py::tuple combine_needs_top_py(const py::array_t<float, py::array::c_style | py::array::forcecast>& block,
                               py::ssize_t k) {
  if (block.ndim() != 2) throw std::invalid_argument("combine_needs_top: block must be 2-d [readings, candidates]");
  if (k < 0) throw std::invalid_argument("combine_needs_top: k must be >= 0");
  const auto n = static_cast<std::size_t>(block.shape(0)), m = static_cast<std::size_t>(block.shape(1));
  if (n == 0 && m > 0) throw std::invalid_argument("combine_needs_top: at least one reading");
  if (m >= (std::size_t{1} << 32)) throw std::invalid_argument("combine_needs_top: too many candidates");
  const std::size_t len = std::min(static_cast<std::size_t>(k), m);
  std::vector<int64_t> idx(len);
  std::vector<float> score(len);
  {
    py::gil_scoped_release release;
    combine_needs_top(block.data(), n, m, static_cast<std::size_t>(k), idx.data(), score.data());
  }
  return py::make_tuple(to_array(std::move(idx)), to_array(std::move(score)));
}

}  // namespace

void register_hybrid_text(py::module_& m) {
  m.def("combine_needs_top", &combine_needs_top_py, py::arg("block"), py::arg("k"),
        "The top k candidates of combine_needs (score descending, then index) and their scores "
        "(toolsift/combine_needs.h).");
  m.def("combine_needs", &combine_needs_py, py::arg("block"),
        "Each candidate's combined score over a multi-step request's readings, and the reading it took "
        "(toolsift/combine_needs.h).");
  py::class_<PyHybridText>(m, "HybridText", "One raw-text query on a hybrid index in one call (toolsift/hybrid_text.h).")
      .def(py::init<std::shared_ptr<FusedSearcher>, const py::dict&, int32_t, std::string, py::ssize_t,
                    std::vector<std::string>, const py::object&, const py::object&, py::ssize_t,
                    const std::vector<py::object>&, const py::tuple&, py::ssize_t, const std::string&, bool, bool,
                    int>(),
           py::arg("searcher"), py::arg("vocab"), py::arg("unk"), py::arg("prefix"), py::arg("max_chars"),
           py::arg("added"), py::arg("table_codes"), py::arg("table_mult"), py::arg("max_tokens"), py::arg("need"),
           py::arg("params"), py::arg("n"), py::arg("scale"), py::arg("params_field"), py::arg("lowercase"),
           py::arg("threads"))
      .def("search_text", &PyHybridText::search_text, py::arg("text"), py::arg("k"), py::arg("breakdown") = false)
      .def("search_steps", &PyHybridText::search_steps, py::arg("readings"), py::arg("k"),
           py::arg("breakdown") = false)
      .def("learn", &PyHybridText::learn, py::arg("word"), py::arg("ids"))
      .def("set_coarse", &PyHybridText::set_coarse, py::arg("field"), py::arg("coarse"))
      .def("set_hits", &PyHybridText::set_hits, py::arg("hit_type"), py::arg("tools"), py::arg("hit_template"))
      .def("set_floor", &PyHybridText::set_floor, py::arg("field"), py::arg("floor"))
      .def("search_hits", &PyHybridText::search_hits, py::arg("text"), py::arg("k"),
           "search_text's hits as Hit objects, matched by the null-floor rule; a tuple of words not taught yet, "
           "None (not taken), or the int field whose floor set_floor must give first.")
      .def("steps_hits", &PyHybridText::steps_hits, py::arg("readings"), py::arg("k"),
           "search_steps' answer as search_hits gives search_text's.")
      .def("search_ids", &PyHybridText::search_ids, py::arg("terms"), py::arg("readings"), py::arg("k"),
           py::arg("breakdown") = false,
           "search_text / search_steps for a request analysed in Python: BM25 term ids, each reading's WordPiece ids.")
      .def("ids_hits", &PyHybridText::ids_hits, py::arg("terms"), py::arg("readings"), py::arg("k"),
           "search_ids' answer as search_hits gives search_text's.")
      .def("token_ids", &PyHybridText::token_ids, py::arg("text"));
}

}  // namespace toolsift::py_bridge
