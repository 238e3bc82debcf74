// Bindings of the query side of dense fields: a static encoder's text vectors and int8
// quantization of float rows (toolsift/embed.h), and the best tools of a scored row
// (toolsift/group_top.h). Buffer checks and GIL handling only. A query's one text is too little work
// to pay for releasing the GIL (and for snapshotting the inputs that releasing needs).
#include <algorithm>
#include <stdexcept>
#include <string>

#include "bindings.h"
#include "toolsift/embed.h"
#include "toolsift/group_top.h"

namespace toolsift::py_bridge {

namespace {

// Below this many multiply-adds a call keeps the GIL and reads its inputs in place.
constexpr double kReleaseWork = 1 << 16;

using F32In = py::array_t<float, py::array::c_style | py::array::forcecast>;

// float32[n_texts, d]: the static vectors of texts whose token rows are ids[ptr[i]:ptr[i+1]].
py::array_t<float> static_mean_rows(const I8Array& codes_in, const F32In& mult_in, const I64Array& ptr_in,
                                    const I64Array& ids_in, int threads) {
  if (codes_in.ndim() != 2) throw std::invalid_argument("codes must be 2-d (vocab, dim)");
  require_1d(mult_in, "mult");
  require_1d(ptr_in, "ptr");
  require_1d(ids_in, "ids");
  const auto vocab = codes_in.shape(0), d = codes_in.shape(1);
  if (mult_in.shape(0) != vocab) throw std::invalid_argument("mult must have one entry per row of codes");
  if (ptr_in.shape(0) < 1) throw std::invalid_argument("ptr must have n_texts + 1 >= 1 entries");
  const py::ssize_t n_texts = ptr_in.shape(0) - 1;
  const double work = static_cast<double>(ids_in.shape(0)) * static_cast<double>(d);
  const bool release = work >= kReleaseWork;
  // Snapshots only when another thread could run meanwhile.
  const I8Array codes = release ? frozen(codes_in) : codes_in;
  const F32In mult = release ? frozen(mult_in) : mult_in;
  const I64Array ptr = release ? stable(ptr_in) : ptr_in;
  const I64Array ids = release ? stable(ids_in) : ids_in;
  const int64_t* p = ptr.data();
  if (p[0] != 0 || p[n_texts] != ids.shape(0)) throw std::invalid_argument("ptr must run from 0 to len(ids)");
  for (py::ssize_t i = 0; i < n_texts; ++i) {
    if (p[i + 1] < p[i]) throw std::invalid_argument("ptr decreases at text " + std::to_string(i));
  }
  const int64_t* id = ids.data();
  for (py::ssize_t t = 0; t < ids.shape(0); ++t) {
    if (id[t] < 0 || id[t] >= vocab) {
      throw std::invalid_argument("ids[" + std::to_string(t) + "]=" + std::to_string(id[t]) + " out of range for " +
                                  std::to_string(vocab) + " rows");
    }
  }
  check_output_bytes(static_cast<double>(n_texts) * static_cast<double>(d), 4.0, "static_mean_rows");
  py::array_t<float> out({n_texts, d});
  float* dst = out.mutable_data();
  std::fill(dst, dst + n_texts * d, 0.0f);
  if (release) {
    py::gil_scoped_release unlock;
    toolsift::static_mean_rows(codes.data(), static_cast<std::size_t>(d), mult.data(), p,
                               static_cast<std::size_t>(n_texts), id, dst, threads);
  } else {
    toolsift::static_mean_rows(codes.data(), static_cast<std::size_t>(d), mult.data(), p,
                               static_cast<std::size_t>(n_texts), id, dst, 1);
  }
  return out;
}

// Quantizes x (float32[n, d], finite: checked by toolsift.kernels.int8.quantize_rows) into
// codes_out (int8[n, d]) and scales_out (float32[n]), both C-contiguous and writable.
void quantize_rows(const F32In& x_in, py::array_t<int8_t> codes_out, py::array_t<float> scales_out, int threads) {
  if (x_in.ndim() != 2) throw std::invalid_argument("x must be 2-d (rows, dim)");
  const auto n = x_in.shape(0), d = x_in.shape(1);
  if (codes_out.ndim() != 2 || codes_out.shape(0) != n || codes_out.shape(1) != d ||
      !(codes_out.flags() & py::array::c_style) || !codes_out.writeable()) {
    throw std::invalid_argument("codes_out must be a writable C-contiguous int8 array shaped like x");
  }
  if (scales_out.ndim() != 1 || scales_out.shape(0) != n || !scales_out.writeable()) {
    throw std::invalid_argument("scales_out must be a writable float32 array with one entry per row of x");
  }
  int8_t* codes = codes_out.mutable_data();
  float* scales = scales_out.mutable_data();
  if (static_cast<double>(n) * static_cast<double>(d) < kReleaseWork) {
    toolsift::quantize_rows(x_in.data(), static_cast<std::size_t>(n), static_cast<std::size_t>(d), codes, scales, 1);
    return;
  }
  const F32In x = stable(x_in);
  py::gil_scoped_release unlock;
  toolsift::quantize_rows(x.data(), static_cast<std::size_t>(n), static_cast<std::size_t>(d), codes, scales, threads);
}

// int64[count]: the best n keys with a positive score (see group_top.h), ascending. groups
// empty: each row is its own key.
py::array_t<int64_t> top_positive(const py::array_t<float, py::array::c_style | py::array::forcecast>& scores,
                                  const I64Array& rows, const I64Array& groups, py::ssize_t n_keys, py::ssize_t n) {
  require_1d(scores, "scores");
  require_1d(rows, "rows");
  require_1d(groups, "groups");
  if (rows.shape(0) != scores.shape(0)) throw std::invalid_argument("scores and rows must have one length");
  if (n < 1) throw std::invalid_argument("n must be >= 1");
  if (n_keys < 0) throw std::invalid_argument("n_keys must be >= 0");
  const int64_t* r = rows.data();
  const int64_t* g = groups.shape(0) ? groups.data() : nullptr;
  const int64_t limit = g != nullptr ? groups.shape(0) : n_keys;
  for (py::ssize_t i = 0; i < rows.shape(0); ++i) {
    if (r[i] < 0 || r[i] >= limit) throw std::invalid_argument("rows out of range");
  }
  for (py::ssize_t i = 0; i < groups.shape(0); ++i) {
    if (g[i] < 0 || g[i] >= n_keys) throw std::invalid_argument("groups out of range");
  }
  const auto k = static_cast<std::size_t>(std::min<py::ssize_t>(n, n_keys));
  std::vector<float> best(static_cast<std::size_t>(n_keys), 0.0f);
  std::vector<int64_t> touched, out(k);
  const std::size_t count = toolsift::top_positive_keys(scores.data(), r, static_cast<std::size_t>(rows.shape(0)), g,
                                                        k, best.data(), touched, out.data());
  out.resize(count);
  return to_array(std::move(out));
}

}  // namespace

void register_embed(py::module_& m) {
  m.def("top_positive", &top_positive, py::arg("scores"), py::arg("rows"), py::arg("groups"), py::arg("n_keys"),
        py::arg("n"), "int64[]: the best n keys with a positive score (a key scores as its best entry), ascending.");
  m.def("static_mean_rows", &static_mean_rows, py::arg("codes"), py::arg("mult"), py::arg("ptr"), py::arg("ids"),
        py::arg("threads") = 1,
        "float32[n_texts, dim]: per text the unit-length sum of codes[r] * mult[r] over its rows "
        "ids[ptr[i]:ptr[i+1]] (a zero row when that sum is 0).");
  m.def("quantize_rows", &quantize_rows, py::arg("x"), py::arg("codes_out"), py::arg("scales_out"),
        py::arg("threads") = 1, "Symmetric per-row int8 quantization of x into codes_out and scales_out.");
}

}  // namespace toolsift::py_bridge
