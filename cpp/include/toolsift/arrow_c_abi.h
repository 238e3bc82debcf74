// The Arrow C Data Interface structs, written from the Arrow specification
// ("The Arrow C data interface", format/CDataInterface). The layout is an ABI contract:
// field order and types must not change. Guarded by the spec's own macro so the
// definitions coexist with any other copy of the interface.
#pragma once

#include <cstdint>

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

extern "C" {

struct ArrowSchema {
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;
  void (*release)(struct ArrowSchema*);
  void* private_data;
};

struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;
  void (*release)(struct ArrowArray*);
  void* private_data;
};

}  // extern "C"

#endif  // ARROW_C_DATA_INTERFACE

namespace toolsift {

// Arrow format strings of the primitive types the engine stores.
template <class T> struct ArrowFormat;
template <> struct ArrowFormat<int32_t> { static constexpr const char* value = "i"; };
template <> struct ArrowFormat<int64_t> { static constexpr const char* value = "l"; };
template <> struct ArrowFormat<float> { static constexpr const char* value = "f"; };
template <> struct ArrowFormat<double> { static constexpr const char* value = "g"; };

}  // namespace toolsift
