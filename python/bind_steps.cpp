// Binding of toolsift::StepSplitter (toolsift/step_split.h): argument checks and GIL
// handling only. The splitter takes ASCII text; for any other text each method returns
// None ("not taken": the caller runs the Python splitter, decompose.steps).
#include <Python.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bindings.h"
#include "toolsift/step_split.h"

namespace toolsift::py_bridge {

namespace {

// The characters of `text` when it is ASCII (then one byte each, read in place: the str is
// immutable and the caller holds it while the GIL is released), else false.
bool ascii_of(const py::str& text, std::string_view& out) {
  PyObject* o = text.ptr();
#if PY_VERSION_HEX < 0x030C0000
  if (PyUnicode_READY(o) != 0) throw py::error_already_set();
#endif
  if (!PyUnicode_IS_ASCII(o)) return false;
  out = std::string_view(static_cast<const char*>(PyUnicode_DATA(o)), static_cast<std::size_t>(PyUnicode_GET_LENGTH(o)));
  return true;
}

long checked_steps(py::ssize_t max_steps) {
  if (max_steps < 1 || max_steps > (1 << 30)) throw std::invalid_argument("max_steps must be in 1 .. 2**30");
  return static_cast<long>(max_steps);
}

py::list str_list(const std::vector<std::string>& v) {
  py::list out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = py::str(v[i]);
  return out;
}

}  // namespace

void register_steps(py::module_& m) {
  py::class_<StepSplitter>(m, "StepSplitter",
                           "The request step splitter (decompose.steps) on ASCII text; None for other text.")
      .def(py::init([](std::vector<std::string> verbs, std::vector<std::string> abbrev,
                       std::vector<std::string> clause_words, StepSplitter::StageNeeds stage_needs,
                       py::ssize_t max_chars) {
             if (max_chars < 1) throw std::invalid_argument("max_chars must be positive");
             for (const auto* list : {&verbs, &abbrev, &clause_words}) {
               for (const std::string& w : *list) {
                 if (w.empty() || !StepSplitter::is_ascii(w)) throw std::invalid_argument("word lists hold ASCII words");
               }
             }
             if (stage_needs.size() != 5) throw std::invalid_argument("stage_needs: word groups for five splitters");
             for (const auto& groups : stage_needs) {
               for (const auto& group : groups) {
                 for (const std::string& w : group) {
                   if (w.empty() || !StepSplitter::is_ascii(w)) throw std::invalid_argument("word lists hold ASCII words");
                 }
               }
             }
             return StepSplitter(std::move(verbs), std::move(abbrev), std::move(clause_words), std::move(stage_needs),
                                 static_cast<std::size_t>(max_chars));
           }),
           py::arg("verbs"), py::arg("abbrev"), py::arg("clause_words"), py::arg("stage_needs"), py::arg("max_chars"))
      .def("steps", [](const StepSplitter& s, const py::str& text, py::ssize_t max_steps) -> py::object {
             std::string_view view;
             if (!ascii_of(text, view)) return py::none();
             const long n = checked_steps(max_steps);
             std::vector<StepSplitter::Step> got;
             {
               py::gil_scoped_release release;
               got = s.steps(view, n);
             }
             py::list out(got.size());
             for (std::size_t i = 0; i < got.size(); ++i) out[i] = py::make_tuple(py::str(got[i].first), py::str(got[i].second));
             return std::move(out);
           }, py::arg("text"), py::arg("max_steps"),
           "decompose.steps._steps: (full text, request clause) per step; None: not ASCII.")
      .def("several_steps", [](const StepSplitter& s, const py::str& text, py::ssize_t max_steps) -> py::object {
             std::string_view view;
             if (!ascii_of(text, view)) return py::none();
             const long n = checked_steps(max_steps);
             std::vector<std::string> got;
             {
               py::gil_scoped_release release;
               got = s.several(view, n);
             }
             return str_list(got);
           }, py::arg("text"), py::arg("max_steps"),
           "several_steps' steps ([]: one step); None: not ASCII.")
      .def("may_split", [](const StepSplitter& s, const py::str& text) -> py::object {
             std::string_view view;
             if (!ascii_of(text, view)) return py::none();
             bool got;
             {
               py::gil_scoped_release release;
               got = s.may_split(view);
             }
             return py::bool_(got);
           }, py::arg("text"), "decompose.steps.may_split; None: not ASCII.")
      .def("search_steps", [](const StepSplitter& s, const py::str& text, py::ssize_t max_steps) -> py::object {
             std::string_view view;
             if (!ascii_of(text, view)) return py::none();
             const long n = checked_steps(max_steps);
             std::vector<std::string> got;
             {
               py::gil_scoped_release release;
               got = s.search_steps(view, n);
             }
             return str_list(got);
           }, py::arg("text"), py::arg("max_steps"),
           "several_steps when may_split, else [] (a search's question); None: not ASCII.");
}

}  // namespace toolsift::py_bridge
