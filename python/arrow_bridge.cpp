#include "arrow_bridge.h"

#include <pybind11/stl.h>

#include <cstring>
#include <stdexcept>

#include "toolsift/arrow_c_abi.h"

namespace toolsift::py_bridge {
namespace {

// Everything an exported ArrowArray / ArrowSchema needs to stay valid until its consumer
// calls release(). Ownership passes to the C struct's private_data and comes back in the
// release callback.
struct ExportedArray {
  std::shared_ptr<const void> owner;
  const void* buffers[2] = {nullptr, nullptr};
};

struct ExportedSchema {
  std::string format;
  std::string name;
};

void release_array(ArrowArray* a) {
  if (a == nullptr || a->release == nullptr) return;
  std::unique_ptr<ExportedArray> holder(static_cast<ExportedArray*>(a->private_data));
  a->release = nullptr;
}

void release_schema(ArrowSchema* s) {
  if (s == nullptr || s->release == nullptr) return;
  std::unique_ptr<ExportedSchema> holder(static_cast<ExportedSchema*>(s->private_data));
  s->release = nullptr;
}

void schema_capsule_destructor(PyObject* cap) {
  auto* s = static_cast<ArrowSchema*>(PyCapsule_GetPointer(cap, "arrow_schema"));
  if (s == nullptr) {
    PyErr_Clear();
    return;
  }
  if (s->release != nullptr) s->release(s);
  std::unique_ptr<ArrowSchema> free_struct(s);
}

void array_capsule_destructor(PyObject* cap) {
  auto* a = static_cast<ArrowArray*>(PyCapsule_GetPointer(cap, "arrow_array"));
  if (a == nullptr) {
    PyErr_Clear();
    return;
  }
  if (a->release != nullptr) a->release(a);
  std::unique_ptr<ArrowArray> free_struct(a);
}

// Keeps a Python object (and optionally a buffer request) alive; destroyed wherever the
// last engine reference goes away, so it takes the GIL itself.
struct PyOwner {
  py::object obj;
  std::unique_ptr<py::buffer_info> info;
  ~PyOwner() {
    py::gil_scoped_acquire gil;
    info.reset();
    obj = py::object();
  }
};

template <class T>
const char* format_of() {
  return ArrowFormat<T>::value;
}

template <class T>
bool buffer_format_matches(const py::buffer_info& info) {
  if (static_cast<std::size_t>(info.itemsize) != sizeof(T)) return false;
  // NumPy spells the same type in several ways ("i", "<i4", "=i", "l" on LP64 ...);
  // compare kind and size rather than the literal string.
  const char kind = info.format.empty() ? '?' : info.format.back();
  if (std::is_floating_point<T>::value) return kind == 'f' || kind == 'd';
  return std::strchr("bhilqn", kind) != nullptr;
}

}  // namespace

template <class T>
ColumnView ColumnView::of(const std::string& name, const Column<T>& col) {
  ColumnView v;
  v.name = name;
  v.format = ArrowFormat<T>::value;
  v.itemsize = sizeof(T);
  v.data = col.data();
  v.size = col.size();
  v.owner = col.owner();
  return v;
}

template ColumnView ColumnView::of<int32_t>(const std::string&, const Column<int32_t>&);
template ColumnView ColumnView::of<int64_t>(const std::string&, const Column<int64_t>&);
template ColumnView ColumnView::of<float>(const std::string&, const Column<float>&);

py::tuple ColumnView::arrow_c_array(const py::object& requested_schema) const {
  if (!requested_schema.is_none()) {
    // We only ever export our own primitive type; casting is the consumer's business.
  }
  auto schema_holder = std::make_unique<ExportedSchema>();
  schema_holder->format = format;
  schema_holder->name = name;
  auto schema = std::make_unique<ArrowSchema>();
  schema->format = schema_holder->format.c_str();
  schema->name = schema_holder->name.c_str();
  schema->metadata = nullptr;
  schema->flags = 0;
  schema->n_children = 0;
  schema->children = nullptr;
  schema->dictionary = nullptr;
  schema->release = &release_schema;
  schema->private_data = schema_holder.release();

  auto array_holder = std::make_unique<ExportedArray>();
  array_holder->owner = owner;
  array_holder->buffers[0] = nullptr;  // no validity bitmap: no nulls
  array_holder->buffers[1] = data;
  auto array = std::make_unique<ArrowArray>();
  array->length = static_cast<int64_t>(size);
  array->null_count = 0;
  array->offset = 0;
  array->n_buffers = 2;
  array->n_children = 0;
  array->buffers = array_holder->buffers;
  array->children = nullptr;
  array->dictionary = nullptr;
  array->release = &release_array;
  array->private_data = array_holder.release();

  PyObject* sc = PyCapsule_New(schema.get(), "arrow_schema", &schema_capsule_destructor);
  if (sc == nullptr) {
    schema->release(schema.get());
    array->release(array.get());
    throw py::error_already_set();
  }
  schema.release();
  py::object schema_cap = py::reinterpret_steal<py::object>(sc);
  PyObject* ac = PyCapsule_New(array.get(), "arrow_array", &array_capsule_destructor);
  if (ac == nullptr) {
    array->release(array.get());
    throw py::error_already_set();
  }
  array.release();
  py::object array_cap = py::reinterpret_steal<py::object>(ac);
  return py::make_tuple(schema_cap, array_cap);
}

py::buffer_info ColumnView::buffer() const {
  return py::buffer_info(const_cast<void*>(data), static_cast<py::ssize_t>(itemsize),
                         format == "f" ? py::format_descriptor<float>::format()
                         : format == "l" ? py::format_descriptor<int64_t>::format()
                                         : py::format_descriptor<int32_t>::format(),
                         1, {static_cast<py::ssize_t>(size)}, {static_cast<py::ssize_t>(itemsize)},
                         /*readonly=*/true);
}

template <class T>
Column<T> import_column(const py::handle& obj, const char* what) {
  if (py::hasattr(obj, "__arrow_c_array__")) {
    py::tuple caps = obj.attr("__arrow_c_array__")();
    if (caps.size() != 2) throw std::invalid_argument(std::string(what) + ": __arrow_c_array__ must return 2 capsules");
    auto* schema = static_cast<ArrowSchema*>(PyCapsule_GetPointer(caps[0].ptr(), "arrow_schema"));
    auto* array = static_cast<ArrowArray*>(PyCapsule_GetPointer(caps[1].ptr(), "arrow_array"));
    if (schema == nullptr || array == nullptr) {
      PyErr_Clear();
      throw std::invalid_argument(std::string(what) + ": not an Arrow C Data Interface capsule pair");
    }
    if (schema->format == nullptr || std::strcmp(schema->format, format_of<T>()) != 0) {
      throw std::invalid_argument(std::string(what) + ": expected Arrow type '" + format_of<T>() + "', got '" +
                                  (schema->format ? schema->format : "") + "'");
    }
    if (array->n_buffers != 2) throw std::invalid_argument(std::string(what) + ": expected a primitive array with 2 buffers");
    if (array->null_count != 0) throw std::invalid_argument(std::string(what) + ": nulls are not allowed");
    const auto* base = static_cast<const T*>(array->buffers[1]);
    if (base == nullptr && array->length > 0) throw std::invalid_argument(std::string(what) + ": missing data buffer");
    auto holder = std::make_shared<PyOwner>();
    holder->obj = py::reinterpret_borrow<py::object>(caps[1]);  // the capsule releases the array
    return Column<T>::borrowed(base ? base + array->offset : nullptr, static_cast<std::size_t>(array->length), holder);
  }
  if (!PyObject_CheckBuffer(obj.ptr())) {
    throw std::invalid_argument(std::string(what) + ": expected an Arrow array or a buffer (e.g. NumPy array), got " +
                                std::string(py::str(py::type::of(obj).attr("__name__"))));
  }
  auto holder = std::make_shared<PyOwner>();
  holder->obj = py::reinterpret_borrow<py::object>(obj);
  holder->info = std::make_unique<py::buffer_info>(py::reinterpret_borrow<py::buffer>(obj).request());
  const py::buffer_info& info = *holder->info;
  if (info.ndim != 1) throw std::invalid_argument(std::string(what) + ": expected a 1-d buffer");
  if (!buffer_format_matches<T>(info)) {
    throw std::invalid_argument(std::string(what) + ": expected " + std::to_string(sizeof(T)) + "-byte " +
                                (std::is_floating_point<T>::value ? "float" : "integer") + " items, got format '" + info.format + "'");
  }
  if (info.shape[0] > 1 && info.strides[0] != static_cast<py::ssize_t>(sizeof(T))) {
    throw std::invalid_argument(std::string(what) + ": buffer must be contiguous, try numpy.ascontiguousarray");
  }
  const auto* data = static_cast<const T*>(info.ptr);
  const auto n = static_cast<std::size_t>(info.shape[0]);
  if (!info.readonly) {
    // A writable buffer can change under the index (another thread, later caller
    // code) after it was validated: the index keeps its own copy. Read-only buffers
    // (memory-mapped files, Arrow) stay zero-copy.
    return Column<T>::owned(std::vector<T>(data, data + n));
  }
  return Column<T>::borrowed(data, n, holder);
}

template Column<int32_t> import_column<int32_t>(const py::handle&, const char*);
template Column<int64_t> import_column<int64_t>(const py::handle&, const char*);
template Column<float> import_column<float>(const py::handle&, const char*);

void register_column_view(py::module_& m) {
  py::class_<ColumnView>(m, "ColumnView", py::buffer_protocol(),
                         "Read-only view of one engine column; supports the buffer protocol and __arrow_c_array__.")
      .def_buffer([](const ColumnView& v) { return v.buffer(); })
      .def("__arrow_c_array__", &ColumnView::arrow_c_array, py::arg("requested_schema") = py::none())
      .def("__len__", [](const ColumnView& v) { return v.size; })
      .def_readonly("name", &ColumnView::name)
      .def_readonly("format", &ColumnView::format)
      .def_property_readonly("address", &ColumnView::address, "Address of the first element (for zero-copy checks).");
}

}  // namespace toolsift::py_bridge
