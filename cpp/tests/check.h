// A minimal self-contained test harness (no downloads, no dependencies): TEST_CASE
// registers a function, CHECK* record failures with file and line, main.cpp runs them all
// and prints "N passed, N failed".
#pragma once

#include <cmath>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace toolsift_test {

struct Case {
  const char* name;
  std::function<void()> fn;
};

inline std::vector<Case>& registry() {
  static std::vector<Case> cases;
  return cases;
}

inline int& failures() {
  static int n = 0;
  return n;
}

struct Register {
  Register(const char* name, std::function<void()> fn) { registry().push_back({name, std::move(fn)}); }
};

inline void report(const char* file, int line, const std::string& what) {
  ++failures();
  std::cerr << file << ":" << line << ": FAILED " << what << "\n";
}

template <class A, class B>
std::string both(const A& a, const B& b) {
  std::ostringstream s;
  s << a << " vs " << b;
  return s.str();
}

}  // namespace toolsift_test

#define TS_CAT2(a, b) a##b
#define TS_CAT(a, b) TS_CAT2(a, b)
#define TEST_CASE(name)                                                                  \
  static void TS_CAT(ts_case_, __LINE__)();                                              \
  static const toolsift_test::Register TS_CAT(ts_reg_, __LINE__)(name, TS_CAT(ts_case_, __LINE__)); \
  static void TS_CAT(ts_case_, __LINE__)()

#define CHECK(cond)                                                       \
  do {                                                                    \
    if (!(cond)) toolsift_test::report(__FILE__, __LINE__, "CHECK(" #cond ")"); \
  } while (0)

#define CHECK_EQ(a, b)                                                                                 \
  do {                                                                                                 \
    const auto& ts_a = (a);                                                                            \
    const auto& ts_b = (b);                                                                            \
    if (!(ts_a == ts_b))                                                                               \
      toolsift_test::report(__FILE__, __LINE__, "CHECK_EQ(" #a ", " #b "): " + toolsift_test::both(ts_a, ts_b)); \
  } while (0)

#define CHECK_NEAR(a, b, tol)                                                                          \
  do {                                                                                                 \
    const double ts_a = static_cast<double>(a), ts_b = static_cast<double>(b);                          \
    if (!(std::fabs(ts_a - ts_b) <= (tol) * (1.0 + std::fabs(ts_b))))                                  \
      toolsift_test::report(__FILE__, __LINE__, "CHECK_NEAR(" #a ", " #b "): " + toolsift_test::both(ts_a, ts_b)); \
  } while (0)

// Passes only if `expr` throws `type` and its what() contains `needle`.
#define CHECK_THROWS(expr, type, needle)                                                      \
  do {                                                                                        \
    bool ts_ok = false;                                                                       \
    std::string ts_msg = "nothing thrown";                                                    \
    try {                                                                                     \
      (void)(expr);                                                                           \
    } catch (const type& e) {                                                                 \
      ts_msg = e.what();                                                                      \
      ts_ok = ts_msg.find(needle) != std::string::npos;                                       \
    } catch (const std::exception& e) {                                                       \
      ts_msg = std::string("other exception: ") + e.what();                                   \
    }                                                                                         \
    if (!ts_ok) toolsift_test::report(__FILE__, __LINE__, "CHECK_THROWS(" #expr "): " + ts_msg); \
  } while (0)
