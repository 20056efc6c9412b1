// Faults in a data-parallel job never hang it: a rank that throws, stops answering or is killed
// (SIGKILL) ends the whole mpirun job non-zero within 30 s, with a line naming the rank, and the
// checkpoint train_text was saving is the old or the new one, never a partial file.
// These tests start mpirun themselves (they run in ag_tests, outside MPI).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <ag/ag.h>

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kMpirun = std::string(AG_MPIEXEC) + " -np 2 --oversubscribe --allow-run-as-root ";

struct Job {
  pid_t pid = -1;
  std::string log;
  Clock::time_point started = Clock::now();
};

// Starts `cmd` in its own process group, output into `log`.
Job start(const std::string& cmd, const std::string& log) {
  Job j;
  j.log = log;
  j.pid = fork();
  if (j.pid == 0) {
    setpgid(0, 0);
    execl("/bin/sh", "sh", "-c", (cmd + " >" + log + " 2>&1").c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return j;
}

struct Ended {
  bool in_time = false;
  int status = -1;  // exit status (128 + signal if killed)
  double seconds = 0;
  std::string output;
};

// Waits up to `limit` seconds for the job; past it, kills its process group.
Ended wait_for(Job& j, double limit) {
  Ended e;
  const auto t0 = Clock::now();
  int st = 0;
  for (;;) {
    if (waitpid(j.pid, &st, WNOHANG) == j.pid) {
      e.in_time = true;
      break;
    }
    if (std::chrono::duration<double>(Clock::now() - t0).count() > limit) {
      kill(-j.pid, SIGKILL);
      waitpid(j.pid, &st, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  e.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  e.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  std::ifstream f(j.log);
  std::stringstream ss;
  ss << f.rdbuf();
  e.output = ss.str();
  return e;
}

// The pid of the process of rank `rank` whose command line mentions `marker`.
pid_t find_rank(int rank, const std::string& marker) {
  for (const auto& d : fs::directory_iterator("/proc")) {
    const std::string name = d.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmd(d.path() / "cmdline"), env(d.path() / "environ");
    std::string c((std::istreambuf_iterator<char>(cmd)), {}), e((std::istreambuf_iterator<char>(env)), {});
    if (c.find(marker) == std::string::npos || c.find("mpirun") != std::string::npos) continue;
    if (e.find(std::string("OMPI_COMM_WORLD_RANK=") + std::to_string(rank) + '\0') != std::string::npos) {
      return static_cast<pid_t>(std::stol(name));
    }
  }
  return -1;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("ag_dist_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST(DistFaults, ARankThatThrowsEndsTheJobWithOneLineNamingIt) {
  const fs::path d = fresh_dir("throw");
  Job j = start(kMpirun + DIST_FAULT_BIN + " throw", (d / "log").string());
  const Ended e = wait_for(j, 30);
  ASSERT_TRUE(e.in_time) << e.output;
  EXPECT_NE(e.status, 0);
  EXPECT_NE(e.output.find("dist_fault: rank 1: injected failure at step 3\n"), std::string::npos) << e.output;
  std::printf("ended in %.1f s with status %d\n", e.seconds, e.status);
  fs::remove_all(d);
}

TEST(DistFaults, AnUncaughtExceptionEndsTheJob) {
  const fs::path d = fresh_dir("uncaught");
  Job j = start(kMpirun + DIST_FAULT_BIN + " uncaught", (d / "log").string());
  const Ended e = wait_for(j, 30);
  ASSERT_TRUE(e.in_time) << e.output;
  EXPECT_NE(e.status, 0);
  EXPECT_NE(e.output.find("injected failure at step 3"), std::string::npos) << e.output;
  fs::remove_all(d);
}

TEST(DistFaults, ARankThatStopsAnsweringTimesTheOthersOut) {
  const fs::path d = fresh_dir("hang");
  Job j = start(kMpirun + DIST_FAULT_BIN + " hang", (d / "log").string());
  const Ended e = wait_for(j, 30);
  ASSERT_TRUE(e.in_time) << e.output;
  EXPECT_NE(e.status, 0);
  EXPECT_NE(e.output.find("dist_fault: rank 0: [dist::all_reduce] rank 0: no answer from the other ranks after 2 s"),
            std::string::npos)
      << e.output;
  fs::remove_all(d);
}

// SIGKILL of either rank while train_text saves a checkpoint every step.
TEST(DistFaults, AKilledRankEndsTheJobAndTheCheckpointStaysWhole) {
  for (int victim : {1, 0}) {
    SCOPED_TRACE("killing rank " + std::to_string(victim));
    const fs::path d = fresh_dir("kill" + std::to_string(victim));
    const fs::path ckpt = d / "model.safetensors";
    Job j = start(kMpirun + TRAIN_TEXT_BIN + " --distributed --steps 1000000 --batch 4 --dim 32 --context 16 --sample 0 "
                      "--save-every 1 --save " + ckpt.string(),
                  (d / "log").string());
    const auto t0 = Clock::now();
    while (!fs::exists(ckpt) && Clock::now() - t0 < std::chrono::seconds(60)) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(fs::exists(ckpt)) << wait_for(j, 0).output;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // some more saves
    const pid_t pid = find_rank(victim, ckpt.string());
    ASSERT_GT(pid, 0);
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    const Ended e = wait_for(j, 30);
    ASSERT_TRUE(e.in_time) << e.output;
    EXPECT_NE(e.status, 0);
    EXPECT_NE(e.output.find("rank " + std::to_string(victim)), std::string::npos) << e.output;
    std::printf("rank %d killed: the job ended in %.1f s with status %d\n", victim, e.seconds, e.status);
    // the checkpoint is a whole file: it parses, and has every tensor of the model
    const ag::nn::NamedTensors t = ag::nn::load_tensors(ckpt.string());
    EXPECT_GT(t.size(), 10u);
    fs::remove_all(d);
  }
}

// Every rank sees the same bad argument; all stop and only rank 0 says why.
TEST(DistFaults, ABadArgumentIsOneLineFromRankZero) {
  const fs::path d = fresh_dir("args");
  Job j = start(kMpirun + TRAIN_TEXT_BIN + " --distributed --batch 5", (d / "log").string());
  const Ended e = wait_for(j, 30);
  ASSERT_TRUE(e.in_time) << e.output;
  EXPECT_NE(e.status, 0);
  const std::string line = "train_text: --batch 5 (the global batch) is not a multiple of the 2 processes (see --help)\n";
  const auto first = e.output.find(line);
  EXPECT_NE(first, std::string::npos) << e.output;
  EXPECT_EQ(e.output.find(line, first + 1), std::string::npos) << e.output;
  fs::remove_all(d);
}
