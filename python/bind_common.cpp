// The argument checks every binding file shares (declared in bindings.h).
#include <stdexcept>
#include <string>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#include "bindings.h"

namespace toolsift::py_bridge {

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

FieldBatch field_batch(const InvertedIndex& idx, const I32Array& terms, const I64Array& offsets,
                       const I64Array& text_query, int64_t n_queries) {
  FieldBatch f{&idx, stable(terms), stable(offsets), stable(text_query), {}, {}};
  f.q = make_batch(idx, f.terms, f.offsets);
  f.tq = make_text_queries(f.q, f.text_query, n_queries);
  return f;
}

}  // namespace toolsift::py_bridge
