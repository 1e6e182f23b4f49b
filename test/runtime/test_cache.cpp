// Tests of tilejit/runtime/cache.hpp: memory and disk levels, corrupt entries,
// concurrent writers from several processes, memory-only mode, global().
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "test/common/scratch.hpp"
#include "tilejit/runtime/cache.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace fs = std::filesystem;
namespace rt = tilejit::runtime;
using Source = rt::KernelCache::Source;

namespace {

using testing::TempDir;

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
  // "TJKC" 2 32 | key at 6..37 | 5 at 38 | "cubin" at 39..43 | size at 44..51 | payload | checksum (the last 16)
  REQUIRE(good.substr(38, 6) == "\x05" "cubin");
  for (const Damage& d : {Damage{"truncated payload", good.substr(0, good.size() / 2)},
                          Damage{"truncated header", good.substr(0, 7)}, Damage{"empty file", ""},
                          Damage{"bit flip in payload", flip(60)}, Damage{"bit flip in size", flip(45)},
                          Damage{"bit flip in checksum", flip(good.size() - 5)}, Damage{"bad key length", flip(5)},
                          Damage{"bit flip in key", flip(10)}, Damage{"bad format length", flip(38)},
                          Damage{"bit flip in format", flip(41)},  // "cubin" -> "cuRin": outside v1's checksum
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

TEST_CASE("cache: an intact entry of another key under this key's file name is rebuilt, not served") {
  if (!nvrtc_or_skip()) return;
  TempDir dir;
  auto sm80 = request("moved"), sm90 = sm80;
  sm90.arch = "sm_90a";
  rt::KernelCache c(dir.path);
  const auto a = c.get_or_compile(sm80);
  const fs::path forged = c.entry_path(rt::KernelCache::key(sm90));
  fs::copy_file(c.entry_path(a.key), forged);  // a whole, valid sm_80 entry at the sm_90a key's path
  auto b = c.get_or_compile(sm90);
  CHECK(b.source == Source::compiled);
  CHECK(c.stats().corrupt_rebuilt == 1);
  CHECK(b.binary->bytes != a.binary->bytes);
  rt::KernelCache fresh(dir.path);  // the rebuilt entry is sm_90a's own
  auto d = fresh.get_or_compile(sm90);
  CHECK(d.source == Source::disk);
  CHECK(d.binary->bytes == b.binary->bytes);
}

TEST_CASE("cache: an entry of the previous format version is rebuilt, not loaded") {
  if (!nvrtc_or_skip()) return;
  TempDir dir;
  const auto req = request("v1");
  rt::KernelCache c(dir.path);
  const auto e = c.get_or_compile(req);
  const auto path = c.entry_path(e.key);
  // Version 1: "TJKC" 1 n format u64 size XXH3-128(payload) payload: intact by its own rules.
  const auto& bytes = e.binary->bytes;
  std::string v1 = std::string("TJKC\x01\x05", 6) + "cubin";
  for (int i = 0; i < 8; ++i) v1.push_back(static_cast<char>(std::uint64_t(bytes.size()) >> (8 * i)));
  XXH128_canonical_t sum;
  XXH128_canonicalFromHash(&sum, XXH3_128bits(bytes.data(), bytes.size()));
  v1.append(reinterpret_cast<const char*>(sum.digest), 16);
  v1.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const std::string good = read_file(path);
  write_file(path, v1);
  rt::KernelCache old(dir.path);
  CHECK(old.get_or_compile(req).source == Source::compiled);
  CHECK(old.stats().corrupt_rebuilt == 1);
  CHECK(read_file(path) == good);
}

TEST_CASE("cache: an entry that cannot be read is a miss, not an error") {
  if (!nvrtc_or_skip()) return;
  TempDir dir;
  const auto req = request("unreadable"), other = request("unreadable-neighbour");
  {  // an empty directory at the entry's path: removed, the entry rebuilt and written
    rt::KernelCache c(dir.path);
    const fs::path path = c.entry_path(rt::KernelCache::key(req));
    fs::create_directories(path);
    auto e = c.get_or_compile(req);
    CHECK(e.source == Source::compiled);
    CHECK(c.stats().corrupt_rebuilt == 1);
    CHECK(fs::is_regular_file(path));
    rt::KernelCache fresh(dir.path);
    CHECK(fresh.get_or_compile(req).source == Source::disk);
    fs::remove(path);
  }
  {  // a directory that cannot be removed: compiled and kept in memory (a warning); other entries still on disk
    rt::KernelCache c(dir.path);
    const fs::path path = c.entry_path(rt::KernelCache::key(req));
    fs::create_directories(path / "inside");
    auto e = c.get_or_compile(req);
    CHECK(e.source == Source::compiled);
    CHECK(e.binary != nullptr);
    CHECK(c.get_or_compile(req).source == Source::memory);
    CHECK(fs::is_directory(path));
    CHECK(c.get_or_compile(other).source == Source::compiled);
    CHECK(fs::is_regular_file(c.entry_path(rt::KernelCache::key(other))));
    c.clear_memory();
    CHECK(c.get_or_compile(other).source == Source::disk);
    CHECK(c.get_or_compile(req).source == Source::compiled);  // still unreadable: rebuilt again, still no error
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

TEST_CASE("cache: a read-only, pre-filled directory keeps serving its entries after a write fails") {
  if (!nvrtc_or_skip()) return;
  TempDir dir;
  const auto warm = request("prefilled"), fresh = request("not-prefilled");
  REQUIRE(rt::KernelCache(dir.path).get_or_compile(warm).source == Source::compiled);
  fs::permissions(dir.path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                                fs::perms::others_exec);  // 0755, then the child drops write access (root: by setuid)
  fs::permissions(dir.path, fs::perms::owner_write, fs::perm_options::remove);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (::geteuid() == 0 && ::setuid(65534) != 0) ::_exit(3);  // root writes anywhere: become nobody
    rt::KernelCache c(dir.path);
    int rc = 0;
    if (c.get_or_compile(warm).source != Source::disk) rc = 10;
    if (c.get_or_compile(fresh).source != Source::compiled) rc = 11;  // its write fails: warned once
    c.clear_memory();
    if (c.get_or_compile(warm).source != Source::disk) rc = 12;  // used to be compiled: the disk level was off
    if (c.get_or_compile(fresh).source != Source::compiled) rc = 13;
    ::_exit(rc);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  fs::permissions(dir.path, fs::perms::owner_write, fs::perm_options::add);
  REQUIRE(WIFEXITED(st));
  if (WEXITSTATUS(st) == 3) {
    MESSAGE("cannot drop root's write access here (setuid failed): skipping");
    return;
  }
  CHECK(WEXITSTATUS(st) == 0);
}

TEST_CASE("cache: an entry too large to be one is rebuilt without being read") {
  if (!nvrtc_or_skip()) return;
  TempDir dir;
  const auto req = request("huge");
  rt::KernelCache c(dir.path);
  REQUIRE(c.get_or_compile(req).source == Source::compiled);
  std::vector<fs::path> entries;
  for (const auto& f : fs::directory_iterator(dir.path)) entries.push_back(f.path());
  REQUIRE(entries.size() == 1);
  fs::resize_file(entries[0], std::uintmax_t{3} << 30);  // sparse: 3 GiB that take no disk
  rt::KernelCache fresh(dir.path);
  CHECK(fresh.get_or_compile(req).source == Source::compiled);
  CHECK(fresh.stats().corrupt_rebuilt == 1);
  CHECK(fs::file_size(entries[0]) < (std::uintmax_t{1} << 20));  // rewritten whole
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
  // Relative: against the working directory of the first call (the child starts in this one).
  CHECK(run_child("tj-relative-cache/x/..", (fs::current_path() / "tj-relative-cache").string().c_str()) == 0);
  CHECK(run_child("off", "") == 0);
  CHECK(run_child("", "") == 0);
}

namespace {
// Restores the working directory when a test that changes it ends (passing or not).
struct CwdGuard {
  fs::path saved = fs::current_path();
  ~CwdGuard() {
    std::error_code ec;
    fs::current_path(saved, ec);
  }
};

// A version-2 entry of `key`, whole and intact by the format's own rules, holding `format` and `payload`.
std::string entry_v2(const std::string& key, const std::string& format, const std::string& payload) {
  std::string e = std::string("TJKC\x02", 5);
  e.push_back(static_cast<char>(key.size()));
  e += key;
  e.push_back(static_cast<char>(format.size()));
  e += format;
  for (int i = 0; i < 8; ++i) e.push_back(static_cast<char>(std::uint64_t(payload.size()) >> (8 * i)));
  e += payload;
  XXH128_canonical_t sum;
  XXH128_canonicalFromHash(&sum, XXH3_128bits(e.data(), e.size()));
  e.append(reinterpret_cast<const char*>(sum.digest), 16);
  return e;
}
}  // namespace

TEST_CASE("cache: a relative directory is fixed at construction; a later chdir does not move the cache") {
  TempDir home, elsewhere;
  CwdGuard guard;
  fs::current_path(home.path);
  rt::KernelCache c("rel/./cache");
  CHECK(c.dir() == home.path / "rel" / "cache");
  CHECK(c.dir().is_absolute());
  fs::current_path(elsewhere.path);
  CHECK(c.entry_path("00").parent_path() == home.path / "rel" / "cache");
  if (!nvrtc_or_skip()) return;
  const auto e = c.get_or_compile(request("chdir"));
  CHECK(fs::exists(home.path / "rel" / "cache" / (e.key + ".tjkc")));
  CHECK_FALSE(fs::exists(elsewhere.path / "rel"));
}

TEST_CASE("cache: an intact entry naming a format no compiler writes, or holding no code, is rebuilt, not served") {
  if (!nvrtc_or_skip()) return;
  TempDir dir;
  const auto req = request("format");
  rt::KernelCache c(dir.path);
  const auto e = c.get_or_compile(req);
  const auto path = c.entry_path(e.key);
  const std::string good = read_file(path);
  const std::string code(e.binary->bytes.begin(), e.binary->bytes.end());
  for (const auto& [format, payload] : {std::pair<std::string, std::string>{"elf", code}, {"cubin\n", code}, {"cubin", ""}}) {
    CAPTURE(format);
    CAPTURE(payload.size());
    write_file(path, entry_v2(e.key, format, payload));
    rt::KernelCache fresh(dir.path);
    const auto f = fresh.get_or_compile(req);
    CHECK(f.source == Source::compiled);
    CHECK(fresh.stats().corrupt_rebuilt == 1);
    CHECK(f.binary->format == "cubin");
    CHECK(read_file(path) == good);
  }
  write_file(path, entry_v2(e.key, "cubin", code));  // the same builder, a format the compiler writes: served
  rt::KernelCache fresh(dir.path);
  CHECK(fresh.get_or_compile(req).source == Source::disk);
}
