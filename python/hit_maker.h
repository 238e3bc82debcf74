// Python Hit objects made straight from an engine call's hits (what
// toolsift.search.hits._plain_hit makes): the attributes of a template dict, with tool,
// score, rank and matched set. Shared by FusedText (fused.cpp) and HybridText
// (bind_hybrid_text.cpp): on a small catalogue, wrapping ten hits in Python cost as much
// as the engine's work.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace toolsift::py_bridge {

namespace py = pybind11;

class HitMaker {
 public:
  // hit_type: the Hit class; tools: the catalogue's tools (indexed by tool id); hit_template:
  // every attribute of a Hit with its default, in the order they are set.
  HitMaker(py::type hit_type, py::object tools, const py::dict& hit_template)
      : hit_type_(std::move(hit_type)), tools_(std::move(tools)) {
    const char* set[4] = {"tool", "score", "rank", "matched"};
    int found = 0;
    for (const auto& item : hit_template) {
      names_.push_back(py::reinterpret_borrow<py::str>(item.first));
      defaults_.push_back(py::reinterpret_borrow<py::object>(item.second));
      const std::string key = item.first.cast<std::string>();
      int slot = -1;
      for (int j = 0; j < 4; ++j) {
        if (key == set[j]) slot = j;
      }
      found += slot >= 0;
      slot_.push_back(slot);
    }
    if (found != 4) throw std::invalid_argument("hit_template must name tool, score, rank and matched");
  }

  // Hit i: tools[tool[i]], score[i], rank i + 1, matched[i] != 0. Needs the GIL.
  py::list make(const std::vector<int64_t>& tool, const std::vector<float>& score,
                const std::vector<uint8_t>& matched) const {
    const py::tuple no_args;
    auto* tp = reinterpret_cast<PyTypeObject*>(hit_type_.ptr());
    py::list hits(tool.size());
    for (std::size_t i = 0; i < tool.size(); ++i) {
      // object.__new__(hit_type) and object.__setattr__ of each attribute in the
      // template's order, as _plain_hit skips the frozen dataclass's __init__ (set one by
      // one, in a fixed order, the values live inline in the object: no dict to build).
      py::object hit = py::reinterpret_steal<py::object>(PyBaseObject_Type.tp_new(tp, no_args.ptr(), nullptr));
      if (!hit) throw py::error_already_set();
      const py::object values[4] = {tools_[py::int_(tool[i])], py::float_(static_cast<double>(score[i])),
                                    py::int_(i + 1), py::bool_(matched[i] != 0)};
      for (std::size_t a = 0; a < names_.size(); ++a) {
        PyObject* v = slot_[a] >= 0 ? values[slot_[a]].ptr() : defaults_[a].ptr();
        if (PyObject_GenericSetAttr(hit.ptr(), names_[a].ptr(), v) != 0) throw py::error_already_set();
      }
      hits[i] = std::move(hit);
    }
    return hits;
  }

 private:
  py::type hit_type_;
  py::object tools_;
  std::vector<py::str> names_;        // the template's attribute names, in order
  std::vector<py::object> defaults_;  // and values
  std::vector<int> slot_;             // 0..3: tool, score, rank, matched; -1: the default
};

}  // namespace toolsift::py_bridge
