// Runs every registered test case; exit status 1 if any check failed.
#include <exception>
#include <iostream>

#include "check.h"

int main() {
  int passed = 0, failed = 0;
  for (const auto& c : toolsift_test::registry()) {
    const int before = toolsift_test::failures();
    try {
      c.fn();
    } catch (const std::exception& e) {
      toolsift_test::report(__FILE__, __LINE__, std::string(c.name) + ": unexpected exception: " + e.what());
    }
    if (toolsift_test::failures() == before) {
      ++passed;
    } else {
      ++failed;
      std::cerr << "case failed: " << c.name << "\n";
    }
  }
  std::cout << passed << " passed, " << failed << " failed\n";
  return failed == 0 ? 0 : 1;
}
