// Binding of toolsift::Interner: buffer checks and GIL handling only.
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bindings.h"
#include "toolsift/interner.h"

namespace toolsift::py_bridge {

namespace {

py::tuple intern(Interner& self, const py::bytes& text, const I64Array& offsets) {
  if (offsets.ndim() != 1 || offsets.shape(0) < 1) {
    throw std::invalid_argument("offsets must be 1-d with n_texts + 1 >= 1 entries");
  }
  char* data = nullptr;
  py::ssize_t n_bytes = 0;
  if (PYBIND11_BYTES_AS_STRING_AND_SIZE(text.ptr(), &data, &n_bytes) != 0) throw py::error_already_set();
  const auto n_texts = static_cast<std::size_t>(offsets.shape(0) - 1);
  std::vector<int32_t> ids;
  std::vector<int64_t> counts;
  {
    // `text` and `offsets` are immutable or held by the caller's references meanwhile.
    py::gil_scoped_release release;
    self.intern(data, static_cast<std::size_t>(n_bytes), offsets.data(), n_texts, ids, counts);
  }
  return py::make_tuple(to_array(std::move(ids)), to_array(std::move(counts)));
}

py::list words(const Interner& self, py::ssize_t start) {
  if (start < 0 || static_cast<std::size_t>(start) > self.size()) {
    throw std::out_of_range("start must be in [0, " + std::to_string(self.size()) + "]");
  }
  py::list out(static_cast<py::ssize_t>(self.size()) - start);
  for (std::size_t i = static_cast<std::size_t>(start); i < self.size(); ++i) {
    out[static_cast<py::ssize_t>(i) - start] = py::str(self.word(i));
  }
  return out;
}

}  // namespace

void register_interner(py::module_& m) {
  py::class_<Interner, std::shared_ptr<Interner>>(m, "Interner",
                                                  "Splits ASCII text into words (runs of [A-Za-z0-9_], two or "
                                                  "more), optionally lowercased, with dense ids in first-seen order.")
      .def(py::init<bool>(), py::arg("lowercase") = true)
      .def("intern", &intern, py::arg("text"), py::arg("offsets"),
           "Word ids of the texts text[offsets[i]:offsets[i+1]] (ASCII bytes): (ids int32[], counts int64[n]).")
      .def("words", &words, py::arg("start") = 0, "The words with ids start, start + 1, ... in id order.")
      .def("__len__", &Interner::size)
      .def_property_readonly("lowercase", &Interner::lowercase);
}

}  // namespace toolsift::py_bridge
