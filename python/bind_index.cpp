// Bindings of toolsift::InvertedIndex: buffer checks and GIL handling only.
#include <optional>
#include <stdexcept>
#include <string>

#include "arrow_bridge.h"
#include "bindings.h"

namespace toolsift::py_bridge {

namespace {

std::string method_name(Bm25Method m) { return m == Bm25Method::kAtire ? "atire" : "lucene"; }


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

void register_index(py::module_& m) {
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

}  // namespace toolsift::py_bridge
