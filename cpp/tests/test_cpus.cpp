// threads=0 resolution: affinity capped by the cgroup quota, read from fake cgroup trees.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <sys/stat.h>

#include "check.h"
#include "toolsift/cpus.h"
#include "toolsift/parallel.h"

using namespace toolsift;

namespace {

std::string temp_dir() {
  char tmpl[] = "/tmp/toolsift_cpus_XXXXXX";
  const char* d = mkdtemp(tmpl);
  return d ? std::string(d) : std::string();
}

void write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

}  // namespace

TEST_CASE("available_cpus is at least 1 and threads=0 resolves to it") {
  CHECK(available_cpus() >= 1);
  CHECK_EQ(resolve_threads(0), available_cpus());
  CHECK_EQ(resolve_threads(-3), available_cpus());
  CHECK_EQ(resolve_threads(5), 5);
}

TEST_CASE("cgroup v2 cpu.max: a quota, 'max', garbage") {
  const std::string root = temp_dir();
  CHECK(!root.empty());
  mkdir((root + "/box").c_str(), 0700);
  write(root + "/box/cpu.max", "150000 100000\n");
  CHECK_NEAR(cgroup_quota(root, "0::/box\n"), 1.5, 1e-12);
  write(root + "/box/cpu.max", "max 100000\n");
  CHECK(cgroup_quota(root, "0::/box\n") <= 0);
  write(root + "/box/cpu.max", "lots 100000\n");
  CHECK(cgroup_quota(root, "0::/box\n") <= 0);
  // No file in the process's own cgroup: the root's is used.
  write(root + "/cpu.max", "200000 100000\n");
  CHECK_NEAR(cgroup_quota(root, "0::/elsewhere\n"), 2.0, 1e-12);
}

TEST_CASE("cgroup v1 cfs quota; no files means no quota") {
  const std::string root = temp_dir();
  mkdir((root + "/cpu").c_str(), 0700);
  mkdir((root + "/cpu/job").c_str(), 0700);
  write(root + "/cpu/job/cpu.cfs_quota_us", "50000\n");
  write(root + "/cpu/job/cpu.cfs_period_us", "100000\n");
  CHECK_NEAR(cgroup_quota(root, "4:memory:/x\n3:cpu,cpuacct:/job\n"), 0.5, 1e-12);
  write(root + "/cpu/job/cpu.cfs_quota_us", "-1\n");
  CHECK(cgroup_quota(root, "3:cpu,cpuacct:/job\n") <= 0);
  const std::string empty = temp_dir();
  CHECK(cgroup_quota(empty, "0::/\n") <= 0);
  CHECK(cgroup_quota(empty, "") <= 0);
}
