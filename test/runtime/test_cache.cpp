// Tests of tilejit/runtime/cache.hpp: memory and disk levels, corrupt entries,
// concurrent writers from several processes, memory-only mode, global().
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "tilejit/runtime/cache.hpp"

namespace fs = std::filesystem;
namespace rt = tilejit::runtime;
using Source = rt::KernelCache::Source;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "tilejit-cache-test-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
    return out;
  }
};

rt::JitRequest request(const std::string& tag) {
  rt::JitRequest r;
  r.source = "// " + tag + "\nextern \"C\" __global__ void scale(float* x, float s) { x[threadIdx.x] *= s; }\n";
  r.name = "scale.cu";
  r.arch = "sm_80";
  return r;
}

bool nvrtc_or_skip() {
  std::string why;
  if (rt::compiler_available(rt::Compiler::nvrtc, &why)) return true;
  MESSAGE("NVRTC not available, skipping: " << why);
  return false;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_file(const fs::path& p, const std::string& data) {
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(data.data(), std::streamsize(data.size()));
}

}  // namespace

TEST_CASE("cache: key is 32 hex digits and changes with every input") {
  if (!nvrtc_or_skip()) return;
  const auto base = request("key");
  const std::string k = rt::KernelCache::key(base);
  CHECK(k.size() == 32);
  CHECK(k.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(rt::KernelCache::key(base) == k);
  auto r = base;
  r.arch = "sm_90a";
  CHECK(rt::KernelCache::key(r) != k);
  r = base;
  r.options = {"--use_fast_math"};
  CHECK(rt::KernelCache::key(r) != k);
  r = base;
  r.source += " ";
  CHECK(rt::KernelCache::key(r) != k);
  CHECK(rt::KernelCache::key(base, "driver 13.0") != k);
}

TEST_CASE("cache: miss, then memory hit, then disk hit with the same bytes") {
  if (!nvrtc_or_skip()) return;
  TempDir dir;
  rt::KernelCache cache(dir.path / "sub");  // created on first write
  const auto req = request("levels");

  auto first = cache.get_or_compile(req, "extra");
  CHECK(first.source == Source::compiled);
  CHECK(first.compile_ms > 0);
  CHECK(first.lookup_ms >= first.compile_ms);
  CHECK(first.key == rt::KernelCache::key(req, "extra"));
  CHECK(fs::exists(cache.entry_path(first.key)));

  auto second = cache.get_or_compile(req, "extra");
  CHECK(second.source == Source::memory);
  CHECK(second.binary == first.binary);
  CHECK(second.compile_ms == 0);

  cache.clear_memory();
  auto third = cache.get_or_compile(req, "extra");
  CHECK(third.source == Source::disk);
  CHECK(third.binary->bytes == first.binary->bytes);
  CHECK(third.binary->format == "cubin");

  rt::KernelCache other(dir.path / "sub");
  CHECK(other.get_or_compile(req, "extra").source == Source::disk);

  auto s = cache.stats();
  CHECK(s.compiled == 1);
  CHECK(s.memory_hits == 1);
  CHECK(s.disk_hits == 1);
  CHECK(s.corrupt_rebuilt == 0);
}

TEST_CASE("cache: damaged entries are detected, rebuilt and counted") {
  if (!nvrtc_or_skip()) return;
  TempDir dir;
  const auto req = request("damaged");
  std::string good;
  fs::path path;
  {
    rt::KernelCache c(dir.path);
    auto e = c.get_or_compile(req);
    path = c.entry_path(e.key);
    good = read_file(path);
    REQUIRE(good.size() > 64);
  }
  struct Damage {
    const char* what;
    std::string bytes;
  };
  auto flip = [&](std::size_t at) {
    std::string b = good;
    b[at] = static_cast<char>(b[at] ^ 0x10);
    return b;
  };
  for (const Damage& d : {Damage{"truncated payload", good.substr(0, good.size() / 2)},
                          Damage{"truncated header", good.substr(0, 7)}, Damage{"empty file", ""},
                          Damage{"bit flip in payload", flip(good.size() - 5)},
                          // "TJKC" 1 5 "cubin" | size at 11..18 | checksum at 19..34
                          Damage{"bit flip in size", flip(12)}, Damage{"bit flip in checksum", flip(25)},
                          Damage{"bad format length", flip(5)},
                          Damage{"bad magic", flip(0)}, Damage{"bad version", flip(4)},
                          Damage{"extra trailing byte", good + "x"}}) {
    CAPTURE(d.what);
    write_file(path, d.bytes);
    rt::KernelCache c(dir.path);
    auto e = c.get_or_compile(req);
    CHECK(e.source == Source::compiled);
    CHECK(c.stats().corrupt_rebuilt == 1);
    CHECK(read_file(path) == good);  // rewritten whole
    rt::KernelCache fresh(dir.path);
    CHECK(fresh.get_or_compile(req).source == Source::disk);
    CHECK(fresh.stats().corrupt_rebuilt == 0);
  }
}

// Two processes insert the same key into the same fresh directory at the same
// moment while this one reads it in a loop: every lookup must succeed without
// seeing a corrupt entry, and one whole entry and no temporary files remain.
TEST_CASE("cache: concurrent writers in separate processes leave one valid entry") {
  if (!nvrtc_or_skip()) return;
  TempDir dir;
  const auto req = request("concurrent");
  const auto expected = rt::KernelCache(fs::path{}).get_or_compile(req);  // memory only

  int gate[2];
  REQUIRE(::pipe(gate) == 0);
  pid_t kids[2];
  for (pid_t& kid : kids) {
    kid = ::fork();
    REQUIRE(kid >= 0);
    if (kid == 0) {
      ::alarm(120);  // never hang the suite
      ::close(gate[1]);
      char c;
      (void)!::read(gate[0], &c, 1);  // returns 0 when the parent closes the gate
      int rc = 0;
      try {
        for (int round = 0; round < 10; ++round) {
          rt::KernelCache c(dir.path);
          auto e = c.get_or_compile(req);
          if (e.binary->bytes != expected.binary->bytes) rc = 1;
          if (c.stats().corrupt_rebuilt != 0) rc = 2;
        }
      } catch (...) {
        rc = 3;
      }
      ::_exit(rc);
    }
  }
  ::close(gate[0]);
  ::close(gate[1]);  // start both children

  int lookups = 0, corrupt = 0, mismatched = 0;
  int status[2] = {0, 0};
  bool done[2] = {false, false};
  while (!done[0] || !done[1]) {
    rt::KernelCache c(dir.path);
    auto e = c.get_or_compile(req);
    ++lookups;
    corrupt += int(c.stats().corrupt_rebuilt);
    mismatched += e.binary->bytes != expected.binary->bytes;
    for (int i = 0; i < 2; ++i)
      if (!done[i] && ::waitpid(kids[i], &status[i], WNOHANG) == kids[i]) done[i] = true;
  }
  for (int st : status) {
    CHECK(WIFEXITED(st));
    CHECK(WEXITSTATUS(st) == 0);
  }
  MESSAGE("parent lookups while children wrote: " << lookups);
  CHECK(corrupt == 0);
  CHECK(mismatched == 0);
  rt::KernelCache c(dir.path);
  auto e = c.get_or_compile(req);
  CHECK(e.source == Source::disk);
  CHECK(dir.files() == std::vector<std::string>{c.entry_path(e.key).filename().string()});
}

TEST_CASE("cache: threads asking for the same key share one compile") {
  if (!nvrtc_or_skip()) return;
  TempDir dir;
  rt::KernelCache c(dir.path);
  const auto req = request("threads");
  std::vector<rt::KernelCache::Entry> got(4);
  std::vector<std::thread> threads;
  for (auto& g : got) threads.emplace_back([&] { g = c.get_or_compile(req); });
  for (auto& t : threads) t.join();
  for (const auto& g : got) CHECK(g.binary == got[0].binary);
  auto s = c.stats();
  CHECK(s.compiled == 1);
  CHECK(s.memory_hits == 3);
  CHECK(s.disk_hits == 0);

  // A failing compile reaches every thread that waited for it.
  auto bad = request("threads-bad");
  bad.source += "not C++ at all\n";
  int errors = 0;
  std::mutex mu;
  threads.clear();
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      try {
        c.get_or_compile(bad);
      } catch (const tilejit::CompileError&) {
        std::lock_guard lock(mu);
        ++errors;
      }
    });
  for (auto& t : threads) t.join();
  CHECK(errors == 4);
}

TEST_CASE("cache: memory-only mode never touches the disk") {
  if (!nvrtc_or_skip()) return;
  rt::KernelCache c{fs::path{}};
  const auto req = request("memory-only");
  auto a = c.get_or_compile(req);
  CHECK(a.source == Source::compiled);
  CHECK(c.entry_path(a.key).empty());
  CHECK(c.get_or_compile(req).source == Source::memory);
  c.clear_memory();
  CHECK(c.get_or_compile(req).source == Source::compiled);
  CHECK(c.stats().compiled == 2);
}

TEST_CASE("cache: an unusable directory degrades to memory only") {
  if (!nvrtc_or_skip()) return;
  TempDir dir;
  write_file(dir.path / "file", "not a directory");
  rt::KernelCache c(dir.path / "file" / "cache");  // cannot be created, even by root
  const auto req = request("unwritable");
  auto a = c.get_or_compile(req);  // warns once on stderr
  CHECK(a.source == Source::compiled);
  CHECK(c.get_or_compile(req).source == Source::memory);
  c.clear_memory();
  CHECK(c.get_or_compile(req).source == Source::compiled);
}

TEST_CASE("cache: compile errors propagate and store nothing") {
  if (!nvrtc_or_skip()) return;
  TempDir dir;
  rt::KernelCache c(dir.path);
  auto req = request("error");
  req.source += "this is not C++;\n";
  CHECK_THROWS_AS(c.get_or_compile(req), tilejit::CompileError);
  CHECK_THROWS_AS(c.get_or_compile(req), tilejit::CompileError);
  CHECK(c.stats().compiled == 0);
  CHECK(dir.files().empty());
}

// global() reads the environment once per process, so it is checked in a
// fresh copy of this test program with the variable set.
TEST_CASE("cache: global() honours TILEJIT_CACHE_DIR") {
  if (const char* want = std::getenv("TILEJIT_TEST_EXPECT_CACHE_DIR")) {  // the child's side
    CHECK(rt::KernelCache::global().dir() == fs::path(want));
    CHECK(&rt::KernelCache::global() == &rt::KernelCache::global());
    return;
  }
  auto run_child = [](const char* cache_dir, const char* expect) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::setenv("TILEJIT_CACHE_DIR", cache_dir, 1);
      ::setenv("TILEJIT_TEST_EXPECT_CACHE_DIR", expect, 1);
      const char* argv[] = {"tilejit_tests", "-tc=cache: global() honours TILEJIT_CACHE_DIR", "--no-version",
                            "--minimal", nullptr};
      ::execv("/proc/self/exe", const_cast<char**>(argv));
      ::_exit(127);
    }
    int st = 0;
    ::waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  };
  CHECK(run_child("/tmp/tilejit-global-test", "/tmp/tilejit-global-test") == 0);
  CHECK(run_child("off", "") == 0);
  CHECK(run_child("", "") == 0);
}
