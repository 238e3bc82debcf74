#include "toolsift/cpus.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

namespace toolsift {
namespace {

bool read_file(const std::string& path, std::string& out) {
  std::ifstream f(path);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return !out.empty();
}

double ratio(const std::string& quota, const std::string& period) {
  try {
    std::size_t used = 0;
    const long long q = std::stoll(quota, &used);
    if (used != quota.size()) return -1.0;
    const long long p = std::stoll(period, &used);
    if (used != period.size()) return -1.0;
    return q > 0 && p > 0 ? static_cast<double>(q) / static_cast<double>(p) : -1.0;
  } catch (...) {  // not a number ("max", garbage): no quota we can use
    return -1.0;
  }
}

int affinity_cpus() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
#endif
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

}  // namespace

double cgroup_quota(const std::string& root, const std::string& membership) {
  std::vector<std::string> v2, v1;
  std::istringstream lines(membership);
  std::string line;
  while (std::getline(lines, line)) {
    const auto a = line.find(':');
    if (a == std::string::npos) continue;
    const auto b = line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string id = line.substr(0, a), ctl = line.substr(a + 1, b - a - 1);
    std::string rel = line.substr(b + 1);
    while (!rel.empty() && rel.front() == '/') rel.erase(rel.begin());
    const std::string suffix = rel.empty() ? "" : "/" + rel;
    if (id == "0" && ctl.empty()) {
      v2.push_back(root + suffix);
    } else {
      std::istringstream names(ctl);
      std::string name;
      while (std::getline(names, name, ',')) {
        if (name == "cpu") {
          v1.push_back(root + "/cpu" + suffix);
          v1.push_back(root + "/cpu,cpuacct" + suffix);
        }
      }
    }
  }
  v2.push_back(root);
  for (const auto& d : v2) {
    std::string text;
    if (!read_file(d + "/cpu.max", text)) continue;
    std::istringstream fields(text);
    std::string quota, period, extra;
    if (!(fields >> quota >> period) || (fields >> extra) || quota == "max") return -1.0;
    return ratio(quota, period);
  }
  v1.push_back(root + "/cpu");
  v1.push_back(root + "/cpu,cpuacct");
  for (const auto& d : v1) {
    std::string quota, period;
    if (read_file(d + "/cpu.cfs_quota_us", quota) && read_file(d + "/cpu.cfs_period_us", period)) {
      return ratio(quota, period);
    }
  }
  return -1.0;
}

int available_cpus() {
  static const int n = [] {
    int cpus = affinity_cpus();
    std::string membership;
    read_file("/proc/self/cgroup", membership);
    const double quota = cgroup_quota("/sys/fs/cgroup", membership);
    if (quota > 0) {
      const int cap = static_cast<int>(std::ceil(quota));
      if (cap >= 1 && cap < cpus) cpus = cap;
    }
    return cpus;
  }();
  return n;
}

}  // namespace toolsift
