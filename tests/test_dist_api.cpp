// ag::dist outside mpirun (ag_tests runs in one process): whether it is available says how ag
// was built, and everything that needs a process group says so, with or without MPI.
#include <gtest/gtest.h>

#include <string>

#include "ag/ag.h"

using namespace ag;

TEST(DistApi, AvailableAsBuiltAndRefusesCallsWithoutAProcessGroup) {
  EXPECT_EQ(dist::is_available(), AG_TEST_HAVE_MPI != 0);
  EXPECT_FALSE(dist::is_initialized());
  Tensor t = zeros({3});
  for (auto call : std::vector<std::function<void()>>{[] { dist::rank(); }, [] { dist::world_size(); },
                                                      [&] { dist::all_reduce(t); }, [&] { dist::broadcast(t, 0); },
                                                      [] { dist::barrier(); }}) {
    try {
      call();
      ADD_FAILURE() << "no error";
    } catch (const std::runtime_error& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind("[dist::", 0), 0u) << m;
      const char* want = dist::is_available() ? "the process group is not initialized: call ag::dist::init"
                                              : "ag was built without MPI: install libopenmpi-dev";
      EXPECT_NE(m.find(want), std::string::npos) << m;
    }
  }
  nn::Linear net(2, 2);
  EXPECT_THROW(dist::DistributedDataParallel ddp(net), std::runtime_error);
  if (!dist::is_available()) EXPECT_THROW(dist::init(), std::runtime_error);
}
