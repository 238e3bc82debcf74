// How many CPUs this process may use: what threads=0 ("all cores") resolves to.
#pragma once

#include <string>

namespace toolsift {

// The CPUs in this process's affinity mask (sched_getaffinity on Linux; the hardware
// count elsewhere), capped by its cgroup CPU quota rounded up; at least 1. Computed once.
// The Python side (toolsift/cpus.py) gives the same number.
int available_cpus();

// The cgroup CPU quota in CPUs (fractional) found under `root` for a process whose
// /proc/self/cgroup text is `membership`, or a value <= 0 when unlimited or unknown.
// Exposed for tests; available_cpus() calls it with the real files.
double cgroup_quota(const std::string& root, const std::string& membership);

}  // namespace toolsift
