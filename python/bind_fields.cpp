// Bindings of the fused multi-field calls: one call per search for every field's
// candidates and for packing their similarities. Buffer checks and GIL handling only.
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bindings.h"
#include "toolsift/csr.h"

namespace toolsift::py_bridge {

namespace {

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

}  // namespace

void register_fields(py::module_& m) {
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
}

}  // namespace toolsift::py_bridge
